"""Metrics of collective motion: order parameters, neighbour statistics."""
from .order import local_polarization, milling, nearest_neighbor_distance, polarization

__all__ = ["local_polarization", "polarization", "milling", "nearest_neighbor_distance"]
