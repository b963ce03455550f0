"""Parameter models: the single source of truth for a behaviour's settings.

A parameter model validates a config, gives defaults, units and ranges, produces the
JSON Schema (for the CLI and the browser editor) and converts itself into the plain
named tuple a Numba kernel reads. Unknown fields are rejected (``extra="forbid"``) so
a misspelled parameter is an error, never silently ignored.
"""
from __future__ import annotations

from typing import Annotated, Any, ClassVar, Optional

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ..kernel_types import field_encoded_namedtuple, module_getattr

Weight = Annotated[float, Field(ge=0.0, le=1.0)]
Vec3 = tuple[float, float, float]


class StrictModel(BaseModel):
    """Base of every config model: unknown fields are errors, assignments are validated."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


# Fields that configure how the pipeline runs a behaviour, not the kernel's math.
_PIPELINE_FIELDS = frozenset({"kind", "label", "enabled", "priority"})
_KERNEL_TUPLES: dict[type, type] = {}


class BehaviorParams(StrictModel):
    """Settings shared by every velocity behaviour (seed 000, 6.4.1 and 11.3).

    The maximum direction and speed desires a shipped behaviour returns are exactly
    ``weight_direction`` and ``weight_speed``; weights live in [0, 1] because the
    merger's desire budget is 1.
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

    def kernel_params(self):
        """The named tuple the kernel receives: every numeric field, arrays as float64."""
        cls = type(self)
        names = cls.kernel_fields or tuple(
            name for name in cls.model_fields if name not in _PIPELINE_FIELDS
        )
        tuple_type = _KERNEL_TUPLES.get(cls)
        if tuple_type is None or tuple_type._fields != names:
            # a class named after its fields, rebuildable from the name (see starling.kernel_types)
            tuple_type = field_encoded_namedtuple(__name__, "Kernel", names)
            _KERNEL_TUPLES[cls] = tuple_type
        conv = cls.kernel_converters
        return tuple_type(*(
            _to_kernel_value(conv[name](getattr(self, name)) if name in conv else getattr(self, name))
            for name in names
        ))


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
