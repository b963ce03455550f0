/**
 * Static scenery from the scene message's optional `environment`: heightfield
 * terrain, an animated water surface and primitive obstacles. Whatever parts
 * are present get drawn; later phases only need to send more of them.
 *
 * The water follows seed 004, §3: a sum of exp-sine plane waves, slow wide and
 * tall ones first, then faster, narrower and lower ones in random directions,
 * with normals from the analytic gradient (see shaders.ts). It is translucent:
 * what is under it (the pond's bottom, fish) shows through, tinted by depth.
 *
 * Colours: a `color` in the scene always wins. Without one the terrain is shaded
 * per facet from its height and slope (grass low, rock on steep slopes, light
 * stone toward the highest ground, sand at the waterline, mud under water), and
 * obstacles are coloured by what they look like (`classifyObstacles`): a vertical
 * cylinder with a sphere on top is a tree (brown trunk, green canopy), small boxes
 * and spheres are rocks (grey-brown), anything else is stone grey.
 */
import * as THREE from "three";
import type { Environment, Heightfield, Obstacle, TriangleMesh, Water, Wave } from "../protocol/messages";
import { MAX_WAVES, waterFragment, waterVertex } from "./shaders";
import { colorFacets, type FacetColor } from "./facets";
import { type DrawnHeightfield, simplifiedTerrain } from "./terrain";
import { bakedMaterial, bakeLambert } from "./world";

/** Deterministic pseudo-random numbers so the same water looks the same on every load. */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The seed's recipe for wave parameters: start long, tall and slow, then shrink
 * wavelength and amplitude geometrically; the speed comes from deep-water
 * dispersion (omega = sqrt(g k)) so short ripples move slower than swells.
 */
export function defaultWaves(extent: number, count = MAX_WAVES, seed = 7): Wave[] {
  const random = mulberry32(seed);
  const waves: Wave[] = [];
  let wavelength = Math.min(Math.max(extent / 6, 3), 60);
  let amplitude = wavelength * 0.01;
  for (let i = 0; i < count; i++) {
    const angle = random() * Math.PI * 2;
    const k = (2 * Math.PI) / wavelength;
    waves.push({ amplitude, wavelength, speed: Math.sqrt(9.81 * k) / k, direction: [Math.cos(angle), Math.sin(angle)] });
    wavelength *= 0.8;
    amplitude *= 0.78;
  }
  return waves;
}

/** Waves the water sums on a software rasteriser: the largest, which carry most of the swell. */
export const WATER_LITE_WAVES = 4;
/** Grid vertices per wavelength of the shortest wave a software rasteriser's water sums: it
 * shades the water at its vertices, so the grid must sample every wave it draws. */
export const WATER_LITE_SAMPLES_PER_WAVE = 2.4;

/** The `WATER_LITE_WAVES` waves of largest amplitude, largest first. */
export function liteWaves(waves: Wave[]): Wave[] {
  return [...waves].sort((a, b) => b.amplitude - a.amplitude).slice(0, WATER_LITE_WAVES);
}

/**
 * Segments per side of the water's grid for a surface `extent` metres across. On a GPU, a vertex
 * every 1.5 m. On a software rasteriser the water's cost is its triangles (at the meadow's half
 * scale about 1.5 µs each, more than its pixels), so the grid is as coarse as the waves it draws
 * allow: `WATER_LITE_SAMPLES_PER_WAVE` vertices per wavelength of the shortest.
 */
export function waterSegments(extent: number, waves: Wave[], lite: boolean): number {
  if (!lite) return Math.min(256, Math.max(32, Math.round(extent / 1.5)));
  const shortest = waves.length ? Math.min(...waves.map((w) => w.wavelength)) : Infinity;
  const spacing = Math.max(1.5, shortest / WATER_LITE_SAMPLES_PER_WAVE);
  return Math.min(96, Math.max(8, Math.ceil(extent / spacing - 1e-9)));
}

/** What an obstacle looks like, for colouring it when the scene gives no colour. */
export type ObstacleRole = "trunk" | "canopy" | "rock" | "stone";

const isUpright = (o: Obstacle) => {
  const r = o.rotation_deg ?? [0, 0, 0];
  return Math.abs(r[0]) < 1 && Math.abs(r[2]) < 1;
};

/**
 * Recognise trees among primitive obstacles: a sphere whose centre sits near the top
 * of an upright cylinder's axis is a canopy, that cylinder its trunk (what
 * `scatter_trees` builds). Remaining boxes and spheres up to 6 m across are rocks;
 * everything else (walls, pillars, big blocks) is plain stone.
 */
export function classifyObstacles(obstacles: Obstacle[]): ObstacleRole[] {
  const roles: ObstacleRole[] = obstacles.map((o) => {
    if (o.shape === "cylinder") return "stone";
    const size = o.shape === "box" ? Math.max(...(o.size ?? [1, 1, 1])) : 2 * (o.radius ?? 1);
    return size <= 6 ? "rock" : "stone";
  });
  const trunks = obstacles
    .map((o, i) => ({ o, i }))
    .filter(({ o }) => o.shape === "cylinder" && isUpright(o));
  if (!trunks.length) return roles;
  obstacles.forEach((sphere, j) => {
    if (sphere.shape !== "sphere") return;
    const r = sphere.radius ?? 1;
    for (const { o, i } of trunks) {
      const top = o.center[1] + (o.height ?? 1) / 2;
      const across = Math.hypot(sphere.center[0] - o.center[0], sphere.center[2] - o.center[2]);
      if (across <= Math.max(o.radius ?? 1, 0.25 * r) && Math.abs(sphere.center[1] - top) <= 0.5 * r + 0.5) {
        roles[j] = "canopy";
        roles[i] = "trunk";
        break;
      }
    }
  });
  return roles;
}

/** A small deterministic hash of a number pair in [0, 1). */
function hash2(x: number, z: number): number {
  const h = Math.sin(x * 12.9898 + z * 78.233) * 43758.5453;
  return h - Math.floor(h);
}

const PALETTE = {
  trunk: ["#6b4a2f", "#5c3f28", "#74523a"],
  canopy: ["#3f7a34", "#4a8a3b", "#356b2d", "#55913f"],
  rock: ["#8b8378", "#7d7468", "#958c7f", "#857a6b"],
  stone: ["#9a9a94"],
} as const;

/** The colour of obstacle number `i` in `role` (varied a little from one obstacle to the next). */
export function obstacleColor(role: ObstacleRole, i: number): string {
  const choices = PALETTE[role];
  return choices[Math.floor(hash2(i, role.length) * choices.length) % choices.length];
}

const GRASS_LOW = new THREE.Color("#4b7a34");
const GRASS_HIGH = new THREE.Color("#789a48");
const ROCK = new THREE.Color("#857d70");
const RIM = new THREE.Color("#cfc8b6");
const SAND = new THREE.Color("#b9a678");
const MUD = new THREE.Color("#5f6a4c");

const smooth = (a: number, b: number, x: number) => {
  const t = Math.min(Math.max((x - a) / (b - a), 0), 1);
  return t * t * (3 - 2 * t);
};

/** A water surface as the colouring needs it: level, x–z rectangle and colour. */
export interface WaterShape {
  level: number;
  min: [number, number];
  max: [number, number];
  color: THREE.Color;
}

/** How much of the water's colour a point `depth` metres under the surface takes (as in the shaders). */
export function underwaterMix(depth: number): number {
  return depth > 0 ? Math.min(Math.max(0.08 + 0.018 * depth, 0), 0.32) : 0;
}

/**
 * The colour of a terrain facet with centre height `y`, unit normal's y `ny` and
 * centre (x, z); `lo`/`hi` are the lowest and highest land heights (land: above the water).
 */
export function terrainColor(out: THREE.Color, x: number, y: number, z: number, ny: number, lo: number, hi: number, water: WaterShape | null): THREE.Color {
  const h = (y - lo) / Math.max(hi - lo, 1e-6);
  const steep = 1 - ny;
  const jitter = 0.93 + 0.14 * hash2(Math.round(x * 2), Math.round(z * 2));
  out.copy(GRASS_LOW).lerp(GRASS_HIGH, smooth(0.15, 0.6, h) * 0.7).multiplyScalar(jitter);
  out.lerp(ROCK, smooth(0.1, 0.38, steep));
  out.lerp(RIM, 0.85 * smooth(0.6, 1.0, h));
  if (water && x >= water.min[0] && x <= water.max[0] && z >= water.min[1] && z <= water.max[1]) {
    const depth = water.level - y;
    if (depth > -0.6) {
      // The waterline is sand; deeper down the bottom turns to mud, and the water tints it.
      const bottom = SAND.clone().lerp(MUD, smooth(0.5, 6, depth)).multiplyScalar(jitter);
      out.lerp(bottom, depth > 0 ? 1 : smooth(-0.6, 0, depth));
      if (depth > 0) out.lerp(water.color, underwaterMix(depth));
    }
  }
  return out;
}

/** Samples per side of the terrain drawn on a software rasteriser (the meadow's 201 → 101). */
export const TERRAIN_LITE_SAMPLES = 101;

/** Largest height error (m) of the simplified terrain a software rasteriser draws (see ./terrain.ts). */
export const TERRAIN_LITE_ERROR = 0.15;

/**
 * Keep every `stride`-th sample of a heightfield (and always its last row and column, so
 * the drawn terrain still spans the whole rectangle), with the stride chosen so that no
 * side has more than `maxSamples` samples. Heights are kept, not averaged, so every kept
 * vertex sits exactly on the simulation's ground.
 */
export function coarsenHeightfield(t: Heightfield, maxSamples: number): DrawnHeightfield {
  const [nx, nz] = t.resolution;
  const stride = Math.max(1, Math.ceil((Math.max(nx, nz) - 1) / Math.max(maxSamples - 1, 1)));
  const kept = (n: number) => {
    const out: number[] = [];
    for (let i = 0; i < n - 1; i += stride) out.push(i);
    out.push(n - 1);
    return out;
  };
  const xs = kept(nx), zs = kept(nz);
  const heights: number[] = [];
  for (const j of zs) for (const i of xs) heights.push(t.heights[j * nx + i] ?? 0);
  const offset = (n: number, size: number) => (i: number) => (i * size) / Math.max(n - 1, 1);
  return { ...t, resolution: [xs.length, zs.length], heights, columns: xs.map(offset(nx, t.size[0])), rows: zs.map(offset(nz, t.size[1])) };
}

export class EnvironmentView {
  readonly group = new THREE.Group();
  private water: THREE.ShaderMaterial | null = null;
  /** Meshes a click can land on (terrain, obstacles, water) for aiming player actions. */
  readonly surfaces: THREE.Object3D[] = [];
  /** The terrain's full mesh: what clicks aim at (on a software rasteriser, never drawn itself). */
  terrain: THREE.Mesh | null = null;
  /** The terrain as drawn: `terrain` itself, or its simplification on a software rasteriser. */
  drawnTerrain: THREE.Mesh | null = null;

  /**
   * `lite` (software rasterisers): the water sums only its largest waves (`liteWaves`), on a grid
   * only as fine as they need (`waterSegments`); the terrain is simplified where it is flat and
   * the obstacles drawn in one batch, their light baked into their facets.
   */
  constructor(
    private readonly lightUniforms: Record<string, THREE.IUniform>, private readonly sunWorld: THREE.Vector3,
    private readonly skyTop: THREE.Color, private readonly lite = false,
  ) {
    this.group.name = "environment";
  }

  set(environment: Environment | null): void {
    this.clear();
    const w = environment?.water;
    this.waterShape = w
      ? { level: w.level, min: w.bounds_min, max: w.bounds_max, color: new THREE.Color(w.color ?? "#1d5d7a").lerp(new THREE.Color("#2f8f8a"), 0.4) }
      : null;
    const u = this.lightUniforms;
    if (u.uWaterOn) {
      u.uWaterOn.value = this.waterShape ? 1 : 0;
      u.uWaterLevel.value = this.waterShape?.level ?? 0;
      if (this.waterShape) {
        (u.uWaterColor.value as THREE.Color).copy(this.waterShape.color);
        (u.uWaterRect.value as THREE.Vector4).set(w!.bounds_min[0], w!.bounds_min[1], w!.bounds_max[0], w!.bounds_max[1]);
      }
    }
    if (!environment) return;
    if (environment.terrain) this.addTerrain(environment.terrain);
    if (environment.water) this.addWater(environment.water);
    const obstacles = environment.obstacles ?? [];
    const roles = classifyObstacles(obstacles);
    obstacles.forEach((obstacle, i) => this.addObstacle(obstacle, roles[i], i));
    this.addObstacleBatch();
    for (const mesh of environment.meshes ?? []) this.addMesh(mesh);
  }

  /** The scene's water as the colouring sees it (null without water). */
  waterShape: WaterShape | null = null;
  private materials = new Map<string, THREE.MeshLambertMaterial>();

  private material(color: THREE.Color): THREE.MeshLambertMaterial {
    const key = color.getHexString();
    let m = this.materials.get(key);
    if (!m) {
      m = new THREE.MeshLambertMaterial({ color, flatShading: true });
      this.materials.set(key, m);
    }
    return m;
  }

  clear(): void {
    this.group.traverse((o) => {
      const mesh = o as THREE.Mesh;
      if (mesh.geometry) mesh.geometry.dispose();
      const material = mesh.material as THREE.Material | undefined;
      if (material && "dispose" in material) material.dispose();
    });
    this.group.clear();
    this.materials.clear();
    this.surfaces.length = 0;
    this.water = null;
    this.terrain = null;
    this.drawnTerrain = null;
    this.heightfield = null;
  }

  /** The terrain's height at (x, z), bilinear between grid samples (null off the terrain or without one). */
  heightAt(x: number, z: number): number | null {
    const t = this.heightfield;
    if (!t) return null;
    const [nx, nz] = t.resolution;
    const fx = ((x - t.origin[0]) / t.size[0]) * (nx - 1);
    const fz = ((z - t.origin[1]) / t.size[1]) * (nz - 1);
    if (!(fx >= 0 && fz >= 0 && fx <= nx - 1 && fz <= nz - 1)) return null;
    const i = Math.min(Math.floor(fx), nx - 2), j = Math.min(Math.floor(fz), nz - 2);
    const u = fx - i, v = fz - j;
    const h = (a: number, b: number) => t.heights[b * nx + a] ?? 0;
    return (1 - v) * ((1 - u) * h(i, j) + u * h(i + 1, j)) + v * ((1 - u) * h(i, j + 1) + u * h(i + 1, j + 1));
  }

  private heightfield: Heightfield | null = null;

  private addTerrain(full: Heightfield): void {
    this.heightfield = full.resolution[0] >= 2 && full.resolution[1] >= 2 ? full : null;
    // Clicks and heights still use every sample; only the drawn mesh is coarser.
    const t = coarsenHeightfield(full, this.lite ? TERRAIN_LITE_SAMPLES : Infinity);
    const [nx, nz] = t.resolution;
    const geometry = new THREE.PlaneGeometry(t.size[0], t.size[1], nx - 1, nz - 1).rotateX(-Math.PI / 2);
    const pos = geometry.getAttribute("position") as THREE.BufferAttribute;
    let lo = Infinity, hi = -Infinity;
    for (const h of t.heights) { lo = Math.min(lo, h); hi = Math.max(hi, h); }
    // PlaneGeometry's rows run from -z to +z after the rotation; columns from -x to +x.
    for (let j = 0; j < nz; j++) {
      for (let i = 0; i < nx; i++) {
        const v = j * nx + i;
        pos.setY(v, t.heights[v] ?? 0);
        pos.setX(v, t.origin[0] + t.columns[i]);
        pos.setZ(v, t.origin[1] + t.rows[j]);
      }
    }
    const flat = geometry.toNonIndexed();
    const water = this.waterShape;
    // Heights are measured over the land: from the water surface (when there is one) to the top.
    const landLo = water ? Math.max(lo, Math.min(water.level, hi)) : lo;
    const explicit = t.color ? new THREE.Color(t.color) : null;
    const facetColor: FacetColor = (out, x, y, z, normal) => {
      if (explicit) out.copy(explicit);
      else terrainColor(out, x, y, z, normal.y, landLo, hi, water);
      // Lite: the facet's light is baked into its colour and the terrain drawn unlit (the
      // facets are flat, so nothing is lost): most of the screen is terrain. Its colours are
      // given in sRGB, so no pixel is converted (bakedMaterial).
      if (this.lite) bakeLambert(out, out, normal).convertLinearToSRGB();
    };
    let material: THREE.Material;
    let drawn: THREE.Mesh | null = null;
    if (this.lite) {
      // Drawn simplified (./terrain.ts); the full mesh is kept, never drawn, for aiming clicks at.
      drawn = new THREE.Mesh(simplifiedTerrain(t, TERRAIN_LITE_ERROR, water ? water.level : null, facetColor), bakedMaterial());
      drawn.name = "terrain-drawn";
      this.group.add(drawn);
      material = new THREE.MeshBasicMaterial({ visible: false });
    } else {
      // one colour per triangle (from its centre and normal) keeps the low-poly facets crisp
      colorFacets(flat, facetColor);
      flat.computeVertexNormals();
      material = new THREE.MeshLambertMaterial({ vertexColors: true, flatShading: true });
    }
    const mesh = new THREE.Mesh(flat, material);
    mesh.name = "terrain";
    this.group.add(mesh);
    this.surfaces.push(mesh);
    this.terrain = mesh;
    this.drawnTerrain = drawn ?? mesh;
  }

  private addWater(w: Water): void {
    const sx = w.bounds_max[0] - w.bounds_min[0];
    const sz = w.bounds_max[1] - w.bounds_min[1];
    const all = w.waves && w.waves.length ? w.waves : defaultWaves(Math.max(sx, sz));
    const waves = this.lite ? liteWaves(all) : all.slice(0, MAX_WAVES);
    const segments = waterSegments(Math.max(sx, sz), waves, this.lite);
    const geometry = new THREE.PlaneGeometry(sx, sz, segments, segments).rotateX(-Math.PI / 2);
    const dirs = Array.from({ length: MAX_WAVES }, () => new THREE.Vector2());
    const params = Array.from({ length: MAX_WAVES }, () => new THREE.Vector3());
    waves.forEach((wave, i) => {
      const k = (2 * Math.PI) / Math.max(wave.wavelength, 1e-3);
      dirs[i].set(wave.direction[0], wave.direction[1]).normalize();
      params[i].set(wave.amplitude, k, k * wave.speed);
    });
    const deep = new THREE.Color(w.color ?? "#1d5d7a");
    this.water = new THREE.ShaderMaterial({
      vertexShader: waterVertex,
      fragmentShader: waterFragment,
      uniforms: {
        ...this.lightUniforms,
        uTime: { value: 0 },
        uLevel: { value: w.level },
        uWaveCount: { value: waves.length },
        uWaveDir: { value: dirs },
        uWave: { value: params },
        uLateral: { value: 0.35 },
        uDeep: { value: deep.clone().multiplyScalar(0.8) },
        uShallow: { value: deep.clone().lerp(new THREE.Color("#7fd0c8"), 0.45) },
        uSunWorld: { value: this.sunWorld },
        uSkyTop: { value: this.skyTop },
        // Seen from above at a steep angle the surface lets most light through (fresnel adds the rest).
        uOpacity: { value: 0.24 },
      },
      transparent: true,
      side: THREE.DoubleSide,
      depthWrite: false,
      // Lite: the waves' slope is summed per vertex, not per pixel (see waterFragment).
      defines: this.lite ? { WATER_PER_VERTEX: 1 } : {},
    });
    const mesh = new THREE.Mesh(geometry, this.water);
    mesh.position.set((w.bounds_min[0] + w.bounds_max[0]) / 2, 0, (w.bounds_min[1] + w.bounds_max[1]) / 2);
    mesh.frustumCulled = false;
    mesh.renderOrder = 2;
    mesh.name = "water";
    this.group.add(mesh);
    // Aim at the still surface: close enough for clicks, and cheap.
    const aim = new THREE.Mesh(new THREE.PlaneGeometry(sx, sz).rotateX(-Math.PI / 2), new THREE.MeshBasicMaterial({ visible: false }));
    aim.position.set(mesh.position.x, w.level, mesh.position.z);
    this.group.add(aim);
    this.surfaces.push(aim);
  }

  private addObstacle(o: Obstacle, role: ObstacleRole, i: number): void {
    let geometry: THREE.BufferGeometry;
    if (o.shape === "box") {
      const [x, y, z] = o.size ?? [1, 1, 1];
      geometry = new THREE.BoxGeometry(x, y, z);
    } else if (o.shape === "sphere") {
      // Canopies get a few more facets than rocks: foliage reads better a little rounder.
      geometry = new THREE.IcosahedronGeometry(o.radius ?? 1, role === "canopy" ? 1 : 2);
    } else {
      geometry = new THREE.CylinderGeometry(role === "trunk" ? 0.75 * (o.radius ?? 1) : (o.radius ?? 1), o.radius ?? 1, o.height ?? 1, role === "trunk" ? 7 : 18);
    }
    const color = new THREE.Color(o.color ?? obstacleColor(role, i));
    if (!o.color && this.waterShape) {
      const w = this.waterShape;
      const [x, y, z] = o.center;
      if (x >= w.min[0] && x <= w.max[0] && z >= w.min[1] && z <= w.max[1]) color.lerp(w.color, underwaterMix(w.level - y));
    }
    // Lite: drawn in one batch with the others (addObstacleBatch); this mesh stays, never drawn, for clicks.
    const mesh = new THREE.Mesh(geometry, this.lite ? new THREE.MeshBasicMaterial({ visible: false }) : this.material(color));
    mesh.position.set(...o.center);
    const r = o.rotation_deg ?? [0, 0, 0];
    mesh.rotation.set(THREE.MathUtils.degToRad(r[0]), THREE.MathUtils.degToRad(r[1]), THREE.MathUtils.degToRad(r[2]));
    mesh.name = `obstacle:${o.shape}:${role}`;
    this.group.add(mesh);
    this.surfaces.push(mesh);
    if (this.lite) {
      mesh.updateMatrix();
      this.batch.push({ geometry: geometry.clone().applyMatrix4(mesh.matrix), color });
    }
  }

  private batch: { geometry: THREE.BufferGeometry; color: THREE.Color }[] = [];

  /**
   * Lite: every obstacle in one draw of plain triangles, each facet's Lambert light baked into
   * its colour (in sRGB) as the terrain's is. A software rasteriser sets up every draw on its own (the
   * meadow has 136 obstacles), and the facets are flat, so the picture is the same.
   */
  private addObstacleBatch(): void {
    const parts = this.batch;
    this.batch = [];
    if (!parts.length) return;
    const flats = parts.map((p) => (p.geometry.index ? p.geometry.toNonIndexed() : p.geometry));
    const total = flats.reduce((sum, g) => sum + g.getAttribute("position").count, 0);
    const positions = new Float32Array(3 * total);
    const albedo: THREE.Color[] = []; // per facet
    let at = 0;
    flats.forEach((g, k) => {
      const p = g.getAttribute("position");
      positions.set(p.array as Float32Array, at);
      at += p.array.length;
      for (let f = 0; f < p.count / 3; f++) albedo.push(parts[k].color);
    });
    const geometry = new THREE.BufferGeometry();
    geometry.setAttribute("position", new THREE.BufferAttribute(positions, 3));
    colorFacets(geometry, (out, _x, _y, _z, normal, facet) => bakeLambert(out, albedo[facet], normal).convertLinearToSRGB());
    const mesh = new THREE.Mesh(geometry, bakedMaterial());
    mesh.name = "obstacles-drawn";
    this.group.add(mesh);
  }

  private addMesh(m: TriangleMesh): void {
    const geometry = new THREE.BufferGeometry();
    geometry.setAttribute("position", new THREE.Float32BufferAttribute(m.positions, 3));
    geometry.computeVertexNormals();
    const material = new THREE.MeshLambertMaterial({ color: new THREE.Color(m.color ?? PALETTE.stone[0]), flatShading: true, side: THREE.DoubleSide });
    const mesh = new THREE.Mesh(geometry, material);
    mesh.name = "mesh";
    this.group.add(mesh);
    this.surfaces.push(mesh);
  }

  update(time: number): void {
    if (this.water) this.water.uniforms.uTime.value = time;
  }
}
