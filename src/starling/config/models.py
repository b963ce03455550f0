"""Pydantic models of a scenario: the one definition of what a config may say.

Behaviour and mover settings are discriminated unions built from the registry
(``kind`` picks the parameter model), so a behaviour registered by a user is accepted
in configs, appears in the JSON Schema and in the editor without touching this file.
The union is rebuilt when the registry changes. A section model that names registered
things itself (a brain state's ``on_enter`` actions) is specialised the same way, through
its ``for_registry()`` classmethod.
"""
from __future__ import annotations

import re
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import Field, PrivateAttr, create_model, field_validator, model_validator

from ..steering import registry
from ..steering.params import StrictModel, Vec3
from ..steering.queries.rays import RayQuerySpec
from .stop import StopCondition

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")
ANIMAL_MODELS = ("bird", "fish", "shark", "sheep", "wolf", "zebra", "lion", "elephant")


def _check_name(value: str) -> str:
    if not _NAME.match(value):
        raise ValueError("must start with a letter or '_' and contain only letters, digits, '_' or '-'")
    return value


class WorldConfig(StrictModel):
    """The world box. With ``wrap`` the box is periodic (animals leaving one side enter the other)."""

    bounds_min: Vec3 = Field((-100.0, 0.0, -100.0), description="Lowest corner, m.")
    bounds_max: Vec3 = Field((100.0, 100.0, 100.0), description="Highest corner, m.")
    wrap: bool = Field(False, description="Periodic boundaries.")

    @model_validator(mode="after")
    def _ordered(self):
        for axis, lo, hi in zip("xyz", self.bounds_min, self.bounds_max):
            if hi <= lo:
                raise ValueError(f"bounds_max.{axis} must be greater than bounds_min.{axis}")
        return self


class ViewConfig(StrictModel):
    """The opening camera of the live app and of replays: a composed first look at the scene.

    Without one the viewer frames the most numerous species, which suits a single flock or
    school but not an ecosystem whose herd, pond and flocks lie apart ("Frame all" in the app
    still frames the animals). Only the viewer reads it; the simulation ignores it.
    """

    position: Vec3 = Field(..., description="Where the camera stands, m (above the target).")
    target: Vec3 = Field(..., description=(
        "The point the view centres, m: drawn in the middle of the part of the view that the app's "
        "panels leave free, whatever the window's size."))

    @model_validator(mode="after")
    def _above_target(self):
        if self.position[1] <= self.target[1]:
            raise ValueError("position must be higher than target (the orbit camera looks down on what it orbits)")
        return self


class SpawnConfig(StrictModel):
    """Where and how animals start: uniformly inside a box or a sphere."""

    shape: Literal["box", "sphere"] = "box"
    center: Vec3 = Field((0.0, 20.0, 0.0), description="Centre of the region, m.")
    size: Vec3 = Field((40.0, 10.0, 40.0), description="Box extents (full widths), m.")
    radius: float = Field(20.0, gt=0, description="Sphere radius, m.")
    speed: tuple[float, float] = Field((1.0, 3.0), description="Initial speed range, m/s.")
    planar: bool = Field(False, description="Start with horizontal velocities (walkers, 2D).")
    min_spacing: float = Field(0.0, ge=0, description="No two animals spawned together start closer than this, m, where the region has room (0: anywhere).")
    direction: Optional[Vec3] = Field(None, description="Common initial heading (default: every direction).")
    direction_spread_deg: float = Field(30.0, ge=0, le=180, description="Headings lie within this angle of `direction`, degrees.")

    @field_validator("size")
    @classmethod
    def _non_negative(cls, v):
        if min(v) < 0:
            raise ValueError("extents must be >= 0")
        return v

    @field_validator("speed")
    @classmethod
    def _speed_range(cls, v):
        if v[0] < 0 or v[1] < v[0]:
            raise ValueError("must be [min, max] with 0 <= min <= max")
        return v

    @field_validator("direction")
    @classmethod
    def _direction_nonzero(cls, v):
        if v is not None and sum(c * c for c in v) < 1e-18:
            raise ValueError("must be a non-zero vector")
        return v


class AppearanceConfig(StrictModel):
    """How the browser draws the species."""

    model: Literal[ANIMAL_MODELS] = "bird"  # type: ignore[valid-type]
    color: str = Field("#d8d2c4", pattern=r"^#[0-9a-fA-F]{6}$")
    scale: float = Field(1.0, gt=0)


class QueryConfig(StrictModel):
    """Who a neighbour group sees (seed 000, 9.3.1 NeighborhoodSettings and ch. 5)."""

    targets: list[str] = Field(default_factory=list, description="Species seen (default: the own species).")
    tags: list[str] = Field(default_factory=list, description="Only targets carrying any of these tags.")
    exclude_tags: list[str] = Field(default_factory=list, description="Ignore targets carrying any of these tags.")
    max_distance: float = Field(5.0, gt=0, description="Radius of vision, m.")
    k: int = Field(5, ge=1, le=256, description="Most neighbours kept (topological distance).")
    fov_deg: float = Field(270.0, gt=0, le=360, description="Field of view around forward, degrees.")
    mode: Literal["knn", "all_in_radius"] = "knn"
    method: str = Field("grid", description="Neighbour search: a registered query method (built in: grid, kdtree, brute, all_pairs).")

    @field_validator("method")
    @classmethod
    def _registered(cls, value):
        known = sorted(q.name for q in registry.queries())
        if value not in known:
            raise ValueError(f"unknown neighbour query method {value!r}; registered: {', '.join(known)} "
                             "(load your own with --plugin MODULE)")
        return value

    @field_validator("max_distance", "k", "fov_deg", mode="before")
    @classmethod
    def _shared(cls, value):
        if isinstance(value, dict):
            raise ValueError(SHARED_QUERY)
        return value


#: why a query's numbers cannot be drawn per animal (individual variation)
SHARED_QUERY = ("a query is shared by every animal of its group, so it takes one number; "
                "draw the behaviour's own max_distance or fov_deg per animal instead")


PARAMETER_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class ParameterConfig(StrictModel):
    """A named knob of a scenario: one name for one or more config paths (``--set eta=3``).

    Its default is the value the scenario has at its paths, so a scenario states each
    number once; ``starling scenarios NAME`` shows it.
    """

    path: Union[str, list[str]] = Field(..., description="Config path(s) the name sets, e.g. species.bird.count.")
    description: str = Field("", description="What the parameter means, with its unit.")

    @field_validator("path")
    @classmethod
    def _paths_given(cls, v):
        paths = [v] if isinstance(v, str) else v
        if not paths or any(not p.strip() or "=" in p for p in paths):
            raise ValueError("must be one config path or a non-empty list of them, without '='")
        return v

    @property
    def paths(self) -> list[str]:
        return [self.path] if isinstance(self.path, str) else list(self.path)


class ScenarioBase(StrictModel):
    """Base of the generated Scenario model: remembers the folder its file came from."""

    _base_dir: Optional[str] = PrivateAttr(None)

    parameters: dict[str, ParameterConfig] = Field(default_factory=dict, description=(
        "Named parameters: each name stands for one or more config paths (--set NAME=VALUE)."))

    @field_validator("parameters")
    @classmethod
    def _parameter_names(cls, v):
        reserved = set(cls.model_fields)
        for name in v:
            if not PARAMETER_NAME.match(name):
                raise ValueError(f"{name!r} is not a name (letters, digits and _, not starting with a digit)")
            if name in reserved:
                raise ValueError(f"{name!r} is a scenario field; a parameter cannot share its name")
        return v

    @field_validator("dt", check_fields=False)
    @classmethod
    def _dt_within_max_dt(cls, v, info):
        """``dt`` is bounded by the scenario's own ``max_dt`` (validated before it), not by a fixed number."""
        limit = info.data.get("max_dt")
        if limit is not None and v > limit:
            raise ValueError(f"dt = {v:g} s exceeds this scenario's max_dt = {limit:g} s "
                             "(raise max_dt in the scenario if the model is meant to take such steps)")
        return v

    @property
    def base_dir(self) -> Optional[str]:
        """Folder that relative file paths (meshes, height maps) are resolved against; None: the cwd."""
        return self._base_dir

    def with_base_dir(self, folder) -> "ScenarioBase":
        self._base_dir = None if folder is None else str(folder)
        return self

    def __reduce__(self):
        """Pickle as plain data: the model class is built at run time from the registry, so the
        receiving process rebuilds it (the same plugins must be loaded there)."""
        return (_rebuild_scenario, (self.model_dump(mode="json"), self._base_dir))


def _rebuild_scenario(data: dict, base_dir: Optional[str]):
    return scenario_model().model_validate(data).with_base_dir(base_dir)


def _union(models: list[type], what: str):
    if not models:
        return None
    if len(models) == 1:
        return models[0]
    return Annotated[Union[tuple(models)], Field(discriminator="kind")]


_cache: dict[str, Any] = {}


def _section_model(sec):
    """A section's model; one naming registered things (a brain's actions) is specialised to the
    registry as it is now, through its ``for_registry()`` classmethod (like the behaviour unions here)."""
    specialise = getattr(sec.model, "for_registry", None)
    return specialise() if specialise is not None else sec.model


def scenario_model():
    """The Scenario model class for the behaviours and movers registered right now."""
    ver = registry.version() if registry.behaviors() is not None else 0
    if _cache.get("version") == ver:
        return _cache["model"]
    simple = _union([b.params for b in registry.behaviors("simple")], "simple behaviour")
    neighbor = _union([b.params for b in registry.behaviors("neighbor")], "neighbour behaviour")
    ray = _union([b.params for b in registry.behaviors("ray")], "ray behaviour")
    movers = _union([m.params for m in registry.movers()], "mover")
    mergers = _union([m.params for m in registry.mergers()], "merger")

    group_fields: dict[str, Any] = {
        "__base__": StrictModel,
        "__doc__": "Neighbour behaviours sharing one neighbour query (seed 000, Alg. 6).",
        "label": (Optional[str], None),
        "query": (QueryConfig, Field(default_factory=QueryConfig)),
    }
    if neighbor is not None:
        group_fields["behaviors"] = (list[neighbor], Field(default_factory=list))
    NeighborGroup = create_model("NeighborGroupConfig", **group_fields)

    ray_group_fields: dict[str, Any] = {
        "__base__": StrictModel,
        "__doc__": "Ray behaviours sharing one ray query cast into the environment (seed 000, 2.1.1, 7.1).",
        "label": (Optional[str], None),
        "query": (RayQuerySpec, Field(default_factory=RayQuerySpec)),
    }
    if ray is not None:
        ray_group_fields["behaviors"] = (list[ray], Field(default_factory=list))
    RayGroup = create_model("RayGroupConfig", **ray_group_fields)

    species_fields: dict[str, Any] = {
        "__base__": StrictModel,
        "__doc__": "One species: its animals, how they look, and their steering pipeline.",
        "name": (str, Field(..., description="Unique species name.")),
        "count": (int, Field(100, ge=0, le=10_000_000, description="Animals at start.")),
        "appearance": (AppearanceConfig, Field(default_factory=AppearanceConfig)),
        "spawn": (SpawnConfig, Field(default_factory=SpawnConfig)),
        "components": (dict[str, float], Field(default_factory=dict, description="Per-animal values and their start value.")),
        "mover": (movers, Field(default_factory=lambda: registry.get_mover("free").params())),
        "merger": (mergers, Field(default_factory=lambda: registry.get_merger("priority_desire").params(),
                                  description="How the behaviours' results become one desired velocity (seed 000, ch. 4).")),
        "groups": (list[NeighborGroup], Field(default_factory=list)),
        "ray_groups": (list[RayGroup], Field(default_factory=list, description=(
            "Ray queries into the environment and the ray behaviours reading their hits "
            "(needs an [environment] section)."))),
        "__validators__": {"_name": field_validator("name")(lambda cls, v: _check_name(v))},
    }
    for sec in registry.sections("species"):
        species_fields[sec.name] = (Optional[_section_model(sec)], Field(None, description=sec.doc or None))
    if simple is not None:
        species_fields["behaviors"] = (list[simple], Field(default_factory=list))
    Species = create_model("SpeciesConfig", **species_fields)

    scenario_sections = {
        sec.name: (Optional[_section_model(sec)], Field(None, description=sec.doc or None))
        for sec in registry.sections("scenario")
    }
    Scenario = create_model(
        "ScenarioConfig",
        __base__=ScenarioBase,
        **scenario_sections,
        __doc__="A whole scene: world, species and their pipelines.",
        name=(str, Field("scenario", description="Scenario name.")),
        description=(str, ""),
        max_dt=(float, Field(0.5, gt=0, description=(
            "Largest time step this scenario allows, s: dt is checked against it. 0.5 s suits animals "
            "moving in continuous time; a discrete-time model (Vicsek's Δt = 1) declares its own."))),
        dt=(float, Field(1.0 / 30.0, gt=0, description="Fixed time step, s (at most max_dt).")),
        seed=(int, Field(0, ge=0, description="Seed of the simulation's random generator.")),
        backend=(Literal["cpu", "cuda"], Field("cpu", description=(
            "Where the step runs: 'cpu' (Numba), or 'cuda' (an NVIDIA GPU, `pip install starling[cuda]`). "
            "A scene the GPU cannot run, or a machine without one, runs on the CPU and says why (docs/gpu.md)."))),
        steps=(int, Field(1000, ge=0, description="Default step count of `starling run`.")),
        stop=(list[StopCondition], Field(default_factory=list, description=(
            "When a run is decided (checked after every step, in order): see starling.config.stop."))),
        group_distance=(Optional[float], Field(None, gt=0, description=(
            "Metrics: animals closer than this are one group, m (default: each species' neighbour reach)."))),
        world=(WorldConfig, Field(default_factory=WorldConfig)),
        view=(Optional[ViewConfig], Field(None, description=(
            "The viewer's opening camera (default: framed on the most numerous species)."))),
        species=(list[Species], Field(..., min_length=1)),
    )
    _cache.update(version=ver, model=Scenario, species=Species, group=NeighborGroup, ray_group=RayGroup)
    return Scenario


def species_model():
    scenario_model()
    return _cache["species"]
