"""Static environment: collision layers, heightfield terrain, primitives, triangle meshes with a BVH, water,
and batched ray casts, sphere casts and inside tests (seed 000, 2.1.1, ch. 7, 9.5.4–9.5.8).

Typical use::

    from starling.environment import Environment, EnvironmentConfig, cast_rays

    env = Environment.from_config(EnvironmentConfig.model_validate(toml_table))
    hits = cast_rays(env, origins, directions, max_distance=8.0, mask=env.mask(["terrain", "environment"]))
"""

from .config import (
    BoxConfig,
    CapsuleConfig,
    CylinderConfig,
    EnvironmentConfig,
    HeightmapImageConfig,
    HillConfig,
    MeshConfig,
    MountainRimConfig,
    PlaneConfig,
    PondBasinConfig,
    RandomHillsConfig,
    RockScatterConfig,
    SphereConfig,
    TerrainConfig,
    TreeScatterConfig,
    WaterConfig,
)
from .errors import EnvironmentError_, EnvironmentFileError, LayerCapacityError, UnknownLayerError
from .layers import ALL_LAYERS, BUILTIN_LAYERS, DEFAULT_LAYERS, LayerRegistry, layer_mask
from .raycast import PARALLEL_THRESHOLD, RayHits, cast_rays, inside_solid, sphere_cast
from .scene import Environment, GeometryArrays
from .terrain import Heightfield
from .water import WaterBodies

__all__ = [
    "ALL_LAYERS",
    "BUILTIN_LAYERS",
    "DEFAULT_LAYERS",
    "PARALLEL_THRESHOLD",
    "BoxConfig",
    "CapsuleConfig",
    "CylinderConfig",
    "Environment",
    "EnvironmentConfig",
    "EnvironmentError_",
    "EnvironmentFileError",
    "GeometryArrays",
    "HeightmapImageConfig",
    "Heightfield",
    "HillConfig",
    "LayerCapacityError",
    "LayerRegistry",
    "MeshConfig",
    "MountainRimConfig",
    "PlaneConfig",
    "PondBasinConfig",
    "RandomHillsConfig",
    "RayHits",
    "RockScatterConfig",
    "SphereConfig",
    "TerrainConfig",
    "TreeScatterConfig",
    "UnknownLayerError",
    "WaterBodies",
    "WaterConfig",
    "cast_rays",
    "inside_solid",
    "layer_mask",
    "sphere_cast",
]
