/**
 * A heightfield simplified for software rasterisers: large triangles where the ground
 * is nearly flat, every sample where it is not.
 *
 * On a CPU rasteriser the terrain costs about as much per triangle as per pixel: the
 * meadow's terrain drawn from 101 × 101 samples (20,000 triangles) took about 22 ms of
 * the GPU process's time per half-scale frame, from 51 × 51 about 10 ms. Coarser
 * uniform grids break up the pond's shore, though, into sand-coloured teeth. So the
 * triangles follow the ground instead: a right-triangulated irregular network (RTIN,
 * as in Evans, Kirkpatrick and Townsend 2001, and mapbox's "martini") halves a
 * triangle only where a sample on or inside it departs from the plane through its
 * corners by more than `maxError`, and always where it crosses the water's surface.
 * A triangle and its neighbour across the hypotenuse share that decision (it is kept
 * at their common midpoint), and every triangle's error includes its halves', so the
 * mesh has no T-junctions: no slit opens between neighbours. Every vertex is a sample.
 */
import * as THREE from "three";
import type { Heightfield } from "../protocol/messages";
import { colorFacets, type FacetColor } from "./facets";

/**
 * A heightfield as drawn: `columns` and `rows` are each sample's offset from the origin
 * (even spacing, except that a coarsened field's last step may be shorter).
 */
export interface DrawnHeightfield extends Heightfield {
  columns: number[];
  rows: number[];
}

/** Samples (i, j) of the three corners of each triangle: `[i0, j0, i1, j1, i2, j2]` per triangle. */
export type GridTriangles = number[];

/**
 * The simplified triangulation of an `nx` × `nz` grid of `heights` (row-major, `j * nx + i`):
 * no sample departs from the surface by more than `maxError`, and no triangle larger than one
 * cell has corners on both sides of `waterLevel` (null: no water).
 */
export function simplifyGrid(heights: ArrayLike<number>, nx: number, nz: number, maxError: number,
                             waterLevel: number | null = null): GridTriangles {
  // RTIN works on a square of 2^k + 1 samples: pad by repeating the last row and column, and
  // never let a triangle cross the grid's far edges (its midpoint's error is infinite), so that
  // dropping the padding leaves the grid exactly covered.
  let tile = 1;
  while (tile < Math.max(nx, nz) - 1) tile *= 2;
  const size = tile + 1;
  const h = new Float64Array(size * size);
  for (let j = 0; j < size; j++) {
    for (let i = 0; i < size; i++) h[j * size + i] = heights[Math.min(j, nz - 1) * nx + Math.min(i, nx - 1)] ?? 0;
  }
  const errors = new Float64Array(size * size);
  const lastI = nx - 1, lastJ = nz - 1;
  const straddles = (lo: number, hi: number, line: number) => lo < line && line < hi;
  const above = (y: number) => (waterLevel !== null && y > waterLevel ? 1 : 0);
  // Every triangle of the hierarchy, finest first, so each midpoint's error already holds its halves'.
  // A triangle's id spells its path: the lowest bit picks one of the square's two halves, each
  // further bit the left or the right half of the triangle so far. Ids grow with depth, so counting
  // down visits every finer triangle before any coarser one.
  const count = tile * tile * 2 - 2;
  const parents = count - tile * tile;
  for (let t = count - 1; t >= 0; t--) {
    let id = t + 2;
    let ax = 0, ay = 0, bx = 0, by = 0, cx = 0, cy = 0;
    if (id & 1) { bx = by = cx = tile; } else { ax = ay = cy = tile; }
    while ((id >>= 1) > 1) {
      const mx = (ax + bx) >> 1, my = (ay + by) >> 1;
      if (id & 1) { bx = ax; by = ay; ax = cx; ay = cy; } else { ax = bx; ay = by; bx = cx; by = cy; }
      cx = mx; cy = my;
    }
    const mx = (ax + bx) >> 1, my = (ay + by) >> 1;
    const mid = my * size + mx;
    let error = planeError(h, size, ax, ay, bx, by, cx, cy);
    if (straddles(Math.min(ax, bx, cx), Math.max(ax, bx, cx), lastI) || straddles(Math.min(ay, by, cy), Math.max(ay, by, cy), lastJ)) {
      error = Infinity;
    }
    if (waterLevel !== null) {
      const corners = above(h[ay * size + ax]) + above(h[by * size + bx]) + above(h[cy * size + cx]);
      if (corners > 0 && corners < 3) error = Infinity; // it crosses the water's surface
    }
    errors[mid] = Math.max(errors[mid], error);
    if (t < parents) {
      const left = ((ay + cy) >> 1) * size + ((ax + cx) >> 1);
      const right = ((by + cy) >> 1) * size + ((bx + cx) >> 1);
      errors[mid] = Math.max(errors[mid], errors[left], errors[right]);
    }
  }
  const out: GridTriangles = [];
  const visit = (ax: number, ay: number, bx: number, by: number, cx: number, cy: number): void => {
    const mx = (ax + bx) >> 1, my = (ay + by) >> 1;
    if (Math.abs(ax - cx) + Math.abs(ay - cy) > 1 && errors[my * size + mx] > maxError) {
      visit(cx, cy, ax, ay, mx, my);
      visit(bx, by, cx, cy, mx, my);
    } else if (Math.max(ax, bx, cx) <= lastI && Math.max(ay, by, cy) <= lastJ) {
      out.push(ax, ay, bx, by, cx, cy);
    }
  };
  visit(0, 0, tile, tile, tile, 0); // a, b, c: hypotenuse a-b, right angle at c
  visit(tile, tile, 0, 0, 0, tile);
  return out;
}

/**
 * The largest height difference between the samples on or inside triangle a b c (grid
 * coordinates) and the plane through its corners: what drawing it unsplit would get wrong.
 */
function planeError(h: Float64Array, size: number, ax: number, ay: number, bx: number, by: number, cx: number, cy: number): number {
  const ha = h[ay * size + ax], hb = h[by * size + bx], hc = h[cy * size + cx];
  const d = (by - cy) * (ax - cx) + (cx - bx) * (ay - cy);
  let worst = 0;
  for (let y = Math.min(ay, by, cy); y <= Math.max(ay, by, cy); y++) {
    for (let x = Math.min(ax, bx, cx); x <= Math.max(ax, bx, cx); x++) {
      const wa = ((by - cy) * (x - cx) + (cx - bx) * (y - cy)) / d;
      const wb = ((cy - ay) * (x - cx) + (ax - cx) * (y - cy)) / d;
      const wc = 1 - wa - wb;
      if (wa < -1e-9 || wb < -1e-9 || wc < -1e-9) continue;
      worst = Math.max(worst, Math.abs(wa * ha + wb * hb + wc * hc - h[y * size + x]));
    }
  }
  return worst;
}

/** The drawn terrain from `t` (see the module): one colour per triangle from `color`, faces up. */
export function simplifiedTerrain(t: DrawnHeightfield, maxError: number, waterLevel: number | null,
                                  color: FacetColor): THREE.BufferGeometry {
  const [nx, nz] = t.resolution;
  const triangles = simplifyGrid(t.heights, nx, nz, maxError, waterLevel);
  // each triangle counter-clockwise seen from above (the face points up): the two roots are,
  // and halving keeps the winding
  const positions = new Float32Array(triangles.length * 3 / 2);
  for (let k = 0, v = 0; k < triangles.length; k += 2, v += 3) {
    const i = triangles[k], j = triangles[k + 1];
    positions[v] = t.origin[0] + t.columns[i];
    positions[v + 1] = t.heights[j * nx + i] ?? 0;
    positions[v + 2] = t.origin[1] + t.rows[j];
  }
  const g = new THREE.BufferGeometry();
  g.setAttribute("position", new THREE.BufferAttribute(positions, 3));
  colorFacets(g, color);
  g.computeBoundingSphere();
  return g;
}
