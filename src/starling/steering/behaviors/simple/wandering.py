"""Wandering (seed 000, 6.4.6, eq. 6.15–6.16): smooth random heading and speed.

Three independent uniform noise channels per animal, seeded by its stable uid mixed
with the behaviour's stream key (so another scenario seed wanders differently): the
heading around the vertical axis, the pitch above or below the horizon (at most
``max_pitch_deg``) and the speed between ``min_speed`` and ``max_speed``. Wandering
is what gets a flock moving at all: the flocking behaviours have no opinion on speed
except alignment, which only copies what the neighbours already do.

The thesis writes the direction in spherical angles with the polar angle measured
from the y axis; here the same direction is written with an azimuth and an elevation
above the x–z plane, which is the thesis' intent (pitch limited by ``alpha_max``).
"""
import math
from typing import Literal

from numba import prange
from pydantic import Field

from ...noise import uniform_noise
from ...params import BehaviorParams
from ...per_animal import at
from ...random import noise_seed
from ...registry import behavior
from ...results import emit


class WanderingParams(BehaviorParams):
    """Smoothly varying random direction and speed."""

    kind: Literal["wandering"] = "wandering"
    weight_direction: float = Field(0.05, ge=0, le=1)
    weight_speed: float = Field(0.1, ge=0, le=1)
    min_speed: float = Field(2.0, ge=0, description="Slowest wandering speed, m/s.")
    max_speed: float = Field(5.0, ge=0, description="Fastest wandering speed, m/s.")
    heading_frequency: float = Field(0.1, ge=0, description="Rate of heading change (noise cycles per second).")
    pitch_frequency: float = Field(0.1, ge=0, description="Rate of pitch change, 1/s.")
    speed_frequency: float = Field(0.1, ge=0, description="Rate of speed change, 1/s.")
    max_pitch_deg: float = Field(20.0, ge=0, le=90, description="Largest angle above/below the horizon, degrees.")

    ordered = (("min_speed", "max_speed", False),)


@behavior("wandering", kind="simple", params=WanderingParams)
def wandering(agents, p, time, dt, out):
    """Noise-driven heading, pitch and speed; desires are the constant weights."""
    uid = agents.uid
    for i in prange(uid.shape[0]):
        max_pitch = math.radians(at(p.max_pitch_deg, i))
        seed = noise_seed(p.key, uid[i])
        azimuth = math.pi * uniform_noise(2 * seed + 1, time * at(p.heading_frequency, i))
        pitch = max_pitch * uniform_noise(seed, time * at(p.pitch_frequency, i) + 17.0)
        u = 0.5 + 0.5 * uniform_noise(3 * seed + 2, time * at(p.speed_frequency, i) + 31.0)
        ce = math.cos(pitch)
        speed = at(p.min_speed, i) + (at(p.max_speed, i) - at(p.min_speed, i)) * u
        emit(out, i, ce * math.cos(azimuth), math.sin(pitch), ce * math.sin(azimuth), at(p.weight_direction, i),
             speed, at(p.weight_speed, i))
