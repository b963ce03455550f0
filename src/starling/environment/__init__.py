"""Static environment: collision layers, heightfield terrain, primitives, triangle meshes with a BVH, water,
and batched ray casts, sphere casts and inside tests (seed 000, 2.1.1, ch. 7, 9.5.4–9.5.8).

Typical use::

    from starling.environment import Environment, EnvironmentConfig, cast_rays

    env = Environment.from_config(EnvironmentConfig.model_validate(toml_table))
    hits = cast_rays(env, origins, directions, max_distance=8.0, mask=env.mask(["terrain", "environment"]))
"""

import os as _os
from pathlib import Path as _Path


def _drop_stale_kernel_caches() -> None:
    """Delete the Numba caches of the geometry kernels when any of their sources changed.

    Numba's on-disk cache (``cache=True``) checks only the file that defines a function, but the kernels
    here inline helpers from sibling modules: after an edit of, say, ``primitives.py``, the cached ray-cast
    kernel of ``raycast.py`` would keep the old code.  A stamp of the sources' sizes and modification times
    catches that and clears the caches of all of them together.  Failures (read-only installs) are ignored.
    """
    root = _Path(__file__).resolve().parent.parent
    sources = [root / "environment" / f"{name}.py" for name in
               ("primitives", "packed", "mesh", "terrain", "water", "casting", "raycast", "spherecast", "inside", "scene")]
    sources += [root / "environment" / "collide.py", root / "steering" / "queries" / "rays.py"]
    try:
        stamp = ";".join(f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in sources if p.exists())
        stamp_file = root / "environment" / "__pycache__" / "kernels.stamp"
        if stamp_file.exists() and stamp_file.read_text() == stamp:
            return
        for src in sources:
            cache_dir = src.parent / "__pycache__"
            if cache_dir.is_dir():
                for f in cache_dir.glob(f"{src.stem}.*.nb[ic]"):
                    f.unlink(missing_ok=True)
        stamp_file.parent.mkdir(exist_ok=True)
        tmp = stamp_file.with_suffix(f".{_os.getpid()}.tmp")
        tmp.write_text(stamp)
        tmp.replace(stamp_file)
    except OSError:
        pass


_drop_stale_kernel_caches()

from .config import (  # noqa: E402
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
from .errors import EnvironmentError_, EnvironmentFileError, LayerCapacityError, UnknownLayerError  # noqa: E402
from ..world.layers import ALL_LAYERS, BUILTIN_LAYERS, DEFAULT_LAYERS, LayerRegistry, layer_mask  # noqa: E402
from .casting import PARALLEL_THRESHOLD, RayHits  # noqa: E402
from .inside import inside_solid  # noqa: E402
from .raycast import cast_rays  # noqa: E402
from .spherecast import sphere_cast  # noqa: E402
from .scene import Environment, GeometryArrays  # noqa: E402
from .terrain import Heightfield  # noqa: E402
from .water import WaterBodies  # noqa: E402

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
