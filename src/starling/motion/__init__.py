"""Motion: movers turn a desired velocity into new velocities, orientations and positions.

``movers`` holds the built-in ``free`` and ``planar`` movers; ``halfway`` the constant-speed
mover of seed 003. Importing the package registers both (the built-ins' entry point is
``starling.motion.movers``, and Python imports this package first).
"""
from . import halfway  # noqa: F401  (registers "halfway")
