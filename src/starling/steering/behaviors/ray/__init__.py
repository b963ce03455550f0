"""Ray behaviours: they read the animal and its ray hits against the environment (seed 000, 7.1.4, 9.5.4)."""
from . import avoidance, eight_way, grass  # noqa: F401  (registration)
