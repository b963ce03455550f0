"""Per-animal numbers: a parameter given as a distribution is drawn once per animal.

Seed 003 gives every boid its own parameters and the thesis' future work (12.2) asks
for "randomizing these weights slightly" so that animals of one species differ. Any
numeric parameter of a behaviour (and of the ecology's tables) may be written either as
a plain number (every animal shares it) or as a distribution::

    weight_direction = 0.3                                   # everyone
    weight_direction = { uniform = [0.2, 0.4] }              # each animal draws once, at spawn
    max_distance = { normal = [5.0, 0.5], min = 3.0 }        # mean, standard deviation, optional clip

The draw happens when the animal enters the world (the start of the run or a later
spawn) and is stored in a per-animal component, so it survives reordering and removal
of other animals and the animal keeps its value for life. Every possible draw must
respect the parameter's own bounds (or be clipped into them with ``min``/``max``), so a
distribution can never produce a value the plain number would have been refused for.
"""
from typing import Annotated, Any, Optional, Union

import numpy as np
import annotated_types as at
from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, PlainValidator, ValidationError, model_validator


class Distribution(BaseModel):
    """A per-animal random value: exactly one of ``uniform`` or ``normal``, optionally clipped."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

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
    """The range every value (and every draw) of a parameter must lie in; a :func:`num` field's metadata."""

    def __init__(self, lo: float, hi: float, lo_open: bool, hi_open: bool = False):
        self.lo, self.hi, self.lo_open, self.hi_open = lo, hi, lo_open, hi_open

    def check_number(self, x: float) -> None:
        if self.lo_open and not x > self.lo:
            raise ValueError(f"Input should be greater than {self.lo:g}")
        if not self.lo_open and x < self.lo:
            raise ValueError(f"Input should be greater than or equal to {self.lo:g}")
        if self.hi_open and not x < self.hi:
            raise ValueError(f"Input should be less than {self.hi:g}")
        if x > self.hi:
            raise ValueError(f"Input should be less than or equal to {self.hi:g}")

    def check_distribution(self, d: Distribution) -> None:
        a, b = d.support()
        if (self.lo_open and not a > self.lo) or a < self.lo:
            raise ValueError(f"every draw must be {'>' if self.lo_open else '>='} {self.lo:g}; "
                             "raise the low end or set 'min'")
        if (self.hi_open and not b < self.hi) or b > self.hi:
            raise ValueError(f"every draw must be {'<' if self.hi_open else '<='} {self.hi:g}; "
                             "lower the high end or set 'max'")


_HINT = "a number or a distribution such as { uniform = [a, b] } or { normal = [mean, sd] }"


def parse_distribution(value) -> Distribution:
    """A distribution table (or model) as a :class:`Distribution`, or a ValueError saying what is wrong."""
    if isinstance(value, Distribution):
        return value
    try:
        return Distribution.model_validate(value)
    except ValidationError as err:
        e = err.errors(include_url=False)[0]
        loc = ".".join(str(x) for x in e["loc"])
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            msg = "unknown field"
        raise ValueError(f"{loc}: {msg}" if loc else msg) from None


def _validator(bounds: Bounds):
    def validate(value):
        if isinstance(value, (Distribution, dict)):
            d = parse_distribution(value)
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
    """A field's bounds: a :func:`num` marker, or its pydantic ``ge``/``gt``/``le``/``lt`` constraints."""
    lo, hi, lo_open, hi_open = -np.inf, np.inf, False, False
    for m in field_info.metadata:
        if isinstance(m, Bounds):
            return m
        if isinstance(m, at.Ge):
            lo, lo_open = float(m.ge), False
        elif isinstance(m, at.Gt):
            lo, lo_open = float(m.gt), True
        elif isinstance(m, at.Le):
            hi, hi_open = float(m.le), False
        elif isinstance(m, at.Lt):
            hi, hi_open = float(m.lt), True
    return Bounds(lo, hi, lo_open, hi_open)
