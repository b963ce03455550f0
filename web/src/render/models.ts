/**
 * Small procedural low-poly animals, one per `appearance.model`.
 *
 * Every model is built in "body lengths": nose to tail is about 1 along +Z
 * (forward), +Y is up; flyers and swimmers are centred on their body, walkers
 * stand with their feet at y = 0. The viewer scales each by the species'
 * `appearance.scale`.
 *
 * Each vertex carries two extra attributes the animal shader reads:
 *  - `aRig` = (part, pivot.xyz): which limb the vertex belongs to and the joint
 *    it swings about (wings flap about their root, legs swing about the hip);
 *  - `aColor` = (rgb, tinted): tinted parts are multiplied by the species colour,
 *    the rest (beaks, hooves, eyes, tusks) keep their own colour.
 * Geometry is non-indexed, one corner per facet. The fragment shader lights each
 * facet flat from screen-space derivatives, so corners may be shared between facets
 * (the software tier's batch does, `shareVertices` in ./animals).
 */
import * as THREE from "three";

export const Part = {
  Body: 0,
  WingLeft: 1,
  WingRight: 2,
  LegFrontLeft: 3,
  LegFrontRight: 4,
  LegBackLeft: 5,
  LegBackRight: 6,
  Tail: 7,
  Ear: 8,
  Trunk: 9,
} as const;

/** How a model moves in the vertex shader. */
export const Motion = { Rigid: 0, Flyer: 1, Swimmer: 2, Shark: 3, Walker: 4 } as const;

export interface AnimalModel {
  geometry: THREE.BufferGeometry;
  motion: number;
  /** Model-space z of the nose: the point the swimmers' spine follows. */
  headZ: number;
  /** Model-space length used to turn curvature into bending. */
  length: number;
  /** Height of the body centre above the origin (walkers stand on the origin). */
  centerY: number;
  /** The body's smaller cross extent (width or height), in body lengths (set by `buildModel`). */
  thickness?: number;
  /**
   * Drawn without back-face culling: the model is made only of thin surfaces given
   * once, instead of each twice (halves the vertices where there are most animals).
   */
  doubleSided?: boolean;
}

interface PieceOptions {
  part?: number;
  pivot?: [number, number, number];
  color?: number;
  tint?: boolean;
}

type Transform = { at?: [number, number, number]; rot?: [number, number, number]; scale?: [number, number, number] };

class ModelBuilder {
  private positions: number[] = [];
  private rig: number[] = [];
  private colors: number[] = [];

  /** Add a primitive, placed by scale → rotation (XYZ Euler) → translation. */
  add(geometry: THREE.BufferGeometry, place: Transform, options: PieceOptions = {}): this {
    const g = geometry.index ? geometry.toNonIndexed() : geometry;
    const m = new THREE.Matrix4().compose(
      new THREE.Vector3(...(place.at ?? [0, 0, 0])),
      new THREE.Quaternion().setFromEuler(new THREE.Euler(...(place.rot ?? [0, 0, 0]))),
      new THREE.Vector3(...(place.scale ?? [1, 1, 1])),
    );
    g.applyMatrix4(m);
    const pos = g.getAttribute("position");
    this.pushVertices(Array.from(pos.array as Float32Array), options);
    return this;
  }

  /** Add raw triangles (x y z per vertex, three vertices per triangle), both faces when `twoSided`. */
  triangles(vertices: number[], options: PieceOptions = {}, twoSided = true): this {
    this.pushVertices(vertices, options);
    if (twoSided) {
      const flipped: number[] = [];
      for (let i = 0; i < vertices.length; i += 9) {
        flipped.push(...vertices.slice(i, i + 3), ...vertices.slice(i + 6, i + 9), ...vertices.slice(i + 3, i + 6));
      }
      this.pushVertices(flipped, options);
    }
    return this;
  }

  private pushVertices(xyz: number[], options: PieceOptions): void {
    const part = options.part ?? Part.Body;
    const pivot = options.pivot ?? [0, 0, 0];
    const color = new THREE.Color(options.color ?? 0xffffff);
    const tint = (options.tint ?? true) ? 1 : 0;
    for (let i = 0; i < xyz.length; i += 3) {
      this.positions.push(xyz[i], xyz[i + 1], xyz[i + 2]);
      this.rig.push(part, pivot[0], pivot[1], pivot[2]);
      this.colors.push(color.r, color.g, color.b, tint);
    }
  }

  build(): THREE.BufferGeometry {
    const g = new THREE.BufferGeometry();
    g.setAttribute("position", new THREE.Float32BufferAttribute(this.positions, 3));
    g.setAttribute("aRig", new THREE.Float32BufferAttribute(this.rig, 4));
    g.setAttribute("aColor", new THREE.Float32BufferAttribute(this.colors, 4));
    g.computeBoundingSphere();
    return g;
  }
}

const sphere = (w = 8, h = 6) => new THREE.SphereGeometry(1, w, h);
const box = () => new THREE.BoxGeometry(1, 1, 1);
const ico = (detail = 0) => new THREE.IcosahedronGeometry(1, detail);
/** A cone whose tip points along +Z. */
const coneZ = (radial = 5) => new THREE.ConeGeometry(1, 1, radial).rotateX(Math.PI / 2);
const cylinder = (top: number, bottom: number, radial = 6) => new THREE.CylinderGeometry(top, bottom, 1, radial);

const DARK = 0x26221f;
const HOOF = 0x1d1a18;

function bird(lite: boolean): AnimalModel {
  const b = new ModelBuilder();
  if (lite) {
    // A dart: two body facets and one triangle per wing, still flapping; 4 triangles in all.
    b.triangles([0, 0.05, 0.5, 0.1, 0, -0.1, 0, 0, -0.5, 0, 0.05, 0.5, 0, 0, -0.5, -0.1, 0, -0.1], {}, false);
    b.triangles([0.06, 0.02, 0.15, 0.06, 0.02, -0.12, 0.72, 0, -0.18], { part: Part.WingLeft, pivot: [0.06, 0.02, 0], color: 0xd0d0d0 }, false);
    b.triangles([-0.06, 0.02, 0.15, -0.72, 0, -0.18, -0.06, 0.02, -0.12], { part: Part.WingRight, pivot: [-0.06, 0.02, 0], color: 0xd0d0d0 }, false);
    // The dart is flat: its own thinnest extent is its 5 cm body, a fifth of the bird's,
    // and the far-animal rule would draw it up to three times the bird's size. It stands
    // in for the bird, so it is inflated as the bird is.
    const thickness = thicknessOf(bird(false).geometry);
    return { geometry: b.build(), motion: Motion.Flyer, headZ: 0.5, length: 1, centerY: 0, doubleSided: true, thickness };
  }
  b.add(sphere(7, 5), { at: [0, 0, -0.02], scale: [0.13, 0.12, 0.33] });
  b.add(sphere(6, 4), { at: [0, 0.05, 0.3], scale: [0.1, 0.1, 0.1] });
  b.add(coneZ(4), { at: [0, 0.04, 0.44], scale: [0.035, 0.035, 0.14] }, { color: 0xe0b040, tint: false });
  const wing = (s: number) => [
    s * 0.08, 0.03, 0.12, s * 0.08, 0.03, -0.12, s * 0.75, 0, -0.22,
    s * 0.08, 0.03, 0.12, s * 0.75, 0, -0.22, s * 0.68, 0.0, -0.04,
  ];
  b.triangles(wing(1), { part: Part.WingLeft, pivot: [0.08, 0.03, 0], color: 0xd0d0d0 });
  b.triangles(wing(-1), { part: Part.WingRight, pivot: [-0.08, 0.03, 0], color: 0xd0d0d0 });
  b.triangles([0, 0.02, -0.28, 0.13, 0, -0.56, -0.13, 0, -0.56], { part: Part.Tail, pivot: [0, 0.02, -0.28], color: 0xb0b0b0 });
  return { geometry: b.build(), motion: Motion.Flyer, headZ: 0.51, length: 1, centerY: 0 };
}

function fish(lite: boolean): AnimalModel {
  const b = new ModelBuilder();
  if (lite) {
    b.add(new THREE.OctahedronGeometry(1), { at: [0, 0, 0.05], scale: [0.08, 0.18, 0.42] });
    b.triangles([0, 0, -0.32, 0, 0.2, -0.56, 0, -0.2, -0.56], { part: Part.Tail });
    return { geometry: b.build(), motion: Motion.Swimmer, headZ: 0.47, length: 1, centerY: 0 };
  }
  b.add(sphere(8, 6), { at: [0, 0, 0.05], scale: [0.09, 0.2, 0.42] });
  b.triangles([0, 0, -0.32, 0, 0.22, -0.58, 0, 0.02, -0.47], { part: Part.Tail, color: 0xdddddd });
  b.triangles([0, 0, -0.32, 0, -0.02, -0.47, 0, -0.22, -0.58], { part: Part.Tail, color: 0xdddddd });
  b.triangles([0, 0.17, 0.12, 0, 0.31, -0.04, 0, 0.15, -0.15], { color: 0xcccccc });
  b.triangles([0.07, -0.08, 0.2, 0.2, -0.16, 0.02, 0.07, -0.1, 0.08], { color: 0xcccccc });
  b.triangles([-0.07, -0.08, 0.2, -0.07, -0.1, 0.08, -0.2, -0.16, 0.02], { color: 0xcccccc });
  for (const s of [1, -1]) b.add(sphere(4, 3), { at: [s * 0.075, 0.06, 0.33], scale: [0.03, 0.03, 0.03] }, { color: 0x111111, tint: false });
  return { geometry: b.build(), motion: Motion.Swimmer, headZ: 0.47, length: 1, centerY: 0 };
}

function shark(lite: boolean): AnimalModel {
  const b = new ModelBuilder();
  if (lite) {
    b.add(new THREE.OctahedronGeometry(1), { scale: [0.1, 0.11, 0.5] });
    b.triangles([0, 0.08, 0.05, 0, 0.3, -0.1, 0, 0.08, -0.12]);
    b.triangles([0, 0, -0.42, 0, 0.26, -0.62, 0, -0.16, -0.56], { part: Part.Tail });
    return { geometry: b.build(), motion: Motion.Shark, headZ: 0.5, length: 1, centerY: 0 };
  }
  b.add(sphere(10, 6), { at: [0, 0, -0.02], scale: [0.11, 0.12, 0.44] });
  b.add(coneZ(6), { at: [0, -0.005, 0.44], scale: [0.075, 0.08, 0.12] });
  b.triangles([0, 0.1, 0.06, 0, 0.33, -0.1, 0, 0.1, -0.12]);
  b.triangles([0, 0.07, -0.3, 0, 0.12, -0.36, 0, 0.06, -0.36]);
  b.triangles([0.08, -0.05, 0.14, 0.32, -0.16, -0.06, 0.08, -0.07, 0.0]);
  b.triangles([-0.08, -0.05, 0.14, -0.08, -0.07, 0.0, -0.32, -0.16, -0.06]);
  b.triangles([0, 0, -0.4, 0, 0.3, -0.64, 0, 0.03, -0.5], { part: Part.Tail });
  b.triangles([0, 0, -0.4, 0, -0.03, -0.5, 0, -0.17, -0.57], { part: Part.Tail });
  for (const s of [1, -1]) b.add(sphere(4, 3), { at: [s * 0.07, 0.035, 0.34], scale: [0.018, 0.018, 0.018] }, { color: 0x050505, tint: false });
  return { geometry: b.build(), motion: Motion.Shark, headZ: 0.52, length: 1, centerY: 0 };
}

interface LegSpec {
  x: number;
  zFront: number;
  zBack: number;
  hip: number;
  width: number;
  color?: number;
  tint?: boolean;
  round?: boolean;
  /**
   * Three-sided pyramids standing on their tip (3 triangles) instead of boxes (12): the
   * lite walkers' legs, tapering from the hip (inside the body) to the hoof.
   */
  spike?: boolean;
}

function legs(b: ModelBuilder, s: LegSpec): void {
  const parts: [number, number, number][] = [
    [Part.LegFrontLeft, s.x, s.zFront], [Part.LegFrontRight, -s.x, s.zFront],
    [Part.LegBackLeft, s.x, s.zBack], [Part.LegBackRight, -s.x, s.zBack],
  ];
  for (const [part, x, z] of parts) {
    // a spike's section is a triangle in a circle: radius 0.8 at the hip looks about as wide as the box
    const g = s.round ? cylinder(0.5, 0.45, 6) : s.spike ? new THREE.CylinderGeometry(0.8, 0, 1, 3, 1, true) : box();
    b.add(g, { at: [x, s.hip / 2, z], scale: [s.width, s.hip, s.width] }, {
      part, pivot: [x, s.hip, z], color: s.color ?? 0xffffff, tint: s.tint ?? true,
    });
  }
}

/** A unit box without its face that looks down (-Y): the underside of a walker's body, between its legs. */
const boxWithoutBottom = () => {
  const g = box();
  const index = g.index!.array, kept: number[] = [];
  for (const group of g.groups) {
    if (group.materialIndex === 3) continue; // BoxGeometry's faces: +x, -x, +y, -y, +z, -z
    for (let i = group.start; i < group.start + group.count; i++) kept.push(index[i]);
  }
  g.setIndex(kept);
  return g;
};

/**
 * A generic walker for large herds and software rasterisers: box body, head and four legs,
 * 34 triangles. A software rasteriser pays about a microsecond for every triangle, seen or
 * not, so what is hardly ever seen is left out: the underside of the body (a camera would
 * have to be below the animal's belly) and the legs' bulk: each is a three-sided spike,
 * its open top inside the body and its tip the hoof.
 */
function walkerLite(height: number): AnimalModel {
  const b = new ModelBuilder();
  b.add(boxWithoutBottom(), { at: [0, height * 0.62, 0], scale: [0.3, height * 0.4, 0.75] });
  b.add(box(), { at: [0, height * 0.8, 0.45], scale: [0.18, 0.2, 0.22] });
  legs(b, { x: 0.1, zFront: 0.25, zBack: -0.25, hip: height * 0.45, width: 0.08, spike: true });
  return { geometry: b.build(), motion: Motion.Walker, headZ: 0.55, length: 1, centerY: height * 0.6 };
}

function sheep(): AnimalModel {
  const b = new ModelBuilder();
  b.add(ico(1), { at: [0, 0.56, -0.02], scale: [0.3, 0.26, 0.42] });
  b.add(box(), { at: [0, 0.68, 0.44], rot: [0.35, 0, 0], scale: [0.15, 0.17, 0.24] }, { color: DARK, tint: false });
  for (const s of [1, -1]) b.add(box(), { at: [s * 0.11, 0.74, 0.4], rot: [0, 0, s * 0.5], scale: [0.1, 0.04, 0.06] }, { color: DARK, tint: false, part: Part.Ear, pivot: [s * 0.06, 0.74, 0.4] });
  b.add(ico(0), { at: [0, 0.6, -0.42], scale: [0.07, 0.07, 0.07] });
  legs(b, { x: 0.13, zFront: 0.2, zBack: -0.22, hip: 0.36, width: 0.07, color: DARK, tint: false });
  return { geometry: b.build(), motion: Motion.Walker, headZ: 0.56, length: 1, centerY: 0.56 };
}

function wolf(): AnimalModel {
  const b = new ModelBuilder();
  b.add(box(), { at: [0, 0.56, -0.02], scale: [0.22, 0.24, 0.6] });
  b.add(box(), { at: [0, 0.6, 0.22], scale: [0.26, 0.3, 0.22] });
  b.add(box(), { at: [0, 0.7, 0.42], scale: [0.19, 0.19, 0.2] });
  b.add(box(), { at: [0, 0.65, 0.57], scale: [0.09, 0.09, 0.16] }, { color: 0xb0a090 });
  b.add(box(), { at: [0, 0.665, 0.655], scale: [0.04, 0.035, 0.03] }, { color: 0x111111, tint: false });
  for (const s of [1, -1]) b.add(new THREE.ConeGeometry(1, 1, 4), { at: [s * 0.06, 0.84, 0.4], scale: [0.04, 0.1, 0.04] }, { part: Part.Ear, pivot: [s * 0.06, 0.79, 0.4] });
  b.add(cylinder(0.6, 1, 5), { at: [0, 0.5, -0.48], rot: [-2.3, 0, 0], scale: [0.045, 0.38, 0.045] }, { part: Part.Tail, pivot: [0, 0.62, -0.32], color: 0x9a9a9a });
  legs(b, { x: 0.085, zFront: 0.22, zBack: -0.24, hip: 0.45, width: 0.065 });
  return { geometry: b.build(), motion: Motion.Walker, headZ: 0.66, length: 1, centerY: 0.56 };
}

function zebra(): AnimalModel {
  const b = new ModelBuilder();
  b.add(sphere(8, 6), { at: [0, 0.86, -0.02], scale: [0.17, 0.19, 0.38] });
  b.add(box(), { at: [0, 1.08, 0.34], rot: [-0.6, 0, 0], scale: [0.11, 0.38, 0.17] });
  b.add(box(), { at: [0, 1.16, 0.33], rot: [-0.6, 0, 0], scale: [0.03, 0.4, 0.09] }, { color: 0x151515, tint: false });
  b.add(box(), { at: [0, 1.22, 0.52], rot: [0.5, 0, 0], scale: [0.11, 0.13, 0.32] });
  b.add(box(), { at: [0, 1.12, 0.66], rot: [0.5, 0, 0], scale: [0.1, 0.1, 0.08] }, { color: 0x151515, tint: false });
  for (const s of [1, -1]) b.add(new THREE.ConeGeometry(1, 1, 4), { at: [s * 0.04, 1.4, 0.44], scale: [0.03, 0.1, 0.03] }, { part: Part.Ear, pivot: [s * 0.04, 1.35, 0.44] });
  b.add(cylinder(0.5, 1, 4), { at: [0, 0.78, -0.47], rot: [-2.7, 0, 0], scale: [0.03, 0.4, 0.03] }, { part: Part.Tail, pivot: [0, 0.92, -0.38] });
  legs(b, { x: 0.1, zFront: 0.24, zBack: -0.24, hip: 0.72, width: 0.065 });
  b.add(box(), { at: [0.1, 0.03, 0.24], scale: [0.075, 0.06, 0.075] }, { part: Part.LegFrontLeft, pivot: [0.1, 0.72, 0.24], color: HOOF, tint: false });
  b.add(box(), { at: [-0.1, 0.03, 0.24], scale: [0.075, 0.06, 0.075] }, { part: Part.LegFrontRight, pivot: [-0.1, 0.72, 0.24], color: HOOF, tint: false });
  b.add(box(), { at: [0.1, 0.03, -0.24], scale: [0.075, 0.06, 0.075] }, { part: Part.LegBackLeft, pivot: [0.1, 0.72, -0.24], color: HOOF, tint: false });
  b.add(box(), { at: [-0.1, 0.03, -0.24], scale: [0.075, 0.06, 0.075] }, { part: Part.LegBackRight, pivot: [-0.1, 0.72, -0.24], color: HOOF, tint: false });
  return { geometry: b.build(), motion: Motion.Walker, headZ: 0.7, length: 1, centerY: 0.86 };
}

function lion(): AnimalModel {
  const b = new ModelBuilder();
  b.add(sphere(8, 6), { at: [0, 0.6, -0.04], scale: [0.17, 0.18, 0.4] });
  b.add(ico(1), { at: [0, 0.74, 0.36], scale: [0.2, 0.21, 0.16] }, { color: 0x8a5a30 });
  b.add(box(), { at: [0, 0.73, 0.46], scale: [0.17, 0.17, 0.17] });
  b.add(box(), { at: [0, 0.68, 0.56], scale: [0.1, 0.08, 0.08] }, { color: 0xd8c0a0 });
  b.add(box(), { at: [0, 0.7, 0.605], scale: [0.04, 0.03, 0.02] }, { color: 0x2a1a10, tint: false });
  b.add(cylinder(0.6, 1, 5), { at: [0, 0.5, -0.5], rot: [-2.2, 0, 0], scale: [0.03, 0.42, 0.03] }, { part: Part.Tail, pivot: [0, 0.64, -0.4] });
  b.add(ico(0), { at: [0, 0.36, -0.64], scale: [0.05, 0.05, 0.05] }, { part: Part.Tail, pivot: [0, 0.64, -0.4], color: 0x5a3a20 });
  legs(b, { x: 0.1, zFront: 0.22, zBack: -0.26, hip: 0.48, width: 0.085 });
  return { geometry: b.build(), motion: Motion.Walker, headZ: 0.6, length: 1, centerY: 0.6 };
}

function elephant(): AnimalModel {
  const b = new ModelBuilder();
  b.add(sphere(9, 7), { at: [0, 0.98, -0.04], scale: [0.3, 0.31, 0.42] });
  b.add(sphere(7, 6), { at: [0, 1.08, 0.42], scale: [0.19, 0.21, 0.19] });
  for (const s of [1, -1]) {
    b.add(cylinder(0.5, 0.5, 8), { at: [s * 0.2, 1.06, 0.36], rot: [0, 0, Math.PI / 2], scale: [0.34, 0.025, 0.3] }, { part: Part.Ear, pivot: [s * 0.16, 1.06, 0.4], color: 0xd8c8c8 });
    b.add(coneZ(5), { at: [s * 0.08, 0.86, 0.62], rot: [-0.5, 0, 0], scale: [0.025, 0.025, 0.22] }, { color: 0xf2ead8, tint: false });
  }
  b.add(cylinder(0.5, 0.8, 6), { at: [0, 0.72, 0.6], rot: [0.12, 0, 0], scale: [0.09, 0.62, 0.09] }, { part: Part.Trunk, pivot: [0, 1.0, 0.57] });
  b.add(cylinder(0.3, 0.6, 4), { at: [0, 0.85, -0.48], rot: [-2.8, 0, 0], scale: [0.04, 0.35, 0.04] }, { part: Part.Tail, pivot: [0, 1.0, -0.44] });
  legs(b, { x: 0.16, zFront: 0.2, zBack: -0.22, hip: 0.7, width: 0.19, round: true });
  return { geometry: b.build(), motion: Motion.Walker, headZ: 0.62, length: 1, centerY: 0.98 };
}

/** Build the model for `kind`; `lite` trades detail for speed in very large populations. */
export function buildModel(kind: string, lite = false): AnimalModel {
  const model = makeModel(kind, lite);
  model.thickness ??= thicknessOf(model.geometry);
  return model;
}

function thicknessOf(geometry: THREE.BufferGeometry): number {
  const box = new THREE.Box3().setFromBufferAttribute(geometry.getAttribute("position") as THREE.BufferAttribute);
  const size = box.getSize(new THREE.Vector3());
  return Math.max(Math.min(size.x, size.y), 0.02);
}

function makeModel(kind: string, lite: boolean): AnimalModel {
  switch (kind) {
    case "bird": return bird(lite);
    case "fish": return fish(lite);
    case "shark": return shark(lite);
    case "sheep": return lite ? walkerLite(0.8) : sheep();
    case "wolf": return lite ? walkerLite(0.85) : wolf();
    case "zebra": return lite ? walkerLite(1.2) : zebra();
    case "lion": return lite ? walkerLite(0.9) : lion();
    case "elephant": return lite ? walkerLite(1.3) : elephant();
    default: return bird(lite);
  }
}

export const MODEL_KINDS = ["bird", "fish", "shark", "sheep", "wolf", "zebra", "lion", "elephant"] as const;
