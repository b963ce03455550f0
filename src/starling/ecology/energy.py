"""The energy system: bodies that tire, hunger, starve, run out of stamina and age.

It owns, for every species with an ecology section, ``energy`` and ``hunger`` (and
``stamina``, ``age``, ``starving`` where configured, and the drawn parameters of those
tables). After the movers (``after_move``) each body advances by ``dt`` from the speed
the animal just moved at (the rules are in :mod:`starling.ecology.components`);
starvation and old age kill through the lifecycle. At birth every animal gets its start
values (drawn, where a start is a distribution).
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np
from numba import njit

from ..kernel_calls import CallSite
from ..systems import Access, ComponentSpec, System
from . import components as C
from .variation import Distribution, bounds_of, drawn_float64

SECTIONS = ("energy", "hunger", "stamina", "age")
ENERGY = ComponentSpec("energy", default=1.0)
HUNGER = ComponentSpec("hunger", default=1.0)
STAMINA = ComponentSpec("stamina", default=0.0)
AGE = ComponentSpec("age", default=0.0)
STARVING = ComponentSpec("starving", default=0.0)


def owned(species_cfg) -> tuple[ComponentSpec, ...]:
    """The body components a species config gives its animals (none without an ecology section)."""
    eco = getattr(species_cfg, "ecology", None)
    out = [ENERGY, HUNGER]
    if eco is not None:
        if eco.stamina is not None:
            out.append(STAMINA)
        if eco.age is not None:
            out.append(AGE)
        if eco.hunger is not None and eco.hunger.starve_after is not None:
            out.append(STARVING)
    return tuple(out)


class _Body:
    """One species' body settings at run time."""

    def __init__(self, view):
        self.view = view
        self.owns = owned(view.cfg)
        for spec in self.owns:
            view.pop.add_component(spec)
        self.drawn = tuple(view.bind_sampled(SECTIONS))
        eco = view.eco
        self.drain_ids = None
        if eco is not None and eco.stamina is not None and eco.stamina.drain_states and view.brain_cfg is not None:
            ids = {s.name: i for i, s in enumerate(view.brain_cfg.states)}
            self.drain_ids = np.array([ids[s] for s in eco.stamina.drain_states], np.float32)
        self.cap = 0
        self.kept = None  # (layout, capacity, dt, arguments, refresh) of the kernel, see EnergySystem._advance
        self.kernel_calls = CallSite()  # the kernel's arguments are of one type for the body's life
        self.table = {t: eco is not None and getattr(eco, t) is not None for t in SECTIONS}
        self.starve = self.table["hunger"] and eco.hunger.starve_after is not None
        self.ages = self.table["age"] and eco.age.max_age is not None
        self._params: dict = {}
        # the mover's top speed shared by every animal: one array for the body's life (a reconfiguration builds
        # a new body); drawn top speeds are read from the animals every step
        self._top = None if view.max_speed_drawn or view.speed_factor_drawn else _top_speed(view)

    def top_speed(self, refresh: list):
        """:func:`_top_speed` of the body's species (``refresh``: see there)."""
        return _top_speed(self.view, refresh) if self._top is None else self._top

    def params(self, section: str, fields, refresh: list) -> list:
        """:func:`_params`, kept while none of them is drawn per animal (draws move with the animals:
        their copies are filled again by ``refresh`` before each call)."""
        hit = self._params.get(section)
        if hit is not None:
            return hit
        out = _params(self.view, section, fields, refresh)
        if not out[-1]:
            self._params[section] = out
        return out

    def reserve(self, n: int) -> None:
        """Per-animal scratch, grown by capacity (no allocation per step)."""
        if n > self.cap:
            self.cap = cap = max(n, int(self.cap * 1.5), 16)
            self.may_lose = np.ones(cap, np.bool_)
            self.starved = np.zeros(cap, np.bool_)
            self.old = np.zeros(cap, np.bool_)
            self.none = np.zeros(cap, np.float32)


class EnergySystem(System):
    """Energy, hunger, starvation, stamina and age (see the module)."""

    name = "energy"

    def __init__(self, ctx):
        self.ctx = ctx
        self.bodies = {v.name: _Body(v) for v in ctx.species if v.kit}

    def components(self) -> dict[str, Access]:
        out = {}
        for name, body in self.bodies.items():
            v = body.view
            reads = []
            if v.speed_factor_drawn:
                reads.append(ComponentSpec("var_max_speed", default=1.0))
            if body.drain_ids is not None:
                reads.append(ComponentSpec("state"))
            if v.max_speed_drawn:
                reads.append(ComponentSpec("mover_max_speed"))
            out[name] = Access(owns=body.owns + body.drawn, reads=tuple(reads))
        return out

    def after_move(self, sim, dt: float) -> None:
        for body in self.bodies.values():
            if body.view.pop.n:
                self._advance(body, dt)

    @staticmethod
    def _body_args(body: _Body, pop, n: int, dt: float) -> tuple:
        """``_bodies``' arguments under this layout, and the operations that refill, before each
        call, the float64 copies they hold of parameters drawn per animal (which move with the
        animals' values, while the arrays stay those of the layout)."""
        v = body.view
        eco = v.eco
        none = body.none[:n]
        table = body.table
        refresh: list = []
        top, top_f32 = body.top_speed(refresh)
        drain, recovery, _ = body.params("energy", ("drain", "recovery"), refresh)
        rate, starve_after, hunger_drawn = body.params("hunger", ("rate", "starve_after"), refresh)
        # a shared hunger rate is multiplied by dt as Python numbers, then added to the float32 hunger
        rate_dt = float(rate[0]) * dt if not hunger_drawn & 1 else 0.0
        lose, regain, maximum, _ = body.params("stamina", ("lose", "regain", "max"), refresh)
        st = eco.stamina if table["stamina"] else None
        age = eco.age if table["age"] else None
        args = (pop.velocity, top, top_f32, np.float32(v.mover_max),
                pop.component("energy") if table["energy"] else none, table["energy"], drain, recovery,
                eco.energy.drain_power if table["energy"] else 2.0,
                pop.component("hunger") if table["hunger"] else none, table["hunger"], rate, hunger_drawn & 1,
                rate_dt, pop.component("starving") if body.starve else none, body.starve, starve_after,
                pop.component("stamina") if st else none, st is not None, lose, regain, maximum, body.may_lose[:n],
                st.lose_above if st else 1.0, st.regain_below if st else 0.0,
                pop.component("age") if age else none, age is not None,
                np.float32(age.years_per_second * dt) if age else np.float32(0.0),
                np.float32(age.max_age if body.ages else 0.0), body.ages, dt, body.starved[:n], body.old[:n])
        return args, tuple(refresh)

    def _advance(self, body: _Body, dt: float) -> None:
        """Energy, hunger, stamina and age advance by ``dt`` (after the move); deaths go to the lifecycle."""
        v = body.view
        pop = v.pop
        n = pop.n
        eco = v.eco
        body.reserve(n)
        kept = body.kept  # the kernel's arguments, kept while the layout, the buffers and dt hold
        if kept is None or kept[0] != pop.layout or kept[1] != body.cap or kept[2] != dt:
            kept = body.kept = (pop.layout, body.cap, dt, *self._body_args(body, pop, n, dt))
        else:
            for fill in kept[4]:  # this step's draws into the copies the arguments hold
                fill()
        args = kept[3]
        may_lose = body.may_lose[:n]  # (the array args holds: the same rows of the same buffer)
        if body.table["stamina"] and body.drain_ids is not None:
            may_lose[:] = np.isin(pop.component("state"), body.drain_ids)
        else:
            may_lose[:] = True
        dying = body.kernel_calls(_bodies, n, *args)
        starved, old = args[-2], args[-1]
        if dying:
            if body.starve and starved.any():
                self.ctx.lifecycle.kill(v.name, pop.uid[starved], cause="starvation")
            if body.ages and old.any():
                self.ctx.lifecycle.kill(v.name, pop.uid[old], cause="old age")

    def born(self, view, rows, rng) -> None:
        """Start values: energy, hunger, stamina (default: its maximum) and age."""
        body = self.bodies.get(view.name)
        if body is None:
            return
        eco = view.eco
        pop = view.pop
        k = rows.size

        def start(section: str, field: str, comp: str, default) -> None:
            sub = getattr(eco, section, None) if eco is not None else None
            value = default if sub is None else getattr(sub, field)
            if value is None:
                value = default
            if isinstance(value, Distribution):
                b = bounds_of(type(sub).model_fields[field])
                value = value.sample(rng, k, b.lo, b.hi)
            elif isinstance(value, np.ndarray):
                value = value[rows]
            pop.component(comp)[rows] = value

        start("energy", "start", "energy", 1.0)
        start("hunger", "start", "hunger", 1.0)
        if eco is not None and eco.stamina is not None:
            start("stamina", "start", "stamina", view.get("stamina", "max"))
        if eco is not None and eco.age is not None:
            start("age", "start", "age", 10.0)
        if pop.has_component("starving"):
            pop.component("starving")[rows] = 0.0


def _top_speed(v, refresh: Optional[list] = None):
    """Each animal's top speed as the kernel takes it: (values, whether NumPy would divide in float32).

    The speed fraction is ``|v| / top`` clipped to [0, 1]; NumPy divides in float32 only when
    the top speed is the mover's number times the float32 ``var_max_speed`` draws. With
    ``refresh``, values made from draws are a buffer that ``refresh``'s operations fill again
    (:func:`~.variation.drawn_float64`), so that the arguments holding it can be kept while the layout holds.
    """
    varied_mover = v.max_speed_drawn
    varied = v.speed_factor_drawn
    if varied and not varied_mover:
        # float64 holds the float32 draws exactly and the kernel rounds them back to float32: one compiled
        # signature for every species (a float32 array here would be a second compilation of the kernel)
        return drawn_float64(v.pop.component("var_max_speed"), refresh), True
    if varied_mover:
        top = v.pop.component("mover_max_speed")
        if varied:  # the float64 copy of the mover's draws times the float32 factors, in float64
            return drawn_float64(top, refresh, times=v.pop.component("var_max_speed")), False
        return drawn_float64(top, refresh), False
    return np.full(1, v.mover_max), False  # the mover's number: float64, as np.maximum(top, 1e-9) makes it


def _params(v, section: str, fields, refresh: Optional[list] = None) -> list:
    """Each field's values as float64 (one, or one per animal), then a bit set: bit k = field k is per animal.

    A table the species lacks gives zeros (the kernel does not read them). Drawn values are
    copies that ``refresh`` fills again, as in :func:`_top_speed`.
    """
    values, flags = [], 0
    for k, field in enumerate(fields):
        sub = getattr(v.eco, section, None) if v.eco is not None else None
        value = v.get(section, field) if sub is not None and getattr(sub, field) is not None else 0.0
        if isinstance(value, np.ndarray):
            values.append(drawn_float64(value, refresh))
            flags |= 1 << k
        else:
            values.append(np.full(1, float(value)))
    return values + [flags]


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _at(values, i):
    return values[i] if values.shape[0] > 1 else values[0]


@njit(cache=True, no_cfunc_wrapper=True)
def _bodies(velocity, top, top_f32, mover_max32, energy, has_energy, drain, recovery, power,
            hunger, has_hunger, rate, rate_drawn, rate_dt, starving, starve, starve_after,
            stamina, has_stamina, lose, regain, maximum, may_lose, lose_above, regain_below,
            age, has_age, years, max_age, ages, dt, starved, old):
    """One step of every body (thesis 11.2.2, the savannah's stamina and age), in place.

    Each rule is :mod:`starling.ecology.components`' NumPy rule evaluated per animal in the
    precision NumPy gives it there: the speed fraction ``s`` is float32 when the top speed
    is (``top_f32``: the mover's number times float32 draws), else float64; energy follows
    ``s``; hunger, starvation and age are float32 (a Python number meeting a float32
    array takes its type); stamina is float64. Parameters are float64 arrays of one value
    or one per animal (draws, exact in float64). Returns how many died of hunger or age.
    """
    dt32 = np.float32(dt)
    one32 = np.float32(1.0)
    zero32 = np.float32(0.0)
    dying = 0
    for i in range(velocity.shape[0]):
        vx = velocity[i, 0]
        vy = velocity[i, 1]
        vz = velocity[i, 2]
        speed = math.sqrt(vx * vx + vy * vy + vz * vz)
        if top_f32:
            t32 = mover_max32 * np.float32(top[i])
            s32 = min(max(speed / max(t32, np.float32(1e-9)), zero32), one32)
            s = np.float64(s32)
        else:
            s = min(max(np.float64(speed) / max(_at(top, i), 1e-9), 0.0), 1.0)
            s32 = zero32
        if has_energy:
            if top_f32:
                d32 = np.float32(_at(drain, i))
                r32 = np.float32(_at(recovery, i))
                p32 = s32 * s32 if power == 2.0 else s32 ** np.float32(power)
                e32 = energy[i] + (r32 * (one32 - s32) - d32 * p32) * dt32
                energy[i] = min(max(e32, zero32), one32)
            else:
                p64 = s * s if power == 2.0 else s ** power
                e64 = np.float64(energy[i]) + (_at(recovery, i) * (1.0 - s) - _at(drain, i) * p64) * dt
                energy[i] = min(max(e64, 0.0), 1.0)
        if has_hunger:
            step = np.float32(_at(rate, i)) * dt32 if rate_drawn else np.float32(rate_dt)
            hunger[i] = min(max(hunger[i] + step, zero32), one32)
            if starve:
                starving[i] = starving[i] + dt32 if hunger[i] >= one32 else zero32
                starved[i] = starving[i] >= np.float32(_at(starve_after, i))
                dying += starved[i]
        if has_stamina:
            high = (s32 >= np.float32(lose_above)) if top_f32 else (s >= lose_above)
            low = (s32 <= np.float32(regain_below)) if top_f32 else (s <= regain_below)
            if high:
                change = -_at(lose, i) * (1.0 if may_lose[i] else 0.0)
            elif low:
                change = _at(regain, i)
            else:
                change = 0.0
            stamina[i] = min(max(np.float64(stamina[i]) + change * dt, 0.0), _at(maximum, i))
        if has_age:
            age[i] = age[i] + years
            if ages:
                old[i] = age[i] >= max_age
                dying += old[i]
    return dying
