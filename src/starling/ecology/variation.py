"""Individual variation in the ecology's tables.

A numeric ecology parameter may be a plain number or a distribution drawn per animal
at spawn (``drain = { uniform = [0.08, 0.12] }``); the types and draws are the core's
(:mod:`starling.steering.distributions`), shared with every behaviour parameter.
``[species.variation]`` adds factors on the mover's top speed and accelerations and on
whole behaviours' desires, and the start values of components.
"""
from ..steering.distributions import Bounds, Distribution, bounds_of, num, parse_distribution

__all__ = ["Bounds", "Distribution", "bounds_of", "num", "parse_distribution"]
