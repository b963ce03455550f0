/**
 * Static scenery from the scene message's optional `environment`: heightfield
 * terrain, an animated water surface and primitive obstacles. Whatever parts
 * are present get drawn; later phases only need to send more of them.
 *
 * The water follows seed 004, §3: a sum of exp-sine plane waves, slow wide and
 * tall ones first, then faster, narrower and lower ones in random directions,
 * with normals from the analytic gradient (see shaders.ts).
 */
import * as THREE from "three";
import type { Environment, Heightfield, Obstacle, TriangleMesh, Water, Wave } from "../protocol/messages";
import { MAX_WAVES, waterFragment, waterVertex } from "./shaders";

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

export class EnvironmentView {
  readonly group = new THREE.Group();
  private water: THREE.ShaderMaterial | null = null;
  /** Meshes a click can land on (terrain, obstacles, water) for aiming player actions. */
  readonly surfaces: THREE.Object3D[] = [];
  terrain: THREE.Mesh | null = null;

  constructor(private readonly lightUniforms: Record<string, THREE.IUniform>, private readonly sunWorld: THREE.Vector3, private readonly skyTop: THREE.Color) {
    this.group.name = "environment";
  }

  set(environment: Environment | null): void {
    this.clear();
    if (!environment) return;
    if (environment.terrain) this.addTerrain(environment.terrain);
    if (environment.water) this.addWater(environment.water);
    for (const obstacle of environment.obstacles ?? []) this.addObstacle(obstacle);
    for (const mesh of environment.meshes ?? []) this.addMesh(mesh);
  }

  clear(): void {
    this.group.traverse((o) => {
      const mesh = o as THREE.Mesh;
      if (mesh.geometry) mesh.geometry.dispose();
      const material = mesh.material as THREE.Material | undefined;
      if (material && "dispose" in material) material.dispose();
    });
    this.group.clear();
    this.surfaces.length = 0;
    this.water = null;
    this.terrain = null;
  }

  private addTerrain(t: Heightfield): void {
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
        pos.setX(v, t.origin[0] + (i * t.size[0]) / (nx - 1));
        pos.setZ(v, t.origin[1] + (j * t.size[1]) / (nz - 1));
      }
    }
    const flat = geometry.toNonIndexed();
    flat.computeVertexNormals();
    const base = new THREE.Color(t.color ?? "#5b6b45");
    const rock = new THREE.Color("#7b7468");
    const snow = new THREE.Color("#e8ecef");
    const p = flat.getAttribute("position");
    const n = flat.getAttribute("normal");
    const colors = new Float32Array(p.count * 3);
    const c = new THREE.Color();
    for (let v = 0; v < p.count; v++) {
      const height = (p.getY(v) - lo) / Math.max(hi - lo, 1e-6);
      const steep = 1 - n.getY(v);
      c.copy(base).lerp(rock, Math.min(1, steep * 2.5));
      if (height > 0.85) c.lerp(snow, (height - 0.85) / 0.15);
      colors[3 * v] = c.r; colors[3 * v + 1] = c.g; colors[3 * v + 2] = c.b;
    }
    flat.setAttribute("color", new THREE.BufferAttribute(colors, 3));
    const mesh = new THREE.Mesh(flat, new THREE.MeshLambertMaterial({ vertexColors: true, flatShading: true }));
    mesh.name = "terrain";
    this.group.add(mesh);
    this.surfaces.push(mesh);
    this.terrain = mesh;
  }

  private addWater(w: Water): void {
    const sx = w.bounds_max[0] - w.bounds_min[0];
    const sz = w.bounds_max[1] - w.bounds_min[1];
    const segments = Math.min(256, Math.max(32, Math.round(Math.max(sx, sz) / 1.5)));
    const geometry = new THREE.PlaneGeometry(sx, sz, segments, segments).rotateX(-Math.PI / 2);
    const waves = (w.waves && w.waves.length ? w.waves : defaultWaves(Math.max(sx, sz))).slice(0, MAX_WAVES);
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
        uDeep: { value: deep.clone().multiplyScalar(0.55) },
        uShallow: { value: deep.clone().lerp(new THREE.Color("#7fd0c8"), 0.35) },
        uSunWorld: { value: this.sunWorld },
        uSkyTop: { value: this.skyTop },
        uOpacity: { value: 0.72 },
      },
      transparent: true,
      side: THREE.DoubleSide,
      depthWrite: false,
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

  private addObstacle(o: Obstacle): void {
    let geometry: THREE.BufferGeometry;
    if (o.shape === "box") {
      const [x, y, z] = o.size ?? [1, 1, 1];
      geometry = new THREE.BoxGeometry(x, y, z);
    } else if (o.shape === "sphere") {
      geometry = new THREE.IcosahedronGeometry(o.radius ?? 1, 2);
    } else {
      geometry = new THREE.CylinderGeometry(o.radius ?? 1, o.radius ?? 1, o.height ?? 1, 18);
    }
    const mesh = new THREE.Mesh(geometry, new THREE.MeshLambertMaterial({ color: new THREE.Color(o.color ?? "#8a8f98"), flatShading: true }));
    mesh.position.set(...o.center);
    const r = o.rotation_deg ?? [0, 0, 0];
    mesh.rotation.set(THREE.MathUtils.degToRad(r[0]), THREE.MathUtils.degToRad(r[1]), THREE.MathUtils.degToRad(r[2]));
    mesh.name = `obstacle:${o.shape}`;
    this.group.add(mesh);
    this.surfaces.push(mesh);
  }

  private addMesh(m: TriangleMesh): void {
    const geometry = new THREE.BufferGeometry();
    geometry.setAttribute("position", new THREE.Float32BufferAttribute(m.positions, 3));
    geometry.computeVertexNormals();
    const material = new THREE.MeshLambertMaterial({ color: new THREE.Color(m.color ?? "#8a8f98"), flatShading: true, side: THREE.DoubleSide });
    const mesh = new THREE.Mesh(geometry, material);
    mesh.name = "mesh";
    this.group.add(mesh);
    this.surfaces.push(mesh);
  }

  update(time: number): void {
    if (this.water) this.water.uniforms.uTime.value = time;
  }
}
