import * as THREE from "three";
import { describe, expect, it } from "vitest";
import { simplifiedTerrain, simplifyGrid } from "../src/render/terrain";

/** Deterministic heights: a few smooth hills plus noise, so some places simplify and some do not. */
function field(nx: number, nz: number, seed = 1, noise = 0.4): number[] {
  let s = seed;
  const random = () => ((s = (s * 16807) % 2147483647) / 2147483647);
  const out: number[] = [];
  for (let j = 0; j < nz; j++) {
    for (let i = 0; i < nx; i++) out.push(3 * Math.sin(i / 5) * Math.cos(j / 7) + (i > nx / 2 ? noise * random() : 0));
  }
  return out;
}

const triangles = (flat: number[]) => {
  const out: [number, number][][] = [];
  for (let k = 0; k < flat.length; k += 6) out.push([[flat[k], flat[k + 1]], [flat[k + 2], flat[k + 3]], [flat[k + 4], flat[k + 5]]]);
  return out;
};

const area = (t: [number, number][]) =>
  Math.abs((t[1][0] - t[0][0]) * (t[2][1] - t[0][1]) - (t[2][0] - t[0][0]) * (t[1][1] - t[0][1])) / 2;

/** The mesh's height at sample (i, j), by the barycentric weights of the triangle holding it. */
function meshHeight(tris: [number, number][][], h: number[], nx: number, i: number, j: number): number | null {
  for (const [a, b, c] of tris) {
    const d = (b[1] - c[1]) * (a[0] - c[0]) + (c[0] - b[0]) * (a[1] - c[1]);
    const wa = ((b[1] - c[1]) * (i - c[0]) + (c[0] - b[0]) * (j - c[1])) / d;
    const wb = ((c[1] - a[1]) * (i - c[0]) + (a[0] - c[0]) * (j - c[1])) / d;
    const wc = 1 - wa - wb;
    if (wa >= -1e-9 && wb >= -1e-9 && wc >= -1e-9) {
      return wa * h[a[1] * nx + a[0]] + wb * h[b[1] * nx + b[0]] + wc * h[c[1] * nx + c[0]];
    }
  }
  return null;
}

/** Lattice points strictly inside segment p–q that are corners of some triangle (a T-junction each). */
function tJunctions(tris: [number, number][][]): string[] {
  const used = new Set(tris.flat().map(([i, j]) => `${i},${j}`));
  const found: string[] = [];
  for (const t of tris) {
    for (let e = 0; e < 3; e++) {
      const p = t[e], q = t[(e + 1) % 3];
      const steps = Math.max(Math.abs(q[0] - p[0]), Math.abs(q[1] - p[1]));
      for (let s = 1; s < steps; s++) {
        const x = p[0] + ((q[0] - p[0]) * s) / steps, y = p[1] + ((q[1] - p[1]) * s) / steps;
        if (Number.isInteger(x) && Number.isInteger(y) && used.has(`${x},${y}`)) found.push(`${x},${y} on ${p}-${q}`);
      }
    }
  }
  return found;
}

describe("simplified terrain (RTIN)", () => {
  it("keeps every cell at zero error on a rough field, and covers the grid exactly", () => {
    const nx = 9, nz = 9;
    const h = field(nx, nz, 3, 1.0).map((y, k) => y + (k % 2) * 0.37); // no two neighbouring cells coplanar
    const tris = triangles(simplifyGrid(h, nx, nz, 0));
    expect(tris.length).toBe(2 * 8 * 8);
    expect(tris.reduce((s, t) => s + area(t), 0)).toBeCloseTo(64, 9);
  });

  it("draws a flat or tilted plane as two triangles", () => {
    const nx = 17, nz = 17;
    expect(simplifyGrid(new Array(nx * nz).fill(2.5), nx, nz, 0).length / 6).toBe(2);
    const tilted = Array.from({ length: nx * nz }, (_, k) => 0.3 * (k % nx) - 0.2 * Math.floor(k / nx));
    expect(simplifyGrid(tilted, nx, nz, 1e-9).length / 6).toBe(2);
  });

  for (const [nx, nz] of [[2, 2], [2, 5], [7, 5], [101, 101], [75, 40]] as const) {
    it(`on a ${nx} x ${nz} grid: inside the grid, covering it, no T-junctions, within the error`, () => {
      const h = field(nx, nz);
      const maxError = 0.15;
      const tris = triangles(simplifyGrid(h, nx, nz, maxError));
      for (const t of tris) for (const [i, j] of t) expect(i >= 0 && i < nx && j >= 0 && j < nz).toBe(true);
      expect(tris.reduce((s, t) => s + area(t), 0)).toBeCloseTo((nx - 1) * (nz - 1), 6);
      expect(tJunctions(tris)).toEqual([]);
      let worst = 0;
      for (let j = 0; j < nz; j++) {
        for (let i = 0; i < nx; i++) {
          const y = meshHeight(tris, h, nx, i, j);
          expect(y).not.toBeNull();
          worst = Math.max(worst, Math.abs(y! - h[j * nx + i]));
        }
      }
      expect(worst).toBeLessThanOrEqual(maxError + 1e-9);
      if (nx > 50) expect(tris.length).toBeLessThan(0.8 * 2 * (nx - 1) * (nz - 1)); // it does simplify
    });
  }

  it("splits every triangle larger than a cell that crosses the water's surface", () => {
    const nx = 33, nz = 33;
    // a bowl: a shore all round at level 0
    const h = Array.from({ length: nx * nz }, (_, k) => 0.01 * ((k % nx) - 16) ** 2 + 0.01 * (Math.floor(k / nx) - 16) ** 2 - 1);
    const tris = triangles(simplifyGrid(h, nx, nz, 0.5, 0));
    let crossing = 0;
    for (const t of tris) {
      const above = t.filter(([i, j]) => h[j * nx + i] > 0).length;
      if (above > 0 && above < 3) {
        crossing++;
        expect(area(t)).toBe(0.5);
      }
    }
    expect(crossing).toBeGreaterThan(0);
    expect(tJunctions(tris)).toEqual([]);
    // without water the same bowl simplifies further
    expect(simplifyGrid(h, nx, nz, 0.5, null).length).toBeLessThan(tris.length * 6);
  });

  it("builds facets on the samples, facing up, coloured by their centre and normal", () => {
    const nx = 21, nz = 11;
    const t = {
      origin: [-10, 5] as [number, number], size: [40, 10] as [number, number], resolution: [nx, nz] as [number, number],
      heights: field(nx, nz, 5), columns: Array.from({ length: nx }, (_, i) => 2 * i), rows: Array.from({ length: nz }, (_, j) => j),
    };
    const seen: number[] = [];
    const g = simplifiedTerrain(t, 0.1, null, (out, _x, y, _z, normal) => {
      seen.push(normal.y);
      out.setRGB(0, y, 0);
    });
    const p = g.getAttribute("position"), c = g.getAttribute("color");
    expect(p.count).toBe(3 * seen.length);
    const a = new THREE.Vector3(), b = new THREE.Vector3(), d = new THREE.Vector3();
    for (let v = 0; v < p.count; v += 3) {
      a.fromBufferAttribute(p, v);
      b.fromBufferAttribute(p, v + 1);
      d.fromBufferAttribute(p, v + 2);
      expect(b.clone().sub(a).cross(d.clone().sub(a)).y).toBeGreaterThan(0);
      expect(c.getY(v)).toBeCloseTo((a.y + b.y + d.y) / 3, 5);
      for (const q of [a, b, d]) {
        const i = Math.round((q.x + 10) / 2), j = Math.round(q.z - 5);
        expect(q.x).toBeCloseTo(-10 + 2 * i, 5);
        expect(q.y).toBeCloseTo(t.heights[j * nx + i], 5);
      }
    }
    expect(Math.min(...seen)).toBeGreaterThan(0);
  });
});
