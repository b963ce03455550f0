"""Parameter models: the single source of truth for a behaviour's settings.

A parameter model validates a config, gives defaults, units and ranges, produces the
JSON Schema (for the CLI and the browser editor) and converts itself into the plain
named tuple a Numba kernel reads. Unknown fields are rejected (``extra="forbid"``) so
a misspelled parameter is an error, never silently ignored.
"""
from __future__ import annotations

from types import UnionType
from typing import Annotated, Any, ClassVar, Optional, Union, get_args, get_origin

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_serializer, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from ..kernel_types import field_encoded_namedtuple, module_getattr
from .distributions import Distribution, bounds_of, parse_distribution

Weight = Annotated[float, Field(ge=0.0, le=1.0)]
Vec3 = tuple[float, float, float]


class StrictModel(BaseModel):
    """Base of every config model: unknown fields are errors, assignments are validated."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


# Fields that configure how the pipeline runs a behaviour, not the kernel's math.
_PIPELINE_FIELDS = frozenset({"kind", "label", "enabled", "priority"})
_KERNEL_TUPLES: dict[type, type] = {}
#: the trailing field of every behaviour's kernel tuple: its random stream key (uint64)
STREAM_KEY = "key"


def with_stream_key(kernel_params, key):
    """``kernel_params`` with its stream key set (unchanged if a custom tuple has no ``key`` field).

    A behaviour that overrides ``kernel_params()`` with its own tuple and never draws
    random numbers need not carry a key; one that does adds a trailing ``key`` field.
    """
    if STREAM_KEY not in kernel_params._fields:
        return kernel_params
    return kernel_params._replace(**{STREAM_KEY: np.uint64(key)})


class PerAnimalParams(StrictModel):
    """A parameter model whose float fields may each be a distribution drawn per animal.

    Individual variation (:mod:`starling.steering.distributions`): a field given as
    ``{ uniform = [a, b] }`` or ``{ normal = [mean, sd] }`` holds the distribution's mean
    (so code that needs one number still gets one), :attr:`varied` holds the
    distribution, every possible draw is checked against the field's bounds, and a dump
    writes the distribution back. Behaviours and movers build on it; whoever runs the
    model draws one value per animal (a population component) and uses it.
    """

    #: pairs ``(low, high, strict)`` of parameters that must stay ordered for every animal's draws
    ordered: ClassVar[tuple[tuple[str, str, bool], ...]] = ()

    _varied: dict = PrivateAttr(default_factory=dict)

    @classmethod
    def variable_fields(cls) -> tuple[str, ...]:
        """The parameters that may be drawn per animal: every float field (subclasses narrow it)."""
        cached = cls.__dict__.get("_variable_cache")
        if cached is None:
            cached = tuple(name for name, f in cls.model_fields.items() if _is_float(f.annotation))
            cls._variable_cache = cached
        return cached

    @property
    def varied(self) -> dict[str, Distribution]:
        """The parameters given as distributions, by field name (empty when every animal shares them)."""
        return self._varied

    @model_validator(mode="wrap")
    @classmethod
    def _distributions(cls, data, handler):
        """Take distributions out of the input, validate them against the field's bounds,
        and leave their means for the ordinary field validation."""
        if not isinstance(data, dict):
            return handler(data)
        varied: dict[str, Distribution] = {}
        errors = []
        clean = dict(data)
        for name in cls.variable_fields():
            value = clean.get(name)
            if not isinstance(value, (dict, Distribution)):
                continue
            try:
                d = parse_distribution(value)
                bounds_of(cls.model_fields[name]).check_distribution(d)
            except ValueError as exc:
                errors.append(InitErrorDetails(
                    type=PydanticCustomError("distribution", "{reason}", {"reason": str(exc)}),
                    loc=(name,), input=value))
                continue
            varied[name] = d
            clean[name] = d.mean()
        if errors:
            raise ValidationError.from_exception_data(cls.__name__, errors)
        model = handler(clean)
        model._varied = varied
        for low, high, strict in cls.ordered:
            problem = model._disorder(low, high, strict)
            if problem:
                raise ValidationError.from_exception_data(cls.__name__, [InitErrorDetails(
                    type=PydanticCustomError("order", "{reason}", {"reason": problem}),
                    loc=(high,), input=data.get(high, getattr(model, high)))])
        return model

    def span(self, name: str) -> tuple[float, float]:
        """Smallest and largest value the parameter can take for any animal."""
        d = self._varied.get(name)
        if d is not None:
            return d.support()
        v = float(getattr(self, name))
        return v, v

    def _disorder(self, low: str, high: str, strict: bool) -> str:
        if getattr(self, low) is None or getattr(self, high) is None:
            return ""
        top_low = self.span(low)[1]
        bottom_high = self.span(high)[0]
        if bottom_high > top_low or (not strict and bottom_high == top_low):
            return ""
        relation = "greater than" if strict else "at least"
        if low in self._varied or high in self._varied:
            return f"every draw of {high} must be {relation} every draw of {low}"
        return f"{high} must be {relation} {low}"

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema, handler):
        """The schema says what validation accepts: each variable field also takes a distribution."""
        schema = handler(core_schema)
        target = handler.resolve_ref_schema(schema)
        dist = handler(Distribution.__pydantic_core_schema__)
        for name in cls.variable_fields():
            prop = target.get("properties", {}).get(name)
            if prop is None:
                continue
            keep = {k: prop.pop(k) for k in ("title", "description", "default") if k in prop}
            target["properties"][name] = {"anyOf": [prop, dist], **keep}
        return schema

    @model_serializer(mode="wrap")
    def _dump(self, handler):
        data = handler(self)
        for name, d in self._varied.items():
            if name in data:
                data[name] = d.model_dump(exclude_none=True)
        return data



class BehaviorParams(PerAnimalParams):
    """Settings shared by every velocity behaviour (seed 000, 6.4.1 and 11.3).

    The maximum direction and speed desires a shipped behaviour returns are exactly
    ``weight_direction`` and ``weight_speed``; weights live in [0, 1] because the
    merger's desire budget is 1.

    Every float parameter the kernel reads may be given as a distribution instead of a
    number (individual variation, :mod:`starling.steering.distributions`): the field
    then holds the distribution's mean, :attr:`varied` holds the distribution, and the
    pipeline hands the kernel one drawn value per animal (read with
    :func:`starling.steering.per_animal.at`).
    """

    kind: str
    label: Optional[str] = Field(None, description="Display name (defaults to the kind).")
    enabled: bool = Field(True, description="A disabled behaviour returns no opinion.")
    priority: int = Field(0, ge=0, le=255, description="Higher is merged first.")
    weight_direction: Weight = Field(0.5, description="Maximum direction desire.")
    weight_speed: Weight = Field(0.0, description="Maximum speed desire.")

    kernel_fields: ClassVar[Optional[tuple[str, ...]]] = None
    #: per-field converters for values a kernel cannot take as they are (e.g. a name → a code)
    kernel_converters: ClassVar[dict[str, Any]] = {}

    @classmethod
    def kernel_field_names(cls) -> tuple[str, ...]:
        return cls.kernel_fields or tuple(name for name in cls.model_fields if name not in _PIPELINE_FIELDS)

    @classmethod
    def variable_fields(cls) -> tuple[str, ...]:
        """The parameters that may be drawn per animal: the kernel's float fields."""
        cached = cls.__dict__.get("_variable_cache")
        if cached is None:
            cached = tuple(
                name for name in cls.kernel_field_names()
                if name not in cls.kernel_converters and _is_float(cls.model_fields[name].annotation)
            )
            cls._variable_cache = cached
        return cached


    def kernel_params(self):
        """The named tuple the kernel receives: every numeric field, arrays as float64.

        A field given as a distribution appears with its mean; the pipeline replaces it
        with the animals' draws each step. The last field, ``key``, is the behaviour's
        random stream key (:mod:`starling.steering.random`): 0 here, set by the pipeline
        with :func:`with_stream_key`.
        """
        cls = type(self)
        names = cls.kernel_field_names()
        tuple_type = _KERNEL_TUPLES.get(cls)
        if tuple_type is None or tuple_type._fields[:-1] != names:
            if STREAM_KEY in names:
                raise TypeError(f"{cls.__name__}: {STREAM_KEY!r} is reserved for the random stream key")
            # a class named after its fields, rebuildable from the name (see starling.kernel_types)
            tuple_type = field_encoded_namedtuple(__name__, "Kernel", names + (STREAM_KEY,))
            _KERNEL_TUPLES[cls] = tuple_type
        conv = cls.kernel_converters
        return tuple_type(*(
            _to_kernel_value(conv[name](getattr(self, name)) if name in conv else getattr(self, name))
            for name in names
        ), np.uint64(0))


class MergerParams(StrictModel):
    """Settings of a merger (how a species' behaviour results become one desired velocity).

    A subclass fixes ``kind`` to its registered name, so a species' ``merger`` table is a
    discriminated union of every registered merger.
    """

    kind: str


class BrainActionParams(StrictModel):
    """Settings of a brain action (what animals do when they enter a state).

    A subclass fixes ``kind`` to its registered name (``kind: Literal["sound"] = "sound"``),
    so a state's ``on_enter`` list is a discriminated union of every registered action.
    """

    kind: str


class NeighborBehaviorParams(BehaviorParams):
    """Adds the perception a neighbour behaviour weighs its neighbours with (6.4.4).

    ``max_distance`` and ``fov_deg`` default to the group's query; a behaviour may see
    less than its query (e.g. separation only within 2 m of a 5 m query).
    """

    max_distance: Optional[float] = Field(
        None, gt=0, description="Radius of the observability field, m (default: the query's)."
    )
    fov_deg: Optional[float] = Field(
        None, gt=0, le=360, description="Field of view, degrees (default: the query's)."
    )
    distance_power: float = Field(2.0, gt=0, description="Power l of the distance observability f_ip.")
    angle_power: float = Field(2.0, gt=0, description="Power l of the angle observability f_q2.")


class RayBehaviorParams(BehaviorParams):
    """Adds the perception a ray behaviour weighs its hits with (seed 000, 7.1.4).

    ``max_distance`` and ``fov_deg`` default to the group's ray query, like a neighbour
    behaviour's default to its neighbour query; the observability of a hit is
    ``f_ip(d / max_distance) · f_q2(2α / fov)`` with ``α`` the angle between the ray and
    the animal's forward vector.
    """

    max_distance: Optional[float] = Field(
        None, gt=0, description="Radius of the observability field, m (default: the query's ray length)."
    )
    fov_deg: Optional[float] = Field(
        None, gt=0, le=360, description="Field of view, degrees (default: the query's cone angle)."
    )
    distance_power: float = Field(2.0, gt=0, description="Power l of the distance observability f_ip.")
    angle_power: float = Field(2.0, gt=0, description="Power l of the angle observability f_q2.")


def _is_float(annotation) -> bool:
    """``float`` or ``Optional[float]`` (possibly ``Annotated``)."""
    if annotation is float:
        return True
    args = [a for a in get_args(annotation) if a is not type(None)]
    return get_origin(annotation) in (Union, UnionType) and args == [float]


def _to_kernel_value(value: Any):
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return np.int64(value)
    if isinstance(value, float):
        return np.float64(value)
    if isinstance(value, (list, tuple)):
        return np.asarray(value, dtype=np.float64)
    if value is None:
        return np.float64(np.nan)
    if isinstance(value, np.ndarray):
        return value
    raise TypeError(
        f"parameter of type {type(value).__name__} cannot be passed to a kernel; "
        "override kernel_params() to convert it"
    )


# pickle (Numba's cache index) may ask for a kernel tuple type before anything built it
__getattr__ = module_getattr(__name__, "Kernel")
