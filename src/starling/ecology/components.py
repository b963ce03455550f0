"""Per-animal bodily state: energy, hunger, stamina, age and the mouth.

Each is a config model (what a scenario writes under ``[species.ecology]``) and a few
vectorised update rules. The rules take NumPy arrays and parameters that are either
numbers or per-animal arrays (see :mod:`starling.ecology.variation`), so one code path
serves both shared and individual parameters. All rates are per second and multiplied
by ``dt`` (frame-rate independence, DESIGN §1.4).

Energy (thesis 11.2.2)
    ``energy`` ∈ [0, 1], 1 = rested. With ``s = speed / top_speed`` ∈ [0, 1]::

        d energy / dt = recovery · (1 − s) − drain · s ** drain_power

    so standing still recovers at ``recovery`` per second, full speed drains at
    ``drain`` per second, and in between the two blend. Below ``fatigue_below`` the
    animal's top speed and acceleration fall linearly toward ``min_speed_factor`` and
    ``min_accel_factor`` of their normal values, reached at zero energy.

Hunger
    ``hunger`` ∈ [0, 1] grows by ``rate`` per second and falls by
    ``bite · nutrition · satiation`` when the animal takes a bite.

Stamina (the savannah's lions and zebras)
    ``stamina`` ∈ [0, max]. With the effort ``e = speed / top_speed``: ``e >= lose_above``
    loses ``lose`` per second, ``e <= regain_below`` regains ``regain`` per second, in
    between nothing changes. Below ``penalty_below`` the top speed falls by up to
    ``max_penalty`` m/s (linearly, the full penalty at zero stamina).

Age
    ``age`` in years, optionally growing (``years_per_second``). The young (below
    ``young_below``) and the old (above ``old_above``) lose up to ``max_penalty`` m/s of
    top speed; an animal reaching ``max_age`` dies of old age.

Mouth (thesis 11.2.3)
    A point fixed in the animal's frame (x right, y up, z forward). Directions and
    distances to food are measured from it, and food within ``reach`` of it is bitten.
"""
from typing import Optional

import numpy as np
from pydantic import Field, model_validator

from ..steering.params import StrictModel
from .variation import num


class EnergyConfig(StrictModel):
    """Energy coupled to movement (thesis 11.2.2): fast swimming tires, slow swimming rests."""

    start: num(ge=0, le=1) = Field(1.0, description="Energy at spawn (0 exhausted … 1 rested).")
    drain: num(ge=0) = Field(0.1, description="Energy lost per second at full speed, 1/s.")
    recovery: num(ge=0) = Field(0.05, description="Energy regained per second at rest, 1/s.")
    drain_power: float = Field(2.0, gt=0, description="Exponent of the speed fraction in the drain term.")
    fatigue_below: num(ge=0, le=1) = Field(0.5, description="Energy below which speed and acceleration fall.")
    min_speed_factor: num(ge=0, le=1) = Field(0.4, description="Fraction of the top speed left at zero energy.")
    min_accel_factor: num(ge=0, le=1) = Field(0.5, description="Fraction of the accelerations left at zero energy.")


class HungerConfig(StrictModel):
    """Hunger grows with time and falls with every bite."""

    start: num(ge=0, le=1) = Field(0.5, description="Hunger at spawn (0 full … 1 starving).")
    rate: num(ge=0) = Field(0.01, description="Hunger gained per second, 1/s.")
    satiation: num(ge=0) = Field(1.0, description="Hunger removed per unit of food·nutrition eaten.")
    starve_after: Optional[num(gt=0)] = Field(
        None, description="Seconds an animal lives at full hunger (1) before it starves to death (unset: never).")


class StaminaConfig(StrictModel):
    """The savannah's stamina: lost while running hard, regained while walking."""

    max: num(gt=0) = Field(80.0, description="Full stamina.")
    start: Optional[num(ge=0)] = Field(None, description="Stamina at spawn (default: max).")
    lose: num(ge=0) = Field(1.0, description="Stamina lost per second while the effort is high, 1/s.")
    regain: num(ge=0) = Field(1.0, description="Stamina regained per second while the effort is low, 1/s.")
    lose_above: float = Field(0.6, ge=0, le=1, description="Effort (speed / top speed) at or above which stamina is lost.")
    regain_below: float = Field(0.3, ge=0, le=1, description="Effort at or below which stamina is regained.")
    penalty_below: num(ge=0) = Field(20.0, description="Stamina below which the top speed falls.")
    max_penalty: num(ge=0) = Field(1.0, description="Top-speed loss at zero stamina, m/s.")
    drain_states: list[str] = Field(default_factory=list,
                                    description="Brain states in which stamina can be lost (empty: all).")

    @model_validator(mode="after")
    def _ordered(self):
        if self.regain_below > self.lose_above:
            raise ValueError("regain_below must be <= lose_above")
        return self


class AgeConfig(StrictModel):
    """Age in years: the young and the old are slower; optionally animals grow old and die."""

    start: num(ge=0) = Field(10.0, description="Age at spawn, years.")
    years_per_second: float = Field(0.0, ge=0, description="How fast animals age, years per simulated second.")
    young_below: float = Field(5.0, ge=0, description="Younger than this is slower, years.")
    old_above: float = Field(20.0, ge=0, description="Older than this is slower, years.")
    old_span: float = Field(10.0, gt=0, description="Years over which the old-age penalty grows to its maximum.")
    max_penalty: num(ge=0) = Field(1.0, description="Largest top-speed loss for the very young or old, m/s.")
    max_age: Optional[float] = Field(None, gt=0, description="Animals die of old age here, years (none: never).")


class MouthConfig(StrictModel):
    """Where the mouth is and how far it reaches (thesis 11.2.3, fig. 11.8)."""

    offset: tuple[float, float, float] = Field((0.0, 0.0, 0.3),
                                               description="Mouth in the animal's frame (x right, y up, z forward), m.")
    reach: num(gt=0) = Field(0.4, description="Food within this distance of the mouth can be bitten, m.")


# ---------------------------------------------------------------------------- rules

def speed_fraction(velocity: np.ndarray, top_speed) -> np.ndarray:
    """``|v| / top_speed`` clipped to [0, 1]."""
    speed = np.sqrt(np.einsum("ij,ij->i", velocity, velocity))
    return np.clip(speed / np.maximum(top_speed, 1e-9), 0.0, 1.0)


def energy_rate(s, drain, recovery, power) -> np.ndarray:
    """d energy / dt at speed fraction ``s`` (11.2.2)."""
    return recovery * (1.0 - s) - drain * np.power(s, power)


def update_energy(energy: np.ndarray, s, drain, recovery, power, dt: float) -> None:
    energy[:] = np.clip(energy + energy_rate(s, drain, recovery, power) * dt, 0.0, 1.0)


def fatigue(energy, fatigue_below, min_factor):
    """Ability factor in [min_factor, 1]: 1 above ``fatigue_below``, ``min_factor`` at zero energy."""
    g = np.clip(energy / np.maximum(fatigue_below, 1e-9), 0.0, 1.0)
    g = np.where(np.asarray(fatigue_below) <= 0.0, 1.0, g)
    return min_factor + (1.0 - min_factor) * g


def update_hunger(hunger: np.ndarray, rate, dt: float) -> None:
    hunger[:] = np.clip(hunger + rate * dt, 0.0, 1.0)


def update_starving(starving: np.ndarray, hunger: np.ndarray, dt: float) -> None:
    """Time spent at full hunger: grows while hunger is 1, back to 0 as soon as the animal eats."""
    starving[:] = np.where(hunger >= 1.0, starving + dt, 0.0)


def update_stamina(stamina: np.ndarray, effort, lose, regain, lose_above, regain_below, maximum, dt: float,
                   may_lose=True) -> None:
    change = np.where(effort >= lose_above, -lose * np.asarray(may_lose, float),
                      np.where(effort <= regain_below, regain, 0.0))
    stamina[:] = np.clip(stamina + change * dt, 0.0, maximum)


def stamina_penalty(stamina, penalty_below, max_penalty):
    """Top-speed loss in m/s: 0 at or above ``penalty_below``, ``max_penalty`` at zero stamina."""
    below = np.clip(1.0 - stamina / np.maximum(penalty_below, 1e-9), 0.0, 1.0)
    return np.where(np.asarray(penalty_below) <= 0.0, 0.0, max_penalty * below)


def age_penalty(age, young_below, old_above, old_span, max_penalty):
    """Top-speed loss in m/s for the young (falls to 0 at ``young_below``) and the old."""
    young = np.clip(1.0 - age / max(young_below, 1e-9), 0.0, 1.0) if young_below > 0 else np.zeros_like(age)
    old = np.clip((age - old_above) / old_span, 0.0, 1.0)
    return max_penalty * np.maximum(young, old)


def mouth_positions(position: np.ndarray, forward: np.ndarray, up: np.ndarray, offset) -> np.ndarray:
    """World positions of the mouths: ``p + ox·(up × forward) + oy·up + oz·forward``."""
    ox, oy, oz = (float(v) for v in offset)
    out = position.astype(np.float64, copy=True)
    if oz:
        out += oz * forward
    if oy:
        out += oy * up
    if ox:
        out += ox * np.cross(up, forward)
    return out.astype(np.float32)
