"""The ecology's config sections and the systems they build, in the order they run.

Five registered sections (:mod:`.config` has the models) build one set of systems;
whichever section a scenario has, all of them exist, in this order:

=============  =========================================================================
``lifecycle``  scripted events (first of the step); deaths counted and newcomers born
               (after the command buffer)
``player``     the player walks (after the movers); its shots and throws
``sounds``     sounds grow, expire and are heard
``energy``     energy, hunger, starvation, stamina, age
``feeding``    mouths (before the behaviours); apples and carcasses, chewing, bites, catches
``brains``     threat memories and state transitions (before the behaviours); time in state
``factors``    per-animal speed, acceleration and desire factors into the pipelines
=============  =========================================================================

Within each hook the systems run in this order, which is the order of effects the
ecology has always had (events before brains, brains before factors; bodies before
bites, so a starving animal is not also caught in the same step), and the order in
which they draw from the ecology's one random stream.
"""
from ..steering import registry
from .brains import BrainConfig, BrainsSystem
from .config import PROVIDED, EcologyConfig, SpeciesEcologyConfig, VariationConfig
from .energy import EnergySystem
from .events import EventsConfig
from .facade import Ecology
from .factors import FactorsSystem
from .feeding import FeedingSystem
from .lifecycle import LifecycleSystem
from .player import PlayerSystem
from .sounds import SoundsSystem
from .species import EcologyContext

#: the ecology's systems in the order they run (and are built: each may use those before it)
SYSTEMS = (LifecycleSystem, PlayerSystem, SoundsSystem, EnergySystem, FeedingSystem, BrainsSystem, FactorsSystem)


def _systems(sim):
    """Build the ecology's systems once per simulation (every section's factory lands here)."""
    if getattr(sim, "_ecology_system", None) is not None:
        return None
    world = sim.world
    for name in PROVIDED:  # the populations the ecology provides, in a fixed order (viewers list them so)
        world.ensure_population(name)
    ctx = EcologyContext(sim, getattr(sim.scenario, "ecology", None) or EcologyConfig())
    systems = []
    for cls in SYSTEMS:
        system = cls(ctx)
        systems.append(system)
        setattr(ctx, system.name, system)
    ctx.attach(systems)
    sim._ecology_system = Ecology(ctx)
    if LifecycleSystem.name not in getattr(sim, "saved_systems", ()):  # a restored run births after load_state
        ctx.lifecycle.births()
    return systems


ORDER = 100  # after the environment's collision resolution


@registry.section("ecology", model=EcologyConfig, order=ORDER, provides=PROVIDED)
def _ecology_world(sim):
    """The world's ecology: ground and water planes, sounds, apples, carcasses, the player."""
    return _systems(sim)


@registry.section("ecology", model=SpeciesEcologyConfig, scope="species", order=ORDER, provides=PROVIDED)
def _ecology_species(sim):
    """A species' body: energy, hunger, mouth, eating, body food, carcass, stamina, age."""
    return _systems(sim)


@registry.section("brain", model=BrainConfig, scope="species", order=ORDER, provides=PROVIDED)
def _brain(sim):
    """A per-species state machine: states, transitions on conditions, per-state overrides."""
    return _systems(sim)


@registry.section("variation", model=VariationConfig, scope="species", order=ORDER, provides=PROVIDED)
def _variation(sim):
    """Per-animal factors and start values drawn at spawn."""
    return _systems(sim)


@registry.section("events", model=EventsConfig, order=ORDER, provides=PROVIDED)
def _events(sim):
    """A timeline of scripted events: gunshots, sounds, apples, spawns, kills, tags, parameter changes."""
    return _systems(sim)
