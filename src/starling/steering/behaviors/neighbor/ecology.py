"""The sample scene's behaviours (seed 000, 11.2.3–11.2.8) and fleeing with memory (12.2).

All are neighbour behaviours written with the public API: they read the animal, the
group's targets and the shared pair geometry, and write only their results. What they
need to remember (chewing, hunger, the last threat) lives in components that the
ecology system updates between steps.

* ``chase_food`` (11.2.3): toward food, from the **mouth**. Each food item within the
  radius and field of view (360° sees all around) weighs ``nutrition · (1 − d/r)`` with
  ``d`` measured from the mouth; the direction is the weighted mean of the directions from
  the mouth, the activation ``a = ease(1 − d_best/r)`` is the closeness of the
  heaviest item, and both desires are ``weight · hunger^hunger_power · a``. The speed
  grows from ``min_speed`` to ``max_speed`` with ``a``. A chewing animal has no opinion.
* ``avoid_when_eating`` (11.2.4): while chewing, away from the neighbours, each weighing
  ``1 − d/r``; desires ``weight · min(1, Σw)``, speed ``max_speed``.
* ``avoid_sound`` (11.2.5): away from the sounds whose sphere has reached the animal,
  each weighing ``loudness · (1 − d/r)``; desires ``weight · min(1, Σw)``, speed
  ``max_speed``. Hearing has no field of view.
* ``get_pushed`` (11.2.6): neighbours in a cone of full angle ``push_angle_deg`` behind
  the direction of motion that are faster push the animal: each weighs
  ``(v_j − v_i)/v_j · (1 − β/(cone/2)) · (1 − d/r)`` (β: angle off straight behind);
  direction away from them, speed their weighted mean speed, desires ``weight · min(1, Σw)``.
* ``avoid_player`` (11.2.8): away from the player within a radius that shrinks while the
  player stands still, to ``still_radius_factor · r`` after ``shrink_time`` seconds;
  ``a = ease(1 − d/r_eff)``.
* ``flee_memory`` (12.2, hysteresis): :func:`~.predation.flee` while a threat is visible;
  once it is gone, away from where it was last seen, the activation it had then fading
  out over ``remember`` seconds (the ecology system keeps that memory).
* ``cruise`` (simple; seed 004's per-state target speed): asks for the ``target_speed``
  the animal's brain state sets, with desire ``weight_speed``; no opinion on direction.
"""
import math
from typing import Literal, Optional

from numba import prange
from pydantic import Field, field_validator

from ...params import BehaviorParams, NeighborBehaviorParams
from ...per_animal import at
from ...registry import behavior
from ...results import emit, no_opinion
from ...shaping import ease, easing_code, observability


class _EasedParams(NeighborBehaviorParams):
    easing: str = Field("q4", description="Easing of the closeness (6.4.3: q1–q4, s1–s5, b1–b6).")
    easing_power: float = Field(2.0, gt=0, description="Power l of the easing.")
    min_speed: float = Field(0.0, ge=0, description="Desired speed at the edge of the radius, m/s.")
    max_speed: Optional[float] = Field(None, gt=0, description="Desired speed at full activation (default: the mover's), m/s.")

    @field_validator("easing")
    @classmethod
    def _known_easing(cls, v):
        easing_code(v)
        return v

    kernel_converters = {"easing": easing_code}


class ChaseFoodParams(_EasedParams):
    """Go for food, from the mouth, the more the hungrier (thesis 11.2.3)."""

    kind: Literal["chase_food"] = "chase_food"
    weight_direction: float = Field(0.8, ge=0, le=1)
    weight_speed: float = Field(0.65, ge=0, le=1)
    hunger_power: float = Field(1.0, ge=0, description="Desires scale with hunger to this power (0: ignore hunger).")


class AvoidWhenEatingParams(NeighborBehaviorParams):
    """While chewing, keep away from the others (thesis 11.2.4)."""

    kind: Literal["avoid_when_eating"] = "avoid_when_eating"
    weight_direction: float = Field(0.3, ge=0, le=1)
    weight_speed: float = Field(0.3, ge=0, le=1)
    max_speed: Optional[float] = Field(None, gt=0, description="Desired speed while avoiding (default: the mover's), m/s.")


class AvoidSoundParams(NeighborBehaviorParams):
    """Get away from loud, near sounds, and hurry (thesis 11.2.5)."""

    kind: Literal["avoid_sound"] = "avoid_sound"
    weight_direction: float = Field(0.65, ge=0, le=1)
    weight_speed: float = Field(0.65, ge=0, le=1)
    max_speed: Optional[float] = Field(None, gt=0, description="Desired speed while fleeing a sound (default: the mover's), m/s.")


class GetPushedParams(NeighborBehaviorParams):
    """Faster neighbours close behind push the animal forward (thesis 11.2.6)."""

    kind: Literal["get_pushed"] = "get_pushed"
    weight_direction: float = Field(0.3, ge=0, le=1)
    weight_speed: float = Field(0.3, ge=0, le=1)
    push_angle_deg: float = Field(90.0, gt=0, le=360, description="Full angle of the cone behind, degrees.")


class AvoidPlayerParams(_EasedParams):
    """Keep away from the player; a player standing still is let closer (thesis 11.2.8)."""

    kind: Literal["avoid_player"] = "avoid_player"
    weight_direction: float = Field(0.4, ge=0, le=1)
    weight_speed: float = Field(0.2, ge=0, le=1)
    still_radius_factor: float = Field(0.5, ge=0, le=1, description="Fraction of the radius left once the player stood still long enough.")
    shrink_time: float = Field(5.0, gt=0, description="Seconds of standing still until the radius is smallest, s.")


class FleeMemoryParams(_EasedParams):
    """Flee, and keep fleeing for a while after the threat is out of sight (hysteresis, thesis 12.2)."""

    kind: Literal["flee_memory"] = "flee_memory"
    weight_direction: float = Field(0.8, ge=0, le=1)
    weight_speed: float = Field(0.7, ge=0, le=1)
    remember: float = Field(2.0, gt=0, description="Seconds a threat is remembered after it leaves the view, s.")


class CruiseParams(BehaviorParams):
    """Ask for the cruising speed of the animal's brain state (seed 004's target speeds)."""

    kind: Literal["cruise"] = "cruise"
    weight_direction: float = Field(0.0, ge=0, le=1, description="Unused: cruise has no opinion on direction.")
    weight_speed: float = Field(0.3, ge=0, le=1)


_MOUTH = ("hunger", "chew", "mouth_x", "mouth_y", "mouth_z")
_MEMORY = ("threat_x", "threat_y", "threat_z", "threat_level", "threat_memory")


@behavior("chase_food", kind="neighbor", params=ChaseFoodParams, components=_MOUTH,
          target_components=("food", "nutrition"), silent_alone=True)
def chase_food(agents, others, neighbors, p, time, dt, out):
    """Toward the nutritious, near food seen from the mouth; desires scale with hunger."""
    count = neighbors.count
    index = neighbors.index
    dist = neighbors.distance
    angle = neighbors.angle
    unit = neighbors.direction
    pos = agents.position
    hunger = agents.hunger
    chew = agents.chew
    mouth_x = agents.mouth_x
    mouth_y = agents.mouth_y
    mouth_z = agents.mouth_z
    food = others.food
    nutrition = others.nutrition
    for i in prange(count.shape[0]):
        r = at(p.max_distance, i)
        fov = math.radians(at(p.fov_deg, i))
        h = min(1.0, max(0.0, hunger[i]))
        sx = 0.0
        sy = 0.0
        sz = 0.0
        best_w = 0.0
        best_c = 0.0
        if chew[i] <= 0.0 and h > 0.0:
            mx = mouth_x[i] - pos[i, 0]
            my = mouth_y[i] - pos[i, 1]
            mz = mouth_z[i] - pos[i, 2]
            for q in range(count[i]):
                j = index[i, q]
                if food[j] <= 0.0:
                    continue
                if fov < 2.0 * math.pi and 2.0 * angle[i, q] >= fov:
                    continue
                d0 = dist[i, q]
                cx = unit[i, q, 0] * d0 - mx
                cy = unit[i, q, 1] * d0 - my
                cz = unit[i, q, 2] * d0 - mz
                d = math.sqrt(cx * cx + cy * cy + cz * cz)
                if d >= r:
                    continue
                c = 1.0 - d / r
                w = nutrition[j] * c
                if w <= 0.0:
                    continue
                if d > 1e-9:
                    sx += w * cx / d
                    sy += w * cy / d
                    sz += w * cz / d
                if w > best_w:
                    best_w = w
                    best_c = c
        length = math.sqrt(sx * sx + sy * sy + sz * sz)
        if best_w <= 0.0 or length < 1e-9:
            no_opinion(out, i)
            continue
        a = ease(p.easing, best_c, at(p.easing_power, i))
        hf = h ** at(p.hunger_power, i) if at(p.hunger_power, i) > 0.0 else 1.0
        speed = at(p.min_speed, i) + (at(p.max_speed, i) - at(p.min_speed, i)) * a
        emit(out, i, sx / length, sy / length, sz / length, at(p.weight_direction, i) * hf * a, speed,
             at(p.weight_speed, i) * hf * a)


@behavior("avoid_when_eating", kind="neighbor", params=AvoidWhenEatingParams, components=("chew",),
          silent_alone=True)
def avoid_when_eating(agents, others, neighbors, p, time, dt, out):
    """While chewing: away from the closeness-weighted neighbours."""
    count = neighbors.count
    dist = neighbors.distance
    angle = neighbors.angle
    unit = neighbors.direction
    chew = agents.chew
    for i in prange(count.shape[0]):
        r = at(p.max_distance, i)
        fov = math.radians(at(p.fov_deg, i))
        sx = 0.0
        sy = 0.0
        sz = 0.0
        sw = 0.0
        if chew[i] > 0.0:
            for q in range(count[i]):
                d = dist[i, q]
                if d >= r or (fov < 2.0 * math.pi and 2.0 * angle[i, q] >= fov):
                    continue
                w = 1.0 - d / r
                sx -= w * unit[i, q, 0]
                sy -= w * unit[i, q, 1]
                sz -= w * unit[i, q, 2]
                sw += w
        length = math.sqrt(sx * sx + sy * sy + sz * sz)
        if sw <= 0.0 or length < 1e-9:
            no_opinion(out, i)
            continue
        a = min(1.0, sw)
        emit(out, i, sx / length, sy / length, sz / length, at(p.weight_direction, i) * a, at(p.max_speed, i),
             at(p.weight_speed, i) * a)


@behavior("avoid_sound", kind="neighbor", params=AvoidSoundParams,
          target_components=("loudness", "sound_radius"), silent_alone=True)
def avoid_sound(agents, others, neighbors, p, time, dt, out):
    """Away from the loudness- and closeness-weighted sounds that reached the animal."""
    count = neighbors.count
    index = neighbors.index
    dist = neighbors.distance
    unit = neighbors.direction
    loud = others.loudness
    radius = others.sound_radius
    for i in prange(count.shape[0]):
        r = at(p.max_distance, i)
        sx = 0.0
        sy = 0.0
        sz = 0.0
        sw = 0.0
        for q in range(count[i]):
            j = index[i, q]
            d = dist[i, q]
            if d >= r or d > radius[j]:
                continue
            w = loud[j] * (1.0 - d / r)
            if w <= 0.0:
                continue
            sx -= w * unit[i, q, 0]
            sy -= w * unit[i, q, 1]
            sz -= w * unit[i, q, 2]
            sw += w
        length = math.sqrt(sx * sx + sy * sy + sz * sz)
        if sw <= 0.0 or length < 1e-9:
            no_opinion(out, i)
            continue
        a = min(1.0, sw)
        emit(out, i, sx / length, sy / length, sz / length, at(p.weight_direction, i) * a, at(p.max_speed, i),
             at(p.weight_speed, i) * a)


@behavior("get_pushed", kind="neighbor", params=GetPushedParams, silent_alone=True)
def get_pushed(agents, others, neighbors, p, time, dt, out):
    """Away from faster neighbours in the cone behind, at their mean speed."""
    count = neighbors.count
    index = neighbors.index
    dist = neighbors.distance
    angle = neighbors.angle
    unit = neighbors.direction
    vel = agents.velocity
    ovel = others.velocity
    for i in prange(count.shape[0]):
        r = at(p.max_distance, i)
        half = 0.5 * math.radians(at(p.push_angle_deg, i))
        vx = vel[i, 0]
        vy = vel[i, 1]
        vz = vel[i, 2]
        si = math.sqrt(vx * vx + vy * vy + vz * vz)
        sx = 0.0
        sy = 0.0
        sz = 0.0
        sw = 0.0
        sv = 0.0
        for q in range(count[i]):
            d = dist[i, q]
            if d >= r or d < 1e-9:
                continue
            ux = unit[i, q, 0]
            uy = unit[i, q, 1]
            uz = unit[i, q, 2]
            # angle off straight behind the direction of motion (forward when standing)
            if si > 1e-6:
                c = -(ux * vx + uy * vy + uz * vz) / si
                beta = math.acos(min(1.0, max(-1.0, c)))
            else:
                beta = math.pi - angle[i, q]
            if beta >= half:
                continue
            j = index[i, q]
            wx = ovel[j, 0]
            wy = ovel[j, 1]
            wz = ovel[j, 2]
            sj = math.sqrt(wx * wx + wy * wy + wz * wz)
            if sj <= si:
                continue
            w = (sj - si) / sj * (1.0 - beta / half) * (1.0 - d / r)
            sx -= w * ux
            sy -= w * uy
            sz -= w * uz
            sw += w
            sv += w * sj
        length = math.sqrt(sx * sx + sy * sy + sz * sz)
        if sw <= 0.0 or length < 1e-9:
            no_opinion(out, i)
            continue
        a = min(1.0, sw)
        emit(out, i, sx / length, sy / length, sz / length, at(p.weight_direction, i) * a, sv / sw,
             at(p.weight_speed, i) * a)


@behavior("avoid_player", kind="neighbor", params=AvoidPlayerParams, target_components=("still_time",),
          silent_alone=True)
def avoid_player(agents, others, neighbors, p, time, dt, out):
    """Away from the player within a radius that shrinks while the player stands still."""
    count = neighbors.count
    index = neighbors.index
    dist = neighbors.distance
    unit = neighbors.direction
    still = others.still_time
    for i in prange(count.shape[0]):
        r = at(p.max_distance, i)
        sx = 0.0
        sy = 0.0
        sz = 0.0
        best = 0.0
        for q in range(count[i]):
            j = index[i, q]
            f = min(1.0, max(0.0, still[j]) / at(p.shrink_time, i))
            reff = r * (1.0 - (1.0 - at(p.still_radius_factor, i)) * f)
            d = dist[i, q]
            if d >= reff or reff <= 0.0:
                continue
            c = 1.0 - d / reff
            sx -= c * unit[i, q, 0]
            sy -= c * unit[i, q, 1]
            sz -= c * unit[i, q, 2]
            best = max(best, c)
        length = math.sqrt(sx * sx + sy * sy + sz * sz)
        if best <= 0.0 or length < 1e-9:
            no_opinion(out, i)
            continue
        a = ease(p.easing, best, at(p.easing_power, i))
        speed = at(p.min_speed, i) + (at(p.max_speed, i) - at(p.min_speed, i)) * a
        emit(out, i, sx / length, sy / length, sz / length, at(p.weight_direction, i) * a, speed,
             at(p.weight_speed, i) * a)


@behavior("flee_memory", kind="neighbor", params=FleeMemoryParams, components=_MEMORY)
def flee_memory(agents, others, neighbors, p, time, dt, out):
    """Flee the visible threats; with none in sight, flee where one was last seen while it is remembered."""
    count = neighbors.count
    dist = neighbors.distance
    angle = neighbors.angle
    unit = neighbors.direction
    pos = agents.position
    tx = agents.threat_x
    ty = agents.threat_y
    tz = agents.threat_z
    level = agents.threat_level
    memory = agents.threat_memory
    for i in prange(count.shape[0]):
        r = at(p.max_distance, i)
        fov = math.radians(at(p.fov_deg, i))
        ax = 0.0
        ay = 0.0
        az = 0.0
        nearest = r
        seen = False
        for q in range(count[i]):
            d = dist[i, q]
            o = observability(d, angle[i, q], r, fov, at(p.distance_power, i), at(p.angle_power, i))
            if o <= 0.0:
                continue
            seen = True
            nearest = min(nearest, d)
            ax -= o * unit[i, q, 0]
            ay -= o * unit[i, q, 1]
            az -= o * unit[i, q, 2]
        a = 0.0
        if seen:
            a = ease(p.easing, 1.0 - nearest / r, at(p.easing_power, i))
        elif memory[i] > 0.0:
            ax = pos[i, 0] - tx[i]
            ay = pos[i, 1] - ty[i]
            az = pos[i, 2] - tz[i]
            a = ease(p.easing, min(1.0, max(0.0, level[i])), at(p.easing_power, i)) * min(1.0, memory[i])
        length = math.sqrt(ax * ax + ay * ay + az * az)
        if a <= 0.0 or length < 1e-9:
            no_opinion(out, i)
            continue
        speed = at(p.min_speed, i) + (at(p.max_speed, i) - at(p.min_speed, i)) * a
        emit(out, i, ax / length, ay / length, az / length, at(p.weight_direction, i) * a, speed,
             at(p.weight_speed, i) * a)


@behavior("cruise", kind="simple", params=CruiseParams, components=("target_speed",))
def cruise(agents, p, time, dt, out):
    """The brain state's cruising speed (no opinion when the state sets none)."""
    target = agents.target_speed
    for i in prange(target.shape[0]):
        if target[i] >= 0.0:
            emit(out, i, 0.0, 0.0, 0.0, 0.0, target[i], at(p.weight_speed, i))
        else:
            no_opinion(out, i)
