/**
 * One instanced draw call per species, fed straight from the binary frames.
 *
 * `update` dequantises a frame's species block into the instance attribute
 * arrays in a single pass (position, quaternion, speed, highlight, phase) and,
 * for swimmers, measures each animal's path curvature from the change of its
 * heading since the previous frame (kept per uid, because the simulation may
 * reorder animals between steps). Only the used part of each attribute is
 * re-uploaded. On a software rasteriser (`merged`) the same numbers go to a
 * texture instead, read by one plain indexed draw of every animal's copy of the
 * model, whose corners are shaded once however many facets share them.
 */
import * as THREE from "three";
import { SPEED_UNIT, unpackQuaternion, type SpeciesBlock } from "../protocol/frame";
import type { SpeciesInfo } from "../protocol/messages";
import { animalFragment, animalVertex, MAX_INFLATION } from "./shaders";
import { buildModel, Motion, type AnimalModel } from "./models";
import { farDistance, FarPoints } from "./far";

/** Above this many animals a species switches to its lite model (below LITE_OFF it switches back). */
export const LITE_ON = 20000;
const LITE_OFF = 15000;
/** Uids up to this bound are looked up in flat arrays; larger ones are too sparse to index. */
const MAX_INDEXED_UID = 1 << 24;

export const Highlight = { None: 0, Neighbor: 1, Selected: 2 } as const;

export interface LayerOptions {
  /**
   * Draw the animals dead: no limb or body motion, rolled onto their side (a quarter
   * turn about the body's long axis) and lifted so that the body rests on the point
   * streamed for them instead of sinking into it. Used for carcasses.
   */
  lying?: boolean;
  /**
   * Always draw the lite model (a handful of triangles per animal). Set on software
   * rasterisers, where every triangle of every animal costs the CPU that steps the
   * simulation: the full bird is 110 triangles, its lite dart 4.
   */
  alwaysLite?: boolean;
  /**
   * Draw the species as one plain batch of every animal's copy of the model, each vertex
   * fetching its animal's numbers from a texture, instead of one instanced draw. Set on
   * software rasterisers: SwiftShader pays about 20 µs per instance of an instanced draw
   * whatever its size, 30 ms a frame for the meadow's 1,571 animals.
   */
  merged?: boolean;
}

/** Animals per texture row in merged mode (three texels each; the shader's MERGED_ROW). */
export const MERGED_ROW = 1024;

const ROLL = Math.SQRT1_2; // sin and cos of 45°: the quaternion of a quarter turn about +Z

export class SpeciesLayer {
  readonly mesh: THREE.Mesh;
  geometry = new THREE.InstancedBufferGeometry();
  readonly material: THREE.ShaderMaterial;
  model: AnimalModel;
  lite = false;
  count = 0;
  capacity = 0;
  positions = new Float32Array(0);
  quaternions = new Float32Array(0);
  uids = new Uint32Array(0);
  private anim = new Float32Array(0);
  private phase = new Float32Array(0);
  private attrs: Record<string, THREE.InstancedBufferAttribute> = {};
  private uidIndex = new Int32Array(0);
  private highlights = new Map<number, number>();
  // Swimmer history, indexed by uid: last forward, last position, smoothed curvature, seen flag.
  private histFwd = new Float32Array(0);
  private histPos = new Float32Array(0);
  private histCurv = new Float32Array(0);
  private histSeen = new Uint8Array(0);

  readonly lying: boolean;
  private readonly alwaysLite: boolean;
  readonly merged: boolean;
  // merged mode: every animal's numbers, 12 floats each (position, phase; quaternion; animation)
  private packed = new Float32Array(0);
  private instances: THREE.DataTexture | null = null;

  constructor(readonly info: SpeciesInfo, lightUniforms: Record<string, THREE.IUniform>, options: LayerOptions = {}) {
    this.lying = !!options.lying;
    this.alwaysLite = !!options.alwaysLite;
    this.merged = !!options.merged;
    // (typed as the instanced geometry it replaces: merged mode never reads instanceCount)
    if (this.merged) this.geometry = new THREE.BufferGeometry() as THREE.InstancedBufferGeometry;
    this.lite = this.alwaysLite;
    this.model = buildModel(info.model, this.lite);
    this.material = new THREE.ShaderMaterial({
      vertexShader: animalVertex,
      fragmentShader: animalFragment,
      uniforms: {
        ...lightUniforms,
        uColor: { value: new THREE.Color(info.color) },
        uScale: { value: Math.max(info.scale, 1e-3) },
        uTime: { value: 0 },
        uHeadZ: { value: this.model.headZ },
        uLength: { value: this.model.length },
        uThickness: { value: this.model.thickness ?? 0.2 },
        uPattern: { value: info.model === "zebra" ? 1 : 0 },
      },
      defines: { MOTION: this.lying ? Motion.Rigid : this.model.motion },
    });
    if (this.merged) {
      this.material.uniforms.uInstances = { value: null };
      Object.assign(this.material.defines, { MERGED: 1, MERGED_ROW, VERTS: this.verts });
    }
    this.setBaseGeometry(this.model);
    this.mesh = new THREE.Mesh(this.geometry, this.material);
    this.mesh.frustumCulled = false;
    this.mesh.name = `species:${info.name}`;
    if (this.merged) {
      this.mesh.onBeforeRender = (_renderer, _scene, camera) => this.cull(camera);
      if (this.model.motion === Motion.Flyer) { // a far fish keeps its shape: the reef and lagoon are about them
        this.far = new FarPoints(this.material, this.model.centerY);
        this.mesh.add(this.far.points);
      }
    }
    this.grow(64);
  }

  // merged mode: the view of the last draw, which `pack` keeps the animals of (null before any draw: all),
  // and the eye it was seen from (animals far from it are drawn as points)
  private view: THREE.Frustum | null = null;
  private readonly eye = new THREE.Vector3();
  /** Merged mode: the far animals' points (see ./far). */
  far: FarPoints | null = null;
  private farRows = new Int32Array(0);
  private readonly viewProjection = new THREE.Matrix4();
  private readonly nextViewProjection = new THREE.Matrix4();
  private readonly sphere = new THREE.Sphere();

  /**
   * Merged mode, just before each draw: pack only the animals `camera` can see. A software
   * rasteriser shades and clips every vertex of an animal off screen as it does one on it (in the
   * meadow's framed view, four sheep in five are behind the camera or beside the view). An
   * animal is kept when a sphere around it that holds its model at the largest inflation,
   * its limbs swung and its body bent, meets the camera's frustum. A new frame or new
   * highlights pack at once for the last view, so the texture is packed again here only when
   * the view has changed since.
   */
  cull(camera: THREE.Camera): void {
    this.nextViewProjection.multiplyMatrices(camera.projectionMatrix, camera.matrixWorldInverse);
    if (this.view && this.nextViewProjection.equals(this.viewProjection)) return;
    this.viewProjection.copy(this.nextViewProjection);
    this.view = (this.view ?? new THREE.Frustum()).setFromProjectionMatrix(this.viewProjection);
    this.eye.setFromMatrixPosition(camera.matrixWorld);
    this.pack();
  }

  /** Radius (m) of the sphere about an animal's position that holds all it draws (see `cull`). */
  get reach(): number {
    const geometry = this.model.geometry;
    if (!geometry.boundingSphere) geometry.computeBoundingSphere();
    const bounds = geometry.boundingSphere!;
    return 1.25 * (bounds.center.length() + bounds.radius) * Math.max(this.info.scale, 1e-3) * MAX_INFLATION;
  }

  get swims(): boolean {
    return !this.lying && (this.model.motion === Motion.Swimmer || this.model.motion === Motion.Shark);
  }

  private setBaseGeometry(model: AnimalModel): void {
    this.model = model;
    if (this.merged) {
      this.tileModel();
      if (this.material && this.material.defines.VERTS !== this.verts) {
        this.material.defines.VERTS = this.verts;
        this.material.needsUpdate = true;
      }
    } else {
      for (const name of ["position", "aRig", "aColor"]) {
        this.geometry.setAttribute(name, model.geometry.getAttribute(name));
      }
    }
    if (this.material) this.material.uniforms.uThickness.value = model.thickness ?? 0.2;
    this.far?.setCenterY(model.centerY);
    const side = model.doubleSided ? THREE.DoubleSide : THREE.FrontSide;
    if (this.material && this.material.side !== side) {
      this.material.side = side;
      this.material.needsUpdate = true;
    }
  }

  /** Vertices of one animal's model (merged mode: its distinct vertices, each drawn once per animal). */
  get verts(): number {
    return this.merged ? this.shared().count : this.model.geometry.getAttribute("position").count;
  }

  private sharedModel: { model: AnimalModel; shared: SharedVertices } | null = null;

  private shared(): SharedVertices {
    if (this.sharedModel?.model !== this.model) this.sharedModel = { model: this.model, shared: shareVertices(this.model.geometry) };
    return this.sharedModel.shared;
  }

  /** Merged mode: the model's vertices once per animal the buffers hold (see `merged`). */
  private tileModel(): void {
    const geometry = this.geometry;
    const shared = this.shared();
    const copies = Math.max(this.capacity, 1);
    for (const name of ["position", "aRig", "aColor"]) {
      const src = shared.attributes[name];
      const size = src.length / shared.count;
      const tiled = new Float32Array(src.length * copies);
      for (let i = 0; i < copies; i++) tiled.set(src, i * src.length);
      geometry.setAttribute(name, new THREE.BufferAttribute(tiled, size));
    }
    const per = shared.index.length;
    const index = new Uint32Array(per * copies);
    for (let i = 0; i < copies; i++) {
      const o = i * shared.count;
      for (let j = 0; j < per; j++) index[i * per + j] = shared.index[j] + o;
    }
    geometry.setIndex(new THREE.BufferAttribute(index, 1));
    geometry.setDrawRange(0, this.count * per);
  }

  /**
   * Merged mode: copy the animals' numbers into the texture the vertices read them from, each
   * animal's 12 after the previous one's; once a draw has set the view, only the animals in it
   * (see `cull`), the near ones first, drawn as models, then those too far to make out, drawn
   * as points (`far`; highlighted animals always keep their model).
   */
  private pack(): void {
    const n = this.count, pos = this.positions, anim = this.anim;
    const frustum = this.view, sphere = this.sphere, eye = this.eye;
    sphere.radius = frustum ? this.reach : 0;
    const beyond = frustum && this.far ? farDistance(this.info.scale, this.material.uniforms.uPixelWorld?.value ?? 0) : Infinity;
    const beyond2 = beyond * beyond;
    const farRows = this.farRows;
    let kept = 0, far = 0;
    for (let i = 0; i < n; i++) {
      const i3 = 3 * i;
      if (frustum) {
        sphere.center.set(pos[i3], pos[i3 + 1], pos[i3 + 2]);
        if (!frustum.intersectsSphere(sphere)) continue;
        const dx = pos[i3] - eye.x, dy = pos[i3 + 1] - eye.y, dz = pos[i3 + 2] - eye.z;
        if (dx * dx + dy * dy + dz * dz > beyond2 && anim[4 * i + 3] < 0.5) {
          farRows[far++] = i;
          continue;
        }
      }
      this.put(i, kept++);
    }
    for (let j = 0; j < far; j++) this.put(farRows[j], kept + j);
    if (this.instances) this.instances.needsUpdate = true;
    this.geometry.setDrawRange(0, kept * this.shared().index.length);
    this.far?.show(kept, far);
  }

  /** Merged mode: animal `i`'s numbers into row `row` of the texture. */
  private put(i: number, row: number): void {
    const out = this.packed, pos = this.positions, quat = this.quaternions, anim = this.anim;
    const i3 = 3 * i, i4 = 4 * i, o = 12 * row;
    out[o] = pos[i3]; out[o + 1] = pos[i3 + 1]; out[o + 2] = pos[i3 + 2]; out[o + 3] = this.phase[i];
    out[o + 4] = quat[i4]; out[o + 5] = quat[i4 + 1]; out[o + 6] = quat[i4 + 2]; out[o + 7] = quat[i4 + 3];
    out[o + 8] = anim[i4]; out[o + 9] = anim[i4 + 1]; out[o + 10] = anim[i4 + 2]; out[o + 11] = anim[i4 + 3];
  }

  private grow(needed: number): void {
    const capacity = Math.max(needed, Math.ceil(this.capacity * 1.5), 64);
    const keep = (old: Float32Array, size: number) => {
      const next = new Float32Array(capacity * size);
      next.set(old.subarray(0, Math.min(old.length, next.length)));
      return next;
    };
    this.positions = keep(this.positions, 3);
    this.quaternions = keep(this.quaternions, 4);
    this.anim = keep(this.anim, 4);
    this.phase = keep(this.phase, 1);
    const uids = new Uint32Array(capacity);
    uids.set(this.uids.subarray(0, Math.min(this.uids.length, capacity)));
    this.uids = uids;
    if (this.merged) {
      // a new geometry and texture (the same reason as below)
      const rows = Math.ceil(capacity / MERGED_ROW);
      const packed = new Float32Array(rows * MERGED_ROW * 12);
      packed.set(this.packed.subarray(0, Math.min(this.packed.length, packed.length)));
      this.packed = packed;
      this.farRows = new Int32Array(capacity);
      this.far?.setCapacity(capacity);
      const texture = new THREE.DataTexture(packed, 3 * MERGED_ROW, rows, THREE.RGBAFormat, THREE.FloatType);
      texture.needsUpdate = true;
      this.instances?.dispose();
      this.instances = texture;
      this.material.uniforms.uInstances.value = texture;
      const previous = this.geometry;
      this.geometry = new THREE.BufferGeometry() as THREE.InstancedBufferGeometry;
      this.capacity = capacity;
      this.tileModel();
      if (this.mesh) {
        this.mesh.geometry = this.geometry;
        previous.dispose();
      }
      return;
    }
    // Larger instance buffers go on a new geometry: swapping the attributes of a geometry
    // already drawn leaves some WebGL implementations (Chromium 156's) reading the old,
    // smaller buffers, so only the first `capacity` animals would be drawn.
    const previous = this.geometry;
    const geometry = new THREE.InstancedBufferGeometry();
    for (const name of ["position", "aRig", "aColor"]) {
      const base = previous.getAttribute(name);
      if (base) geometry.setAttribute(name, base);
    }
    geometry.instanceCount = previous.instanceCount;
    const make = (name: string, array: Float32Array, size: number) => {
      const attr = new THREE.InstancedBufferAttribute(array, size);
      attr.setUsage(THREE.DynamicDrawUsage);
      geometry.setAttribute(name, attr);
      this.attrs[name] = attr;
    };
    make("iPos", this.positions, 3);
    make("iQuat", this.quaternions, 4);
    make("iAnim", this.anim, 4);
    make("iPhase", this.phase, 1);
    this.geometry = geometry;
    if (this.mesh) {
      this.mesh.geometry = geometry;
      previous.dispose();
    }
    this.capacity = capacity;
  }

  private ensureHistory(maxUid: number): void {
    if (maxUid < this.histSeen.length || maxUid >= MAX_INDEXED_UID) return;
    const size = Math.min(MAX_INDEXED_UID, Math.max(maxUid + 1, this.histSeen.length * 2, 1024));
    const grow = (old: Float32Array, k: number) => {
      const next = new Float32Array(size * k);
      next.set(old);
      return next;
    };
    this.histFwd = grow(this.histFwd, 3);
    this.histPos = grow(this.histPos, 3);
    this.histCurv = grow(this.histCurv, 2);
    const seen = new Uint8Array(size);
    seen.set(this.histSeen);
    this.histSeen = seen;
  }

  /** Copy one frame's block into the instance attributes. */
  update(block: SpeciesBlock): void {
    const n = block.count;
    if (n > this.capacity) this.grow(n);
    if (!this.lite && n > LITE_ON) {
      this.lite = true;
      this.setBaseGeometry(buildModel(this.info.model, true));
    } else if (this.lite && !this.alwaysLite && n < LITE_OFF) {
      this.lite = false;
      this.setBaseGeometry(buildModel(this.info.model, false));
    }
    // Forget the previous frame's uid → index entries, then record this frame's.
    const index = this.uidIndex;
    for (let i = 0; i < this.count; i++) {
      const u = this.uids[i];
      if (u < index.length) index[u] = -1;
    }
    let maxUid = 0;
    const src = block.uids;
    for (let i = 0; i < n; i++) if (src[i] > maxUid) maxUid = src[i];
    if (maxUid >= index.length && maxUid < MAX_INDEXED_UID) {
      const next = new Int32Array(Math.min(MAX_INDEXED_UID, Math.max(maxUid + 1, index.length * 2, 1024))).fill(-1);
      this.uidIndex = next;
    }
    const swims = this.swims;
    if (swims) this.ensureHistory(maxUid);
    const uidIndex = this.uidIndex;
    const pos = this.positions, quat = this.quaternions, anim = this.anim, phase = this.phase, uids = this.uids;
    const q = block.positions, rot = block.rotations, spd = block.speeds;
    const [x0, y0, z0] = block.boundsMin;
    const sx = (block.boundsMax[0] - x0) / 65535;
    const sy = (block.boundsMax[1] - y0) / 65535;
    const sz = (block.boundsMax[2] - z0) / 65535;
    const hf = this.histFwd, hp = this.histPos, hc = this.histCurv, hs = this.histSeen;
    const minStep = 1e-3 * this.info.scale;
    const lying = this.lying;
    // A lying body: its centre (model y = centerY) rests `lift` above the streamed point.
    const centerY = this.model.centerY * this.info.scale;
    const lift = (this.model.centerY > 0 ? 0.16 : 0.03) * this.info.scale;
    for (let i = 0; i < n; i++) {
      const i3 = 3 * i, i4 = 4 * i;
      const px = x0 + q[i3] * sx, py = y0 + q[i3 + 1] * sy, pz = z0 + q[i3 + 2] * sz;
      pos[i3] = px; pos[i3 + 1] = py; pos[i3 + 2] = pz;
      unpackQuaternion(rot[i], quat, i4);
      if (lying) {
        // q · (quarter turn about local +Z): the animal lies on its side.
        const ax = quat[i4], ay = quat[i4 + 1], az = quat[i4 + 2], aw = quat[i4 + 3];
        const x = ROLL * (ax + ay), y = ROLL * (ay - ax), z = ROLL * (aw + az), w = ROLL * (aw - az);
        quat[i4] = x; quat[i4 + 1] = y; quat[i4 + 2] = z; quat[i4 + 3] = w;
        // Where the rolled body's centre would be (local (0, centerY, 0) turned by the new q), moved onto the point.
        const cx = 2 * (x * y - w * z) * centerY, cy = (1 - 2 * (x * x + z * z)) * centerY, cz = 2 * (y * z + w * x) * centerY;
        pos[i3] = px - cx; pos[i3 + 1] = py - cy + lift; pos[i3 + 2] = pz - cz;
      }
      const u = src[i];
      uids[i] = u;
      if (u < uidIndex.length) uidIndex[u] = i;
      phase[i] = (u * 0.6180339887) % 1;
      anim[i4] = spd[i] * SPEED_UNIT;
      anim[i4 + 3] = 0;
      if (swims && u < hs.length) {
        const x = quat[i4], y = quat[i4 + 1], z = quat[i4 + 2], w = quat[i4 + 3];
        const fx = 2 * (x * z + w * y), fy = 2 * (y * z - w * x), fz = 1 - 2 * (x * x + y * y);
        const u3 = 3 * u, u2 = 2 * u;
        if (hs[u]) {
          const dx = px - hp[u3], dy = py - hp[u3 + 1], dz = pz - hp[u3 + 2];
          const dist = Math.sqrt(dx * dx + dy * dy + dz * dz);
          if (dist > minStep) {
            const dfx = fx - hf[u3], dfy = fy - hf[u3 + 1], dfz = fz - hf[u3 + 2];
            // Local side (+X) and up (+Y) axes of the current orientation.
            const rx = 1 - 2 * (y * y + z * z), ry = 2 * (x * y + w * z), rz = 2 * (x * z - w * y);
            const ux = 2 * (x * y - w * z), uy = 1 - 2 * (x * x + z * z), uz = 2 * (y * z + w * x);
            const kYaw = (dfx * rx + dfy * ry + dfz * rz) / dist;
            const kPitch = (dfx * ux + dfy * uy + dfz * uz) / dist;
            hc[u2] = 0.6 * hc[u2] + 0.4 * (Number.isFinite(kYaw) ? kYaw : 0);
            hc[u2 + 1] = 0.6 * hc[u2 + 1] + 0.4 * (Number.isFinite(kPitch) ? kPitch : 0);
            hp[u3] = px; hp[u3 + 1] = py; hp[u3 + 2] = pz;
            hf[u3] = fx; hf[u3 + 1] = fy; hf[u3 + 2] = fz;
          }
        } else {
          hs[u] = 1;
          hc[u2] = 0; hc[u2 + 1] = 0;
          hp[u3] = px; hp[u3 + 1] = py; hp[u3 + 2] = pz;
          hf[u3] = fx; hf[u3 + 1] = fy; hf[u3 + 2] = fz;
        }
        anim[i4 + 1] = hc[u2];
        anim[i4 + 2] = hc[u2 + 1];
      } else {
        anim[i4 + 1] = 0;
        anim[i4 + 2] = 0;
      }
    }
    this.count = n;
    for (const [u, level] of this.highlights) {
      const i = this.indexOf(u);
      if (i >= 0) anim[4 * i + 3] = level;
    }
    if (this.merged) {
      this.pack();
      return;
    }
    this.geometry.instanceCount = n;
    for (const [name, size] of [["iPos", 3], ["iQuat", 4], ["iAnim", 4], ["iPhase", 1]] as const) {
      const attr = this.attrs[name];
      attr.clearUpdateRanges();
      attr.addUpdateRange(0, Math.max(1, n * size));
      attr.needsUpdate = true;
    }
  }

  /** The centre of mass of the latest frame's animals (the origin when there are none). */
  centre(): THREE.Vector3 {
    const c = new THREE.Vector3();
    const p = this.positions;
    for (let i = 0; i < this.count; i++) {
      c.x += p[3 * i];
      c.y += p[3 * i + 1];
      c.z += p[3 * i + 2];
    }
    return c.divideScalar(Math.max(this.count, 1));
  }

  /** Current instance index of an animal, or -1 if it is not in the latest frame. */
  indexOf(uid: number): number {
    if (uid < this.uidIndex.length) return this.uidIndex[uid];
    for (let i = 0; i < this.count; i++) if (this.uids[i] === uid) return i;
    return -1;
  }

  setHighlights(levels: Map<number, number>): void {
    for (const [u] of this.highlights) {
      const i = this.indexOf(u);
      if (i >= 0) this.anim[4 * i + 3] = 0;
    }
    this.highlights = levels;
    for (const [u, level] of levels) {
      const i = this.indexOf(u);
      if (i >= 0) this.anim[4 * i + 3] = level;
    }
    if (this.merged) {
      this.pack();
      return;
    }
    const attr = this.attrs.iAnim;
    attr.clearUpdateRanges();
    attr.addUpdateRange(0, Math.max(1, this.count * 4));
    attr.needsUpdate = true;
  }

  /**
   * The animal closest to a ray, measured against a tolerance that grows with
   * distance (a few pixels' worth) so that small, far animals can still be clicked.
   */
  pick(ray: THREE.Ray, pixelAngle: number): { index: number; uid: number; distance: number; score: number } | null {
    const o = ray.origin, d = ray.direction, pos = this.positions;
    const body = this.info.scale * 0.6;
    let best = -1, bestScore = Infinity, bestT = 0;
    for (let i = 0; i < this.count; i++) {
      const px = pos[3 * i] - o.x, py = pos[3 * i + 1] - o.y, pz = pos[3 * i + 2] - o.z;
      const t = px * d.x + py * d.y + pz * d.z;
      if (t <= 0) continue;
      const ex = px - t * d.x, ey = py - t * d.y, ez = pz - t * d.z;
      const miss = Math.sqrt(ex * ex + ey * ey + ez * ez);
      const tolerance = body + t * pixelAngle * 6;
      if (miss > tolerance) continue;
      const score = miss / tolerance + t * 1e-6;
      if (score < bestScore) {
        bestScore = score; best = i; bestT = t;
      }
    }
    return best < 0 ? null : { index: best, uid: this.uids[best], distance: bestT, score: bestScore };
  }

  setTime(t: number): void {
    this.material.uniforms.uTime.value = t;
  }

  dispose(): void {
    this.far?.dispose();
    this.instances?.dispose();
    this.geometry.dispose();
    this.material.dispose();
  }
}

/** A model's facets over its distinct corners (see `shareVertices`). */
export interface SharedVertices {
  /** Distinct corners. */
  count: number;
  /** `position`, `aRig` and `aColor` of each distinct corner. */
  attributes: Record<string, Float32Array>;
  /** The model's corners, three a facet in its order, as indices of the distinct ones. */
  index: Uint32Array;
}

/**
 * A model's facets over its distinct corners: corners alike in position, limb (`aRig`) and
 * colour are one vertex. A software rasteriser runs the vertex shader once per distinct
 * index of a batch, not once per facet corner (a lite sheep: 40 runs instead of 144). The
 * facets are lit from screen-space derivatives and every other varying is the same at a
 * shared corner, so no pixel changes.
 */
export function shareVertices(geometry: THREE.BufferGeometry): SharedVertices {
  const names = ["position", "aRig", "aColor"];
  const arrays = names.map((n) => geometry.getAttribute(n).array as Float32Array);
  const sizes = names.map((n) => geometry.getAttribute(n).itemSize);
  const n = geometry.getAttribute("position").count;
  const seen = new Map<string, number>();
  const index = new Uint32Array(n);
  const out: number[][] = names.map(() => []);
  for (let v = 0; v < n; v++) {
    const parts: number[] = [];
    arrays.forEach((a, k) => { for (let c = 0; c < sizes[k]; c++) parts.push(a[v * sizes[k] + c]); });
    const key = parts.join(",");
    let at = seen.get(key);
    if (at === undefined) {
      at = seen.size;
      seen.set(key, at);
      arrays.forEach((a, k) => { for (let c = 0; c < sizes[k]; c++) out[k].push(a[v * sizes[k] + c]); });
    }
    index[v] = at;
  }
  const attributes: Record<string, Float32Array> = {};
  names.forEach((name, k) => { attributes[name] = new Float32Array(out[k]); });
  return { count: seen.size, attributes, index };
}
