"""Neighbour behaviours: they read the animal and its queried neighbours (seed 000, 6.4.5, 9.5.2)."""
from . import avoidance, boids, couzin, ecology, flocking, predation, reef, schooling, vicsek  # noqa: F401  (registration)
