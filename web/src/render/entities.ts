/**
 * What the simulation's systems add to a scene besides the animals: the ecology's
 * apples, carcasses, sounds and the player. They travel as extra blocks after the
 * species in every frame (docs/protocol.md, "Entity blocks"), described by the scene
 * message's `entities`:
 *
 *  - apples: small red fruit, one instanced draw;
 *  - carcasses: the body of the species they came from, greyed, lying on its side
 *    and still (a `SpeciesLayer` in lying mode); carcasses of no known species are
 *    grey lumps;
 *  - sounds: translucent spheres with a brighter rim and a ring around their centre,
 *    as large as the sound's current radius (streamed) and fading over its lifetime;
 *  - the player: a small figure holding a gun, standing at its streamed position and
 *    facing where it looks.
 */
import * as THREE from "three";
import { dequantisePositions, SPEED_UNIT, unpackQuaternions, type SpeciesBlock } from "../protocol/frame";
import type { EntityInfo } from "../protocol/messages";
import { SpeciesLayer } from "./animals";

/** How a carcass's species colour is dulled: mixed toward this grey, by this much. */
const CARCASS_GREY = new THREE.Color("#77736a");
const CARCASS_MIX = 0.6;
const APPLE_RADIUS = 0.14;
const MAX_SOUNDS = 64;

/** The colour a carcass of a species of colour `color` is drawn in. */
export function carcassColor(color: string): string {
  return `#${new THREE.Color(color).lerp(CARCASS_GREY, CARCASS_MIX).multiplyScalar(0.85).getHexString()}`;
}

/**
 * A sound's opacity at `age` seconds of a `lifetime`: fully there at birth, gone at
 * the end, fading faster toward the end (quadratic).
 */
export function soundFade(age: number, lifetime: number): number {
  if (!(lifetime > 0)) return 0.6;
  const left = 1 - Math.min(Math.max(age / lifetime, 0), 1);
  return left * left;
}

const soundVertex = /* glsl */ `
varying vec3 vNormal;
varying vec3 vView;
void main() {
  vec4 mv = modelViewMatrix * vec4(position, 1.0);
  vNormal = normalize(normalMatrix * normal);
  vView = -mv.xyz;
  gl_Position = projectionMatrix * mv;
}
`;

const soundFragment = /* glsl */ `
uniform vec3 uColor;
uniform float uOpacity;
varying vec3 vNormal;
varying vec3 vView;
void main() {
  float facing = abs(dot(normalize(vNormal), normalize(vView)));
  float rim = pow(1.0 - facing, 2.5);
  gl_FragColor = vec4(uColor, uOpacity * (0.06 + 0.8 * rim));
}
`;

interface SoundSprite {
  shell: THREE.Mesh<THREE.SphereGeometry, THREE.ShaderMaterial>;
  ring: THREE.Mesh<THREE.RingGeometry, THREE.MeshBasicMaterial>;
}

/** A low-poly figure, about 1.8 m tall, feet at the origin, looking along +Z, a gun held forward. */
export function makePlayerFigure(): THREE.Group {
  const group = new THREE.Group();
  const mat = (color: number) => new THREE.MeshLambertMaterial({ color, flatShading: true });
  const trousers = mat(0x3b4252), jacket = mat(0xb5562f), skin = mat(0xe0b08a), hat = mat(0x4a5a3a), metal = mat(0x1c1f24);
  for (const side of [1, -1]) {
    const leg = new THREE.Mesh(new THREE.BoxGeometry(0.16, 0.85, 0.2), trousers);
    leg.position.set(side * 0.11, 0.43, 0);
    group.add(leg);
  }
  const body = new THREE.Mesh(new THREE.BoxGeometry(0.46, 0.62, 0.28), jacket);
  body.position.y = 1.16;
  const head = new THREE.Mesh(new THREE.IcosahedronGeometry(0.13, 1), skin);
  head.position.y = 1.6;
  const brim = new THREE.Mesh(new THREE.CylinderGeometry(0.2, 0.2, 0.03, 10), hat);
  brim.position.y = 1.7;
  const crown = new THREE.Mesh(new THREE.CylinderGeometry(0.11, 0.13, 0.12, 10), hat);
  crown.position.y = 1.77;
  group.add(body, head, brim, crown);
  // Both arms reach forward to the gun at chest height.
  for (const side of [1, -1]) {
    const arm = new THREE.Mesh(new THREE.BoxGeometry(0.1, 0.1, 0.46), jacket);
    arm.position.set(side * 0.2, 1.3, 0.2);
    arm.rotation.y = -side * 0.25;
    group.add(arm);
  }
  const barrel = new THREE.Mesh(new THREE.CylinderGeometry(0.025, 0.025, 0.9, 6).rotateX(Math.PI / 2), metal);
  barrel.position.set(0, 1.33, 0.62);
  const stock = new THREE.Mesh(new THREE.BoxGeometry(0.07, 0.12, 0.3), mat(0x6b4a2f));
  stock.position.set(0, 1.3, 0.18);
  group.add(barrel, stock);
  group.name = "player-figure";
  return group;
}

export class EntityView {
  readonly group = new THREE.Group();
  /** Carcass layers by block index (carcasses of a known species). */
  readonly carcasses = new Map<number, SpeciesLayer>();
  /** Where the streamed player stands (feet), or null when the scene has none. */
  playerPosition: THREE.Vector3 | null = null;
  /** Counts of the latest frame by entity kind (tests and the HUD). */
  readonly counts: Record<string, number> = {};
  private byIndex = new Map<number, EntityInfo>();
  /** The latest positions of every entity block (small: a copy per frame costs nothing). */
  private latest = new Map<number, Float32Array>();
  private apples: THREE.InstancedMesh | null = null;
  private lumps: THREE.InstancedMesh | null = null;
  private positions = new Float32Array(48);
  private quaternions = new Float32Array(4);
  private player: THREE.Group | null = null;
  private sounds: SoundSprite[] = [];
  /** Simulated time each sound was first seen, by uid: its age drives the fade. */
  private soundBorn = new Map<number, number>();
  private readonly matrix = new THREE.Matrix4();
  private readonly quat = new THREE.Quaternion();
  private readonly vec = new THREE.Vector3();
  private readonly scaleVec = new THREE.Vector3();
  playerScale = 1;

  constructor(private readonly lightUniforms: Record<string, THREE.IUniform>) {
    this.group.name = "entities";
  }

  /** Set up drawing for a scene's entities (replaces whatever was there). */
  set(entities: EntityInfo[]): void {
    this.clear();
    for (const info of entities) {
      this.byIndex.set(info.index, info);
      this.counts[info.kind] = 0;
      if (info.kind === "carcass" && info.model) {
        const layer = new SpeciesLayer(
          { index: info.index, name: `${info.name}:${info.tag ?? info.model}`, model: info.model, color: carcassColor(info.color ?? "#888888"), scale: info.scale ?? 1 },
          this.lightUniforms,
          { lying: true },
        );
        this.carcasses.set(info.index, layer);
        this.group.add(layer.mesh);
      } else {
        this.prepare(info.kind);
      }
    }
  }

  /**
   * Make what an entity of `kind` is drawn with before the first one appears, and draw a
   * copy of it once, shrunk to nothing (`warm-up`, removed after that draw): a renderer
   * compiles a shader, and a software rasteriser its drawing routines, at their first
   * draw, which stalled the page for a tenth of a second when a scene's first sound went
   * off. The copies share the real objects' geometry and materials, so what their draw
   * compiled is what the real ones use.
   */
  private prepare(kind: string): void {
    const copies: THREE.Object3D[] = [];
    if (kind === "sound") {
      const { shell, ring } = this.sprite(0);
      shell.visible = ring.visible = false;
      copies.push(shell.clone(), ring.clone());
    } else if (kind === "apple" || kind === "carcass") {
      const mesh = kind === "apple" ? this.applesFor(0) : this.lumpsFor(0);
      mesh.count = 0;
      copies.push(new THREE.InstancedMesh(mesh.geometry, mesh.material, 1));
    } else if (kind === "player") {
      this.player = makePlayerFigure();
      this.player.visible = false;
      this.group.add(this.player);
      copies.push(this.player.clone());
    }
    if (!copies.length) return;
    const warm = new THREE.Group();
    warm.name = "warm-up";
    warm.scale.setScalar(1e-6);
    warm.add(...copies);
    const done = () => this.group.remove(warm); // this draw's list is already made: its other meshes still draw
    warm.traverse((o) => {
      o.visible = true;
      o.frustumCulled = false;
      o.onAfterRender = done;
    });
    this.group.add(warm);
  }

  clear(): void {
    for (const layer of this.carcasses.values()) layer.dispose();
    this.carcasses.clear();
    for (const mesh of [this.apples, this.lumps]) {
      if (!mesh) continue;
      mesh.geometry.dispose();
      (mesh.material as THREE.Material).dispose();
    }
    this.apples = this.lumps = null;
    for (const s of this.sounds) {
      s.shell.material.dispose();
      s.ring.material.dispose();
    }
    this.sounds = [];
    this.soundBorn.clear();
    this.group.clear();
    this.byIndex.clear();
    this.latest.clear();
    this.player = null;
    this.playerPosition = null;
    for (const key of Object.keys(this.counts)) delete this.counts[key];
  }

  /** Whether a frame block belongs to an entity of this scene. */
  has(index: number): boolean {
    return this.byIndex.has(index);
  }

  /** Start a new frame: the counts add up over its entity blocks. */
  beginFrame(): void {
    for (const key of Object.keys(this.counts)) this.counts[key] = 0;
  }

  /** Apply one entity block of a frame taken at simulated time `time`. */
  update(block: SpeciesBlock, time: number): void {
    const info = this.byIndex.get(block.index);
    if (!info) return;
    const n = block.count;
    this.counts[info.kind] = (this.counts[info.kind] ?? 0) + n;
    if (this.positions.length < 3 * n) this.positions = new Float32Array(3 * n + 48);
    dequantisePositions(block, this.positions);
    this.latest.set(block.index, this.positions.slice(0, 3 * n));
    const carcass = this.carcasses.get(block.index);
    if (carcass) {
      carcass.update(block);
      return;
    }
    if (info.kind === "apple") this.updateApples(n, this.positions);
    else if (info.kind === "carcass") this.updateLumps(n, this.positions);
    else if (info.kind === "sound") this.updateSounds(block, time, info.lifetime ?? 1.5, this.positions);
    else if (info.kind === "player") {
      if (this.quaternions.length < 4 * n) this.quaternions = new Float32Array(4 * n + 4);
      unpackQuaternions(block, this.quaternions);
      this.updatePlayer(n, this.positions, this.quaternions);
    }
  }

  /** Where the entities of a kind are (world coordinates), as of the latest frame. */
  positionsOf(kind: string): number[][] {
    const out: number[][] = [];
    for (const [index, p] of this.latest) {
      if (this.byIndex.get(index)?.kind !== kind) continue;
      for (let i = 0; i + 2 < p.length; i += 3) out.push([p[i], p[i + 1], p[i + 2]]);
    }
    return out;
  }

  setTime(t: number): void {
    for (const layer of this.carcasses.values()) layer.setTime(t);
  }

  private instanced(old: THREE.InstancedMesh | null, n: number, make: (capacity: number) => THREE.InstancedMesh): THREE.InstancedMesh {
    if (old && old.instanceMatrix.count >= n) return old;
    const capacity = Math.max(16, n, Math.ceil((old?.instanceMatrix.count ?? 0) * 1.5));
    if (old) {
      this.group.remove(old);
      old.geometry.dispose();
      (old.material as THREE.Material).dispose();
    }
    const mesh = make(capacity);
    mesh.frustumCulled = false;
    this.group.add(mesh);
    return mesh;
  }

  private updateApples(n: number, p: Float32Array): void {
    if (!n && !this.apples) return;
    const apples = this.applesFor(n);
    for (let i = 0; i < n; i++) {
      this.matrix.makeTranslation(p[3 * i], p[3 * i + 1] + APPLE_RADIUS * 0.6, p[3 * i + 2]);
      apples.setMatrixAt(i, this.matrix);
    }
    apples.count = n;
    apples.instanceMatrix.needsUpdate = true;
  }

  /** The apples' mesh, with room for `n` (made or grown if need be). */
  private applesFor(n: number): THREE.InstancedMesh {
    return (this.apples = this.instanced(this.apples, n, (capacity) => {
      const mesh = new THREE.InstancedMesh(
        new THREE.IcosahedronGeometry(APPLE_RADIUS, 1),
        new THREE.MeshLambertMaterial({ color: 0xd2242a, emissive: 0x4a0808, flatShading: true }),
        capacity,
      );
      mesh.name = "apples";
      return mesh;
    }));
  }

  private updateLumps(n: number, p: Float32Array): void {
    if (!n && !this.lumps) return;
    const lumps = this.lumpsFor(n);
    for (let i = 0; i < n; i++) {
      this.matrix.makeTranslation(p[3 * i], p[3 * i + 1] + 0.1, p[3 * i + 2]);
      lumps.setMatrixAt(i, this.matrix);
    }
    lumps.count = n;
    lumps.instanceMatrix.needsUpdate = true;
  }

  /** The carcass lumps' mesh (carcasses of no known species), with room for `n`. */
  private lumpsFor(n: number): THREE.InstancedMesh {
    return (this.lumps = this.instanced(this.lumps, n, (capacity) => {
      const mesh = new THREE.InstancedMesh(
        new THREE.DodecahedronGeometry(0.3, 0).scale(1.4, 0.6, 1),
        new THREE.MeshLambertMaterial({ color: 0x77736a, flatShading: true }),
        capacity,
      );
      mesh.name = "carcass-lumps";
      return mesh;
    }));
  }

  private sprite(i: number): SoundSprite {
    while (this.sounds.length <= i) {
      const shell = new THREE.Mesh(
        new THREE.SphereGeometry(1, 28, 18),
        new THREE.ShaderMaterial({
          vertexShader: soundVertex,
          fragmentShader: soundFragment,
          uniforms: { uColor: { value: new THREE.Color("#fff0b8") }, uOpacity: { value: 1 } },
          transparent: true,
          depthWrite: false,
          side: THREE.DoubleSide, // seen from inside too: a sound soon grows around the camera
        }),
      );
      const ring = new THREE.Mesh(
        new THREE.RingGeometry(0.965, 1, 64).rotateX(-Math.PI / 2),
        new THREE.MeshBasicMaterial({ color: 0xffe08a, transparent: true, depthWrite: false, side: THREE.DoubleSide }),
      );
      shell.renderOrder = ring.renderOrder = 3;
      shell.frustumCulled = ring.frustumCulled = false;
      shell.name = "sound";
      this.group.add(shell, ring);
      this.sounds.push({ shell, ring });
    }
    return this.sounds[i];
  }

  private updateSounds(block: SpeciesBlock, time: number, lifetime: number, p: Float32Array): void {
    const n = Math.min(block.count, MAX_SOUNDS);
    const alive = new Set<number>();
    for (let i = 0; i < n; i++) {
      const uid = block.uids[i];
      alive.add(uid);
      let born = this.soundBorn.get(uid);
      if (born === undefined || born > time) {
        born = time;
        this.soundBorn.set(uid, born);
      }
      const radius = Math.max(block.speeds[i] * SPEED_UNIT, 0.05);
      const fade = soundFade(time - born, lifetime);
      const { shell, ring } = this.sprite(i);
      shell.visible = ring.visible = fade > 0.01;
      shell.position.set(p[3 * i], p[3 * i + 1], p[3 * i + 2]);
      shell.scale.setScalar(radius);
      shell.material.uniforms.uOpacity.value = 0.9 * fade;
      ring.position.copy(shell.position);
      ring.scale.setScalar(radius);
      ring.material.opacity = 0.85 * fade;
    }
    for (let i = n; i < this.sounds.length; i++) this.sounds[i].shell.visible = this.sounds[i].ring.visible = false;
    for (const uid of [...this.soundBorn.keys()]) if (!alive.has(uid)) this.soundBorn.delete(uid);
  }

  private updatePlayer(n: number, p: Float32Array, q: Float32Array): void {
    if (!n) {
      if (this.player) this.player.visible = false;
      this.playerPosition = null;
      return;
    }
    if (!this.player) {
      this.player = makePlayerFigure();
      this.group.add(this.player);
    }
    const figure = this.player;
    figure.visible = true;
    figure.position.set(p[0], p[1], p[2]);
    // Face the look direction turned flat: the figure stands upright whatever it aims at.
    this.quat.set(q[0], q[1], q[2], q[3]);
    const forward = this.vec.set(0, 0, 1).applyQuaternion(this.quat);
    figure.rotation.set(0, Math.atan2(forward.x, forward.z), 0);
    figure.scale.copy(this.scaleVec.setScalar(this.playerScale));
    this.playerPosition = (this.playerPosition ?? new THREE.Vector3()).set(p[0], p[1], p[2]);
  }

  dispose(): void {
    this.clear();
  }
}
