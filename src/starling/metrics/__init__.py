"""Metrics of collective motion: order parameters, neighbour statistics, groups."""
from .order import (center_of_mass, groups, local_polarization, milling, minimum_image, nearest_neighbor_distance,
                    polarization)

__all__ = ["local_polarization", "polarization", "milling", "nearest_neighbor_distance", "groups", "center_of_mass",
           "minimum_image"]
