"""The factors system: what bodies, brains and individual variation do to the steering.

Each step, after the brains took their transitions (``before_behaviors``), it writes the
species' per-animal factors into its pipeline: on the top speed (fatigue below
``fatigue_below``, the stamina and age penalties, the brain state's ``max_speed``, the
drawn ``[species.variation] max_speed``), on every acceleration rate (fatigue, the
state's ``acceleration`` and emergency factor, the drawn ``acceleration``) and on each
behaviour's desires (the state's ``weights``/``enabled``/``disabled``, the drawn
``weights``), and on the rotation limit where a brain state sets ``max_rotation_deg``.
It owns the drawn factors of ``[species.variation]`` and draws them, and
its ``components`` start values, when an animal enters.
"""
from __future__ import annotations

from typing import Optional

import numpy as np
from numba import njit

from ..kernel_calls import CallSite
from ..systems import Access, ComponentSpec, System
from .variation import drawn_float64


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
        self._turn = np.ones(0, np.float32)
        self._desire = np.ones((self.rows, 0), np.float32)
        # which behaviour rows each drawn weight multiplies (k, rows), and neutral tables for the kernels
        self.var_rows = np.zeros((len(self.weight_vars), self.rows), np.bool_)
        for k, (rows, _, _) in enumerate(self.weight_vars):
            self.var_rows[k, rows] = True
        self.one = np.ones(1, np.float32)
        self.no_weights = np.ones((1, self.rows), np.float32)
        self._none = np.zeros(0, np.float32)
        self._params: dict = {}
        self._columns = np.ones((len(self.weight_vars), 0), np.float32)
        self.speed_args = None  # (layout, speed buffer, arguments, refresh) of _speed_factors, see FactorsSystem._modulate
        self.kernel_calls = CallSite()  # _speed_factors' arguments are of one type for the species' life
        self.desire_calls = CallSite()  # and _desire_factors' (whole buffers: the same layout whatever n)
        if not self.modulates_speed:
            pipeline.speed_scale = None
            pipeline.accel_scale = None
        if brain is None or not brain.turns:
            pipeline.turn_scale = None
        if not self.modulates_desires:
            pipeline.desire_scale = None

    def param(self, section: str, field: str, refresh: list) -> tuple:
        """:func:`_param`, kept while it is one number (draws move with the animals: their copies are
        filled again by ``refresh`` before each call)."""
        hit = self._params.get((section, field))
        if hit is not None:
            return hit
        out = _param(self.view, section, field, refresh)
        if not out[1]:
            self._params[(section, field)] = out
        return out

    def none(self, n: int) -> np.ndarray:
        """A placeholder array for a component the species does not have (never read)."""
        if self._none.shape[0] < n:
            self._none = np.zeros(max(n, self.view.pop.capacity), np.float32)
        return self._none[:n]

    def columns(self, n: int) -> np.ndarray:
        if self._columns.shape[1] < n:
            self._columns = np.ones((len(self.weight_vars), max(n, self.view.pop.capacity)), np.float32)
        return self._columns[:, :n]

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

    @staticmethod
    def _speed_args(f: _Factors, pop, n: int, none, state) -> tuple:
        """``_speed_factors``' arguments under this layout, and the operations that refill, before
        each call, the float64 copies they hold of parameters drawn per animal."""
        view = f.view
        eco = view.eco
        energy = eco is not None and eco.energy is not None
        stamina = eco is not None and eco.stamina is not None
        age = eco.age if eco is not None and eco.age is not None else None
        var = view.variation
        refresh: list = []
        below, min_speed, min_accel = (f.param("energy", x, refresh) for x in
                                       ("fatigue_below", "min_speed_factor", "min_accel_factor"))
        pen_below, pen_max = (f.param("stamina", x, refresh) for x in ("penalty_below", "max_penalty"))
        age_max = f.param("age", "max_penalty", refresh)
        brain = f.brain
        args = (
            pop.component("energy") if energy else none, energy, *below, *min_speed, *min_accel,
            pop.component("stamina") if stamina else none, stamina, *pen_below, *pen_max,
            pop.component("age") if age else none, age is not None,
            np.float32(max(age.young_below, 1e-9) if age else 1.0), bool(age and age.young_below > 0),
            np.float32(age.old_above if age else 0.0), np.float32(age.old_span if age else 1.0),
            *age_max, view.mover_max,
            pop.component("var_max_speed") if var is not None and var.max_speed is not None else none,
            var is not None and var.max_speed is not None,
            pop.component("var_acceleration") if var is not None and var.acceleration is not None else none,
            var is not None and var.acceleration is not None,
            state, brain is not None, brain.speed_factor if brain else f.one, brain.accel_factor if brain else f.one,
            f._speed[:n], f._accel[:n])
        return args, tuple(refresh)

    def _modulate(self, f: _Factors) -> None:
        """Write this step's per-animal factors into the pipeline (speed, acceleration, desires)."""
        view = f.view
        pop = view.pop
        pipeline = view.pipeline
        n = pop.n
        none = f.none(n)
        state = pop.component("state") if f.brain is not None else none
        if f.modulates_speed:
            if f._speed.shape[0] < n:
                cap = max(n, pop.capacity)
                f._speed = np.ones(cap, np.float32)
                f._accel = np.ones(cap, np.float32)
            kept = f.speed_args  # kept while the layout and the buffers hold
            if kept is None or kept[0] != pop.layout or kept[1] is not f._speed:
                kept = f.speed_args = (pop.layout, f._speed, *self._speed_args(f, pop, n, none, state))
            else:
                for fill in kept[3]:  # this step's draws into the copies the arguments hold
                    fill()
            f.kernel_calls(_speed_factors, n, *kept[2])
            pipeline.speed_scale = f._speed
            pipeline.accel_scale = f._accel
        if f.brain is not None and f.brain.turns:
            if f._turn.shape[0] < n:
                f._turn = np.ones(max(n, pop.capacity), np.float32)
            f._turn[:n] = f.brain.turn_factor[state[:n].astype(np.int64)]
            pipeline.turn_scale = f._turn
        if f.modulates_desires:
            if f._desire.shape[1] < n:
                f._desire = np.ones((f.rows, max(n, pop.capacity)), np.float32)
            weights = f.brain is not None and f.brain.modulates_desires
            columns = f.columns(n)
            for k, (_, comp, _) in enumerate(f.weight_vars):
                columns[k] = pop.component(comp)
            # the whole buffers and n: a view of the first n columns would be C-contiguous for some n and not
            # for others, and each layout is a compilation of its own
            f.desire_calls(_desire_factors, n, n, state, weights, f.brain.weights if weights else f.no_weights,
                           f._columns, f.var_rows, f._desire)
            pipeline.desire_scale = f._desire


def _param(view, section: str, field: str, refresh: Optional[list] = None) -> tuple:
    """``(values, per_animal)``: a parameter as float64 (one value, or a copy of the animals' draws
    that ``refresh`` fills again: :func:`~.variation.drawn_float64`)."""
    if not view.has(section):
        return np.zeros(1), False
    value = view.get(section, field)
    if isinstance(value, np.ndarray):
        return drawn_float64(value, refresh), True
    return np.full(1, float(value)), False


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _at(values, i):
    return values[i] if values.shape[0] > 1 else values[0]


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _fatigue(e, below, below_drawn, minimum, minimum_drawn, i):
    """``fatigue`` of :mod:`.components` for one animal, in NumPy's precision (float32 when the threshold is drawn)."""
    if below_drawn:
        b = np.float32(_at(below, i))
        g = min(max(e / max(b, np.float32(1e-9)), np.float32(0.0)), np.float32(1.0))
        if b <= 0.0:
            g = np.float32(1.0)
        if minimum_drawn:
            m = np.float32(_at(minimum, i))
            return np.float64(m + (np.float32(1.0) - m) * g)
        m64 = _at(minimum, i)
        return np.float64(np.float32(m64) + np.float32(1.0 - m64) * g)
    b64 = _at(below, i)
    g64 = min(max(np.float64(e) / max(b64, 1e-9), 0.0), 1.0)
    if b64 <= 0.0:
        g64 = 1.0
    m64 = _at(minimum, i)
    if minimum_drawn:  # 1 − m of a float32 array is float32 before it meets the float64 g
        return m64 + np.float64(np.float32(1.0) - np.float32(m64)) * g64
    return m64 + (1.0 - m64) * g64


@njit(cache=True, no_cfunc_wrapper=True)
def _speed_factors(energy, has_energy, below, below_drawn, min_speed, min_speed_drawn, min_accel, min_accel_drawn,
                   stamina, has_stamina, pen_below, pen_below_drawn, pen_max, pen_max_drawn,
                   age, has_age, young_below, young, old_above, old_span, age_max, age_max_drawn, mover_max,
                   var_speed, has_var_speed, var_accel, has_var_accel, state, has_brain, state_speed, state_accel,
                   speed_out, accel_out):
    """Each animal's factor on its top speed and on its accelerations (float64, written as float32).

    Fatigue (energy below ``fatigue_below``), the stamina and age penalties in m/s (their
    sum ``p`` scales the top speed by ``max(0.05, 1 − p / top speed)``), the drawn factors,
    the brain state's factors — :mod:`.components`' rules, in NumPy's precision.
    """
    one32 = np.float32(1.0)
    zero32 = np.float32(0.0)
    for i in range(speed_out.shape[0]):
        speed = 1.0
        accel = 1.0
        if has_energy:
            e = energy[i]
            speed *= _fatigue(e, below, below_drawn, min_speed, min_speed_drawn, i)
            accel *= _fatigue(e, below, below_drawn, min_accel, min_accel_drawn, i)
        penalty = 0.0
        if has_stamina:
            st = stamina[i]
            if pen_below_drawn:
                b = np.float32(_at(pen_below, i))
                frac = min(max(one32 - st / max(b, np.float32(1e-9)), zero32), one32)
                penalty += 0.0 if b <= 0.0 else np.float64(np.float32(_at(pen_max, i)) * frac)
            else:
                b64 = _at(pen_below, i)
                frac64 = min(max(1.0 - np.float64(st) / max(b64, 1e-9), 0.0), 1.0)
                penalty += 0.0 if b64 <= 0.0 else _at(pen_max, i) * frac64
        if has_age:
            a = age[i]
            y = min(max(one32 - a / young_below, zero32), one32) if young else zero32
            o = min(max((a - old_above) / old_span, zero32), one32)
            penalty += np.float64(np.float32(_at(age_max, i)) * max(y, o))
        speed *= max(0.05, 1.0 - penalty / mover_max)
        if has_var_speed:
            speed *= np.float64(var_speed[i])
        if has_var_accel:
            accel *= np.float64(var_accel[i])
        if has_brain:
            s = np.int64(state[i])
            speed *= np.float64(state_speed[s])
            accel *= np.float64(state_accel[s])
        speed_out[i] = speed
        accel_out[i] = accel


@njit(cache=True, no_cfunc_wrapper=True)
def _desire_factors(n, state, by_state, weights, columns, rows, out):
    """Each behaviour row's factor on the desires of animals ``0 .. n - 1``: the state's weight times the drawn ones."""
    for i in range(n):
        s = np.int64(state[i]) if by_state else 0
        for r in range(out.shape[0]):
            out[r, i] = weights[s, r] if by_state else np.float32(1.0)
        for k in range(rows.shape[0]):
            for r in range(out.shape[0]):
                if rows[k, r]:
                    out[r, i] = out[r, i] * columns[k, i]
