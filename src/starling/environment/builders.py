"""Procedural building blocks: terrain height functions, height-map images, scattered trees and rocks, and
a ready-made pasture scene.

Everything here runs once when a scene is built (plain NumPy, no Numba): the functions turn the
declarative models of :mod:`starling.environment.config` into height grids and primitive shape configs.

Height features (all in metres, over coordinate grids ``X, Z`` of shape ``(nz, nx)``):

* a **hill** is a raised cosine ``height * (1 + cos(pi d / radius)) / 2`` for ``d < radius`` — smooth
  (continuous slope) and exactly zero outside its footprint, so hills never disturb distant ground;
* a **pond basin** is a flat bottom ``depth`` below the ground out to ``bottom_radius``, then a bank that
  rises with a smoothstep profile over ``bank_width`` (zero slope at both ends, so there is no crease);
* a **mountain rim** rises with a smoothstep over a band of ``width`` along the border to ``height`` at the
  edge, optionally varied along the border by a few low-frequency sines.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .config import (
    BoxConfig,
    CylinderConfig,
    EnvironmentConfig,
    HeightmapImageConfig,
    HillConfig,
    MountainRimConfig,
    PondBasinConfig,
    RandomHillsConfig,
    RockScatterConfig,
    SphereConfig,
    TerrainConfig,
    TreeScatterConfig,
    WaterConfig,
)
from .errors import EnvironmentFileError

DEFAULT_RESOLUTION = 129


def smoothstep(x: np.ndarray) -> np.ndarray:
    """``3x^2 - 2x^3`` on ``x`` clipped to ``[0, 1]``."""
    x = np.clip(x, 0.0, 1.0)
    return x * x * (3.0 - 2.0 * x)


def grid_coordinates(bounds: tuple[float, float, float, float], resolution: tuple[int, int]):
    """``(X, Z)`` sample coordinates of shape ``(nz, nx)`` over ``(x_min, z_min, x_max, z_max)``."""
    x0, z0, x1, z1 = bounds
    nx, nz = resolution
    xs = np.linspace(x0, x1, nx)
    zs = np.linspace(z0, z1, nz)
    return np.meshgrid(xs, zs)


def hill_heights(X: np.ndarray, Z: np.ndarray, hill: HillConfig) -> np.ndarray:
    """Raised-cosine bump of ``hill``, zero beyond its radius."""
    d = np.hypot(X - hill.center[0], Z - hill.center[1])
    return np.where(d < hill.radius, hill.height * 0.5 * (1.0 + np.cos(np.pi * d / hill.radius)), 0.0)


def random_hills(cfg: RandomHillsConfig, bounds: tuple[float, float, float, float]) -> list[HillConfig]:
    """``cfg.count`` hills with centres uniform in ``bounds`` and radii/heights uniform in their ranges."""
    rng = np.random.default_rng(cfg.seed)
    x0, z0, x1, z1 = bounds
    hills = []
    for _ in range(cfg.count):
        hills.append(
            HillConfig(
                center=(float(rng.uniform(x0, x1)), float(rng.uniform(z0, z1))),
                radius=float(rng.uniform(*cfg.radius_range)),
                height=float(rng.uniform(*cfg.height_range)),
            )
        )
    return hills


def pond_basin_heights(X: np.ndarray, Z: np.ndarray, pond: PondBasinConfig) -> np.ndarray:
    """Depression of the pond basin (``<= 0``): ``-depth`` on the bottom, smoothstep banks, 0 outside."""
    d = np.hypot(X - pond.center[0], Z - pond.center[1])
    x = (d - pond.bottom_radius) / pond.bank_width
    return -pond.depth * (1.0 - smoothstep(x))


def mountain_rim_heights(X: np.ndarray, Z: np.ndarray, bounds: tuple[float, float, float, float],
                         rim: MountainRimConfig) -> np.ndarray:
    """Rim along the rectangle's border (``>= 0``), ``rim.height`` at the edge, 0 beyond ``rim.width``."""
    x0, z0, x1, z1 = bounds
    edge = np.minimum.reduce([X - x0, x1 - X, Z - z0, z1 - Z])
    rise = smoothstep(1.0 - edge / rim.width)
    if rim.roughness > 0:
        rng = np.random.default_rng(rim.seed)
        phases = rng.uniform(0, 2 * np.pi, size=3)
        theta = np.arctan2(Z - (z0 + z1) / 2, X - (x0 + x1) / 2)
        wobble = (
            0.5 * np.sin(3 * theta + phases[0])
            + 0.3 * np.sin(5 * theta + phases[1])
            + 0.2 * np.sin(11 * theta + phases[2])
        )
        rise = rise * (1.0 + rim.roughness * wobble)
    return rim.height * rise


def load_heightmap(image: HeightmapImageConfig, base_dir: str | Path | None = None,
                   resolution: tuple[int, int] | None = None) -> np.ndarray:
    """Heights ``(nz, nx)`` in metres from a grayscale image.

    8-bit images are scaled by 1/255, 16-bit ones by 1/65535, float images are taken as given (expected in
    ``[0, 1]``); colour images are converted to luminance first.  The result is ``height_offset +
    vertical_scale * value``.  A given ``resolution`` ``(nx, nz)`` resamples the image bilinearly.  A
    missing or undecodable file raises :class:`EnvironmentFileError` naming the path.
    """
    from PIL import Image, UnidentifiedImageError

    path = Path(image.path)
    if not path.is_absolute() and base_dir is not None:
        path = Path(base_dir) / path
    if not path.is_file():
        raise EnvironmentFileError("height-map image", path, "no such file")
    try:
        with Image.open(path) as img:
            img.load()
            mode = img.mode
            if mode in ("I;16", "I;16B", "I;16L", "I;16N"):
                values = np.asarray(img, dtype=np.float64) / 65535.0
            elif mode == "I":
                raw = np.asarray(img, dtype=np.float64)
                values = raw / (65535.0 if raw.max(initial=0) <= 65535 else raw.max())
            elif mode == "F":
                values = np.asarray(img, dtype=np.float64)
            else:
                values = np.asarray(img.convert("L"), dtype=np.float64) / 255.0
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as exc:
        raise EnvironmentFileError("height-map image", path, f"{type(exc).__name__}: {exc}") from None
    if values.ndim != 2 or values.shape[0] < 2 or values.shape[1] < 2:
        raise EnvironmentFileError("height-map image", path, f"needs at least 2 x 2 pixels, got {values.shape}")
    if not np.all(np.isfinite(values)):
        raise EnvironmentFileError("height-map image", path, "contains non-finite pixel values")
    if resolution is not None and (values.shape[1], values.shape[0]) != tuple(resolution):
        resized = Image.fromarray(values.astype(np.float32), mode="F").resize(
            (int(resolution[0]), int(resolution[1])), Image.Resampling.BILINEAR
        )
        values = np.asarray(resized, dtype=np.float64)
    return image.height_offset + image.vertical_scale * values


def terrain_heights(cfg: TerrainConfig, base_dir: str | Path | None = None) -> np.ndarray:
    """The ``(nz, nx)`` height grid of a terrain config: base + image + hills + random hills + pond + rim."""
    bounds = cfg.bounds_xz
    if cfg.image is not None:
        heights = load_heightmap(cfg.image, base_dir, cfg.resolution)
        resolution = (heights.shape[1], heights.shape[0])
        heights = heights + cfg.base_height
    else:
        resolution = cfg.resolution or (DEFAULT_RESOLUTION, DEFAULT_RESOLUTION)
        heights = np.full((resolution[1], resolution[0]), cfg.base_height, dtype=np.float64)
    X, Z = grid_coordinates(bounds, resolution)
    hills = list(cfg.hills)
    if cfg.random_hills is not None:
        hills += random_hills(cfg.random_hills, bounds)
    for hill in hills:
        heights += hill_heights(X, Z, hill)
    if cfg.pond is not None:
        heights += pond_basin_heights(X, Z, cfg.pond)
    if cfg.rim is not None:
        heights += mountain_rim_heights(X, Z, bounds, cfg.rim)
    return heights


# ----------------------------------------------------------------------------------------------------
# scattering
# ----------------------------------------------------------------------------------------------------


def default_scatter_region(terrain: TerrainConfig | None) -> tuple[float, float, float, float]:
    """The terrain rectangle inside its mountain rim (plus 2 m), or ``-50..50`` without terrain."""
    if terrain is None:
        return (-50.0, -50.0, 50.0, 50.0)
    x0, z0, x1, z1 = terrain.bounds_xz
    margin = (terrain.rim.width if terrain.rim is not None else 0.0) + 2.0
    margin = min(margin, 0.45 * (x1 - x0), 0.45 * (z1 - z0))
    return (x0 + margin, z0 + margin, x1 - margin, z1 - margin)


class _Ground:
    """Height, slope and water lookups used while placing obstacles."""

    def __init__(self, heightfield, water):
        self.heightfield = heightfield
        self.water = water

    def sample(self, x: float, z: float) -> tuple[float, float, bool]:
        """``(height, slope_deg, wet)`` at ``(x, z)``."""
        if self.heightfield is not None:
            h, n = self.heightfield.height_and_normal_at(x, z)
            height = float(h[0]) if np.isfinite(h[0]) else 0.0
            slope = math.degrees(math.acos(min(1.0, float(n[0, 1]))))
        else:
            height, slope = 0.0, 0.0
        wet = self.water is not None and len(self.water) > 0 and bool(np.isfinite(self.water.surface_height(x, z)[0]))
        return height, slope, wet


def _positions(cfg, ground: _Ground, region, occupied: list[tuple[float, float, float]],
               rng: np.random.Generator, footprint) -> list[tuple[float, float, float, float]]:
    """Rejection-sample up to ``cfg.count`` positions ``(x, z, height, footprint_radius)``."""
    x0, z0, x1, z1 = region
    placed: list[tuple[float, float, float, float]] = []
    attempts = 0
    max_attempts = 40 * max(cfg.count, 1)
    occ = np.array([(x, z, r) for x, z, r in occupied], dtype=np.float64).reshape(-1, 3)
    while len(placed) < cfg.count and attempts < max_attempts:
        attempts += 1
        x = float(rng.uniform(x0, x1))
        z = float(rng.uniform(z0, z1))
        r = float(footprint(rng))
        if occ.shape[0]:
            d = np.hypot(occ[:, 0] - x, occ[:, 1] - z)
            if np.any(d < np.maximum(cfg.min_spacing, occ[:, 2] + r)):
                continue
        height, slope, wet = ground.sample(x, z)
        if slope > cfg.max_slope_deg or (cfg.avoid_water and wet):
            continue
        placed.append((x, z, height, r))
        occ = np.vstack([occ, [x, z, r]])
        occupied.append((x, z, r))
    return placed


def scatter_trees(cfg: TreeScatterConfig, region, ground: _Ground,
                  occupied: list[tuple[float, float, float]]) -> list:
    """Trunks (vertical cylinders sunk 0.3 m into the ground) with optional sphere canopies at the top."""
    rng = np.random.default_rng(cfg.seed)
    shapes: list = []
    footprint = lambda g: g.uniform(*cfg.trunk_radius_range)  # noqa: E731
    for x, z, height, r in _positions(cfg, ground, region, occupied, rng, footprint):
        trunk = float(rng.uniform(*cfg.trunk_height_range))
        shapes.append(CylinderConfig(base=(x, height - 0.3, z), height=trunk + 0.3, radius=r, layer=cfg.layer))
        if cfg.canopy_radius_range is not None:
            canopy = float(rng.uniform(*cfg.canopy_radius_range))
            shapes.append(SphereConfig(center=(x, height + trunk, z), radius=canopy, layer=cfg.layer))
    return shapes


def scatter_rocks(cfg: RockScatterConfig, region, ground: _Ground,
                  occupied: list[tuple[float, float, float]]) -> list:
    """Rocks as boxes (random yaw, small tilt, squashed) or spheres, sunk by ``cfg.sink`` of their size."""
    rng = np.random.default_rng(cfg.seed)
    shapes: list = []
    for x, z, height, s in _positions(cfg, ground, region, occupied, rng, lambda g: g.uniform(*cfg.size_range)):
        if cfg.shape == "sphere":
            shapes.append(SphereConfig(center=(x, height + s * (1 - 2 * cfg.sink), z), radius=s, layer=cfg.layer))
            continue
        half = (s, s * float(rng.uniform(0.45, 0.8)), s * float(rng.uniform(0.6, 1.0)))
        ypr = (float(rng.uniform(0, 360)), float(rng.uniform(-8, 8)), float(rng.uniform(-8, 8)))
        center = (x, height + half[1] * (1 - 2 * cfg.sink), z)
        shapes.append(BoxConfig(center=center, half_extents=half, yaw_pitch_roll_deg=ypr, layer=cfg.layer))
    return shapes


def scatter_shapes(config: EnvironmentConfig, heightfield, water) -> list:
    """All shape configs produced by ``config.scatter``, in declaration order, never overlapping each
    other (their footprints keep ``min_spacing``)."""
    ground = _Ground(heightfield, water)
    occupied: list[tuple[float, float, float]] = []
    shapes: list = []
    for item in config.scatter:
        region = item.region or default_scatter_region(config.terrain)
        if isinstance(item, TreeScatterConfig):
            shapes += scatter_trees(item, region, ground, occupied)
        else:
            shapes += scatter_rocks(item, region, ground, occupied)
    return shapes


# ----------------------------------------------------------------------------------------------------
# ready-made scenes
# ----------------------------------------------------------------------------------------------------


def pasture_config(size: float = 256.0, resolution: int = 257, obstacles: int = 500, seed: int = 0,
                   pond: bool = True) -> EnvironmentConfig:
    """A pasture: rolling random hills, a mountain rim, optionally a pond with water, and ``obstacles``
    scattered obstacles (60 % trees with canopies, 40 % box rocks).

    ``size`` is the side of the square in metres and ``resolution`` the samples per side (``resolution -
    1`` cells of ``size / (resolution - 1)`` metres).
    """
    half = size / 2
    n_trees = int(round(obstacles * 0.6))
    n_rocks = obstacles - n_trees
    terrain = TerrainConfig(
        size=(size, size),
        resolution=(resolution, resolution),
        random_hills=RandomHillsConfig(count=max(4, int(size * size / 4000)), radius_range=(size * 0.06, size * 0.18),
                                       height_range=(1.0, 6.0), seed=seed),
        pond=PondBasinConfig(center=(size * 0.12, -size * 0.1), bottom_radius=size * 0.05, bank_width=size * 0.04,
                             depth=2.5) if pond else None,
        rim=MountainRimConfig(height=size * 0.1, width=size * 0.12, roughness=0.4, seed=seed + 1),
    )
    return EnvironmentConfig(
        terrain=terrain,
        water=[WaterConfig(surface_height=-0.6, fill_pond=True)] if pond else [],
        scatter=[
            TreeScatterConfig(count=n_trees, seed=seed + 2, min_spacing=max(1.0, half / 64)),
            RockScatterConfig(count=n_rocks, seed=seed + 3, min_spacing=max(1.0, half / 64)),
        ],
    )
