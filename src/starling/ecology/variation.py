"""Individual variation: numbers drawn per animal when it is born.

Seed 003 gives every boid its own parameters and the thesis' future work (12.2) asks
for "randomizing these weights slightly" so that animals of one species differ. Here a
numeric ecology parameter may be written either as a plain number (every animal shares
it) or as a distribution::

    drain = 0.1                                    # everyone
    drain = { uniform = [0.08, 0.12] }             # each animal draws once, at spawn
    drain = { normal = [0.1, 0.01], min = 0.05 }   # mean, standard deviation, optional clip

The draw happens when the animal enters the world (the start of the run or a later
spawn) and is stored in a per-animal component, so it survives reordering and removal
of other animals and the animal keeps its value for life. ``[species.variation]`` uses
the same distributions for factors on the pipeline's own parameters (top speed,
accelerations, behaviour weights) and for the start values of components.
"""
from typing import Annotated, Any, Optional, Union

import numpy as np
from pydantic import Field, PlainSerializer, PlainValidator, ValidationError, model_validator

from ..steering.params import StrictModel


class Distribution(StrictModel):
    """A per-animal random value: exactly one of ``uniform`` or ``normal``, optionally clipped."""

    uniform: Optional[tuple[float, float]] = Field(None, description="[low, high]: uniform on the interval.")
    normal: Optional[tuple[float, float]] = Field(None, description="[mean, standard deviation]: Gaussian.")
    min: Optional[float] = Field(None, description="Clip draws below this value.")
    max: Optional[float] = Field(None, description="Clip draws above this value.")

    @model_validator(mode="after")
    def _one_law(self):
        given = [name for name in ("uniform", "normal") if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of 'uniform' or 'normal'")
        if self.uniform is not None and self.uniform[1] < self.uniform[0]:
            raise ValueError("uniform must be [low, high] with low <= high")
        if self.normal is not None and self.normal[1] < 0:
            raise ValueError("normal must be [mean, standard deviation] with deviation >= 0")
        if self.min is not None and self.max is not None and self.max < self.min:
            raise ValueError("max must be >= min")
        return self

    def support(self) -> tuple[float, float]:
        """Smallest and largest value a draw can take (±inf for an unclipped normal)."""
        if self.uniform is not None:
            lo, hi = self.uniform
        else:
            lo, hi = -np.inf, np.inf
            if self.normal[1] == 0:
                lo = hi = self.normal[0]
        if self.min is not None:
            lo = max(lo, self.min)
        if self.max is not None:
            hi = min(hi, self.max)
        return float(lo), float(hi)

    def mean(self) -> float:
        if self.uniform is not None:
            value = 0.5 * (self.uniform[0] + self.uniform[1])
        else:
            value = self.normal[0]
        lo = -np.inf if self.min is None else self.min
        hi = np.inf if self.max is None else self.max
        return float(min(max(value, lo), hi))

    def sample(self, rng: np.random.Generator, n: int, lo: float = -np.inf, hi: float = np.inf) -> np.ndarray:
        """``n`` draws, clipped to the distribution's own bounds and to [lo, hi]."""
        if self.uniform is not None:
            x = rng.uniform(self.uniform[0], self.uniform[1], size=n)
        else:
            x = rng.normal(self.normal[0], self.normal[1], size=n)
        low = lo if self.min is None else max(lo, self.min)
        high = hi if self.max is None else min(hi, self.max)
        return np.clip(x, low, high).astype(np.float32)


class Bounds:
    """Marker in a :func:`num` field's metadata: the range every value (and every draw) must lie in."""

    def __init__(self, lo: float, hi: float, lo_open: bool):
        self.lo, self.hi, self.lo_open = lo, hi, lo_open

    def check_number(self, x: float) -> None:
        if self.lo_open and not x > self.lo:
            raise ValueError(f"Input should be greater than {self.lo:g}")
        if not self.lo_open and x < self.lo:
            raise ValueError(f"Input should be greater than or equal to {self.lo:g}")
        if x > self.hi:
            raise ValueError(f"Input should be less than or equal to {self.hi:g}")

    def check_distribution(self, d: Distribution) -> None:
        a, b = d.support()
        if (self.lo_open and not a > self.lo) or a < self.lo:
            raise ValueError(f"every draw must be {'>' if self.lo_open else '>='} {self.lo:g}; "
                             "raise the low end or set 'min'")
        if b > self.hi:
            raise ValueError(f"every draw must be <= {self.hi:g}; lower the high end or set 'max'")


_HINT = "a number or a distribution such as { uniform = [a, b] } or { normal = [mean, sd] }"


def _validator(bounds: Bounds):
    def validate(value):
        if isinstance(value, Distribution):
            bounds.check_distribution(value)
            return value
        if isinstance(value, dict):
            try:
                d = Distribution.model_validate(value)
            except ValidationError as err:
                e = err.errors(include_url=False)[0]
                loc = ".".join(str(x) for x in e["loc"])
                msg = e["msg"].removeprefix("Value error, ")
                if e["type"] == "extra_forbidden":
                    msg = "unknown field"
                raise ValueError(f"{loc}: {msg}" if loc else msg) from None
            bounds.check_distribution(d)
            return d
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"Input should be {_HINT}")
        x = float(value)
        if not np.isfinite(x):
            raise ValueError("Input should be a finite number")
        bounds.check_number(x)
        return x

    return validate


def num(*, ge: Optional[float] = None, gt: Optional[float] = None, le: Optional[float] = None):
    """The type "a number, or a distribution drawn per animal at spawn", with bounds.

    ``drain: num(ge=0) = Field(0.1, description="...")``. Every possible draw of a
    distribution must respect the bounds too (or be clipped with ``min``/``max``).
    """
    lo = gt if gt is not None else (ge if ge is not None else -np.inf)
    bounds = Bounds(float(lo), float(np.inf if le is None else le), gt is not None)
    return Annotated[Union[float, Distribution],
                     PlainValidator(_validator(bounds), json_schema_input_type=Union[float, Distribution]),
                     PlainSerializer(_serialize, return_type=Any),
                     bounds]


def _serialize(value):
    """A number stays a number; a distribution becomes its table (without unset fields)."""
    if isinstance(value, Distribution):
        return value.model_dump(exclude_none=True)
    return value


def bounds_of(field_info) -> Bounds:
    for m in field_info.metadata:
        if isinstance(m, Bounds):
            return m
    return Bounds(-np.inf, np.inf, False)
