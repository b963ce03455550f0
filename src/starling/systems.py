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
"""
from __future__ import annotations

from typing import Any


class System:
    """Base class: every hook is optional."""

    name = "system"

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

    def scene(self, sim: "Simulation") -> dict[str, Any]:
        """Static description for viewers (geometry, …)."""
        return {}
