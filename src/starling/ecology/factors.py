"""The factors system: what bodies, brains and individual variation do to the steering.

Each step, after the brains took their transitions (``before_behaviors``), it writes the
species' per-animal factors into its pipeline: on the top speed (fatigue below
``fatigue_below``, the stamina and age penalties, the brain state's ``max_speed``, the
drawn ``[species.variation] max_speed``), on every acceleration rate (fatigue, the
state's ``acceleration`` and emergency factor, the drawn ``acceleration``) and on each
behaviour's desires (the state's ``weights``/``enabled``/``disabled``, the drawn
``weights``). It owns the drawn factors of ``[species.variation]`` and draws them, and
its ``components`` start values, when an animal enters.
"""
from __future__ import annotations

import numpy as np

from ..systems import Access, ComponentSpec, System
from . import components as C


def owned(species_cfg) -> tuple[ComponentSpec, ...]:
    """The drawn factors a species' ``[species.variation]`` gives its animals."""
    v = getattr(species_cfg, "variation", None)
    if v is None:
        return ()
    out = []
    if v.max_speed is not None:
        out.append(ComponentSpec("var_max_speed", default=1.0))
    if v.acceleration is not None:
        out.append(ComponentSpec("var_acceleration", default=1.0))
    out += [ComponentSpec(f"var_weight_{k}", default=1.0) for k in range(len(v.weights))]
    return tuple(out)


class _Factors:
    """One species' modulation at run time and its reusable buffers."""

    def __init__(self, view, brain):
        self.view = view
        self.brain = brain
        pop = view.pop
        self.owns = owned(view.cfg)
        for spec in self.owns:
            pop.add_component(spec)
        pipeline = view.pipeline
        slot_rows = [(slot.row, slot.params.label or slot.spec.name, slot.spec.name) for slot in pipeline.slots]
        self.rows = pipeline.results.behaviours
        self.weight_vars = []
        variation = view.variation
        if variation is not None:
            for k, (key, dist) in enumerate(variation.weights.items()):
                rows = [r for r, label, kind in slot_rows if key in (label, kind)]
                self.weight_vars.append((np.asarray(rows, np.int64), f"var_weight_{k}", dist))
        eco = view.eco
        self.modulates_speed = (
            (eco is not None and (eco.energy is not None or eco.stamina is not None or eco.age is not None))
            or brain is not None
            or (variation is not None and (variation.max_speed is not None or variation.acceleration is not None)))
        self.modulates_desires = bool(self.weight_vars) or (brain is not None and brain.modulates_desires)
        self._speed = np.ones(0, np.float32)
        self._accel = np.ones(0, np.float32)
        self._desire = np.ones((self.rows, 0), np.float32)
        if not self.modulates_speed:
            pipeline.speed_scale = None
            pipeline.accel_scale = None
        if not self.modulates_desires:
            pipeline.desire_scale = None

    def reads(self) -> tuple[ComponentSpec, ...]:
        eco = self.view.eco
        names = []
        if eco is not None:
            names += ["energy"] if eco.energy is not None else []
            names += ["stamina"] if eco.stamina is not None else []
            names += ["age"] if eco.age is not None else []
        if self.brain is not None:
            names.append("state")
        return tuple(ComponentSpec(n) for n in names)


class FactorsSystem(System):
    """Per-animal speed, acceleration and desire factors into the pipelines (see the module)."""

    name = "factors"

    def __init__(self, ctx):
        self.ctx = ctx
        self.species = {v.name: _Factors(v, ctx.brains.brain_of(v.name)) for v in ctx.species if v.kit}

    def components(self) -> dict[str, Access]:
        return {name: Access(owns=f.owns, reads=f.reads()) for name, f in self.species.items()}

    def before_behaviors(self, sim, dt: float) -> None:
        for f in self.species.values():
            if f.view.pop.n:
                self._modulate(f)

    def born(self, view, rows, rng) -> None:
        """The animals' drawn factors and the start values of ``[species.variation] components``."""
        f = self.species.get(view.name)
        v = view.variation
        if f is None or v is None:
            return
        pop = view.pop
        k = rows.size
        if v.max_speed is not None:
            pop.component("var_max_speed")[rows] = v.max_speed.sample(rng, k, 0.0)
        if v.acceleration is not None:
            pop.component("var_acceleration")[rows] = v.acceleration.sample(rng, k, 0.0)
        for _, comp, dist in f.weight_vars:
            pop.component(comp)[rows] = dist.sample(rng, k, 0.0)
        for name, dist in v.components.items():
            pop.component(name)[rows] = dist.sample(rng, k)

    def _modulate(self, f: _Factors) -> None:
        """Write this step's per-animal factors into the pipeline (speed, acceleration, desires)."""
        view = f.view
        pop = view.pop
        pipeline = view.pipeline
        n = pop.n
        if f.modulates_speed:
            if f._speed.shape[0] < n:
                cap = max(n, pop.capacity)
                f._speed = np.ones(cap, np.float32)
                f._accel = np.ones(cap, np.float32)
            speed = np.ones(n, np.float64)
            accel = np.ones(n, np.float64)
            eco = view.eco
            if eco is not None and eco.energy is not None:
                e = pop.component("energy")
                below = view.get("energy", "fatigue_below")
                speed *= C.fatigue(e, below, view.get("energy", "min_speed_factor"))
                accel *= C.fatigue(e, below, view.get("energy", "min_accel_factor"))
            penalty = np.zeros(n)
            if eco is not None and eco.stamina is not None:
                penalty += C.stamina_penalty(pop.component("stamina"), view.get("stamina", "penalty_below"),
                                             view.get("stamina", "max_penalty"))
            if eco is not None and eco.age is not None:
                a = eco.age
                penalty += C.age_penalty(pop.component("age"), a.young_below, a.old_above, a.old_span,
                                         view.get("age", "max_penalty"))
            if penalty.any():
                speed *= np.maximum(0.05, 1.0 - penalty / view.mover_max)
            variation = view.variation
            if variation is not None:
                if variation.max_speed is not None:
                    speed *= pop.component("var_max_speed")
                if variation.acceleration is not None:
                    accel *= pop.component("var_acceleration")
            if f.brain is not None:
                st = pop.component("state").astype(np.int64)
                speed *= f.brain.speed_factor[st]
                accel *= f.brain.accel_factor[st]
            f._speed[:n] = speed
            f._accel[:n] = accel
            pipeline.speed_scale = f._speed
            pipeline.accel_scale = f._accel
        if f.modulates_desires:
            if f._desire.shape[1] < n:
                f._desire = np.ones((f.rows, max(n, pop.capacity)), np.float32)
            d = f._desire[:, :n]
            if f.brain is not None and f.brain.modulates_desires:
                d[:] = f.brain.weights[pop.component("state").astype(np.int64)].T
            else:
                d[:] = 1.0
            for rows, comp, _ in f.weight_vars:
                d[rows] *= pop.component(comp)[None, :]
            pipeline.desire_scale = f._desire
