"""Movers. Importing the package registers every shipped mover: ``free`` and ``planar``
(``movers.py``) and seed 002's ``reversal`` (``reversal.py``); the ``starling.plugins``
entry point ``movers`` names ``starling.motion.movers``, whose import runs this first."""
from . import movers, reversal  # noqa: F401  (registration)
