"""The ecology's config sections, registered with the one system they all build.

Kept apart from :mod:`.config` (the models) and :mod:`.system` (the run-time) so that
neither imports the other's dependents: models <- system <- sections.
"""
from ..steering import registry
from .brains import BrainConfig
from .config import PROVIDED, EcologyConfig, SpeciesEcologyConfig, VariationConfig
from .events import EventsConfig
from .system import EcologySystem


def _system(sim):
    """Build the one ecology system of a simulation (every section's factory lands here)."""
    if getattr(sim, "_ecology_system", None) is not None:
        return None
    system = EcologySystem(sim)
    sim._ecology_system = system
    return system


ORDER = 100  # after the environment's collision resolution


@registry.section("ecology", model=EcologyConfig, order=ORDER, provides=PROVIDED)
def _ecology_world(sim):
    """The world's ecology: ground and water planes, sounds, apples, carcasses, the player."""
    return _system(sim)


@registry.section("ecology", model=SpeciesEcologyConfig, scope="species", order=ORDER, provides=PROVIDED)
def _ecology_species(sim):
    """A species' body: energy, hunger, mouth, eating, body food, carcass, stamina, age."""
    return _system(sim)


@registry.section("brain", model=BrainConfig, scope="species", order=ORDER, provides=PROVIDED)
def _brain(sim):
    """A per-species state machine: states, transitions on conditions, per-state overrides."""
    return _system(sim)


@registry.section("variation", model=VariationConfig, scope="species", order=ORDER, provides=PROVIDED)
def _variation(sim):
    """Per-animal factors and start values drawn at spawn."""
    return _system(sim)


@registry.section("events", model=EventsConfig, order=ORDER, provides=PROVIDED)
def _events(sim):
    """A timeline of scripted events: gunshots, sounds, apples, spawns, kills, tags, parameter changes."""
    return _system(sim)


