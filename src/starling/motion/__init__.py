"""Motion: movers turn a desired velocity into new velocities, orientations and positions.

``movers`` holds the built-in ``free`` and ``planar`` movers; ``reversal`` the box-bounded
acceleration mover of seed 002 and ``halfway`` the constant-speed mover of seed 003.
Importing the package registers them all (the built-ins' entry point ``movers`` names
``starling.motion.movers``, and Python imports this package first).
"""
from . import halfway, movers, reversal  # noqa: F401  (registration)
