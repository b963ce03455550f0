"""Pydantic models that declare a static environment (DESIGN.md §2, §5).

Everything here is data: a TOML ``[environment]`` section validates into :class:`EnvironmentConfig`,
and :meth:`starling.environment.scene.Environment.from_config` turns it into flat arrays.

Conventions (DESIGN.md §2): right-handed, **y up**, ground plane **x–z**, metres, angles in **degrees**.
Two-dimensional points on the ground are written ``(x, z)``.

Rotations are given either as ``yaw_pitch_roll_deg`` — yaw about +y, pitch about +x, roll about +z, all by
the right-hand rule and applied roll first, then pitch, then yaw (``R = Ry(yaw) @ Rx(pitch) @ Rz(roll)``,
three.js order ``"YXZ"``) — or as a unit ``quaternion`` written ``(w, x, y, z)``; never both.

Degenerate shapes are rejected with a message that names the field and the reason.  One decision worth
knowing: a **capsule of height 0 is allowed and is a sphere** (the scene stores it as one), because a
capsule is the set of points within ``radius`` of a segment and a zero-length segment is a point; a
**cylinder of height 0 is rejected**, since it would be a flat disc without volume.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..world.layers import LayerRegistry

Vec2 = tuple[float, float]
Vec3 = tuple[float, float, float]
Quat = tuple[float, float, float, float]


class _Model(BaseModel):
    """Base for every environment model: unknown fields and non-finite numbers are errors."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


def _nonzero_vector(value: tuple[float, ...], field: str) -> tuple[float, ...]:
    if math.sqrt(sum(c * c for c in value)) <= 1e-12:
        raise ValueError(f"{field} must be a non-zero vector (it gives a direction), got {value}")
    return value


class _Oriented(_Model):
    """Mixin for shapes that carry an orientation."""

    yaw_pitch_roll_deg: Vec3 = Field(
        (0.0, 0.0, 0.0),
        description="Rotation as (yaw, pitch, roll) in degrees: yaw about +y, pitch about +x, roll about "
        "+z, applied roll, pitch, yaw (R = Ry Rx Rz). Ignored when `quaternion` is given.",
    )
    quaternion: Quat | None = Field(
        None,
        description="Rotation as a quaternion (w, x, y, z); normalised on load. Mutually exclusive with a "
        "non-zero `yaw_pitch_roll_deg`.",
    )

    @field_validator("quaternion")
    @classmethod
    def _quaternion_nonzero(cls, q: Quat | None) -> Quat | None:
        if q is not None and math.sqrt(sum(c * c for c in q)) <= 1e-12:
            raise ValueError("quaternion has zero length and cannot represent a rotation")
        return q

    @model_validator(mode="after")
    def _one_rotation(self):
        if self.quaternion is not None and any(a != 0.0 for a in self.yaw_pitch_roll_deg):
            raise ValueError(
                "give the rotation either as `quaternion` or as `yaw_pitch_roll_deg`, not both"
            )
        return self


# ----------------------------------------------------------------------------------------------------
# primitives
# ----------------------------------------------------------------------------------------------------


class SphereConfig(_Model):
    """A solid ball."""

    kind: Literal["sphere"] = "sphere"
    center: Vec3 = Field(description="Centre (x, y, z) in metres.")
    radius: float = Field(gt=0, description="Radius in metres; must be > 0.")
    layer: str = Field("environment", description="Collision layer name.")


class BoxConfig(_Oriented):
    """A solid oriented box, given by ``center`` + ``half_extents`` or by ``min_corner`` + ``max_corner``
    (the corners of the unrotated box; the rotation turns it about its centre)."""

    kind: Literal["box"] = "box"
    center: Vec3 | None = Field(None, description="Centre (x, y, z) in metres.")
    half_extents: Vec3 | None = Field(
        None, description="Half sizes along the box's local x, y, z axes in metres; each must be > 0."
    )
    min_corner: Vec3 | None = Field(None, description="Lowest corner of the unrotated box, metres.")
    max_corner: Vec3 | None = Field(
        None, description="Highest corner of the unrotated box, metres; must exceed min_corner on every axis."
    )
    layer: str = Field("environment", description="Collision layer name.")

    @field_validator("half_extents")
    @classmethod
    def _positive_extents(cls, h: Vec3 | None) -> Vec3 | None:
        if h is not None:
            for axis, value in zip("xyz", h):
                if value <= 0:
                    raise ValueError(
                        f"every half extent must be > 0, but {axis} is {value}: "
                        "a box with a zero or negative extent is degenerate"
                    )
        return h

    @model_validator(mode="after")
    def _one_form(self):
        centred = self.center is not None or self.half_extents is not None
        cornered = self.min_corner is not None or self.max_corner is not None
        if centred and cornered:
            raise ValueError("give a box either as center + half_extents or as min_corner + max_corner, not both")
        if centred and (self.center is None or self.half_extents is None):
            raise ValueError("a box given by its centre needs both `center` and `half_extents`")
        if cornered:
            if self.min_corner is None or self.max_corner is None:
                raise ValueError("a box given by its corners needs both `min_corner` and `max_corner`")
            for axis, lo, hi in zip("xyz", self.min_corner, self.max_corner):
                if hi <= lo:
                    raise ValueError(
                        f"max_corner must exceed min_corner on every axis, but on {axis} "
                        f"max {hi} <= min {lo} (an inverted or flat box)"
                    )
        if not centred and not cornered:
            raise ValueError("a box needs center + half_extents or min_corner + max_corner")
        return self

    def resolved(self) -> tuple[Vec3, Vec3]:
        """``(center, half_extents)`` whichever form was given."""
        if self.center is not None:
            return self.center, self.half_extents  # type: ignore[return-value]
        lo, hi = self.min_corner, self.max_corner
        center = tuple((a + b) / 2 for a, b in zip(lo, hi))  # type: ignore[arg-type]
        half = tuple((b - a) / 2 for a, b in zip(lo, hi))  # type: ignore[arg-type]
        return center, half  # type: ignore[return-value]


class _Axial(_Model):
    base: Vec3 = Field(description="Centre of the bottom end of the axis segment (x, y, z), metres.")
    axis: Vec3 = Field(
        (0.0, 1.0, 0.0), description="Axis direction from the base (normalised on load); vertical by default."
    )
    radius: float = Field(gt=0, description="Radius in metres; must be > 0.")
    layer: str = Field("environment", description="Collision layer name.")

    @field_validator("axis")
    @classmethod
    def _axis_nonzero(cls, a: Vec3) -> Vec3:
        return _nonzero_vector(a, "axis")  # type: ignore[return-value]


class CapsuleConfig(_Axial):
    """All points within ``radius`` of the segment from ``base`` to ``base + height * axis`` (so the rounded
    ends reach ``radius`` beyond both ends).  ``height = 0`` is allowed and makes a sphere."""

    kind: Literal["capsule"] = "capsule"
    height: float = Field(ge=0, description="Length of the axis segment in metres; 0 makes a sphere.")


class CylinderConfig(_Axial):
    """A solid capped cylinder from ``base`` to ``base + height * axis`` (tree trunks, posts, pillars)."""

    kind: Literal["cylinder"] = "cylinder"
    height: float = Field(gt=0, description="Length along the axis in metres; must be > 0.")


class PlaneConfig(_Model):
    """An infinite plane; the half-space behind it (against the normal) is solid."""

    kind: Literal["plane"] = "plane"
    point: Vec3 = Field((0.0, 0.0, 0.0), description="Any point on the plane, metres.")
    normal: Vec3 = Field((0.0, 1.0, 0.0), description="Normal pointing out of the solid side (normalised on load).")
    layer: str = Field("ground", description="Collision layer name.")

    @field_validator("normal")
    @classmethod
    def _normal_nonzero(cls, n: Vec3) -> Vec3:
        return _nonzero_vector(n, "normal")  # type: ignore[return-value]


ShapeConfig = Annotated[
    Union[SphereConfig, BoxConfig, CapsuleConfig, CylinderConfig, PlaneConfig],
    Field(discriminator="kind"),
]
"""Any primitive, selected by its ``kind`` field."""


# ----------------------------------------------------------------------------------------------------
# terrain
# ----------------------------------------------------------------------------------------------------


class HillConfig(_Model):
    """A smooth bump (raised cosine): ``height * (1 + cos(pi * d / radius)) / 2`` for ``d < radius``."""

    center: Vec2 = Field(description="Centre (x, z) in metres.")
    radius: float = Field(gt=0, description="Footprint radius in metres (the bump is zero beyond it).")
    height: float = Field(description="Peak height in metres; negative values make a dip.")


class RandomHillsConfig(_Model):
    """Hills with random centres, radii and heights drawn from a seeded generator."""

    count: int = Field(ge=0, description="Number of hills.")
    radius_range: Vec2 = Field((10.0, 40.0), description="(min, max) footprint radius in metres.")
    height_range: Vec2 = Field((1.0, 6.0), description="(min, max) peak height in metres.")
    seed: int = Field(0, description="Seed of the generator.")

    @field_validator("radius_range")
    @classmethod
    def _radius_range(cls, r: Vec2) -> Vec2:
        if r[0] <= 0 or r[1] < r[0]:
            raise ValueError(f"radius_range must satisfy 0 < min <= max, got {r}")
        return r

    @field_validator("height_range")
    @classmethod
    def _height_range(cls, r: Vec2) -> Vec2:
        if r[1] < r[0]:
            raise ValueError(f"height_range must satisfy min <= max, got {r}")
        return r


class PondBasinConfig(_Model):
    """A bowl: a flat bottom ``depth`` below the surrounding ground, then banks rising smoothly to it."""

    center: Vec2 = Field(description="Centre (x, z) in metres.")
    bottom_radius: float = Field(gt=0, description="Radius of the flat bottom in metres.")
    bank_width: float = Field(gt=0, description="Horizontal width of the sloped bank in metres.")
    depth: float = Field(gt=0, description="Depth of the bottom below the surrounding ground in metres.")

    @property
    def outer_radius(self) -> float:
        """Radius at which the bank meets the surrounding ground, metres."""
        return self.bottom_radius + self.bank_width


class MountainRimConfig(_Model):
    """A ridge along the border of the terrain that rises smoothly towards the edge."""

    height: float = Field(gt=0, description="Height added at the very edge in metres.")
    width: float = Field(gt=0, description="Width of the band along the edge in which the rim rises, metres.")
    roughness: float = Field(
        0.0, ge=0, le=1, description="Relative variation of the rim height along the edge (0 = uniform)."
    )
    seed: int = Field(0, description="Seed of the rim's variation.")


class HeightmapImageConfig(_Model):
    """A grayscale height-map image: black is ``height_offset``, white is ``height_offset +
    vertical_scale``.  Pixel columns run along +x and rows along +z (the top-left pixel is the corner of
    the terrain with the smallest x and z)."""

    path: str = Field(
        description="Image file (PNG, TIFF, …); relative paths are resolved against the config's folder."
    )
    vertical_scale: float = Field(gt=0, description="Height in metres of a white pixel above a black one.")
    height_offset: float = Field(0.0, description="Height in metres of a black pixel.")


class TerrainConfig(_Model):
    """A heightfield: heights sampled on a regular grid over an x–z rectangle, triangulated with two
    triangles per cell.  Heights are ``base_height`` + image + hills + random hills + pond + rim."""

    center: Vec2 = Field((0.0, 0.0), description="Centre of the rectangle (x, z) in metres.")
    size: Vec2 = Field(description="Extent of the rectangle along x and z in metres; each must be > 0.")
    resolution: tuple[int, int] | None = Field(
        None,
        description="Samples along x and z (each >= 2). Defaults to 129 x 129, or to the image size "
        "when an image is given (a given resolution resamples the image).",
    )
    base_height: float = Field(0.0, description="Height of the flat ground in metres.")
    hills: list[HillConfig] = Field(default_factory=list, description="Explicit hills.")
    random_hills: RandomHillsConfig | None = Field(None, description="Randomly placed hills.")
    pond: PondBasinConfig | None = Field(None, description="A pond basin carved into the ground.")
    rim: MountainRimConfig | None = Field(None, description="A mountain rim along the border.")
    image: HeightmapImageConfig | None = Field(None, description="A height-map image.")
    layer: str = Field("terrain", description="Collision layer name.")

    @field_validator("size")
    @classmethod
    def _size_positive(cls, s: Vec2) -> Vec2:
        for axis, value in zip("xz", s):
            if value <= 0:
                raise ValueError(f"size along {axis} must be > 0, got {value}")
        return s

    @field_validator("resolution")
    @classmethod
    def _resolution(cls, r: tuple[int, int] | None) -> tuple[int, int] | None:
        if r is not None:
            for axis, value in zip("xz", r):
                if value < 2:
                    raise ValueError(f"resolution along {axis} must be >= 2 samples, got {value}")
                if value > 8193:
                    raise ValueError(f"resolution along {axis} must be <= 8193 samples, got {value}")
        return r

    @property
    def bounds_xz(self) -> tuple[float, float, float, float]:
        """``(x_min, z_min, x_max, z_max)`` of the rectangle, metres."""
        cx, cz = self.center
        sx, sz = self.size
        return cx - sx / 2, cz - sz / 2, cx + sx / 2, cz + sz / 2


# ----------------------------------------------------------------------------------------------------
# water
# ----------------------------------------------------------------------------------------------------


class WaterConfig(_Model):
    """A body of water: a horizontal surface at ``surface_height`` over a region of the x–z plane.
    Exactly one region form must be given.  Water is not solid: rays with the ``water`` layer in their
    mask hit its surface; collide-and-slide and :meth:`Environment.is_inside_solid` ignore it."""

    surface_height: float = Field(description="Height y of the water surface in metres.")
    rectangle: tuple[float, float, float, float] | None = Field(
        None, description="(x_min, z_min, x_max, z_max) in metres."
    )
    polygon: list[Vec2] | None = Field(None, description="Simple polygon of (x, z) vertices, metres; >= 3 vertices.")
    circle: tuple[float, float, float] | None = Field(None, description="(x, z, radius) in metres.")
    fill_pond: bool = Field(False, description="Fill the terrain's pond basin (its outer circle).")
    layer: str = Field("water", description="Collision layer name.")

    @field_validator("rectangle")
    @classmethod
    def _rectangle(cls, r):
        if r is not None and (r[2] <= r[0] or r[3] <= r[1]):
            raise ValueError(f"rectangle must satisfy x_max > x_min and z_max > z_min, got {r}")
        return r

    @field_validator("circle")
    @classmethod
    def _circle(cls, c):
        if c is not None and c[2] <= 0:
            raise ValueError(f"circle radius must be > 0, got {c[2]}")
        return c

    @field_validator("polygon")
    @classmethod
    def _polygon(cls, p):
        if p is not None:
            if len(p) < 3:
                raise ValueError(f"polygon needs at least 3 vertices, got {len(p)}")
            area2 = 0.0
            for i in range(len(p)):
                x0, z0 = p[i]
                x1, z1 = p[(i + 1) % len(p)]
                area2 += x0 * z1 - x1 * z0
            if abs(area2) <= 1e-12:
                raise ValueError("polygon has zero area")
        return p

    @model_validator(mode="after")
    def _one_region(self):
        given = [
            name
            for name, value in (
                ("rectangle", self.rectangle),
                ("polygon", self.polygon),
                ("circle", self.circle),
                ("fill_pond", self.fill_pond or None),
            )
            if value is not None
        ]
        if len(given) != 1:
            raise ValueError(
                "a water body needs exactly one region: rectangle, polygon, circle or fill_pond = true"
                + (f" (got {', '.join(given)})" if given else "")
            )
        return self


# ----------------------------------------------------------------------------------------------------
# meshes
# ----------------------------------------------------------------------------------------------------


class MeshConfig(_Oriented):
    """A triangle mesh loaded with trimesh (obj, stl, ply, glb/gltf, off, …), transformed by
    scale, then rotation, then translation."""

    path: str = Field(description="Mesh file; relative paths are resolved against the config's folder.")
    translation: Vec3 = Field((0.0, 0.0, 0.0), description="Translation in metres.")
    scale: float | Vec3 = Field(1.0, description="Uniform or per-axis scale; every factor must be > 0.")
    layer: str = Field("environment", description="Collision layer name.")
    solid: bool | None = Field(
        None,
        description="Whether the mesh encloses a solid (for inside tests). None: solid when watertight.",
    )

    @field_validator("scale")
    @classmethod
    def _scale(cls, s):
        values = (s,) if isinstance(s, (int, float)) else s
        for v in values:
            if v <= 0:
                raise ValueError(f"scale factors must be > 0, got {s}")
        return s


# ----------------------------------------------------------------------------------------------------
# scattered obstacles
# ----------------------------------------------------------------------------------------------------


class _Scatter(_Model):
    count: int = Field(ge=0, description="Number of obstacles to place (fewer if not enough free room).")
    seed: int = Field(0, description="Seed of the placement generator.")
    region: tuple[float, float, float, float] | None = Field(
        None,
        description="(x_min, z_min, x_max, z_max) to scatter in, metres. Default: the terrain inside its "
        "mountain rim, or -50..50 without terrain.",
    )
    min_spacing: float = Field(2.0, ge=0, description="Minimum distance between obstacle centres, metres.")
    avoid_water: bool = Field(True, description="Skip positions inside water bodies.")
    max_slope_deg: float = Field(
        35.0, gt=0, le=90, description="Skip positions where the terrain is steeper than this, degrees."
    )
    layer: str = Field("environment", description="Collision layer name.")

    @field_validator("region")
    @classmethod
    def _region(cls, r):
        if r is not None and (r[2] <= r[0] or r[3] <= r[1]):
            raise ValueError(f"region must satisfy x_max > x_min and z_max > z_min, got {r}")
        return r


def _positive_range(r: Vec2) -> Vec2:
    if r[0] <= 0 or r[1] < r[0]:
        raise ValueError(f"must satisfy 0 < min <= max, got {r}")
    return r


class TreeScatterConfig(_Scatter):
    """Trees: a vertical cylinder trunk standing on the ground, optionally crowned by a sphere canopy."""

    kind: Literal["trees"] = "trees"
    trunk_radius_range: Vec2 = Field((0.15, 0.4), description="(min, max) trunk radius, metres.")
    trunk_height_range: Vec2 = Field((3.0, 8.0), description="(min, max) trunk height, metres.")
    canopy_radius_range: Vec2 | None = Field(
        (1.0, 2.5), description="(min, max) canopy sphere radius, metres; None for bare trunks."
    )

    @field_validator("trunk_radius_range", "trunk_height_range", "canopy_radius_range")
    @classmethod
    def _ranges(cls, r):
        return None if r is None else _positive_range(r)


class RockScatterConfig(_Scatter):
    """Rocks: boxes with random yaw and tilt (or spheres), partly sunk into the ground."""

    kind: Literal["rocks"] = "rocks"
    size_range: Vec2 = Field((0.4, 1.5), description="(min, max) rock half size (box) or radius (sphere), metres.")
    shape: Literal["box", "sphere"] = Field("box", description="Primitive used for rocks.")
    sink: float = Field(0.3, ge=0, le=0.9, description="Fraction of the rock's size sunk below the ground.")

    @field_validator("size_range")
    @classmethod
    def _size(cls, r: Vec2) -> Vec2:
        return _positive_range(r)


ScatterConfig = Annotated[Union[TreeScatterConfig, RockScatterConfig], Field(discriminator="kind")]
"""Procedurally scattered obstacles, selected by ``kind``."""


# ----------------------------------------------------------------------------------------------------
# the whole environment
# ----------------------------------------------------------------------------------------------------


class EnvironmentConfig(_Model):
    """The static environment of a scene: layers, terrain, water, primitives, meshes, scattered obstacles."""

    layers: list[str] = Field(
        default_factory=list,
        description="User-defined layer names, added after the built-in ones (terrain, ground, water, "
        "environment, grass, fake_walls); at most 26.",
    )
    terrain: TerrainConfig | None = Field(None, description="The heightfield terrain, if any.")
    water: list[WaterConfig] = Field(default_factory=list, description="Water bodies.")
    shapes: list[ShapeConfig] = Field(default_factory=list, description="Primitive shapes.")
    meshes: list[MeshConfig] = Field(default_factory=list, description="Triangle meshes loaded from files.")
    scatter: list[ScatterConfig] = Field(default_factory=list, description="Procedurally scattered obstacles.")

    @model_validator(mode="after")
    def _check_layers_and_references(self):
        registry = LayerRegistry(self.layers)  # raises on duplicates / too many
        used: list[tuple[str, str]] = []
        if self.terrain is not None:
            used.append(("terrain.layer", self.terrain.layer))
        for i, w in enumerate(self.water):
            used.append((f"water[{i}].layer", w.layer))
            if w.fill_pond and (self.terrain is None or self.terrain.pond is None):
                raise ValueError(f"water[{i}].fill_pond needs a terrain with a pond basin (terrain.pond)")
        for i, s in enumerate(self.shapes):
            used.append((f"shapes[{i}].layer", s.layer))
        for i, m in enumerate(self.meshes):
            used.append((f"meshes[{i}].layer", m.layer))
        for i, s in enumerate(self.scatter):
            used.append((f"scatter[{i}].layer", s.layer))
        for where, name in used:
            if name not in registry:
                raise ValueError(
                    f"{where}: unknown layer {name!r}; known layers are: {', '.join(registry.names)} "
                    "(declare new layers in the environment's `layers` list)"
                )
        return self

    def layer_registry(self) -> LayerRegistry:
        """The registry of built-in plus declared layers."""
        return LayerRegistry(self.layers)
