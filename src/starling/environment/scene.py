"""The assembled static environment of a scene.

:class:`Environment` holds every static shape as flat arrays per shape type, in the form the Numba kernels
of :mod:`starling.environment.raycast` and :mod:`starling.motion.collide` consume (one namedtuple of
arrays, :class:`GeometryArrays`).  It is built once per scene from an
:class:`~starling.environment.config.EnvironmentConfig` and never changes afterwards.

Finite primitives (spheres, boxes, capsules, cylinders) share one BVH; mesh triangles have their own; the
heightfield is walked cell by cell; planes and water bodies (few, unbounded or cheap) are tested directly.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from . import builders
from .config import (
    BoxConfig,
    CapsuleConfig,
    CylinderConfig,
    EnvironmentConfig,
    MeshConfig,
    PlaneConfig,
    SphereConfig,
)
from .layers import ALL_LAYERS, LayerRegistry
from .mesh import BVH, build_bvh, load_mesh_file, transform_vertices, triangles_from
from .primitives import KIND_BOX, KIND_CAPSULE, KIND_CYLINDER, KIND_SPHERE, rotation_matrix
from .terrain import Heightfield
from .water import WaterBodies

GeometryArrays = namedtuple(
    "GeometryArrays",
    [
        # spheres: centre (s, 3), radius (s,), layer (s,)
        "sph_c", "sph_r", "sph_l",
        # oriented boxes: centre (b, 3), rotation (b, 3, 3) with the local axes as columns, half extents (b, 3)
        "box_c", "box_rot", "box_h", "box_l",
        # capsules: segment ends (c, 3) x 2, radius (c,)
        "cap_a", "cap_b", "cap_r", "cap_l",
        # cylinders: base (y, 3), unit axis (y, 3), height (y,), radius (y,)
        "cyl_a", "cyl_u", "cyl_h", "cyl_r", "cyl_l",
        # planes: point (p, 3), unit normal (p, 3)
        "pl_p", "pl_n", "pl_l",
        # BVH over the finite primitives; items in leaf order as (kind, index into the kind's arrays)
        "pb_min", "pb_max", "pb_start", "pb_count", "pb_mask", "pb_kind", "pb_index",
        # triangles in BVH leaf order: v0, e1 = v1 - v0, e2 = v2 - v0, unit normal, layer, mesh id
        "tri_v0", "tri_e1", "tri_e2", "tri_n", "tri_l", "tri_mesh",
        # BVH over the triangles (leaves index the triangle arrays directly)
        "tb_min", "tb_max", "tb_start", "tb_count", "tb_mask",
        # per mesh: solid flag, bounds, layer
        "mesh_solid", "mesh_min", "mesh_max", "mesh_l",
        # terrain: heights (nz, nx), per-cell min/max, and [present, x0, z0, dx, dz, h_min, h_max, layer]
        "ter_h", "ter_cmin", "ter_cmax", "ter_f",
        # water bodies (see starling.environment.water.WaterBodies)
        "w_surface", "w_kind", "w_circle", "w_box", "w_poly", "w_start", "w_count", "w_layer",
        # [primitive BVH depth, triangle BVH depth] (traversal stack sizes)
        "depth",
    ],
)
GeometryArrays.__doc__ = """Flat, Numba-friendly arrays of a static environment (float64 geometry, int16
layers, int32 indices).  Built by :class:`Environment`; read by the kernels of
:mod:`starling.environment.raycast` and :mod:`starling.motion.collide`."""


def _f64(a, shape) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(a, dtype=np.float64).reshape(shape))


class Environment:
    """Static geometry of a scene with collision layers.

    Build it with :meth:`from_config` (the usual way), :meth:`from_parts` (already-built pieces) or
    :meth:`empty` (no geometry at all: every ray misses, nothing is solid).

    Attributes
    ----------
    layers: LayerRegistry
        Built-in plus declared layer names.
    terrain: Heightfield | None
        The heightfield, if any.
    water: WaterBodies
        The water bodies (possibly none).
    shapes: tuple
        The primitive shape configs (declared and scattered) in the scene, for drawing and inspection.
    arrays: GeometryArrays
        The flat arrays handed to kernels.
    """

    def __init__(self, layers: LayerRegistry, terrain: Heightfield | None, water: WaterBodies,
                 shapes: tuple, arrays: GeometryArrays, prim_bvh: BVH, tri_bvh: BVH):
        self.layers = layers
        self.terrain = terrain
        self.water = water
        self.shapes = shapes
        self.arrays = arrays
        self.prim_bvh = prim_bvh
        self.tri_bvh = tri_bvh

    # ------------------------------------------------------------------------------------------------
    # construction
    # ------------------------------------------------------------------------------------------------

    @classmethod
    def empty(cls, layers: LayerRegistry | Iterable[str] | None = None) -> "Environment":
        """An environment without geometry (open sky, no ground)."""
        return cls.from_parts(layers=layers)

    @classmethod
    def from_config(cls, config: EnvironmentConfig | dict[str, Any],
                    base_dir: str | Path | None = None) -> "Environment":
        """Build from a config (a model or a plain dict, e.g. a parsed TOML ``[environment]`` table).

        ``base_dir`` resolves relative mesh and height-map paths (normally the folder of the scenario
        file).  Missing or broken files raise
        :class:`~starling.environment.errors.EnvironmentFileError` naming the file.
        """
        if not isinstance(config, EnvironmentConfig):
            config = EnvironmentConfig.model_validate(config)
        registry = config.layer_registry()
        heightfield = None
        if config.terrain is not None:
            heights = builders.terrain_heights(config.terrain, base_dir)
            x0, z0, x1, z1 = config.terrain.bounds_xz
            heightfield = Heightfield.from_heights(heights, x0, z0, x1, z1, registry.index(config.terrain.layer))
        regions = []
        for w in config.water:
            if w.rectangle is not None:
                regions.append((w.surface_height, "rectangle", w.rectangle, registry.index(w.layer)))
            elif w.polygon is not None:
                regions.append((w.surface_height, "polygon", w.polygon, registry.index(w.layer)))
            elif w.circle is not None:
                regions.append((w.surface_height, "circle", w.circle, registry.index(w.layer)))
            else:
                pond = config.terrain.pond  # type: ignore[union-attr]  (checked by the config)
                circle = (pond.center[0], pond.center[1], pond.outer_radius)
                regions.append((w.surface_height, "circle", circle, registry.index(w.layer)))
        water = WaterBodies.from_regions(regions)
        shapes = list(config.shapes) + builders.scatter_shapes(config, heightfield, water)
        tris, tri_layer, tri_mesh, solid = [], [], [], []
        for m, mesh in enumerate(config.meshes):
            t, watertight = _load_mesh(mesh, base_dir)
            tris.append(t)
            tri_layer.append(np.full(len(t), registry.index(mesh.layer), np.int16))
            tri_mesh.append(np.full(len(t), m, np.int32))
            solid.append(watertight if mesh.solid is None else mesh.solid)
        triangles = np.concatenate(tris) if tris else None
        return cls.from_parts(
            layers=registry,
            terrain=heightfield,
            water=water,
            shapes=shapes,
            triangles=triangles,
            triangle_layers=np.concatenate(tri_layer) if tris else None,
            triangle_mesh_ids=np.concatenate(tri_mesh) if tris else None,
            mesh_solid=solid,
        )

    @classmethod
    def from_parts(cls, *, layers: LayerRegistry | Iterable[str] | None = None, terrain: Heightfield | None = None,
                   water: WaterBodies | None = None, shapes: Sequence = (), triangles: np.ndarray | None = None,
                   triangle_layers: np.ndarray | int | None = None, triangle_mesh_ids: np.ndarray | None = None,
                   mesh_solid: Sequence[bool] = ()) -> "Environment":
        """Assemble from built pieces.

        Parameters
        ----------
        layers: a :class:`LayerRegistry` or the user-defined layer names (default: built-ins only).
        terrain: a :class:`Heightfield` or None.
        water: :class:`WaterBodies` or None.
        shapes: primitive shape configs (sphere, box, capsule, cylinder, plane); their ``layer`` names
            must be known to ``layers``.
        triangles: ``(t, 3, 3)`` world-space triangle corners, or None.
        triangle_layers: ``(t,)`` layer indices or one index for all (default: ``environment``).
        triangle_mesh_ids: ``(t,)`` mesh ids (default: all 0); ``mesh_solid[m]`` says whether mesh ``m``
            encloses a solid (default: not solid).
        """
        registry = layers if isinstance(layers, LayerRegistry) else LayerRegistry(layers or ())
        water = water if water is not None else WaterBodies.empty()

        spheres, boxes, capsules, cylinders, planes = [], [], [], [], []
        for s in shapes:
            lay = registry.index(s.layer)
            if isinstance(s, SphereConfig):
                spheres.append((s.center, s.radius, lay))
            elif isinstance(s, CapsuleConfig):
                a = np.asarray(s.base, float)
                u = np.asarray(s.axis, float) / np.linalg.norm(s.axis)
                if s.height == 0.0:
                    spheres.append((tuple(a), s.radius, lay))  # a zero-height capsule is a sphere
                else:
                    capsules.append((a, a + s.height * u, s.radius, lay))
            elif isinstance(s, CylinderConfig):
                u = np.asarray(s.axis, float) / np.linalg.norm(s.axis)
                cylinders.append((s.base, u, s.height, s.radius, lay))
            elif isinstance(s, BoxConfig):
                center, half = s.resolved()
                rot = rotation_matrix(s.yaw_pitch_roll_deg, s.quaternion)
                boxes.append((center, rot, half, lay))
            elif isinstance(s, PlaneConfig):
                n = np.asarray(s.normal, float) / np.linalg.norm(s.normal)
                planes.append((s.point, n, lay))
            else:
                raise TypeError(f"not a shape config: {s!r}")

        sph_c = _f64([s[0] for s in spheres], (-1, 3))
        sph_r = _f64([s[1] for s in spheres], (-1,))
        sph_l = np.array([s[2] for s in spheres], np.int16)
        box_c = _f64([b[0] for b in boxes], (-1, 3))
        box_rot = _f64([b[1] for b in boxes], (-1, 3, 3))
        box_h = _f64([b[2] for b in boxes], (-1, 3))
        box_l = np.array([b[3] for b in boxes], np.int16)
        cap_a = _f64([c[0] for c in capsules], (-1, 3))
        cap_b = _f64([c[1] for c in capsules], (-1, 3))
        cap_r = _f64([c[2] for c in capsules], (-1,))
        cap_l = np.array([c[3] for c in capsules], np.int16)
        cyl_a = _f64([c[0] for c in cylinders], (-1, 3))
        cyl_u = _f64([c[1] for c in cylinders], (-1, 3))
        cyl_h = _f64([c[2] for c in cylinders], (-1,))
        cyl_r = _f64([c[3] for c in cylinders], (-1,))
        cyl_l = np.array([c[4] for c in cylinders], np.int16)
        pl_p = _f64([p[0] for p in planes], (-1, 3))
        pl_n = _f64([p[1] for p in planes], (-1, 3))
        pl_l = np.array([p[2] for p in planes], np.int16)

        # bounds of the finite primitives
        lo_parts = [sph_c - sph_r[:, None]]
        hi_parts = [sph_c + sph_r[:, None]]
        box_ext = np.einsum("bij,bj->bi", np.abs(box_rot), box_h)
        lo_parts.append(box_c - box_ext)
        hi_parts.append(box_c + box_ext)
        lo_parts.append(np.minimum(cap_a, cap_b) - cap_r[:, None])
        hi_parts.append(np.maximum(cap_a, cap_b) + cap_r[:, None])
        cyl_b = cyl_a + cyl_u * cyl_h[:, None]
        disc = cyl_r[:, None] * np.sqrt(np.clip(1.0 - cyl_u**2, 0.0, 1.0))
        lo_parts.append(np.minimum(cyl_a, cyl_b) - disc)
        hi_parts.append(np.maximum(cyl_a, cyl_b) + disc)
        item_min = np.concatenate(lo_parts)
        item_max = np.concatenate(hi_parts)
        kinds = np.concatenate([
            np.full(len(spheres), KIND_SPHERE), np.full(len(boxes), KIND_BOX),
            np.full(len(capsules), KIND_CAPSULE), np.full(len(cylinders), KIND_CYLINDER),
        ]).astype(np.int8)
        index = np.concatenate([np.arange(len(spheres)), np.arange(len(boxes)), np.arange(len(capsules)),
                                np.arange(len(cylinders))]).astype(np.int32)
        item_layer = np.concatenate([sph_l, box_l, cap_l, cyl_l]).astype(np.int64)
        prim_bvh = build_bvh(item_min, item_max, item_layer, leaf_size=2, max_leaf=4)

        # triangles
        if triangles is None:
            triangles = np.zeros((0, 3, 3))
        tris = _f64(triangles, (-1, 3, 3))
        t = tris.shape[0]
        if triangle_layers is None:
            triangle_layers = registry.index("environment")
        t_layer = np.broadcast_to(np.asarray(triangle_layers, np.int16), (t,)).copy()
        t_mesh = (np.zeros(t, np.int32) if triangle_mesh_ids is None
                  else np.asarray(triangle_mesh_ids, np.int32).reshape(t).copy())
        n_meshes = int(t_mesh.max()) + 1 if t else 0
        solid = np.zeros(n_meshes, np.bool_)
        solid[: min(len(mesh_solid), n_meshes)] = np.asarray(list(mesh_solid)[:n_meshes], np.bool_)
        tri_bvh = build_bvh(tris.min(axis=1) if t else np.zeros((0, 3)), tris.max(axis=1) if t else np.zeros((0, 3)),
                            t_layer, leaf_size=4, max_leaf=8)
        tris = tris[tri_bvh.order]
        t_layer = t_layer[tri_bvh.order]
        t_mesh = t_mesh[tri_bvh.order]
        v0 = np.ascontiguousarray(tris[:, 0])
        e1 = np.ascontiguousarray(tris[:, 1] - tris[:, 0])
        e2 = np.ascontiguousarray(tris[:, 2] - tris[:, 0])
        nrm = np.cross(e1, e2)
        nrm = np.ascontiguousarray(nrm / np.maximum(np.linalg.norm(nrm, axis=1, keepdims=True), 1e-300))
        mesh_min = np.full((n_meshes, 3), np.inf)
        mesh_max = np.full((n_meshes, 3), -np.inf)
        mesh_l = np.full(n_meshes, -1, np.int16)
        for m in range(n_meshes):
            sel = t_mesh == m
            if np.any(sel):
                mesh_min[m] = tris[sel].reshape(-1, 3).min(axis=0)
                mesh_max[m] = tris[sel].reshape(-1, 3).max(axis=0)
                mesh_l[m] = t_layer[sel][0]

        if terrain is not None:
            ter_h, ter_cmin, ter_cmax = terrain.heights, terrain.cell_min, terrain.cell_max
            ter_f = np.array([1.0, terrain.x0, terrain.z0, terrain.dx, terrain.dz, float(terrain.heights.min()),
                              float(terrain.heights.max()), float(terrain.layer)])
        else:
            ter_h, ter_cmin, ter_cmax = np.zeros((2, 2)), np.zeros((1, 1)), np.zeros((1, 1))
            ter_f = np.array([0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0])

        arrays = GeometryArrays(
            sph_c=sph_c, sph_r=sph_r, sph_l=sph_l,
            box_c=box_c, box_rot=box_rot, box_h=box_h, box_l=box_l,
            cap_a=cap_a, cap_b=cap_b, cap_r=cap_r, cap_l=cap_l,
            cyl_a=cyl_a, cyl_u=cyl_u, cyl_h=cyl_h, cyl_r=cyl_r, cyl_l=cyl_l,
            pl_p=pl_p, pl_n=pl_n, pl_l=pl_l,
            pb_min=prim_bvh.node_min, pb_max=prim_bvh.node_max, pb_start=prim_bvh.node_start,
            pb_count=prim_bvh.node_count, pb_mask=prim_bvh.node_mask,
            pb_kind=np.ascontiguousarray(kinds[prim_bvh.order]),
            pb_index=np.ascontiguousarray(index[prim_bvh.order]),
            tri_v0=v0, tri_e1=e1, tri_e2=e2, tri_n=nrm, tri_l=t_layer, tri_mesh=t_mesh,
            tb_min=tri_bvh.node_min, tb_max=tri_bvh.node_max, tb_start=tri_bvh.node_start,
            tb_count=tri_bvh.node_count, tb_mask=tri_bvh.node_mask,
            mesh_solid=solid, mesh_min=mesh_min, mesh_max=mesh_max, mesh_l=mesh_l,
            ter_h=ter_h, ter_cmin=ter_cmin, ter_cmax=ter_cmax, ter_f=ter_f,
            w_surface=water.surface, w_kind=water.kind, w_circle=water.circle, w_box=water.box,
            w_poly=water.poly, w_start=water.start, w_count=water.count, w_layer=water.layer,
            depth=np.array([prim_bvh.depth, tri_bvh.depth], np.int64),
        )
        return cls(registry, terrain, water, tuple(shapes), arrays, prim_bvh, tri_bvh)

    # ------------------------------------------------------------------------------------------------
    # inspection
    # ------------------------------------------------------------------------------------------------

    def __repr__(self) -> str:
        a = self.arrays
        parts = [
            f"spheres={len(a.sph_r)}", f"boxes={len(a.box_h)}", f"capsules={len(a.cap_r)}",
            f"cylinders={len(a.cyl_r)}", f"planes={len(a.pl_n)}", f"triangles={len(a.tri_n)}",
            f"water={len(self.water)}",
            f"terrain={'x'.join(map(str, self.terrain.shape[::-1])) if self.terrain is not None else None}",
        ]
        return f"Environment({', '.join(parts)})"

    @property
    def is_empty(self) -> bool:
        """True when the environment holds no geometry at all."""
        a = self.arrays
        return (self.terrain is None and len(self.water) == 0 and a.pb_start.shape[0] == 0
                and a.tb_start.shape[0] == 0 and a.pl_n.shape[0] == 0)

    @property
    def bounds(self) -> tuple[np.ndarray, np.ndarray] | None:
        """``(lo, hi)`` corners ``(3,)`` of the box around all finite geometry (terrain, primitives, meshes,
        water surfaces); infinite planes are left out.  ``None`` when there is no finite geometry."""
        los, his = [], []
        a = self.arrays
        if a.pb_start.shape[0]:
            los.append(a.pb_min[0])
            his.append(a.pb_max[0])
        if a.tb_start.shape[0]:
            los.append(a.tb_min[0])
            his.append(a.tb_max[0])
        if self.terrain is not None:
            lo, hi = self.terrain.bounds
            los.append(lo)
            his.append(hi)
        for w in range(len(self.water)):
            box, s = self.water.box[w], self.water.surface[w]
            los.append(np.array([box[0], s, box[1]]))
            his.append(np.array([box[2], s, box[3]]))
        if not los:
            return None
        return np.min(los, axis=0), np.max(his, axis=0)

    def mask(self, names: str | Iterable[str] | int | None) -> int:
        """A ``uint32`` layer mask from names (unknown names raise an error listing the known ones), an
        int (passed through), or None (every layer)."""
        if names is None:
            return ALL_LAYERS
        if isinstance(names, (int, np.integer)):
            return int(names) & ALL_LAYERS
        return self.layers.mask(names)

    # ------------------------------------------------------------------------------------------------
    # queries
    # ------------------------------------------------------------------------------------------------

    def is_inside_solid(self, points: np.ndarray, radius: float | np.ndarray = 0.0,
                        mask: str | Iterable[str] | int | None = None) -> np.ndarray:
        """``(n,) bool``: whether a ball of ``radius`` (metres, scalar or ``(n,)``) around each ``(n, 3)``
        point overlaps a solid of the masked layers.

        With ``radius = 0`` this is "the point lies strictly inside a solid".  Solids are the finite
        primitives, the half-spaces behind planes, the ground below the terrain surface (within its
        rectangle), and the interiors of solid (watertight) meshes; with ``radius > 0`` touching any mesh
        triangle also counts.  Water is never solid.
        """
        from .raycast import inside_solid

        return inside_solid(self, points, radius, self.mask(mask))

    def height_at(self, x, z):
        """Terrain height (metres) at ``(x, z)``; ``nan`` outside the terrain or without one."""
        if self.terrain is None:
            shape = np.broadcast(np.asarray(x), np.asarray(z)).shape
            return float("nan") if shape == () else np.full(int(np.prod(shape)), np.nan)
        return self.terrain.height_at(x, z)

    def normal_at(self, x, z):
        """Terrain unit normal at ``(x, z)`` (``(0, 1, 0)`` without a terrain)."""
        if self.terrain is None:
            shape = np.broadcast(np.asarray(x), np.asarray(z)).shape
            up = np.array([0.0, 1.0, 0.0])
            return up if shape == () else np.tile(up, (int(np.prod(shape)), 1))
        return self.terrain.normal_at(x, z)

    def in_water(self, points: np.ndarray, mask: str | Iterable[str] | int | None = None) -> np.ndarray:
        """``(n,) bool``: whether each ``(n, 3)`` point is in a water body (region and at or below its
        surface) whose layer is in ``mask``."""
        return self.water.in_water(points, self.mask(mask))

    def surface_height(self, x, z) -> np.ndarray:
        """``(n,)`` water surface height at ``(x, z)``, ``nan`` where there is no water."""
        return self.water.surface_height(x, z)

    def cast_rays(self, origins, directions, max_distance, mask=None, out=None):
        """Shortcut for :func:`starling.environment.raycast.cast_rays` with a mask given by names."""
        from .raycast import cast_rays

        return cast_rays(self, origins, directions, max_distance, self.mask(mask), out=out)


def _load_mesh(mesh: MeshConfig, base_dir: str | Path | None) -> tuple[np.ndarray, bool]:
    path = Path(mesh.path)
    if not path.is_absolute() and base_dir is not None:
        path = Path(base_dir) / path
    vertices, faces, watertight = load_mesh_file(path)
    rot = rotation_matrix(mesh.yaw_pitch_roll_deg, mesh.quaternion)
    world = transform_vertices(vertices, rot, mesh.translation, mesh.scale)
    return triangles_from(world, faces), watertight
