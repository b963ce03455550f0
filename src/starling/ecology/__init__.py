"""Ecology: bodies, food, sounds, the player, brains, individual variation and scripted events.

Five registered config sections (see :mod:`starling.ecology.config` and
``docs/ecology.md``) build seven systems that run in a declared order
(:mod:`starling.ecology.sections`): lifecycle, player, sounds, energy, feeding, brains and
factors. They hook into the step (DESIGN §4): events, mouths, memories, brains and
per-animal modulation before the behaviours; the player, sounds, bodies, items and
eating after the movers; death counts and births after the command buffer.

From Python::

    sim = starling.load_scenario("lagoon")
    eco = starling.ecology.ecology_of(sim)     # None when the scenario has no ecology
    eco.kill("fish", uids)                     # structural changes wait for the end of the step
    sim.fire(origin, direction)                # the player's actions (scenarios with a player)
"""
from . import actions as _actions  # noqa: F401  (registers the built-in brain actions)
from . import sections as _sections  # noqa: F401  (registers the sections)
from . import pack as _pack  # noqa: F401  (registers the pride's section)
from . import school as _school  # noqa: F401  (registers seed 004's vision and stagger sections)
from .brain_config import BrainConfig
from .config import EcologyConfig, SpeciesEcologyConfig, VariationConfig
from .events import EventsConfig
from .variation import Distribution


def ecology_of(sim):
    """The ecology of a simulation as one object (:class:`~starling.ecology.facade.Ecology`), or None."""
    return getattr(sim, "_ecology_system", None)


__all__ = ["ecology_of", "BrainConfig", "EcologyConfig", "SpeciesEcologyConfig", "VariationConfig",
           "EventsConfig", "Distribution"]
