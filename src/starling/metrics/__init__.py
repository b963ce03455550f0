"""Metrics of collective motion: order parameters, neighbour statistics, groups, density,
speeds, state occupancy and predation (docs/metrics.md defines each)."""
from .order import (center_of_mass, groups, local_polarization, milling, minimum_image, nearest_neighbor_distance,
                    polarization)
from .predation import first_time, increments, predation, total
from .stats import (density, distribution, nearest_neighbor_distances, nearest_neighbor_stats, occupancy,
                    occupancy_series, speed_stats)

__all__ = ["local_polarization", "polarization", "milling", "nearest_neighbor_distance", "groups", "center_of_mass",
           "minimum_image", "nearest_neighbor_distances", "nearest_neighbor_stats", "distribution", "density",
           "speed_stats", "occupancy", "occupancy_series", "predation", "first_time", "increments", "total"]
