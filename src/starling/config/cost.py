"""A rough estimate of a scenario's step cost, to warn before a run that cannot keep real time.

``starling validate`` warns when the estimate is far over the scenario's ``dt`` (a step
must take less than ``dt`` of wall time for the live app to keep real time). The model
counts, per animal and step, what the pipeline does (docs/performance.md: the query, the
behaviours, the merger and the mover are each a pass over the animals):

==========================  ===============================================================
``PER_ANIMAL_US``           the merger, the mover, the bookkeeping: every animal
``PER_GROUP_US``            each neighbour group's query (the grid, pair geometry)
``PER_NEIGHBOUR_US``        each neighbour a group keeps (``k``; 32 for ``all_in_radius``)
``PER_PAIR_US``             ``brute``/``all_pairs`` methods: every target, not only neighbours
``PER_BEHAVIOUR_US``        each behaviour of a species (neighbour, ray or simple)
``PER_RAY_US``              each ray an animal casts (``count`` of each ray group)
``PER_BODY_US``             an environment body (collide and slide)
==========================  ===============================================================

The constants are microseconds on the 2-core machine the project is developed on,
calibrated with ``starling bench`` (see docs/performance.md, "Will it keep real time?"):
``starling bench --sizes 10000,50000`` (0.9 to 1.8 µs an animal for the flocking
pipeline: one group, k = 5, three behaviours), ``starling bench --rays --animals 20000``
(0.14 µs a ray) and ``starling bench --scenario pasture --sizes 2000,20000``. A machine
with more cores runs the threaded kernels faster; the warning is only given when the
estimate is :data:`WARN_FACTOR` times ``dt`` or more, so it is about scenarios that are
far out of reach, not close calls.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

PER_ANIMAL_US = 1.0
PER_GROUP_US = 2.0
PER_NEIGHBOUR_US = 0.2
PER_PAIR_US = 0.002
PER_BEHAVIOUR_US = 0.2
PER_RAY_US = 0.3
PER_BODY_US = 2.0
#: neighbours assumed for an ``all_in_radius`` group (its count depends on the density)
ALL_IN_RADIUS_NEIGHBOURS = 32
#: warn when the estimated step is at least this many times ``dt``
WARN_FACTOR = 2.0


@dataclass(frozen=True)
class StepCost:
    """The estimated wall time of one step, in total and per species (ms)."""

    ms: float
    dt_ms: float
    per_species: dict[str, float]

    @property
    def ratio(self) -> float:
        """Estimated step time over ``dt``: above 1 the live app cannot keep real time."""
        return self.ms / self.dt_ms if self.dt_ms > 0 else float("inf")

    def warning(self) -> str | None:
        """One line when the step is far over ``dt`` (see :data:`WARN_FACTOR`), else None."""
        if self.ratio < WARN_FACTOR:
            return None
        heavy = max(self.per_species, key=self.per_species.get)
        return (f"warning: a step is estimated at {self.ms:.0f} ms, {self.ratio:.0f}× its dt of {self.dt_ms:.1f} ms "
                f"(mostly {heavy}: {self.per_species[heavy]:.0f} ms); the live app would run at about "
                f"{1 / self.ratio:.2g}× real time. Fewer animals, fewer rays or a larger dt bring it closer "
                "(`starling bench --scenario FILE` measures it)")


def estimate_step_cost(scenario: Any) -> StepCost:
    """The step cost model of the module applied to a validated scenario."""
    counts = {sp.name: int(sp.count) for sp in scenario.species}
    per_species: dict[str, float] = {}
    for sp in scenario.species:
        n = counts[sp.name]
        us = PER_ANIMAL_US
        behaviours = len(getattr(sp, "behaviors", ()))
        for group in sp.groups:
            q = group.query
            us += PER_GROUP_US
            us += PER_NEIGHBOUR_US * (q.k if q.mode == "knn" else ALL_IN_RADIUS_NEIGHBOURS)
            if q.method in ("brute", "all_pairs"):
                targets = list(q.targets) or [sp.name]
                us += PER_PAIR_US * sum(counts.get(t, 0) for t in targets)
            behaviours += len(getattr(group, "behaviors", ()))
        for group in getattr(sp, "ray_groups", ()):
            q = group.query
            us += PER_RAY_US * (1 if getattr(q, "shape", "") == "single" else int(getattr(q, "count", 1)))
            behaviours += len(getattr(group, "behaviors", ()))
        us += PER_BEHAVIOUR_US * behaviours
        if getattr(sp, "body", None) is not None:
            us += PER_BODY_US
        per_species[sp.name] = n * us / 1000.0
    return StepCost(sum(per_species.values()), float(scenario.dt) * 1000.0, per_species)
