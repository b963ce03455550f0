"""Ecology: bodies, food, sounds, the player, brains, individual variation and scripted events.

Everything here is one system (:class:`EcologySystem`) driven by registered config
sections (see :mod:`starling.ecology.config` and ``docs/ecology.md``). It hooks into the
step (DESIGN §4): brains, memories and per-animal modulation before the behaviours;
bodies, items, sounds and eating after the movers; births and death counts after the
command buffer.

From Python::

    sim = starling.load_scenario("lagoon")
    eco = starling.ecology.ecology_of(sim)     # None when the scenario has no ecology
    eco.kill("fish", uids)                     # structural changes wait for the end of the step
    sim.fire(origin, direction)                # the player's actions (scenarios with a player)
"""
from . import sections as _sections  # noqa: F401  (registers the sections)
from .brains import BrainConfig
from .config import EcologyConfig, SpeciesEcologyConfig, VariationConfig
from .events import EventsConfig
from .variation import Distribution


def ecology_of(sim):
    """The ecology system of a simulation, or None."""
    return getattr(sim, "_ecology_system", None)


__all__ = ["ecology_of", "BrainConfig", "EcologyConfig", "SpeciesEcologyConfig", "VariationConfig",
           "EventsConfig", "Distribution"]
