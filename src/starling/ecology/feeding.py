"""The feeding system: mouths, eating, grazing, and the food lying around (apples, carcasses).

It owns the ``apple`` and ``carcass`` populations (``food``, ``nutrition``, ``floats``,
``item_age``, ``item_lifetime``) and, for every species with an ecology section, the
mouth (``mouth_x/y/z`` in world coordinates), ``chew``, the one-step flags
``event_caught`` and ``event_bit``, and body food (``food``, ``nutrition``) where a
species is food itself. It writes ``hunger`` (the energy system's): a bite lowers it.

``before_behaviors``
    every mouth is placed from the step-start pose, so behaviours measure from it;
``after_move``
    apples and carcasses fall, float, rest and expire; chewing counts down; every animal
    that is hungry enough and not chewing bites what its mouth reaches — prey first
    (caught: it dies, the rest of it becomes its carcass), then food items, then grass.
    Bites are resolved species by species and row by row, so the outcome never depends
    on the thread count. (The rules are in :mod:`starling.ecology.food`.)
"""
from __future__ import annotations

from typing import Optional

import numpy as np
from numba import njit

from ..environment.casting import PARALLEL_THRESHOLD
from ..kernel_calls import CallSite
from ..systems import Access, ComponentSpec, System, specs
from ..world.tags import rows_with_tags
from . import items as I
from .food import bite_amount
from .perception import Perception
from .species import DEFAULTS
from .variation import Distribution, bounds_of

SECTIONS = ("mouth", "eating", "graze", "food", "carcass")
ITEMS = (I.APPLE, I.CARCASS)
MOUTH = specs(("mouth_x", "mouth_y", "mouth_z"))
CHEW = ComponentSpec("chew", default=0.0)
FLAGS = specs(("event_caught", "event_bit"))
BODY_FOOD = (ComponentSpec("food", default=1.0), ComponentSpec("nutrition", default=1.0))
HUNGER = ComponentSpec("hunger", default=1.0)
_LIFT = np.float32([0.0, 0.5, 0.0])  # an item's ray to the ground starts this far above it


class _DownRays:
    """Buffers for rays cast straight down (grass under a grazer, the ground under an item), kept
    between steps: ``take(n)`` gives ``n`` rows of origins to fill and of ``(0, -1, 0)`` directions."""

    def __init__(self):
        self.origins = np.zeros((0, 3), np.float32)
        self.down = np.zeros((0, 3), np.float32)
        self._hits = None  # RayHits for as many rays as origins holds
        self._rows = None  # (n, the hits of n rows)
        self._reach = (None, None)  # (metres, as the kernel's (1,) float32 array)

    def take(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        if self.down.shape[0] < n:
            cap = max(n, int(self.down.shape[0] * 1.5), 16)
            self.origins = np.zeros((cap, 3), np.float32)
            self.down = np.zeros((cap, 3), np.float32)
            self.down[:, 1] = -1.0
            self._hits = self._rows = None
        return self.origins[:n], self.down[:n]

    def cast(self, env, k: int, reach: float, mask: int):
        """Cast the first ``k`` rays :meth:`take` gave into ``env``, up to ``reach`` metres: what
        ``cast_rays`` returns for them, into hits kept here, without its checks and conversions."""
        if self._hits is None:
            self._hits = env.allocate_hits(self.origins.shape[0])
        if self._rows is None or self._rows[0] != k:
            self._rows = (k, self._hits.view(k))
        if self._reach[0] != reach:
            self._reach = (reach, np.full(1, reach, np.float32))
        hits = self._rows[1]
        env.cast_into(self.origins[:k], self.down[:k], self._reach[1], mask, hits, k >= PARALLEL_THRESHOLD)
        return hits


def owned(species_cfg) -> tuple[ComponentSpec, ...]:
    """The feeding components a species config gives its animals."""
    eco = getattr(species_cfg, "ecology", None)
    out = MOUTH + (CHEW,) + FLAGS
    if eco is not None and eco.food is not None:
        out += BODY_FOOD
    return out


class _Eater:
    """One species' mouth and eating settings at run time."""

    def __init__(self, view):
        self.view = view
        self.owns = owned(view.cfg)
        for spec in self.owns:
            view.pop.add_component(spec)
        self.drawn = tuple(view.bind_sampled(SECTIONS))
        eco = view.eco
        # the mouth offset as NumPy multiplies it with the float32 frame (a Python number takes float32)
        offset = eco.mouth.offset if eco is not None else (0.0, 0.0, 0.0)
        self.offset = tuple(np.float32(x) for x in offset)
        self.eats = eco is not None and (eco.eating is not None or eco.graze is not None)
        self.perception = Perception()
        self.cap = 0
        self._hungry = np.full(1, np.float32(np.nan))
        self._tagged: dict = {}  # food population -> (rows, points) buffers of its tagged items
        self.rays = _DownRays()  # the grazers' rays to the grass
        self._kept: dict = {}  # kernel name -> (layout, its arguments), see kept
        self.kernel_calls = CallSite()  # the mouths' and the eligibility's kernels: one type of arguments each

    def kept(self, name: str, pop, build) -> tuple:
        """The arguments ``build()`` gives for the kernel ``name``, kept while ``pop``'s layout holds
        (views of its live rows and numbers fixed for the eater's life: a step then builds none)."""
        hit = self._kept.get(name)
        if hit is None or hit[0] != pop.layout:
            hit = self._kept[name] = (pop.layout, build())
        return hit[1]

    def reserve(self, n: int) -> None:
        if n > self.cap:
            self.cap = cap = max(n, int(self.cap * 1.5), 16)
            self.mouths = np.zeros((cap, 3), np.float32)
            self.open = np.zeros(cap, np.bool_)
            self.grazers = np.zeros(cap, np.int64)

    def threshold(self, min_hunger) -> np.ndarray:
        """``min_hunger`` as the kernel reads it: the drawn per-animal values, or one float32 (kept)."""
        if isinstance(min_hunger, np.ndarray):
            return min_hunger
        if not self._hungry[0] == np.float32(min_hunger):
            self._hungry = np.full(1, np.float32(min_hunger))
        return self._hungry

    def tagged(self, name: str, items, bits: int):
        """``(rows, points)``: the rows and positions of ``items`` carrying any of ``bits``, in row order."""
        n = items.n
        rows, points = self._tagged.get(name, (None, None))
        if rows is None or rows.shape[0] < n:
            cap = max(n, 16)
            rows, points = self._tagged[name] = np.zeros(cap, np.int64), np.zeros((cap, 3), np.float32)
        k = tagged_points(items.tags, np.uint32(bits), items.position, rows, points)
        return rows[:k], points[:k]


class FeedingSystem(System):
    """Mouths, bites, catches, grazing, apples and carcasses (see the module)."""

    name = "feeding"

    def __init__(self, ctx):
        self.ctx = ctx
        self.world = ctx.world
        self.cfg = ctx.cfg
        self.items = {name: ctx.world.population(name) for name in ITEMS}
        for pop in self.items.values():
            for spec in specs(I.COMPONENTS):
                pop.add_component(spec)
        self.eaters = {v.name: _Eater(v) for v in ctx.species if v.kit}
        self._rays = _DownRays()  # the items' rays to the ground under them (_ground_under)
        self._item_steps = {name: I.ItemSteps() for name in ITEMS}
        self._ground_mask = (None, 0)  # (the environment, the mask of its ground layers)

    def components(self) -> dict[str, Access]:
        out = {name: Access(owns=specs(I.COMPONENTS)) for name in ITEMS}
        for name, e in self.eaters.items():
            out[name] = Access(owns=e.owns + e.drawn, writes=(HUNGER,) if e.eats else ())
        return out

    @property
    def ground(self) -> float:
        """The ground plane's height: ``ground_height``, or the world's floor."""
        return float(self.cfg.ground_height if self.cfg.ground_height is not None else self.world.bounds_min[1])

    # ------------------------------------------------------------------ hooks
    def before_behaviors(self, sim, dt: float) -> None:
        for e in self.eaters.values():
            if e.view.pop.n:
                self.place_mouths(e)

    def after_move(self, sim, dt: float) -> None:
        lo, hi = self.world.bounds_min, self.world.bounds_max
        for name in ITEMS:
            items = self.items[name]
            if not items.n:  # (no apple thrown, no carcass left: most steps)
                continue
            expired = self._item_steps[name].step(items, self._ground_under(items), self.cfg.water_level,
                                                  self.cfg.physics, lo, hi, dt)
            if expired.size:
                self.ctx.lifecycle.despawn(name, expired)
        dt32 = np.float32(dt)
        for e in self.eaters.values():
            pop = e.view.pop
            if pop.n:
                _chew(*e.kept("chew", pop, lambda: (pop.component("chew"), pop.component("event_caught"),
                                                    pop.component("event_bit"))), dt32)
        for e in self.eaters.values():
            if e.eats and e.view.pop.n:
                self._eat(e)

    def born(self, view, rows, rng) -> None:
        """Body food drawn, chewing and flags cleared, mouths placed."""
        e = self.eaters.get(view.name)
        if e is None:
            return
        eco = view.eco
        pop = view.pop
        if eco is not None and eco.food is not None:
            for field in ("amount", "nutrition"):
                value = getattr(eco.food, field)
                if isinstance(value, Distribution):
                    b = bounds_of(type(eco.food).model_fields[field])
                    value = value.sample(rng, rows.size, b.lo, b.hi)
                pop.component("food" if field == "amount" else "nutrition")[rows] = value
        for name in ("chew", "event_caught", "event_bit"):
            pop.component(name)[rows] = 0.0
        self.place_mouths(e)

    # ------------------------------------------------------------------ mouths
    def place_mouths(self, e: _Eater) -> None:
        pop = e.view.pop
        _mouths(*e.kept("mouths", pop, lambda: (pop.position, pop.forward, pop.up, *e.offset, pop.component("mouth_x"),
                                                 pop.component("mouth_y"), pop.component("mouth_z"))))

    # ------------------------------------------------------------------ eating
    def _eat(self, e: _Eater) -> None:
        """Every eligible animal bites the nearest prey, food item or grass its mouth reaches (rows in order).

        ``open_`` holds the eligible animals that have not eaten yet this step: every question is
        asked with it, an animal that eats leaves it, and ``left`` counts who is still in it, so a
        step in which nothing is within reach asks each question once and loops over nobody.
        """
        ctx = self.ctx
        lifecycle = ctx.lifecycle
        v = e.view
        pop = v.pop
        n = pop.n
        e.reserve(n)
        eat, hunger, chew, eligible, mouth_points, reach, bits = e.kept("eat", pop, lambda: self._eat_args(e, pop, n))
        mouths, open_ = mouth_points[-1], eligible[-1]
        left = e.kernel_calls(_eligible, n, *eligible)
        if not left:
            return
        e.kernel_calls(_mouth_points, n, *mouth_points)
        radius = float(reach[open_].max()) if isinstance(reach, np.ndarray) else float(reach)

        def reaches(row: int, dist) -> bool:
            r = float(reach[row]) if isinstance(reach, np.ndarray) else reach
            return not float(dist) > r

        def took(row: int, amount: float, nutrition: float) -> None:
            nonlocal left
            satiation = v.value_at("hunger", "satiation", row) if v.eco.hunger is not None else 1.0
            hunger[row] = max(0.0, float(hunger[row]) - amount * nutrition * satiation)
            chew[row] = v.value_at("eating", "chew_time", row)
            pop.component("event_bit")[row] = 1.0
            lifecycle.count(v.name, "eaten")
            open_[row] = False
            left -= 1

        for prey_name in eat.prey:
            prey = self.world.population(prey_name)
            if prey.n == 0 or not left:
                continue
            nearest, dist, found = e.perception.nearest_in_reach(mouths, open_, prey.position, radius)
            if not found:
                continue
            prey_v = ctx.by_name[prey_name]
            for row in np.flatnonzero(nearest >= 0):
                if not reaches(row, dist[row]):
                    continue
                j = int(nearest[row])
                uid = int(prey.uid[j])
                if lifecycle.is_dying(prey_name, uid) or (prey_name == v.name and j == row):
                    continue
                has_food = prey_v.has("food")
                left_food = float(prey.component("food")[j]) if has_food else 1.0
                nutrition = float(prey.component("nutrition")[j]) if has_food else 1.0
                amount = bite_amount(left_food, v.value_at("eating", "bite", row))
                lifecycle.kill(prey_name, [uid], cause="caught", carcass_food=left_food - amount)
                lifecycle.count(v.name, "caught")
                pop.component("event_caught")[row] = 1.0
                took(row, amount, nutrition)
        for food_name in eat.food:
            items = self.world.population(food_name)
            if items.n == 0 or not left:
                continue
            targets = items.position
            rows = None
            if bits:
                rows, targets = e.tagged(food_name, items, bits)
                if rows.size == 0:
                    continue
            nearest, dist, found = e.perception.nearest_in_reach(mouths, open_, targets, radius)
            if not found:
                continue
            food = items.component("food")
            for row in np.flatnonzero(nearest >= 0):
                if not reaches(row, dist[row]):
                    continue
                j = int(nearest[row]) if rows is None else int(rows[nearest[row]])
                uid = int(items.uid[j])
                if lifecycle.is_dying(food_name, uid) or (food_name == v.name and j == row):
                    continue
                left_food = float(food[j])
                if left_food <= 0.0:
                    continue
                amount = bite_amount(left_food, v.value_at("eating", "bite", row))
                food[j] = left_food - amount
                if food[j] <= 1e-6:
                    food[j] = 0.0
                    if food_name in ctx.by_name:
                        lifecycle.kill(food_name, [uid], cause="eaten", carcass_food=0.0)
                    else:
                        lifecycle.despawn(food_name, [uid])
                took(row, amount, float(items.component("nutrition")[j]))
        if v.eco.graze is not None and left:
            self._graze(e, open_, took)

    def _eat_args(self, e: _Eater, pop, n: int) -> tuple:
        """What :meth:`_eat` reads under one layout: the eating table, hunger, chewing, the
        eligibility's and the mouths' kernel arguments (the open rows and the mouths last), the
        mouths' reach (a number, or the animals' draws) and the food tags' bits."""
        v = e.view
        eat = v.eco.eating if v.eco.eating is not None else DEFAULTS["eating"]
        hunger = pop.component("hunger")
        chew = pop.component("chew")
        eligible = (chew, hunger, e.threshold(v.get("eating", "min_hunger")), e.open[:n])
        mouth_points = (pop.position, pop.forward, pop.up, *e.offset, e.mouths[:n])
        return eat, hunger, chew, eligible, mouth_points, v.get("mouth", "reach"), self.world.tag_bits(eat.food_tags)

    def _graze(self, e: _Eater, open_: np.ndarray, took) -> None:
        """Animals nearly still over the grass layer bite it (grass never runs out)."""
        env = self.ctx.environment
        if env is None:
            return
        v = e.view
        g = v.eco.graze
        pop = v.pop
        origins, down = e.rays.take(pop.n)
        k = _still_rows(open_, pop.velocity, pop.position, np.float32(g.max_speed), e.grazers, origins)
        if k == 0:
            return
        hits = e.rays.cast(env, k, float(g.reach), env.mask(g.layers))
        for row in e.grazers[:k][hits.hit[:k]]:
            took(row, v.value_at("eating", "bite", row), v.value_at("graze", "nutrition", row))

    # ------------------------------------------------------------------ items
    def _ground_under(self, pop):
        """Height of the ground under each item: the environment's surfaces, else the ground plane."""
        env = self.ctx.environment
        n = pop.n
        if env is None or n == 0:
            return self.ground
        origins, _ = self._rays.take(n)
        np.add(pop.position, _LIFT, out=origins)
        if self._ground_mask[0] is not env:
            known = [name for name in ("terrain", "ground", "environment") if name in env.layers]
            self._ground_mask = (env, env.mask(known))
        reach = float(self.world.bounds_max[1] - self.world.bounds_min[1]) + 1.0
        hits = self._rays.cast(env, n, reach, self._ground_mask[1])
        return np.where(hits.hit[:n], hits.point[:n, 1], self.ground)

    def spawn_apple(self, origin: np.ndarray, velocity: np.ndarray) -> None:
        """An apple of ``[ecology.apples]`` at ``origin`` moving at ``velocity`` (at the end of the step)."""
        a = self.cfg.apples
        rng = self.ctx.rng

        def draw(value):
            return float(value.sample(rng, 1, 0.0)[0]) if isinstance(value, Distribution) else float(value)

        self.world.commands.spawn(I.APPLE, origin.reshape(1, 3), velocity.reshape(1, 3), components={
            "food": np.float32([draw(a.food)]), "nutrition": np.float32([draw(a.nutrition)]),
            "floats": np.float32([1.0 if a.buoyancy == "float" else 0.0]),
            "item_age": np.float32([0.0]),
            "item_lifetime": np.float32([a.lifetime if a.lifetime is not None else -1.0]),
        })

    def leave_carcass(self, view, row: int, food: Optional[float]) -> None:
        """What the animal at ``row`` leaves when it dies (its species has a ``carcass`` table)."""
        cc = view.eco.carcass
        if food is None:
            if cc.food is not None:
                food = cc.food.sample(self.ctx.rng, 1)[0] if isinstance(cc.food, Distribution) else float(cc.food)
            elif view.eco.food is not None:
                food = float(view.pop.component("food")[row])
            else:
                food = 1.0
        if not food > 1e-6:
            return
        nutrition = (float(view.pop.component("nutrition")[row]) if view.eco.food is not None
                     else self.cfg.carcasses.nutrition)
        self.world.commands.spawn(
            I.CARCASS, view.pop.position[row:row + 1].copy(), view.pop.velocity[row:row + 1] * 0.3,
            components={"food": np.float32([food]), "nutrition": np.float32([nutrition]),
                        "floats": np.float32([1.0 if cc.buoyancy == "float" else 0.0]),
                        "item_age": np.float32([0.0]),
                        "item_lifetime": np.float32([cc.lifetime if cc.lifetime is not None else -1.0])},
            tags=[cc.tag or f"dead_{view.name}"])


# ---------------------------------------------------------------------------- kernels

@njit(cache=True, no_cfunc_wrapper=True, _nrt=False)  # array arguments: a call (see docs/performance.md)
def _mouth(position, forward, up, ox, oy, oz, i):
    """``p + ox·(up × forward) + oy·up + oz·forward`` as :func:`.components.mouth_positions` sums it:
    float32 terms added to the float64 position in the order z, y, x, then rounded to float32."""
    x = np.float64(position[i, 0])
    y = np.float64(position[i, 1])
    z = np.float64(position[i, 2])
    if oz != 0:
        x += np.float64(oz * forward[i, 0])
        y += np.float64(oz * forward[i, 1])
        z += np.float64(oz * forward[i, 2])
    if oy != 0:
        x += np.float64(oy * up[i, 0])
        y += np.float64(oy * up[i, 1])
        z += np.float64(oy * up[i, 2])
    if ox != 0:
        ux, uy, uz = up[i, 0], up[i, 1], up[i, 2]
        fx, fy, fz = forward[i, 0], forward[i, 1], forward[i, 2]
        x += np.float64(ox * (uy * fz - uz * fy))
        y += np.float64(ox * (uz * fx - ux * fz))
        z += np.float64(ox * (ux * fy - uy * fx))
    return np.float32(x), np.float32(y), np.float32(z)


@njit(cache=True, no_cfunc_wrapper=True)
def _mouths(position, forward, up, ox, oy, oz, mx, my, mz):
    """Every animal's mouth in world coordinates, into the three components."""
    for i in range(position.shape[0]):
        mx[i], my[i], mz[i] = _mouth(position, forward, up, ox, oy, oz, i)


@njit(cache=True, no_cfunc_wrapper=True)
def _mouth_points(position, forward, up, ox, oy, oz, out):
    """Every animal's mouth in world coordinates, as (n, 3) points."""
    for i in range(position.shape[0]):
        out[i, 0], out[i, 1], out[i, 2] = _mouth(position, forward, up, ox, oy, oz, i)


@njit(cache=True, no_cfunc_wrapper=True)
def _chew(chew, caught, bit, dt):
    """Chewing counts down (float32, never below 0); last step's catch and bite flags are cleared."""
    for i in range(chew.shape[0]):
        c = chew[i] - dt
        chew[i] = c if c > 0.0 else np.float32(0.0)
        caught[i] = 0.0
        bit[i] = 0.0


@njit(cache=True, no_cfunc_wrapper=True)
def _eligible(chew, hunger, min_hunger, use):
    """``use[i]``: not chewing and at least ``min_hunger`` hungry (float32 comparisons); how many are."""
    found = 0
    for i in range(chew.shape[0]):
        m = min_hunger[i] if min_hunger.shape[0] > 1 else min_hunger[0]
        ok = chew[i] <= 0.0 and hunger[i] >= m
        use[i] = ok
        found += ok
    return found


def tagged_points(tags, bits, position, rows, points) -> int:
    """The rows carrying any of ``bits`` and their positions, in row order, into ``rows``/``points``; how many."""
    k = rows_with_tags(tags, bits, np.uint32(0), rows)
    np.take(position, rows[:k], axis=0, out=points[:k])
    return k


@njit(cache=True, no_cfunc_wrapper=True)
def _still_rows(use, velocity, position, max_speed, rows, origins):
    """The used rows moving at most ``max_speed`` (float32 speed, as NumPy sums it) and their positions; how many."""
    k = 0
    for i in range(use.shape[0]):
        if not use[i]:
            continue
        vx = velocity[i, 0]
        vy = velocity[i, 1]
        vz = velocity[i, 2]
        if np.sqrt(vx * vx + vy * vy + vz * vz) <= max_speed:
            rows[k] = i
            origins[k, 0] = position[i, 0]
            origins[k, 1] = position[i, 1]
            origins[k, 2] = position[i, 2]
            k += 1
    return k
