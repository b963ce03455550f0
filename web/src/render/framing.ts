/**
 * The orbit camera's automatic framing: when a scenario starts (or on "Frame all") it
 * aims at the animals once a frame with animals arrives, looks again a few simulated
 * seconds later (a group spawned one way soon looks another), and drifts along with the
 * framed group until the user moves the camera. A scenario that composes its own opening
 * camera (the scene's `view`) starts there instead, and "Frame all" still frames the
 * animals. The app tells it about scenes and frames; it reads the species layers and
 * moves the camera rig.
 */
import * as THREE from "three";
import type { SceneView } from "../protocol/messages";
import type { SpeciesLayer } from "./animals";
import { frameGroup, type CameraRig } from "./cameras";
import { Motion } from "./models";
import type { World } from "./world";

/** Simulated seconds after the first framing at which the camera frames the animals again. */
const REFRAME_AFTER_S = 3;

/** The camera as last framed on the animals: target, position, group radius, the species framed. */
export interface Framed {
  target: number[];
  position: number[];
  radius: number;
  species: string;
}

/** What the framing needs from the app. */
export interface FramingHost {
  world: World;
  rig: CameraRig;
  layers(): SpeciesLayer[];
  /** Height below which the camera must not go at (x, z): the ground or the water surface. */
  floorAt(x: number, z: number): number;
  /** The band of the canvas (client pixels) that the top bar and the chart panel leave free. */
  freeBand(rect: DOMRect): { top: number; bottom: number };
}

export class AutoFraming {
  /** Set by a new scenario: aim the camera at the animals once a frame with animals arrives. */
  private frameAnimals = false;
  /**
   * Simulated time at which the camera frames the animals once more, gliding there
   * (null: not planned). A group often looks different a few seconds after it was
   * spawned (a flock spreads, then gathers); the second look shows what it became.
   * Any camera move by the user cancels it.
   */
  private reframeAt: number | null = null;
  /**
   * What the framed view keeps following until the user moves the camera: the species
   * framed (and whether the other species' centre counted), and the orbit target's offset
   * from that centre when it was framed.
   */
  private anchor: { species: string; withOthers: boolean; offset: THREE.Vector3 } | null = null;
  private readonly anchorTarget = new THREE.Vector3();
  private anchorValid = false;
  /** The scenario's opening view while it is shown: where it looks from, the point it centres, and the orbit target last placed (to skip a placement that moves nothing). */
  private opening: { position: THREE.Vector3; target: THREE.Vector3; placed: THREE.Vector3 | null } | null = null;
  /** The camera as last framed on the animals (tests): target, distance and group radius. */
  framed: Framed | null = null;

  constructor(private readonly host: FramingHost) {}

  /** Frame the animals again at the next frame (the user asked: "Frame all"). */
  request(): void {
    this.frameAnimals = true;
    this.reframeAt = null;
    this.opening = null;
  }

  /**
   * A new scenario: forget what was followed, then take the scenario's opening camera
   * (`view`) or, without one, frame its animals when they arrive.
   */
  reset(view: SceneView | null = null): void {
    this.anchor = null;
    this.anchorValid = false; // the last scenario's group must not pull the new view until its first frame
    this.framed = null;
    if (!view) {
      this.request();
      return;
    }
    this.frameAnimals = false;
    this.reframeAt = null;
    this.opening = { position: new THREE.Vector3(...view.position), target: new THREE.Vector3(...view.target), placed: null };
    this.placeOpening();
  }

  /**
   * The panels or the canvas changed size (the app's resize observers call this). The chart
   * panel settles only after a scene arrives, as its legends fill in, so an opening view still
   * shown is placed again in the band the panels now leave free.
   */
  panelsMoved(): void {
    if (this.opening && !this.host.rig.userMoved) this.placeOpening();
  }

  /** Look from the opening view's position with its target in the middle of the free band. */
  private placeOpening(): void {
    const opening = this.opening;
    if (!opening) return;
    const target = this.freeMiddle(opening.position, opening.target);
    if (opening.placed && opening.placed.distanceToSquared(target) < 1e-8) return;
    opening.placed = target;
    this.host.rig.lookFrom(opening.position, target);
  }

  /** After a frame at simulated `time` is applied to the layers. */
  onFrame(time: number): void {
    if (this.frameAnimals) {
      const view = this.animalView();
      if (view) {
        this.frameAnimals = false;
        this.host.rig.lookFrom(view.position, view.target);
        this.reframeAt = time + REFRAME_AFTER_S;
        this.anchor = view.anchor;
      }
    } else if (this.reframeAt !== null && time >= this.reframeAt) {
      this.reframeAt = null;
      const view = this.animalView();
      if (view && !this.host.rig.userMoved) {
        this.host.rig.glideTo(view.position, view.target);
        this.anchor = view.anchor;
      }
    }
    this.anchorValid = false;
    if (this.anchor && !this.host.rig.userMoved) {
      const centre = this.groupCentre(this.anchor.species, this.anchor.withOthers);
      if (centre) {
        this.anchorTarget.copy(centre).add(this.anchor.offset);
        this.anchorValid = true;
      }
    }
  }

  /** Centre of mass of a species, or (`withOthers`) the midpoint between it and the other species' centre. */
  private groupCentre(species: string, withOthers: boolean): THREE.Vector3 | null {
    const main = this.host.layers().find((l) => l.info.name === species);
    if (!main || !main.count) return null;
    const c = main.centre();
    const others = withOthers ? this.othersCentre(main) : null;
    return others ? c.lerp(others, 0.5) : c;
  }

  /** The mean of the centres of every species but `main` that has animals (null: none has). */
  private othersCentre(main: SpeciesLayer): THREE.Vector3 | null {
    const others = this.host.layers().filter((l) => l !== main && l.count);
    if (!others.length) return null;
    return others.reduce((sum, l) => sum.add(l.centre()), new THREE.Vector3()).divideScalar(others.length);
  }

  /**
   * The view that frames the main species (the most numerous): the orbit target on its
   * centre of mass, from a distance at which the group fills about half of the part of
   * the view that the panels leave free (closer when single animals would be specks),
   * from an angle that suits how it moves (a little below flyers, so that they are seen
   * against the sky; steeply down through the water onto swimmers), and with another
   * species that is not far beside it. `anchor` is what the view keeps following until
   * the user moves the camera. Null while there is no animal to frame yet.
   */
  private animalView(): { position: THREE.Vector3; target: THREE.Vector3; anchor: { species: string; withOthers: boolean; offset: THREE.Vector3 } } | null {
    let main: SpeciesLayer | null = null;
    for (const layer of this.host.layers()) if (layer.count > (main?.count ?? 0)) main = layer;
    if (!main) return null;
    const cam = this.host.world.camera;
    const rect = this.host.world.canvas.getBoundingClientRect();
    const height = Math.max(rect.height, 1);
    const { top, bottom } = this.host.freeBand(rect);
    const visible = THREE.MathUtils.clamp((bottom - top) / height, 0.3, 1);
    const framing = frameGroup(main.positions, main.count, {
      fovDeg: cam.fov, aspect: cam.aspect, fill: 0.55, share: 0.7, visible, minRadius: Math.max(main.info.scale * 2, 1),
    });
    if (!framing) return null;
    // Small animals in a wide group would be specks: come closer (up to 40 %) until one
    // body length is about 12 pixels, letting the group fill more than half the view.
    const pixels = 12;
    const near = (main.info.scale * height) / (2 * Math.tan(THREE.MathUtils.degToRad(cam.fov) / 2) * pixels);
    framing.distance = Math.min(framing.distance, Math.max(near, 0.6 * framing.distance));
    const motion = main.model.motion;
    // A flat group (a 2D scene: every animal at one height) is a line seen from the side:
    // look down on it instead.
    let low = Infinity, high = -Infinity;
    const step = Math.max(1, Math.floor(main.count / 4000));
    for (let i = 0; i < main.count; i += step) {
      const y = main.positions[3 * i + 1];
      low = Math.min(low, y);
      high = Math.max(high, y);
    }
    const flat = high - low < 0.05 * framing.radius;
    const elevation = THREE.MathUtils.degToRad(
      flat ? 60 : motion === Motion.Flyer ? -7 : motion === Motion.Swimmer || motion === Motion.Shark ? 42 : motion === Motion.Walker ? 28 : 25,
    );
    // From the sun's side (lit faces, no glare off the water), a little to the right of it.
    let azimuth = Math.atan2(0.55, 0.7);
    let center = framing.center;
    let distance = framing.distance;
    let withOthers = false;
    // Other species (predators, prey) not far from the main group join the picture: the
    // camera looks across the line between the two groups, from the sunnier side, far
    // enough back for both to fit side by side, unless that would shrink the main group
    // to a third of its size.
    const others = this.othersCentre(main);
    if (others) {
      const apart = others.sub(framing.center);
      const across = Math.hypot(apart.x, apart.z);
      const wide = Math.tan(THREE.MathUtils.degToRad(cam.fov) / 2) * cam.aspect;
      const needed = (across / 2 + 1.25 * framing.radius) / (0.75 * wide);
      if (across > framing.radius && needed <= 3 * framing.distance) {
        withOthers = true;
        center = framing.center.clone().addScaledVector(apart, 0.5);
        distance = Math.max(distance, needed);
        const sunny = new THREE.Vector2(Math.sin(azimuth), Math.cos(azimuth));
        const side = new THREE.Vector2(-apart.z, apart.x).divideScalar(across);
        if (side.dot(sunny) < 0) side.negate();
        azimuth = Math.atan2(side.x, side.y);
      }
    }
    const back = new THREE.Vector3(Math.sin(azimuth) * Math.cos(elevation), Math.sin(elevation), Math.cos(azimuth) * Math.cos(elevation));
    const position = center.clone().addScaledVector(back, distance);
    // Stay above the ground and the water.
    const floor = this.host.floorAt(position.x, position.z);
    const clearance = Math.max(main.info.scale * 2, 1.5);
    if (position.y < floor + clearance) position.y = floor + clearance;
    let target: THREE.Vector3;
    if (position.y <= center.y) {
      // The orbit controls keep the camera above its target: look level from below the
      // group, which then shows above the middle of the view, against the sky.
      target = new THREE.Vector3(center.x, position.y, center.z);
    } else {
      // Put the group in the middle of the free part of the view, not behind the panels.
      target = this.freeMiddle(position, center);
    }
    this.framed = { target: target.toArray(), position: position.toArray(), radius: framing.radius, species: main.info.name };
    return { position, target, anchor: { species: main.info.name, withOthers, offset: target.clone().sub(center) } };
  }

  /**
   * The orbit target that shows `center`, seen from `position`, in the middle of the part of
   * the view the panels leave free rather than in the middle of the canvas: the target moves
   * down (along the camera's up) by the screen offset of that middle.
   */
  private freeMiddle(position: THREE.Vector3, center: THREE.Vector3): THREE.Vector3 {
    const rect = this.host.world.canvas.getBoundingClientRect();
    const height = Math.max(rect.height, 1);
    const { top, bottom } = this.host.freeBand(rect);
    const middle = 1 - 2 * ((top + bottom) / 2 - rect.top) / height;
    const forward = center.clone().sub(position).normalize();
    const up = new THREE.Vector3(0, 1, 0).addScaledVector(forward, -forward.y).normalize();
    const half = Math.tan(THREE.MathUtils.degToRad(this.host.world.camera.fov) / 2);
    return center.clone().addScaledVector(up, -middle * position.distanceTo(center) * half);
  }

  /** Until the user takes the camera, the framed view drifts along with the animals (`Infinity`: settle). */
  drift(dt: number): void {
    if (!this.anchorValid) return;
    const cam = this.host.world.camera.position;
    this.host.rig.drift(this.anchorTarget, dt, this.host.floorAt(cam.x, cam.z) + 1.5);
  }
}
