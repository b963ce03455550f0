"""The assembled static environment of a scene.

:class:`Environment` holds every static shape as flat arrays per shape type, in the form the Numba kernels
of the scene queries (:mod:`starling.environment.raycast`, :mod:`~starling.environment.spherecast`,
:mod:`~starling.environment.inside`) and of :mod:`starling.environment.collide` consume (one namedtuple of
arrays, :class:`GeometryArrays`).  It is built once per scene from an
:class:`~starling.environment.config.EnvironmentConfig` and never changes afterwards.

Acceleration: the finite primitives (spheres, boxes, capsules, cylinders) are indexed twice — by a uniform
grid of x–z columns, which ray casts walk (animals' rays are short and near the ground, so a ray visits a
few columns instead of descending a tree from its root, and an animal's fan of rays reads the columns
under it once), and by a BVH, which sphere sweeps and proximity queries descend (they need boxes grown by
a radius, in 3D).  Mesh triangles have their own BVH; the heightfield is walked cell by cell behind its
clearance maps and block bounds; planes and water bodies (few, unbounded or cheap) are tested directly.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from . import builders
from . import raycast as _raycast
from .config import (
    BoxConfig,
    CapsuleConfig,
    CylinderConfig,
    EnvironmentConfig,
    MeshConfig,
    PlaneConfig,
    SphereConfig,
)
from ..kernel_calls import CallSite
from ..world.layers import ALL_LAYERS, LayerRegistry
from .mesh import BVH, build_bvh, load_mesh_file, transform_vertices, triangles_from
from .packed import KIND_BOX, KIND_CAPSULE, KIND_CYLINDER, KIND_SPHERE, PRIM_WIDTH
from .rotations import rotation_matrix
from .terrain import Heightfield, clearance_block
from .water import WaterBodies

GeometryArrays = namedtuple(
    "GeometryArrays",
    [
        # --- per shape type, for inspection and drawing (the kernels read the packed tables below) ---
        # spheres: centre (s, 3), radius (s,), layer (s,)
        "sph_c", "sph_r", "sph_l",
        # oriented boxes: centre (b, 3), rotation (b, 3, 3) with the local axes as columns, half extents (b, 3)
        "box_c", "box_rot", "box_h", "box_l",
        # capsules: segment ends (c, 3) x 2, radius (c,)
        "cap_a", "cap_b", "cap_r", "cap_l",
        # cylinders: base (y, 3), unit axis (y, 3), height (y,), radius (y,)
        "cyl_a", "cyl_u", "cyl_h", "cyl_r", "cyl_l",
        # --- kernel tables ---
        # planes: (p, 6) [point, unit normal], (p,) layer
        "pl_f", "pl_i",
        # finite primitives in BVH leaf order: (k, 16) parameters (see packed.PRIM_WIDTH),
        # (k, 3) [kind, layer, index within its type], (k, 6) bounding boxes (a cheap pre-test)
        "prim_f", "prim_i", "prim_box",
        # BVH over the primitives: (m, 6) node boxes, (m, 3) [start, count, layer mask]
        "pb_box", "pb_node",
        # uniform x-z grid over the primitives (ray casts): [x0, z0, cell, 1/cell, nx, nz]; per cell (row-major,
        # z rows) a range of pg_items (rows of prim_f), the y range (nc, 2) and the layer mask of its items; per
        # entry of pg_items the item's bounds (e, 6) and (e, 4) int32 [column of the entry's cell, columns and
        # rows from the item's first cell to it, layer] (what a scan over a block of cells reads: it takes each
        # item once, in the first cell of the block that lists it)
        "pg_f", "pg_start", "pg_items", "pg_y", "pg_mask", "pg_box", "pg_ent",
        # triangles in BVH leaf order: (t, 12) [v0, e1 = v1 - v0, e2 = v2 - v0, unit normal], (t, 2) [layer, mesh]
        "tri_f", "tri_i",
        # BVH over the triangles (leaves index tri_f rows directly)
        "tb_box", "tb_node",
        # per mesh: (nm, 6) bounds, (nm, 2) [solid, layer]
        "mesh_f", "mesh_i",
        # terrain: heights (nz, nx), per-cell min/max (2D, and flat interleaved), clearance maps
        # (terrain.clearance_maps), block bounds (terrain.block_bounds), and
        # [present, x0, z0, dx, dz, h_min, h_max, layer, 1/dx, 1/dz, log2 of the clearance block,
        #  log2 of the block of the block bounds]
        "ter_h", "ter_cmin", "ter_cmax", "ter_cb", "ter_dil", "ter_bb", "ter_f",
        # water bodies (see WaterBodies.packed)
        "w_f", "w_i", "w_poly",
        # [primitive BVH depth, triangle BVH depth] (traversal stack sizes)
        "depth",
    ],
)
GeometryArrays.__doc__ = """Flat, Numba-friendly arrays of a static environment (float64 geometry, int16/int64
layers and indices).  Built by :class:`Environment`; read by the kernels of
:mod:`starling.environment.raycast`, :mod:`~starling.environment.spherecast`,
:mod:`~starling.environment.inside` and :mod:`starling.environment.collide`.  The kernels unpack the arrays they
need once per chunk of work: reading an array out of this struct costs a reference-count update, which
must stay out of per-ray loops."""


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
        # the batched casts' compiled entry points: their arguments' types are fixed by the casts
        # themselves, so Numba need not type this geometry on every call (starling.kernel_calls)
        self.kernel_calls = CallSite()

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
        grid = build_prim_grid(item_min[prim_bvh.order], item_max[prim_bvh.order], item_layer[prim_bvh.order])

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
            ter_dil = terrain.clearance
            ter_cb = terrain.cell_bounds
            ter_bb = terrain.block_bounds
            ter_f = np.array([1.0, terrain.x0, terrain.z0, terrain.dx, terrain.dz, float(terrain.heights.min()),
                              float(terrain.heights.max()), float(terrain.layer), 1.0 / terrain.dx, 1.0 / terrain.dz,
                              float(np.log2(clearance_block(terrain.cell_min.shape[1], terrain.cell_min.shape[0]))),
                              float(terrain.block_shift)])
        else:
            ter_h, ter_cmin, ter_cmax = np.zeros((2, 2)), np.zeros((1, 1)), np.zeros((1, 1))
            ter_dil = np.zeros((4, 1, 1, 1, 2))
            ter_cb = np.zeros((1, 2))
            ter_bb = np.zeros((1, 1, 2), np.float32)
            ter_f = np.array([0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0])

        # packed primitive table in leaf order
        k = len(kinds)
        prim_f = np.zeros((k, PRIM_WIDTH))
        prim_i = np.zeros((k, 3), np.int64)
        for row, it in enumerate(prim_bvh.order):
            kind, i = int(kinds[it]), int(index[it])
            if kind == KIND_SPHERE:
                prim_f[row, :4] = (*sph_c[i], sph_r[i])
            elif kind == KIND_BOX:
                prim_f[row, :15] = (*box_c[i], *box_h[i], *box_rot[i].ravel())
            elif kind == KIND_CAPSULE:
                prim_f[row, :7] = (*cap_a[i], *cap_b[i], cap_r[i])
            else:
                prim_f[row, :8] = (*cyl_a[i], *cyl_u[i], cyl_h[i], cyl_r[i])
            prim_i[row] = (kind, item_layer[it], i)
        pb_box, pb_node = prim_bvh.packed()
        tb_box, tb_node = tri_bvh.packed()
        tri_f = np.ascontiguousarray(np.concatenate([v0, e1, e2, nrm], axis=1).reshape(-1, 12))
        tri_i = np.ascontiguousarray(np.stack([t_layer, t_mesh], axis=1).astype(np.int64).reshape(-1, 2))
        mesh_f = np.ascontiguousarray(np.concatenate([mesh_min, mesh_max], axis=1).reshape(-1, 6))
        mesh_i = np.ascontiguousarray(np.stack([solid.astype(np.int64), mesh_l.astype(np.int64)], axis=1)
                                      .reshape(-1, 2))
        w_f, w_i, w_poly = water.packed()
        arrays = GeometryArrays(
            sph_c=sph_c, sph_r=sph_r, sph_l=sph_l,
            box_c=box_c, box_rot=box_rot, box_h=box_h, box_l=box_l,
            cap_a=cap_a, cap_b=cap_b, cap_r=cap_r, cap_l=cap_l,
            cyl_a=cyl_a, cyl_u=cyl_u, cyl_h=cyl_h, cyl_r=cyl_r, cyl_l=cyl_l,
            pl_f=np.ascontiguousarray(np.concatenate([pl_p, pl_n], axis=1).reshape(-1, 6)),
            pl_i=pl_l.astype(np.int64),
            prim_f=prim_f, prim_i=prim_i, pb_box=pb_box, pb_node=pb_node,
            prim_box=np.ascontiguousarray(np.concatenate([item_min, item_max], axis=1)[prim_bvh.order].reshape(-1, 6)),
            pg_f=grid[0], pg_start=grid[1], pg_items=grid[2], pg_y=grid[3], pg_mask=grid[4],
            pg_box=grid[5], pg_ent=grid[6],
            tri_f=tri_f, tri_i=tri_i, tb_box=tb_box, tb_node=tb_node,
            mesh_f=mesh_f, mesh_i=mesh_i,
            ter_h=ter_h, ter_cmin=ter_cmin, ter_cmax=ter_cmax, ter_cb=ter_cb, ter_dil=ter_dil, ter_bb=ter_bb,
            ter_f=ter_f,
            w_f=w_f, w_i=w_i, w_poly=w_poly,
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
            f"cylinders={len(a.cyl_r)}", f"planes={len(a.pl_f)}", f"triangles={len(a.tri_f)}",
            f"water={len(self.water)}",
            f"terrain={'x'.join(map(str, self.terrain.shape[::-1])) if self.terrain is not None else None}",
        ]
        return f"Environment({', '.join(parts)})"

    @property
    def is_empty(self) -> bool:
        """True when the environment holds no geometry at all."""
        a = self.arrays
        return (self.terrain is None and len(self.water) == 0 and a.prim_f.shape[0] == 0
                and a.tri_f.shape[0] == 0 and a.pl_f.shape[0] == 0)

    @property
    def bounds(self) -> tuple[np.ndarray, np.ndarray] | None:
        """``(lo, hi)`` corners ``(3,)`` of the box around all finite geometry (terrain, primitives, meshes,
        water surfaces); infinite planes are left out.  ``None`` when there is no finite geometry."""
        los, his = [], []
        a = self.arrays
        if a.pb_box.shape[0]:
            los.append(a.pb_box[0, :3])
            his.append(a.pb_box[0, 3:])
        if a.tb_box.shape[0]:
            los.append(a.tb_box[0, :3])
            his.append(a.tb_box[0, 3:])
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
        from .inside import inside_solid

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

    def cast_rays(self, origins, directions, max_distance, mask=None, out=None, parallel=None):
        """Shortcut for :func:`starling.environment.raycast.cast_rays` with a mask given by names or bits.

        Lower layers (the steering pipeline's ray groups) cast through this method, so they
        never import the environment.
        """
        return _raycast.cast_rays(self, origins, directions, max_distance, self.mask(mask), out=out, parallel=parallel)

    def cast_into(self, origins, directions, maxd, mask: int, out, parallel: bool) -> None:
        """:func:`starling.environment.raycast.cast_into`: a cast whose arguments already have the kernel's
        types (``out``: :meth:`allocate_hits` rows, exactly one per ray), for a caller that casts every step."""
        _raycast.cast_into(self, origins, directions, maxd, mask, out, parallel)

    @staticmethod
    def allocate_hits(rows: int):
        """Reusable ray-hit buffers for ``rows`` rays (what :meth:`cast_rays` fills with ``out``)."""
        return _raycast.RayHits.allocate(rows)


def build_prim_grid(item_min: np.ndarray, item_max: np.ndarray, item_layer: np.ndarray, items_per_cell: float = 0.5,
                    max_cells: int = 1 << 20):
    """A uniform grid over the x–z footprints of ``k`` items (the ray-cast index of the primitives).

    Scenes with animals are mostly spread over the ground and their rays are short compared with the
    scene, so a ray visits a handful of columns and tests only the few items listed in them, instead of
    descending a tree from its root.  Each cell also keeps the y range and the layer bits of its items,
    which lets a ray skip a column it passes over (or under), or whose layers it does not want.

    The cell size gives about ``items_per_cell`` items per cell (never more than ``max_cells`` cells), but
    is never smaller than the median item footprint, so that an item spans few cells.

    Returns ``(pg_f, pg_start, pg_items, pg_y, pg_mask, pg_box, pg_ent)`` (see :class:`GeometryArrays`).
    """
    k = item_min.shape[0]
    if k == 0:
        return (np.array([0.0, 0.0, 1.0, 1.0, 1.0, 1.0]), np.zeros(2, np.int32), np.zeros(0, np.int32),
                np.array([[np.inf, -np.inf]]), np.zeros(1, np.int64), np.zeros((0, 6)), np.zeros((0, 4), np.int32))
    lo = item_min[:, [0, 2]].min(axis=0)
    hi = item_max[:, [0, 2]].max(axis=0)
    extent = np.maximum(hi - lo, 1e-6)
    footprint = float(np.median(np.maximum(item_max[:, 0] - item_min[:, 0], item_max[:, 2] - item_min[:, 2])))
    cell = max(float(np.sqrt(extent[0] * extent[1] * items_per_cell / k)), footprint,
               float(np.sqrt(extent[0] * extent[1] / max_cells)), 1e-3)
    nx = max(1, int(np.ceil(extent[0] / cell)))
    nz = max(1, int(np.ceil(extent[1] / cell)))
    i0 = np.clip(np.floor((item_min[:, 0] - lo[0]) / cell).astype(np.int64), 0, nx - 1)
    i1 = np.clip(np.floor((item_max[:, 0] - lo[0]) / cell).astype(np.int64), 0, nx - 1)
    j0 = np.clip(np.floor((item_min[:, 2] - lo[1]) / cell).astype(np.int64), 0, nz - 1)
    j1 = np.clip(np.floor((item_max[:, 2] - lo[1]) / cell).astype(np.int64), 0, nz - 1)
    cells, items = [], []
    for p in range(k):
        jj, ii = np.meshgrid(np.arange(j0[p], j1[p] + 1), np.arange(i0[p], i1[p] + 1), indexing="ij")
        cells.append((jj * nx + ii).ravel())
        items.append(np.full(jj.size, p))
    cells_a = np.concatenate(cells)
    items_a = np.concatenate(items)
    order = np.argsort(cells_a, kind="stable")
    cells_a, items_a = cells_a[order], items_a[order]
    n_cells = nx * nz
    counts = np.bincount(cells_a, minlength=n_cells)
    start = np.zeros(n_cells + 1, np.int32)
    start[1:] = np.cumsum(counts)
    y = np.empty((n_cells, 2))
    y[:, 0] = np.inf
    y[:, 1] = -np.inf
    np.minimum.at(y[:, 0], cells_a, item_min[items_a, 1])
    np.maximum.at(y[:, 1], cells_a, item_max[items_a, 1])
    mask = np.zeros(n_cells, np.int64)
    np.bitwise_or.at(mask, cells_a, np.left_shift(np.int64(1), item_layer[items_a].astype(np.int64)))
    # per entry: the item's box, and [column, column - item's first column, row - item's first row, layer]
    ent_box = np.ascontiguousarray(np.concatenate([item_min[items_a], item_max[items_a]], axis=1).reshape(-1, 6))
    col = cells_a % nx
    row = cells_a // nx
    ent = np.ascontiguousarray(np.stack([col, col - i0[items_a], row - j0[items_a], item_layer[items_a]], axis=1)
                               .astype(np.int32).reshape(-1, 4))
    return (np.array([lo[0], lo[1], cell, 1.0 / cell, float(nx), float(nz)]), start, items_a.astype(np.int32),
            np.ascontiguousarray(y), mask, ent_box, ent)


def _load_mesh(mesh: MeshConfig, base_dir: str | Path | None) -> tuple[np.ndarray, bool]:
    path = Path(mesh.path)
    if not path.is_absolute() and base_dir is not None:
        path = Path(base_dir) / path
    vertices, faces, watertight = load_mesh_file(path)
    rot = rotation_matrix(mesh.yaw_pitch_roll_deg, mesh.quaternion)
    world = transform_vertices(vertices, rot, mesh.translation, mesh.scale)
    return triangles_from(world, faces), watertight
