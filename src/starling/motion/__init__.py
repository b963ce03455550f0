"""Motion: movers turn a desired velocity into new velocities, orientations and positions.

``movers`` holds the built-in ``free`` and ``planar`` movers; ``reversal`` the box-bounded
acceleration mover of seed 002, ``halfway`` the constant-speed mover of seed 003 and
``constant_speed`` the instant-turning mover of self-propelled particles (Vicsek 1995), ``yaw``
the savannah's ground animals (seed 001).
Importing the package registers them all (the built-ins' entry point ``movers`` names
``starling.motion.movers``, and Python imports this package first).
"""
from . import constant_speed, halfway, movers, reversal, yaw  # noqa: F401  (registration)
