"""Simple behaviours: they read only the animal itself (seed 000, 2.1.1 and 9.5.1)."""
from . import hold, homing, orientation, paths, room, wandering  # noqa: F401  (registration)
