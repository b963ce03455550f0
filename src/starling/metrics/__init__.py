"""Metrics of collective motion: order parameters, neighbour statistics."""
from .order import milling, nearest_neighbor_distance, polarization

__all__ = ["polarization", "milling", "nearest_neighbor_distance"]
