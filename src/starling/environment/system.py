"""The environment in the step: the static scene, collision resolution and media (seed 000, 7.2, 9.5.8).

Two config sections, registered here:

* ``[environment]`` (scenario) — the static geometry (:class:`EnvironmentSection`, which is
  :class:`~starling.environment.config.EnvironmentConfig` plus the scenario-wide checks). Its
  system, :class:`EnvironmentSystem`, owns the :class:`~starling.environment.scene.Environment`.
* ``[species.body]`` (species) — the animal's collision sphere, the layers it collides with and
  the medium it lives in (:class:`BodyConfig`). Optional: without it a species gets the defaults
  of its medium (``ground`` for the ground mover, ``air`` otherwise).

When the system is built it hands the environment to everything that needs it: the pipelines
with ray groups (:meth:`SpeciesPipeline.attach_environment`) and the movers that declare
``needs_environment = True`` (the ground mover), via their ``attach_environment(env)``. It then
moves every animal to a valid start (in water for ``water``, on the ground for ``ground``, never
inside a solid). Each step:

``before_behaviors``
    remember where every animal starts the step;
``after_move``
    collide and slide every species from its start along the displacement the mover gave it (at
    most three sweeps, a skin width, seed 000 7.2.2), keeping the velocity of animals that touched
    nothing and clipping the into-surface part of the others; then keep it in its medium: a water
    animal stays under the surface and over water deep enough to hold it (at the shore it is held
    where it was and loses the outward part of its velocity), a walker never ends below the
    terrain or off its edge, a flier never under the ground.

``health`` adds ``inside_solid`` (animals whose centre is inside a solid of the layers they
collide with or the ground) and ``out_of_medium`` (fish out of the water, walkers under the
terrain, fliers under the ground); both stay 0 in a healthy run.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import partial
from typing import Literal, Optional

import numpy as np
from numba import njit
from pydantic import Field, model_validator

from ..kernel_cache import compilations
from ..kernel_calls import CallSite
from ..processes import helpers_wanted, run_elsewhere
from ..steering import registry
from ..steering.params import StrictModel
from ..systems import System
from .config import EnvironmentConfig
from .errors import EnvironmentError_
from ..world.layers import ALL_LAYERS, DEFAULT_LAYERS
from .drawing import describe
from .terrain import height_and_normal
from .water import in_region

Medium = Literal["air", "water", "ground"]
MEDIA: tuple[str, ...] = ("air", "water", "ground")
AIR, WATER, GROUND = 0, 1, 2  # MEDIA.index(name), what the kernels receive

#: what a body collides with when ``collide_with`` is not given
DEFAULT_COLLIDE = {
    "air": ("terrain", "ground", "environment", "fake_walls"),
    "water": ("terrain", "ground", "environment", "fake_walls"),
    # the ground mover keeps walkers on the terrain and the ground; collisions stop them at obstacles
    "ground": ("environment", "fake_walls"),
}
#: tolerance of the medium checks, m (float32 positions far from the origin are this coarse)
TOLERANCE = 1e-3
ORDER = 10  # before the ecology (100): eating and catching see resolved positions
PLACEMENT_ATTEMPTS = 400  # draws from the spawn region per animal before giving up


class BodyConfig(StrictModel):
    """A species' body in the environment: its collision sphere and the medium it lives in."""

    radius: float = Field(0.3, gt=0, description="Radius of the collision sphere around the position, m.")
    medium: Optional[Medium] = Field(
        None, description="air, water or ground (default: ground for the ground mover, air otherwise).")
    collide_with: Optional[list[str]] = Field(
        None, description="Layers the body cannot pass (default: terrain, ground, environment and fake_walls; "
                          "environment and fake_walls for ground animals, whose mover keeps them on the ground).")
    skin_width: float = Field(0.01, gt=0, le=0.5, description="Gap kept from surfaces by collide-and-slide, m.")


class EnvironmentSection(EnvironmentConfig):
    """The static environment: layers, terrain, water, primitives, meshes and scattered obstacles
    (seed 000, 2.1.1, ch. 7). Animals collide with it; ray groups cast into it."""

    @model_validator(mode="after")
    def _check_layers_and_references(self):
        # replaces EnvironmentConfig's check of the same name: in a scenario, :func:`cross_check` reports
        # each unknown layer and pond-less fill_pond with its own field path (environment.shapes.2.layer)
        return self

    @classmethod
    def cross_check(cls, scenario) -> list:
        return cross_check(scenario)


# ---------------------------------------------------------------------------------------------- checks

def _unknown_layers(fields, registry_) -> list:
    """A problem for each ``(field path, layer name)`` in ``fields`` whose layer ``registry_`` does not know."""
    from ..errors import Problem

    return [Problem(path, f"unknown layer {name!r}; known layers are: {', '.join(registry_.names)} "
                          "(declare new layers in the environment's `layers` list)")
            for path, name in fields if name not in ("all", "*") and name not in registry_]


def _listed(path: str, names) -> list:
    return [(f"{path}.{k}", name) for k, name in enumerate(names)]


def cross_check(scenario) -> list:
    """Rules between the environment and the species: layer names, sections that need an environment,
    mesh and height-map files that must load — each problem with its field path."""
    from ..errors import Problem

    env = getattr(scenario, "environment", None)
    problems: list = []
    layers = DEFAULT_LAYERS
    if env is not None:
        try:
            layers = env.layer_registry()
        except ValueError as e:
            problems.append(Problem("environment.layers", str(e)))
        problems += _reference_problems(env, layers)
    need = "add an [environment] section to the scenario"
    for i, sp in enumerate(scenario.species):
        for g, group in enumerate(getattr(sp, "ray_groups", [])):
            if env is None:
                problems.append(Problem(f"species.{i}.ray_groups.{g}", f"ray groups cast into the environment; {need}"))
            problems += _unknown_layers(_listed(f"species.{i}.ray_groups.{g}.query.layers", group.query.layers), layers)
        ground_layers = getattr(sp.mover, "ground_layers", None)
        if ground_layers is not None:
            problems += _unknown_layers(_listed(f"species.{i}.mover.ground_layers", ground_layers), layers)
        if env is None and getattr(registry.get_mover(sp.mover.kind).factory(sp.mover), "needs_environment", False):
            problems.append(Problem(f"species.{i}.mover", f"the {sp.mover.kind!r} mover needs the environment; {need}"))
        body = getattr(sp, "body", None)
        if body is not None:
            if env is None:
                problems.append(Problem(f"species.{i}.body", f"a body lives in the environment; {need}"))
            if body.collide_with is not None:
                problems += _unknown_layers(_listed(f"species.{i}.body.collide_with", body.collide_with), layers)
            if body.medium == "water" and env is not None and not env.water:
                problems.append(Problem(f"species.{i}.body.medium", "a water animal needs water; the environment "
                                                                    "has no water bodies"))
    if env is not None:
        problems += _file_problems(env, scenario.base_dir)
    return problems


def _reference_problems(env, layers) -> list:
    """Every layer the environment's parts name must be declared; a pond must exist to be filled."""
    from ..errors import Problem

    fields = [("environment.terrain.layer", env.terrain.layer)] if env.terrain is not None else []
    for part in ("water", "shapes", "meshes", "scatter"):
        fields += [(f"environment.{part}.{i}.layer", item.layer) for i, item in enumerate(getattr(env, part))]
    problems = _unknown_layers(fields, layers)
    for i, w in enumerate(env.water):
        if w.fill_pond and (env.terrain is None or env.terrain.pond is None):
            problems.append(Problem(f"environment.water.{i}.fill_pond",
                                    "needs a terrain with a pond basin (environment.terrain.pond)"))
    return problems


def _file_problems(env, base_dir) -> list:
    """Every mesh and height-map file must exist and decode (one problem per file, naming its field)."""
    from pathlib import Path

    from ..errors import Problem
    from .builders import load_heightmap
    from .mesh import load_mesh_file

    problems = []

    def resolve(path: str) -> Path:
        p = Path(path)
        return p if p.is_absolute() or base_dir is None else Path(base_dir) / p

    for m, mesh in enumerate(env.meshes):
        try:
            load_mesh_file(resolve(mesh.path))
        except EnvironmentError_ as e:
            problems.append(Problem(f"environment.meshes.{m}.path", str(e)))
    if env.terrain is not None and env.terrain.image is not None:
        try:
            load_heightmap(env.terrain.image, base_dir, env.terrain.resolution)
        except EnvironmentError_ as e:
            problems.append(Problem("environment.terrain.image.path", str(e)))
    return problems


# ---------------------------------------------------------------------------------------------- kernels

@njit(cache=True, no_cfunc_wrapper=True, _nrt=False)  # array arguments: a call (see docs/performance.md)
def _surface(wf, wi, poly, x, z):
    best = -np.inf
    for w in range(wf.shape[0]):
        if wf[w, 0] > best and in_region(wf, wi, poly, w, x, z):
            best = wf[w, 0]
    return best


@njit(cache=True, no_cfunc_wrapper=True, _nrt=False)  # array arguments: a call (see docs/performance.md)
def _terrain(ter_h, tf, x, z):
    """Terrain height at ``(x, z)``: nan outside its rectangle, -inf without a terrain."""
    if tf[0] <= 0.0:
        return -np.inf
    h, _, _, _ = height_and_normal(ter_h, tf[1], tf[2], tf[3], tf[4], x, z)
    return h


@njit(cache=True, no_cfunc_wrapper=True)
def _keep_in_medium(medium, pos, vel, start, radius, offset, ter_h, tf, wf, wi, poly, held):
    """Hold every animal in its medium after collision resolution (see the module); ``held`` counts
    the animals put back where they started the step."""
    count = 0
    # a flier this far above the terrain's highest point cannot be under the ground: its height
    # there is not needed (the margin covers rounding in the surface's interpolation)
    clear_above = tf[6] + radius + 1e-6 * (1.0 + abs(tf[6])) if tf[0] > 0.0 else -np.inf
    for i in range(pos.shape[0]):
        x = np.float64(pos[i, 0])
        y = np.float64(pos[i, 1])
        z = np.float64(pos[i, 2])
        if medium == AIR and y > clear_above:
            continue
        h = _terrain(ter_h, tf, x, z)
        back = False
        if medium == WATER:  # under the surface, over water deep enough for the body
            s = _surface(wf, wi, poly, x, z)
            top = s - radius
            floor = h + radius if not math.isnan(h) else -np.inf
            if s == -np.inf or top < floor:
                back = True
            elif y > top:
                y = top
                if vel[i, 1] > 0.0:
                    vel[i, 1] = 0.0
        elif medium == GROUND:  # on the terrain, never under it or off its edge
            if math.isnan(h):
                back = True
            elif y < h:
                y = h + offset
                if vel[i, 1] < 0.0:
                    vel[i, 1] = 0.0
        else:  # air: never under the ground
            if not math.isnan(h) and y < h + radius:
                y = h + radius
                if vel[i, 1] < 0.0:
                    vel[i, 1] = 0.0
        if back:
            # hold it where the step started and drop the part of its velocity that led out
            mx = x - start[i, 0]
            mz = z - start[i, 2]
            ml = math.sqrt(mx * mx + mz * mz)
            x = start[i, 0]
            y = start[i, 1]
            z = start[i, 2]
            if ml > 1e-12:
                mx /= ml
                mz /= ml
                k = vel[i, 0] * mx + vel[i, 2] * mz
                if k > 0.0:
                    vel[i, 0] -= k * mx
                    vel[i, 2] -= k * mz
            count += 1
        pos[i, 0] = x
        pos[i, 1] = y
        pos[i, 2] = z
    held[0] += count


@njit(cache=True, no_cfunc_wrapper=True)
def _out_of_medium(medium, pos, tol, ter_h, tf, wf, wi, poly):
    """How many animals are outside their medium (their centre, within ``tol``)."""
    bad = 0
    for i in range(pos.shape[0]):
        x = np.float64(pos[i, 0])
        y = np.float64(pos[i, 1])
        z = np.float64(pos[i, 2])
        h = _terrain(ter_h, tf, x, z)
        if medium == WATER:
            s = _surface(wf, wi, poly, x, z)
            out = s == -np.inf or y > s + tol or (not math.isnan(h) and y < h - tol)
        elif medium == GROUND:
            out = math.isnan(h) or y < h - tol
        else:
            out = not math.isnan(h) and y < h - tol
        if out:
            bad += 1
    return bad


# ---------------------------------------------------------------------------------------------- the system

# the sweep's arguments where nothing wraps, and its every-sphere-is-active flag
_NO_BOX = np.zeros(3, np.float32)
_ACTIVE = np.ones(1, np.bool_)


@dataclass
class Body:
    """A species as the environment sees it."""

    name: str
    index: int
    radius: float
    medium: str
    mask: int  # collide-and-slide layers
    solid_mask: int  # what counts as solid for this species (its collide layers plus the ground)
    offset: float  # height of the position above the feet (walkers) or the radius
    skin: float
    start: np.ndarray  # positions at the start of the step (capacity, 3)
    out: Optional[object] = None  # reusable SlideResult buffers (capacity rows)
    moved: Optional[np.ndarray] = None  # the step's moves as velocities (capacity, 3), for the sweep
    radii: Optional[np.ndarray] = None  # the radius as the sweep takes it: (1,) float64
    # (layout, start, out, dt, arrays, the serial sweep's arguments), see EnvironmentSystem.after_move
    kept: Optional[tuple] = field(default=None, repr=False, compare=False)
    # the medium kernel's compiled entry points for this species (starling.kernel_calls)
    kernel_calls: CallSite = field(default_factory=CallSite, repr=False, compare=False)

    @property
    def placement_mask(self) -> int:
        """The layers a start position may not be inside: walkers touch the ground they stand
        on, so theirs leave it out (their collide layers); the others' are all that is solid."""
        return self.mask if self.medium == "ground" else self.solid_mask


def _compile_inside(env, mask: int) -> None:
    """In a helper process: the inside test of :meth:`EnvironmentSystem._fix_start`, typed as
    it calls it (a small batch: the serial kernel)."""
    env.is_inside_solid(np.zeros((1, 3), np.float32), 0.5, mask)


class EnvironmentSystem(System):
    """Owns the :class:`Environment`; resolves collisions and media after the movers (see the module)."""

    name = "environment"

    def __init__(self, sim):
        from ..errors import ConfigError, Problem
        from .scene import Environment

        compiled = compilations()
        cfg = sim.scenario.environment
        before = getattr(sim, "reused", None)
        kept = next((x for x in getattr(before, "systems", ()) if isinstance(x, EnvironmentSystem)), None)
        if kept is not None and kept.config == cfg and before.scenario.base_dir == sim.scenario.base_dir:
            self.environment = kept.environment  # static geometry: a reconfiguration keeps it when unchanged
            self._scene = kept._scene
        else:
            try:
                self.environment = Environment.from_config(cfg, base_dir=sim.scenario.base_dir)
            except EnvironmentError_ as e:
                raise ConfigError([Problem("environment", str(e))]) from None
            self._scene = None
        self.config = cfg
        env = self.environment
        self.held = np.zeros(1, np.int64)  # animals held back at a medium's edge, since the start
        self.bodies: list[Body] = []
        ground_bits = env.mask(["terrain", "ground"])
        for index, sp in enumerate(sim.scenario.species):
            mover = sim.movers[index]
            pipeline = sim.pipelines[index]
            if getattr(mover, "needs_environment", False):
                mover.attach_environment(env)
            if pipeline.ray_groups:
                pipeline.attach_environment(env)
            body = getattr(sp, "body", None) or BodyConfig()
            medium = body.medium or ("ground" if getattr(mover, "needs_environment", False) else "air")
            layers = body.collide_with if body.collide_with is not None else DEFAULT_COLLIDE[medium]
            mask = env.mask(layers) & ~env.mask("water")  # water is never solid
            offset = float(getattr(mover, "center_height", body.radius)) if medium == "ground" else body.radius
            pop = sim.population(sp.name)
            self.bodies.append(Body(sp.name, index, body.radius, medium, mask, mask | ground_bits, offset,
                                    body.skin_width, np.zeros((pop.capacity, 3), np.float32)))
        if compilations() > compiled:  # building the geometry compiled kernels: the cache is cold
            self._compile_inside_elsewhere(sim)
        self._place_initial(sim)

    def state(self, sim) -> dict:
        return {"held": self.held.copy()}

    def load_state(self, sim, state: dict) -> None:
        self.held[:] = state["held"]

    # ------------------------------------------------------------------ start positions
    def _compile_inside_elsewhere(self, sim) -> None:
        """On a cold start, have a helper process compile the placement's inside test while this
        one compiles its ray cast (together about 30 s of a cold lagoon's 35 s build on a slow
        core); when this process needs the test it loads it from the cache, or waits on the
        kernel's lock while the helper finishes (:mod:`starling.kernel_cache`)."""
        mask = next((b.placement_mask for b in self.bodies if b.placement_mask and sim.population(b.name).n), 0)
        if mask and helpers_wanted():
            run_elsewhere(partial(_compile_inside, self.environment, mask))

    def _place_initial(self, sim) -> None:
        """Move animals that start in an invalid place to valid ones drawn from their spawn region."""
        from ..errors import ConfigError, Problem

        for body in self.bodies:
            pop = sim.population(body.name)
            if pop.n == 0:
                continue
            sp = sim.scenario.species[body.index]
            rng = np.random.default_rng(np.random.SeedSequence(sim.world.seed, spawn_key=(body.index, 7919)))
            pos = pop.position
            first = getattr(sim, "fresh_from", {}).get(body.name, 0)  # restored animals stay where they are
            todo = np.arange(first, pop.n)
            if todo.size == 0:
                continue
            fresh = slice(first, pop.n)
            for _ in range(PLACEMENT_ATTEMPTS):
                candidates = pos[todo]
                bad = self._fix_start(body, candidates)
                pos[todo] = candidates
                todo = todo[bad]
                if todo.size == 0:
                    break
                pos[todo] = _sample_region(sp.spawn, todo.size, rng)
            if todo.size:
                raise ConfigError([Problem(
                    f"species.{body.index}.spawn",
                    f"cannot place {todo.size} of {pop.n} {body.name!r} validly in their medium "
                    f"({body.medium}) inside the spawn region; move or enlarge it")])
            if body.medium == "ground":
                # walkers start walking: horizontal velocity and heading
                pop.velocity[fresh, 1] = 0.0
                f = pop.forward[fresh].copy()
                f[:, 1] = 0.0
                length = np.linalg.norm(f, axis=1, keepdims=True)
                f = np.where(length > 1e-6, f / np.maximum(length, 1e-12), np.array([0.0, 0.0, 1.0], np.float32))
                pop.forward[fresh] = f
                pop.up[fresh] = (0.0, 1.0, 0.0)

    def _fix_start(self, body: Body, pos: np.ndarray) -> np.ndarray:
        """Settle valid candidates in place (on the ground, under the surface) and flag the rest."""
        env = self.environment
        n = pos.shape[0]
        x = pos[:, 0].astype(np.float64)
        z = pos[:, 2].astype(np.float64)
        top = np.full(n, _top_of(env), np.float32)
        origins = np.column_stack([x, top, z]).astype(np.float32)
        down = np.tile(np.array([[0.0, -1.0, 0.0]], np.float32), (n, 1))
        reach = float(top[0] - _bottom_of(env)) + 1.0
        surface = env.surface_height(x, z)
        bad = np.zeros(n, bool)
        if body.medium == "ground":
            # on the terrain or the ground planes (not on a tree's canopy): obstacles there are rejected below
            hits = env.cast_rays(origins, down, reach, env.mask(["terrain", "ground"]))
            bad |= ~hits.hit
            ground = hits.point[:, 1].astype(np.float64)
            bad |= np.isfinite(surface) & (surface > ground)  # walkers start on dry land
            pos[:, 1] = np.where(hits.hit, ground + body.offset, pos[:, 1])
            if env.terrain is not None:
                bad |= ~np.isfinite(env.height_at(x, z))
        else:
            floor_hits = env.cast_rays(origins, down, reach, body.solid_mask)
            floor = np.where(floor_hits.hit, floor_hits.point[:, 1], -np.inf).astype(np.float64)
            if body.medium == "water":
                lo = floor + body.radius + 2 * body.skin
                hi = surface - body.radius - 2 * body.skin
                bad |= ~np.isfinite(surface) | (hi < lo)
                y = np.clip(pos[:, 1].astype(np.float64), lo, hi)
                pos[:, 1] = np.where(bad, pos[:, 1], y)
            else:
                y = np.maximum(pos[:, 1].astype(np.float64), floor + body.radius + 2 * body.skin)
                pos[:, 1] = y
        ok = ~bad
        check = body.placement_mask
        if ok.any() and check:
            inside = env.is_inside_solid(pos[ok], body.radius + body.skin, check)
            idx = np.flatnonzero(ok)
            bad[idx[inside]] = True
        return bad

    # ------------------------------------------------------------------ the step
    def before_behaviors(self, sim, dt: float) -> None:
        for body in self.bodies:
            pop = sim.population(body.name)
            if body.start.shape[0] < pop.n:
                body.start = np.zeros((pop.capacity, 3), np.float32)
            body.start[: pop.n] = pop.position

    def after_move(self, sim, dt: float) -> None:
        from .collide import SlideResult, collide_and_slide, slide_moves
        from ..parallel import threads_from

        env = self.environment
        a = env.arrays
        world = sim.world
        size = (world.bounds_max - world.bounds_min).astype(np.float32) if world.wrap else _NO_BOX
        for body in self.bodies:
            pop = sim.population(body.name)
            n = pop.n
            if n == 0 or dt <= 0:
                continue
            start = body.start[:n]
            pos = pop.position
            vel = pop.velocity
            if body.mask:
                if body.out is None or body.out.positions.shape[0] < n:
                    cap = pop.capacity
                    body.out = SlideResult(np.zeros((cap, 3), np.float32), np.zeros((cap, 3), np.float32),
                                           np.zeros(cap, np.int8))
                    body.moved = np.zeros((cap, 3), np.float32)
                    body.radii = np.full(1, float(body.radius))
                out = body.out
                if n < threads_from():
                    kept = body.kept  # the kernel's arguments, kept while they are built from the same
                    if (kept is None or kept[0] != pop.layout or kept[1] is not body.start or kept[2] is not out
                            or kept[3] != dt or kept[4] is not a):
                        kept = body.kept = (pop.layout, body.start, out, dt, a, (
                            a, pos, vel, start, float(dt), np.float32(dt), world.wrap, size, body.radii,
                            float(body.skin), np.int64(int(body.mask) & ALL_LAYERS), _ACTIVE, body.moved[:n],
                            out.positions[:n], out.velocities[:n], out.contacts[:n]))
                    body.kernel_calls(slide_moves, n, *kept[5])
                else:
                    move = pos - start
                    if world.wrap:
                        move -= size * np.round(move / size)
                    out = SlideResult(out.positions[:n], out.velocities[:n], out.contacts[:n])
                    collide_and_slide(env, start, move / np.float32(dt), dt, body.radius, body.mask, body.skin,
                                      out=out, parallel=True)
                    pos[:] = out.positions
                    touched = out.contacts > 0
                    vel[touched] = out.velocities[touched]
            body.kernel_calls(_keep_in_medium, n, MEDIA.index(body.medium), pos, vel, start, float(body.radius),
                              float(body.offset), a.ter_h, a.ter_f, a.w_f, a.w_i, a.w_poly, self.held)

    # ------------------------------------------------------------------ reporting
    def health(self, sim) -> dict:
        env = self.environment
        a = env.arrays
        inside = 0
        out = 0
        for body in self.bodies:
            pop = sim.population(body.name)
            if pop.n == 0:
                continue
            if body.solid_mask:
                inside += int(np.count_nonzero(env.is_inside_solid(pop.position, 0.0, body.solid_mask)))
            out += int(_out_of_medium(MEDIA.index(body.medium), pop.position, TOLERANCE, a.ter_h, a.ter_f, a.w_f,
                                      a.w_i, a.w_poly))
        return {"inside_solid": inside, "out_of_medium": out}

    def inspect(self, sim, species: str, row: int) -> dict:
        body = next((b for b in self.bodies if b.name == species), None)
        if body is None:
            return {}
        mover = sim.movers[body.index]
        info = {"medium": body.medium, "body_radius": body.radius}
        state = getattr(mover, "state_array", None)  # the ground mover's (its state() is the snapshot's)
        if state is not None and row < state.shape[0]:
            info["ground_state"] = ("grounded", "falling", "swimming")[int(state[row])]
        return info

    def scene(self, sim) -> dict:
        if self._scene is None:
            self._scene = {"environment": describe(self.environment)}
        return self._scene


def _top_of(env) -> float:
    b = env.bounds
    return (float(b[1][1]) if b is not None else 0.0) + 50.0


def _bottom_of(env) -> float:
    b = env.bounds
    return (float(b[0][1]) if b is not None else 0.0) - 50.0


def _sample_region(spawn, k: int, rng: np.random.Generator) -> np.ndarray:
    """``k`` points drawn uniformly from a spawn region (box or ball)."""
    center = np.asarray(spawn.center, np.float64)
    if spawn.shape == "box":
        pts = center + (rng.random((k, 3)) - 0.5) * np.asarray(spawn.size)
    else:
        d = rng.normal(size=(k, 3))
        d /= np.maximum(np.linalg.norm(d, axis=1, keepdims=True), 1e-12)
        pts = center + d * spawn.radius * rng.random((k, 1)) ** (1.0 / 3.0)
    return pts.astype(np.float32)


# ---------------------------------------------------------------------------------------------- registration

@registry.section("environment", model=EnvironmentSection, order=ORDER)
def _environment(sim):
    """The static environment (terrain, water, shapes, meshes, scattered obstacles); collisions and media."""
    return EnvironmentSystem(sim)


registry.section("body", model=BodyConfig, scope="species", order=ORDER)(None)
