/**
 * Between the page and the world: which animal is under a pixel, where the cursor points,
 * and where an animal, a point or a species' centre is drawn.
 *
 * Clicks, the player's aim, the head labels and the browser tests' hook all ask these
 * questions; they live here so that each is answered one way, from the camera as drawn.
 */
import * as THREE from "three";
import type { SpeciesLayer } from "./animals";
import type { World } from "./world";

/** An animal under the cursor: its layer, its row in the layer's arrays and its uid. */
export interface Picked {
  layer: SpeciesLayer;
  index: number;
  uid: number;
}

/** A position on the page, in CSS pixels from its top-left corner. */
export interface PagePoint {
  x: number;
  y: number;
}

export class Screen {
  private readonly pointer = new THREE.Vector2();
  private readonly raycaster = new THREE.Raycaster();

  /**
   * @param layers the species drawn now (read at each call: a new scene replaces them)
   * @param surfaces the scenery a shot or a throw can aim at (terrain, water, shapes)
   */
  constructor(
    private readonly world: World,
    private readonly layers: () => SpeciesLayer[],
    private readonly surfaces: () => THREE.Object3D[],
  ) {}

  /** The animal drawn under a page position (the client coordinates of a click), if any. */
  pickAt(clientX: number, clientY: number): Picked | null {
    const rect = this.world.canvas.getBoundingClientRect();
    this.pointer.set(((clientX - rect.left) / rect.width) * 2 - 1, -((clientY - rect.top) / rect.height) * 2 + 1);
    this.raycaster.setFromCamera(this.pointer, this.world.camera);
    const pixelAngle = THREE.MathUtils.degToRad(this.world.camera.fov) / Math.max(rect.height, 1);
    let best: (Picked & { score: number }) | null = null;
    for (const layer of this.layers()) {
      const hit = layer.pick(this.raycaster.ray, pixelAngle);
      if (hit && (!best || hit.score < best.score)) best = { layer, index: hit.index, uid: hit.uid, score: hit.score };
    }
    return best && { layer: best.layer, index: best.index, uid: best.uid };
  }

  /** Where the cursor points: an animal, scenery, or the ground plane (50 m out when it points at the sky). */
  aimPoint(clientX: number, clientY: number): THREE.Vector3 {
    const animal = this.pickAt(clientX, clientY);
    if (animal) {
      const p = animal.layer.positions;
      return new THREE.Vector3(p[3 * animal.index], p[3 * animal.index + 1], p[3 * animal.index + 2]);
    }
    const hits = this.raycaster.intersectObjects(this.surfaces(), false);
    if (hits.length) return hits[0].point.clone();
    const plane = new THREE.Plane(new THREE.Vector3(0, 1, 0), -this.world.groundY);
    const point = new THREE.Vector3();
    if (this.raycaster.ray.intersectPlane(plane, point)) return point;
    return this.raycaster.ray.at(50, point);
  }

  /** Where the middle of the view points (the player panel's buttons aim there). */
  centerAim(): THREE.Vector3 {
    const rect = this.world.canvas.getBoundingClientRect();
    return this.aimPoint(rect.left + rect.width / 2, rect.top + rect.height / 2);
  }

  /** The animal drawn closest to the middle of the view, in front of the camera. */
  nearestToCenter(): { species: string; uid: number } | null {
    const cam = this.world.camera;
    cam.updateMatrixWorld();
    const e = new THREE.Matrix4().multiplyMatrices(cam.projectionMatrix, cam.matrixWorldInverse).elements;
    let best: { species: string; uid: number } | null = null;
    let bestD = Infinity;
    for (const layer of this.layers()) {
      const p = layer.positions;
      for (let i = 0; i < layer.count; i++) {
        const x = p[3 * i], y = p[3 * i + 1], z = p[3 * i + 2];
        const w = e[3] * x + e[7] * y + e[11] * z + e[15];
        if (w <= 0) continue;
        const nx = (e[0] * x + e[4] * y + e[8] * z + e[12]) / w;
        const ny = (e[1] * x + e[5] * y + e[9] * z + e[13]) / w;
        const d = nx * nx + ny * ny;
        if (d < bestD) {
          bestD = d;
          best = { species: layer.info.name, uid: layer.uids[i] };
        }
      }
    }
    return best;
  }

  /** Where an animal is drawn (null when it is off screen, behind the camera or unknown). */
  project(species: string, uid: number): PagePoint | null {
    const layer = this.layers().find((l) => l.info.name === species);
    const i = layer ? layer.indexOf(uid) : -1;
    if (!layer || i < 0) return null;
    return this.toPage(new THREE.Vector3(layer.positions[3 * i], layer.positions[3 * i + 1], layer.positions[3 * i + 2]));
  }

  /** Where a world point is drawn (null when it is off screen or behind the camera). */
  projectPoint(position: number[]): PagePoint | null {
    return this.toPage(new THREE.Vector3(position[0], position[1], position[2]));
  }

  /** Where a species' centre of mass is drawn (null when it is off screen or the species is empty). */
  centroid(species: string): PagePoint | null {
    const layer = this.layers().find((l) => l.info.name === species);
    if (!layer || !layer.count) return null;
    return this.toPage(layer.centre());
  }

  /** A world point's page position, from the camera as last drawn. */
  private toPage(world: THREE.Vector3): PagePoint | null {
    const p = world.project(this.world.camera);
    if (p.z > 1 || Math.abs(p.x) > 1 || Math.abs(p.y) > 1) return null;
    const rect = this.world.canvas.getBoundingClientRect();
    return { x: rect.left + ((p.x + 1) / 2) * rect.width, y: rect.top + ((1 - p.y) / 2) * rect.height };
  }
}
