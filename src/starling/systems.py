"""Systems: whole-world updates that are not steering (environment, ecology, brains).

A system is built from a registered config section (see ``registry.section``) and
hooks into the fixed order of a step (DESIGN §4)::

    before_behaviors   brains: transitions, timers, per-animal behaviour weights
    (steering, movers)
    after_move         collision resolution, eating, energy, sounds expiring, catches
    (command buffer applied)
    after_commands     react to kills/spawns (counters, carcasses)

A system is rebuilt whenever the simulation is restored or reconfigured; what it must
carry over it returns from :meth:`System.state` and takes back in :meth:`System.load_state`.

Systems only touch the world through populations, components and the command buffer,
so the snapshot rule holds: everything they read in ``after_move`` is the moved state
of this step, everything structural waits for the end of the step.

**Declared access (bevy's system parameters, PySPH's array names).** A system says, per
population, which components it *owns* (creates with their type and default, keeps
up to date, initialises for newcomers) and which components of other owners it
*reads* or *writes*, each as a typed :class:`ComponentSpec`. When a simulation is built
every read and write must name a component somebody owns (a system, or the scenario's
``components`` table, which only gives a start value where a system also owns the
component), with the same dtype and shape, and no component may have two owning
systems; otherwise the build fails with a :class:`~starling.errors.ConfigError` naming
the system and the component, before the first step.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Optional

import numpy as np

from .errors import ConfigError, Problem


@dataclass(frozen=True)
class ComponentSpec:
    """One per-animal component: its name, element type, shape per animal and default.

    ``shape`` is the shape of one animal's value (``()`` a number, ``(3,)`` a vector);
    the population stores ``(n,) + shape`` arrays of ``dtype``. ``default`` is what an
    animal gets when nobody gives it a value.
    """

    name: str
    dtype: str = "float32"
    shape: tuple[int, ...] = ()
    default: float = 0.0

    def __post_init__(self):
        object.__setattr__(self, "dtype", np.dtype(self.dtype).name)
        object.__setattr__(self, "shape", tuple(int(x) for x in self.shape))

    def same_type(self, other: "ComponentSpec") -> bool:
        return self.dtype == other.dtype and self.shape == other.shape

    def describe(self) -> str:
        return f"{self.dtype}{list(self.shape) if self.shape else ''}"


def specs(names: Iterable[str] | Mapping[str, float], dtype: str = "float32") -> tuple[ComponentSpec, ...]:
    """Float components from names (default 0) or from ``{name: default}``."""
    if isinstance(names, Mapping):
        return tuple(ComponentSpec(n, dtype, (), float(d)) for n, d in names.items())
    return tuple(ComponentSpec(n, dtype) for n in names)


@dataclass(frozen=True)
class Access:
    """What one system does with one population's components."""

    owns: tuple[ComponentSpec, ...] = ()
    reads: tuple[ComponentSpec, ...] = ()
    writes: tuple[ComponentSpec, ...] = ()

    def __or__(self, other: "Access") -> "Access":
        return Access(self.owns + other.owns, self.reads + other.reads, self.writes + other.writes)


def check_access(systems, declared: Mapping[str, Iterable[ComponentSpec]], where: Mapping[str, str]) -> None:
    """Every component a system reads or writes has exactly one owner of the same type.

    ``declared``: per population, the components the scenario itself declares (its
    ``components`` tables); ``where``: the config path of each population (for the error).
    Raises :class:`ConfigError` listing every problem, naming the system and the component.
    """
    owners: dict[str, dict[str, tuple[str, ComponentSpec]]] = {}
    for pop, comps in declared.items():
        for spec in comps:
            owners.setdefault(pop, {})[spec.name] = ("the scenario's components table", spec)
    problems = []
    accesses = [(system, system.components()) for system in systems]
    for system, by_pop in accesses:
        for pop, access in by_pop.items():
            mine = owners.setdefault(pop, {})
            for spec in access.owns:
                held = mine.get(spec.name)
                if held is not None and held[0].startswith("system ") and held[0] != f"system {system.name!r}":
                    problems.append(Problem(where.get(pop, pop), f"system {system.name!r} and {held[0]} both own "
                                                                 f"component {spec.name!r}"))
                mine[spec.name] = (f"system {system.name!r}", spec)
    for system, by_pop in accesses:
        for pop, access in by_pop.items():
            mine = owners.get(pop, {})
            for verb, wanted in (("reads", access.reads), ("writes", access.writes)):
                for spec in wanted:
                    held = mine.get(spec.name)
                    if held is None:
                        problems.append(Problem(where.get(pop, pop), (
                            f"system {system.name!r} {verb} component {spec.name!r} of {pop!r}, which no system "
                            f"owns (owned: {', '.join(sorted(mine)) or 'none'})")))
                    elif not held[1].same_type(spec):
                        problems.append(Problem(where.get(pop, pop), (
                            f"system {system.name!r} {verb} component {spec.name!r} of {pop!r} as "
                            f"{spec.describe()}, but {held[0]} owns it as {held[1].describe()}")))
    if problems:
        raise ConfigError(problems)


class System:
    """Base class: every hook is optional."""

    name = "system"

    def components(self) -> dict[str, Access]:
        """Per population name: the components this system owns, reads and writes (see the module)."""
        return {}

    def before_behaviors(self, sim: "Simulation", dt: float) -> None:
        """Before any species computes its desired velocity."""

    def after_move(self, sim: "Simulation", dt: float) -> None:
        """After every species has moved, before the command buffer is applied."""

    def after_commands(self, sim: "Simulation", killed: dict) -> None:
        """After spawns, kills and tag changes took effect (``killed``: uids per species)."""

    def state(self, sim: "Simulation") -> dict[str, Any]:
        """Everything this system changes while running that populations do not hold, as plain
        data (numbers, strings, lists, dicts, NumPy arrays, generator states); see ``Simulation.snapshot``."""
        return {}

    def load_state(self, sim: "Simulation", state: dict[str, Any]) -> None:
        """Continue from ``state`` (what :meth:`state` returned), on a system just built from the
        same config or an edited one (``sim.previous_scenario`` is the config ``state`` ran under)."""

    def health(self, sim: "Simulation") -> dict[str, Any]:
        """Extra health counters for ``starling run --json`` (all zero when healthy)."""
        return {}

    def species_summary(self, sim: "Simulation", species: str) -> dict[str, Any]:
        """Extra per-species numbers for ``starling run --json``."""
        return {}

    def inspect(self, sim: "Simulation", species: str, row: int) -> dict[str, Any]:
        """Extra fields shown for a selected animal."""
        return {}

    def labels(self, sim: "Simulation", species: str) -> Optional[list[str]]:
        """A short word per animal (row order) for viewers to draw over its head — a brain's
        state, a rank in a pack — or None when this system has nothing to say about them."""
        return None

    def scene(self, sim: "Simulation") -> dict[str, Any]:
        """Static description for viewers (geometry, …)."""
        return {}
