"""The savannah's steering (seed 001, Collado 2013, listings A.5–A.10): the Unity steering
formulas of the zebra herd and the lion pride, kept as the appendix computes them.

Every result is a linear acceleration in m/s², returned as a unit direction with the
acceleration's magnitude as its desire, so that the ``acceleration_sum`` merger with
``acceleration = 1`` adds them exactly as the seed's ``Steering.Add(s, w)`` does (the seed's
weight ``w`` is each behaviour's ``factor``; brain states may scale it further) and the
``yaw`` mover crops the sum (``Crop``).
"""
from . import goals, herd, obstacles  # noqa: F401  (registration)
