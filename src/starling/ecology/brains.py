"""Brains at run time: the compiled state machines and the system that runs them.

The configs (states, transitions, conditions, actions) are in
:mod:`starling.ecology.brain_config`. Each step, before the behaviours, the
:class:`BrainsSystem`

1. answers every perception its brains and memories ask for (how many animals of which
   kind each animal sees, and the nearest: :mod:`starling.ecology.perception`),
2. refreshes the threat memories the ``flee_memory`` behaviour reads (hysteresis): an
   animal that sees a threat remembers where it was, and forgets over ``remember`` seconds,
3. takes every animal's transitions in one kernel (:func:`_take_transitions`): the first
   transition from its state whose conditions all hold and whose draw passes wins;
   draws come from the ecology's stream, ``n`` per probabilistic transition tried, as
   they always did,
4. runs the ``on_enter`` actions of the states animals entered.

After the movers it advances every animal's time in state.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np
from numba import njit

from ..kernel_calls import CallSite
from ..errors import ConfigError, Problem
from ..steering import registry
from ..systems import Access, ComponentSpec, System, specs
from .actions import ActionContext
from .brain_config import (BUILTIN_VARIABLES, EVENT_COMPONENTS, EVENTS, BrainConfig, Condition, CountQuery, State,
                           Transition)
from .perception import Perception

__all__ = ["BUILTIN_VARIABLES", "EVENT_COMPONENTS", "EVENTS", "Brain", "BrainConfig", "BrainsSystem", "Condition",
           "CountQuery", "State", "Transition", "compare", "step_probability"]

OPS = ("<", "<=", ">", ">=", "==", "!=")
_OPS = {
    "<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
    "==": np.equal, "!=": np.not_equal,
}
#: how a condition is answered: a float32 component (or event flag), a count of animals seen, the speed
VALUE, COUNT, SPEED = 0, 1, 2


def step_probability(p_per_second: float, dt: float) -> float:
    """Per-step chance for a per-second probability: ``1 − (1 − p) ** dt``."""
    if p_per_second >= 1.0:
        return 1.0
    return float(-np.expm1(dt * np.log1p(-p_per_second)))


def compare(values: np.ndarray, op: str, value: float) -> np.ndarray:
    return _OPS[op](values, value)


def perception_key(targets, include_bits: int, exclude_bits: int, radius: float, fov_deg: float) -> tuple:
    return (tuple(targets), int(include_bits), int(exclude_bits), float(radius), float(fov_deg))


class Brain:
    """The compiled state machine of one species: tables indexed by state id, transitions as arrays.

    ``tag_bits(names)`` resolves the tags of count conditions (the world's tag table).
    """

    def __init__(self, cfg: BrainConfig, behaviour_rows: list[tuple[int, str, str]], rows: int,
                 mover_max_speed: float, tag_bits=lambda names: 0, mover_rotation_deg: Optional[float] = None):
        self.cfg = cfg
        self.names = [s.name for s in cfg.states]
        self.ids = {name: i for i, name in enumerate(self.names)}
        self.initial = self.ids[cfg.initial] if cfg.initial else 0
        m = len(self.names)
        self.speed_factor = np.ones(m, np.float32)
        self.accel_factor = np.ones(m, np.float32)
        #: per state: the factor on the mover's rotation limit (``turns``: some state sets one)
        self.turn_factor = np.ones(m, np.float32)
        self.target_speed = np.full(m, -1.0, np.float32)
        self.weights = np.ones((m, rows), np.float32)
        for s, st in enumerate(cfg.states):
            if st.max_speed is not None:
                self.speed_factor[s] = st.max_speed / mover_max_speed
            self.accel_factor[s] = st.acceleration * (cfg.emergency_acceleration if st.emergency else 1.0)
            if st.max_rotation_deg is not None and mover_rotation_deg:
                self.turn_factor[s] = st.max_rotation_deg / mover_rotation_deg
            if st.target_speed is not None:
                self.target_speed[s] = st.target_speed
            for row, label, kind in behaviour_rows:
                w = 1.0
                for key, factor in st.weights.items():
                    if key in (label, kind):
                        w *= factor
                if st.enabled is not None and label not in st.enabled and kind not in st.enabled:
                    w = 0.0
                if label in st.disabled or kind in st.disabled:
                    w = 0.0
                self.weights[s, row] = w
        self.modulates_desires = bool((self.weights != 1.0).any())
        self.turns = bool((self.turn_factor != 1.0).any())
        #: per state: the registered actions (spec, params) run for the animals entering it
        self.on_enter = [[(registry.get_brain_action(p.kind), p) for p in st.on_enter] for st in cfg.states]
        self.acts = any(self.on_enter)
        # transitions and conditions as arrays for the kernel
        t_count = len(cfg.transitions)
        self.from_mask = np.zeros((t_count, m), np.bool_)
        self.to = np.zeros(t_count, np.int64)
        self.per_second = np.full(t_count, -1.0)
        self.first = np.zeros(t_count + 1, np.int64)
        kind, source, op, value = [], [], [], []
        #: float32 columns the conditions read (component names), perceptions they count
        self.columns: list[str] = []
        self.perceptions: list[tuple] = []
        for t, tr in enumerate(cfg.transitions):
            sources = tr.sources()
            self.from_mask[t] = True if "*" in sources else np.isin(np.arange(m), [self.ids[x] for x in sources])
            self.to[t] = self.ids[tr.to]
            if tr.probability_per_second is not None:
                self.per_second[t] = tr.probability_per_second
            for cond in tr.when:
                if cond.event is not None:
                    kind.append(VALUE)
                    source.append(self._column(EVENT_COMPONENTS[cond.event]))
                    op.append(OPS.index(">"))
                    value.append(0.5)
                    continue
                op.append(OPS.index(cond.op))
                value.append(cond.value)
                if cond.var == "speed":
                    kind.append(SPEED)
                    source.append(0)
                elif cond.var is not None:
                    kind.append(VALUE)
                    source.append(self._column("state_time" if cond.var == "time_in_state" else cond.var))
                else:
                    q = cond.count
                    key = perception_key(q.targets, tag_bits(q.tags), tag_bits(q.exclude_tags), q.within, q.fov_deg)
                    if key not in self.perceptions:
                        self.perceptions.append(key)
                    kind.append(COUNT)
                    source.append(self.perceptions.index(key))
            self.first[t + 1] = len(kind)
        self.kind = np.asarray(kind, np.int64)
        self.source = np.asarray(source, np.int64)
        self.op = np.asarray(op, np.int64)
        self.value64 = np.asarray(value, np.float64)
        # a component compared with a number is compared in float32, as NumPy compares a float32 array
        self.value32 = self.value64.astype(np.float32)
        self._dt = None
        self.probability = self.per_second.copy()

    def _column(self, name: str) -> int:
        if name not in self.columns:
            self.columns.append(name)
        return self.columns.index(name)

    def probabilities(self, dt: float) -> np.ndarray:
        """Per-step chances of the probabilistic transitions (-1: the transition has none)."""
        if self._dt != dt:
            self.probability = np.array([step_probability(p, dt) if p >= 0 else -1.0 for p in self.per_second])
            self._dt = dt
        return self.probability


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _compare(a, op, b):
    if op == 0:
        return a < b
    if op == 1:
        return a <= b
    if op == 2:
        return a > b
    if op == 3:
        return a >= b
    if op == 4:
        return a == b
    return a != b


@njit(cache=True, no_cfunc_wrapper=True)
def _take_transitions(state, state_time, target_speed, target_table, from_mask, to, probability, first, kind, source,
                      op, value32, value64, columns, counts, velocity, resume, draws, current, new, live, decided,
                      changed):
    """Every animal's transitions of one step, in place (see :class:`Brain` for the tables).

    For each transition in order: the animals not yet decided whose state it leaves are
    live; each condition keeps those for which it holds (stopping when none is left); a
    probabilistic transition then needs one draw per animal (``n`` draws, whatever the
    conditions said): the kernel returns its index and the caller calls again with
    ``resume`` set to it and ``draws`` filled from the ecology's stream, so the stream
    is drawn exactly as NumPy would. The live animals whose draw is below the per-step
    chance take it. At the end ``state``, ``state_time`` (0 on a change) and
    ``target_speed`` are written, ``changed`` marks who changed state, and -1 is returned.
    """
    n = state.shape[0]
    if resume < 0:
        for i in range(n):
            c = np.int64(state[i])
            current[i] = c
            new[i] = c
            decided[i] = False
        t = 0
    else:
        t = resume
        p = probability[t]
        for i in range(n):
            if live[i] and not draws[i] < p:
                live[i] = False
        _commit(live, new, decided, to[t])
        t += 1
    while t < to.shape[0]:
        any_live = False
        for i in range(n):
            on = (not decided[i]) and from_mask[t, current[i]]
            live[i] = on
            any_live = any_live or on
        if any_live:
            for c in range(first[t], first[t + 1]):
                any_live = False
                k = kind[c]
                s = source[c]
                o = op[c]
                for i in range(n):
                    if live[i]:
                        if k == 0:
                            on = _compare(columns[s, i], o, value32[c])
                        elif k == 1:
                            on = _compare(np.float64(counts[s, i]), o, value64[c])
                        else:
                            vx = velocity[i, 0]
                            vy = velocity[i, 1]
                            vz = velocity[i, 2]
                            on = _compare(math.sqrt(vx * vx + vy * vy + vz * vz), o, value32[c])
                        live[i] = on
                        any_live = any_live or on
                if not any_live:
                    break
            if probability[t] >= 0.0:
                return t
            _commit(live, new, decided, to[t])
        t += 1
    for i in range(n):
        moved = new[i] != current[i]
        changed[i] = moved
        state[i] = new[i]
        if moved:
            state_time[i] = 0.0
        target_speed[i] = target_table[new[i]]
    return -1


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _commit(live, new, decided, to):
    for i in range(live.shape[0]):
        if live[i]:
            new[i] = to
            decided[i] = True


@njit(cache=True, no_cfunc_wrapper=True)
def _remember(total, nearest, distance, targets, max_distance, refreshed, tx, ty, tz, level, memory):
    """Animals that see a threat (and were not refreshed by an earlier group) remember it, fully."""
    for i in range(total.shape[0]):
        j = nearest[i]
        if total[i] > 0 and j >= 0 and not refreshed[i]:
            tx[i] = targets[j, 0]
            ty[i] = targets[j, 1]
            tz[i] = targets[j, 2]
            x = 1.0 - np.float64(distance[i]) / max_distance
            level[i] = min(max(x, 0.0), 1.0)
            memory[i] = 1.0
            refreshed[i] = True


@njit(cache=True, no_cfunc_wrapper=True)
def _forget(memory, refreshed, fade):
    """Memories not refreshed this step fade by ``fade`` (float32, as NumPy subtracts a number from them)."""
    for i in range(memory.shape[0]):
        if not refreshed[i]:
            m = memory[i] - fade
            memory[i] = m if m > 0.0 else np.float32(0.0)


@njit(cache=True, no_cfunc_wrapper=True)
def _advance_time(state_time, dt):
    for i in range(state_time.shape[0]):
        state_time[i] += dt


# ---------------------------------------------------------------------------- the system

#: what the brains keep per animal (every species with an ecology section)
OWNED = specs({"threat_x": 0.0, "threat_y": 0.0, "threat_z": 0.0, "threat_level": 0.0, "threat_memory": 0.0,
               "target_speed": -1.0, "state": 0.0, "state_time": 0.0})


class _Mind:
    """One species' brain, memories, perceptions and reusable buffers at run time."""

    def __init__(self, view, world):
        self.view = view
        pop = view.pop
        for spec in OWNED:
            pop.add_component(spec)
        cfg = view.brain_cfg
        slot_rows = [(slot.row, slot.params.label or slot.spec.name, slot.spec.name) for slot in view.pipeline.slots]
        self.brain: Optional[Brain] = None
        if cfg is not None:
            rotation = getattr(view.cfg.mover, "max_rotation_deg", None)
            turning = [k for k, st in enumerate(cfg.states) if st.max_rotation_deg is not None]
            if turning and rotation is None:
                raise ConfigError([Problem(f"species.{view.name}.brain.states.{k}.max_rotation_deg",
                                           f"the mover {view.cfg.mover.kind!r} has no rotation limit to change "
                                           "(the yaw mover has: max_rotation_deg)") for k in turning])
            self.brain = Brain(cfg, slot_rows, view.pipeline.results.behaviours, view.mover_max, world.tag_bits,
                               mover_rotation_deg=rotation)
            before = getattr(view.before, "brain", None) if view.before is not None else None
            old_names = [st.name for st in before.states] if before is not None else None
            if old_names and pop.n and old_names != self.brain.names:  # a reconfigured brain keeps states by name
                ids = pop.component("state").astype(np.int64)
                remap = np.array([self.brain.ids.get(name, self.brain.initial) for name in old_names], np.float32)
                pop.component("state")[:] = remap[np.clip(ids, 0, len(remap) - 1)]
        # hysteresis: every flee_memory behaviour's group is also watched by the system
        self.memories = []
        for group in view.pipeline.groups:
            for slot in group.behaviors:
                if slot.spec.name == "flee_memory":
                    p = slot.params
                    key = perception_key(group.targets, group.include_bits, group.exclude_bits, p.max_distance,
                                         p.fov_deg)
                    self.memories.append((key, float(p.max_distance)))
        self.remember = max((slot.params.remember for group in view.pipeline.groups for slot in group.behaviors
                             if slot.spec.name == "flee_memory"), default=1.0)
        keys = [k for k, _ in self.memories] + (self.brain.perceptions if self.brain is not None else [])
        self.perceptions = {key: Perception() for key in dict.fromkeys(keys)}
        self._buffers = _Buffers()

    def reads(self) -> tuple[ComponentSpec, ...]:
        if self.brain is None:
            return ()
        own = {spec.name for spec in OWNED}
        return tuple(ComponentSpec(n) for n in self.brain.columns if n not in own)


class _Buffers:
    """Per-animal scratch of one species' step (grown by capacity, never per step)."""

    def __init__(self):
        self.cap = 0
        self.thinking = self.remembering = None
        self.kernel_calls = CallSite()  # the transitions' and memories' arguments are of one type for the brain's life

    def reserve(self, n: int, columns: int, counts: int) -> None:
        if n > self.cap or self.columns.shape[0] < columns or self.counts.shape[0] < counts:
            cap = max(n, int(self.cap * 1.5), 16)
            self.cap = cap
            self.columns = np.zeros((max(columns, 1), cap), np.float32)
            self.counts = np.zeros((max(counts, 1), cap), np.int64)
            self.current = np.zeros(cap, np.int64)
            self.new = np.zeros(cap, np.int64)
            self.live = np.zeros(cap, np.bool_)
            self.decided = np.zeros(cap, np.bool_)
            self.changed = np.zeros(cap, np.bool_)
            self.refreshed = np.zeros(cap, np.bool_)
            self.draws = np.zeros(cap, np.float64)
            self.arange = np.arange(cap, dtype=np.int64)
            self.no_self = np.full(cap, -1, np.int64)
            self._rows = None
            self.thinking = None  # BrainsSystem._think's arguments for one layout
            self.remembering = None  # and _remember's

    def own_rows(self, n: int) -> np.ndarray:
        """``0 .. n-1``: each animal's own index among targets that are its own species (kept per ``n``)."""
        return self._rows_of(n)[0]

    def no_rows(self, n: int) -> np.ndarray:
        """``-1`` for each of ``n`` animals: none is among the targets (kept per ``n``)."""
        return self._rows_of(n)[1]

    def _rows_of(self, n: int):
        rows = self._rows
        if rows is None or rows[0] != n:
            rows = self._rows = (n, self.arange[:n], self.no_self[:n])
        return rows[1:]


class BrainsSystem(System):
    """Threat memories, state machines and their actions (see the module)."""

    name = "brains"

    def __init__(self, ctx):
        self.ctx = ctx
        self.world = ctx.world
        self.minds = {v.name: _Mind(v, ctx.world) for v in ctx.species if v.kit}
        self._actions = None

    def components(self) -> dict[str, Access]:
        return {name: Access(owns=OWNED, reads=m.reads()) for name, m in self.minds.items()}

    def brain_of(self, name: str) -> Optional[Brain]:
        mind = self.minds.get(name)
        return None if mind is None else mind.brain

    # ------------------------------------------------------------------ hooks
    def before_behaviors(self, sim, dt: float) -> None:
        for mind in self.minds.values():
            n = mind.view.pop.n
            if n == 0 or (mind.brain is None and not mind.memories):
                continue
            brain = mind.brain
            buf = mind._buffers
            buf.reserve(n, len(brain.columns) if brain else 0, len(brain.perceptions) if brain else 0)
            seen = {key: self._perceive(mind, key) for key in mind.perceptions}
            if mind.memories:
                self._remember(mind, seen, dt)
            if brain is not None:
                self._think(mind, seen, dt)

    def after_move(self, sim, dt: float) -> None:
        for mind in self.minds.values():
            if mind.brain is not None and mind.view.pop.n:
                _advance_time(mind.view.pop.component("state_time"), np.float32(dt))

    def born(self, view, rows, rng) -> None:
        mind = self.minds.get(view.name)
        if mind is None:
            return
        pop = view.pop
        for name in ("threat_memory", "threat_level", "state_time"):
            pop.component(name)[rows] = 0.0
        if mind.brain is not None:
            pop.component("state")[rows] = mind.brain.initial
            pop.component("target_speed")[rows] = mind.brain.target_speed[mind.brain.initial]

    # ------------------------------------------------------------------ perception
    def _targets(self, mind: _Mind, names, include_bits: int, exclude_bits: int):
        """The targets' positions (one array) and each animal's own index among them (-1: not a target)."""
        view = mind.view
        buf = mind._buffers
        n = view.pop.n
        if len(names) == 1 and not include_bits and not exclude_bits:
            pop = self.world.population(names[0])
            return pop.position, buf.own_rows(n) if names[0] == view.name else buf.no_rows(n)
        chunks = []
        offset = 0
        self_index = np.full(n, -1, np.int64)
        for name in names:
            pop = self.world.population(name)
            mask = np.ones(pop.n, bool)
            if include_bits:
                mask &= (pop.tags & np.uint32(include_bits)) != 0
            if exclude_bits:
                mask &= (pop.tags & np.uint32(exclude_bits)) == 0
            rows = np.flatnonzero(mask)
            chunks.append(pop.position[rows])
            if name == view.name:
                self_index[rows] = offset + np.arange(rows.size)
            offset += rows.size
        pos = np.ascontiguousarray(np.concatenate(chunks)) if chunks else np.zeros((0, 3), np.float32)
        return pos, self_index

    def _perceive(self, mind: _Mind, key: tuple):
        """``(total, nearest, distance, targets)``: what every animal sees of ``key``'s targets."""
        names, include_bits, exclude_bits, radius, fov = key
        pop = mind.view.pop
        targets, self_index = self._targets(mind, names, include_bits, exclude_bits)
        total, nearest, distance = mind.perceptions[key].count(pop.position, pop.forward, targets, self_index,
                                                               radius, fov)
        return total, nearest, distance, targets

    def _remember(self, mind: _Mind, seen: dict, dt: float) -> None:
        pop = mind.view.pop
        n = pop.n
        buf = mind._buffers
        kept = buf.remembering  # the flags' rows and the memory's components, kept while the layout holds
        if kept is None or kept[0] != pop.layout or kept[1] is not buf.refreshed:
            kept = buf.remembering = (pop.layout, buf.refreshed, buf.refreshed[:n], tuple(
                pop.component(c) for c in ("threat_x", "threat_y", "threat_z", "threat_level", "threat_memory")))
        refreshed, comps = kept[2], kept[3]
        refreshed[:] = False
        calls = buf.kernel_calls  # (arrays of one type each, a float distance, a float32 fade)
        for key, max_distance in mind.memories:
            total, nearest, distance, targets = seen[key]
            calls(_remember, n, total, nearest, distance, targets, max_distance, refreshed, *comps)
        calls(_forget, n, comps[4], refreshed, np.float32(dt / mind.remember))

    # ------------------------------------------------------------------ thinking
    def _think(self, mind: _Mind, seen: dict, dt: float) -> None:
        brain = mind.brain
        pop = mind.view.pop
        n = pop.n
        buf = mind._buffers
        kept = buf.thinking
        if kept is None or kept[0] != pop.layout or kept[1] != buf.cap or kept[2] != dt:
            columns = buf.columns[:, :n]
            args = (pop.component("state"), pop.component("state_time"), pop.component("target_speed"),
                    brain.target_speed, brain.from_mask, brain.to, brain.probabilities(dt), brain.first, brain.kind,
                    brain.source, brain.op, brain.value32, brain.value64, buf.columns, buf.counts,
                    pop.velocity)  # whole buffers: one layout
            scratch = (buf.current[:n], buf.new[:n], buf.live[:n], buf.decided[:n], buf.changed[:n])
            # the arguments, and each column's row with the component it holds, kept while the layout holds
            kept = buf.thinking = (pop.layout, buf.cap, dt, args, scratch, buf.draws[:n], buf.counts[:, :n],
                                   [(columns[c], pop.component(name)) for c, name in enumerate(brain.columns)])
        _, _, _, args, scratch, draws, counts, columns = kept
        for row, values in columns:
            row[:] = values
        for q, key in enumerate(brain.perceptions):
            counts[q] = seen[key][0]
        calls = buf.kernel_calls
        t = calls(_take_transitions, n, *args, -1, draws, *scratch)
        while t >= 0:  # a probabilistic transition with live animals: n draws, as NumPy's rng.random(n)
            self.ctx.rng.random(out=draws)
            t = calls(_take_transitions, n, *args, t, draws, *scratch)
        changed = scratch[4]
        if brain.acts and changed.any():
            self._enter(mind, args[0], changed)

    def _enter(self, mind: _Mind, state: np.ndarray, changed: np.ndarray) -> None:
        """Run the ``on_enter`` actions of every state some animals just entered (states in order)."""
        brain = mind.brain
        entered = np.flatnonzero(changed)
        ids = state[entered].astype(np.int64)
        for s, actions in enumerate(brain.on_enter):
            if not actions:
                continue
            rows = entered[ids == s]
            if rows.size == 0:
                continue
            context = ActionContext(self.ctx, mind.view, brain.names[s])
            for spec, params in actions:
                spec.run(context, rows, params)

    # ------------------------------------------------------------------ reports
    def species_summary(self, sim, species: str) -> dict:
        brain = self.brain_of(species)
        if brain is None:
            return {}
        states = self.minds[species].view.pop.component("state").astype(np.int64)
        return {"states": {name: int(np.count_nonzero(states == i)) for i, name in enumerate(brain.names)}}

    def labels(self, sim, species: str):
        brain = self.brain_of(species)
        if brain is None:
            return None
        pop = self.minds[species].view.pop
        ids = np.clip(pop.component("state")[: pop.n].astype(np.int64), 0, len(brain.names) - 1)
        return [brain.names[i] for i in ids]

    def inspect(self, sim, species: str, row: int) -> dict:
        brain = self.brain_of(species)
        if brain is None:
            return {}
        return {"state": brain.names[int(self.minds[species].view.pop.component("state")[row])]}
