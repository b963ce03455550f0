/**
 * The player: a figure the user walks over the ground with W A S D, who fires and
 * throws apples into the scene.
 *
 * The page moves the figure itself (so walking feels immediate) and tells the
 * simulation where it stands at most ten times a second; shots and throws are sent as
 * messages and the simulation decides what they hit. A replay shows what was recorded,
 * so nothing here acts while the timeline is active.
 */
import * as THREE from "three";
import type { ClientMessage, SceneMessage, Vec3 } from "./protocol/messages";
import type { CameraRig } from "./render/cameras";
import type { EntityView } from "./render/entities";
import type { World } from "./render/world";
import type { Timeline } from "./ui/timeline";

/** What the player needs from the app around it. */
export interface PlayerHost {
  world: World;
  rig: CameraRig;
  entities: EntityView;
  timeline: Timeline;
  /** The scene as last received (it says which player actions the scenario offers). */
  scene(): SceneMessage | null;
  send(message: ClientMessage): boolean;
  /** The height of the ground (terrain, or the world's floor) under a point. */
  groundHeight(x: number, z: number): number;
}

/** Milliseconds between two positions sent while walking. */
const SEND_INTERVAL_MS = 100;

export class Player {
  /** Walking with the keys, aiming with the mouse (the camera stops taking W A S D). */
  active = false;
  readonly position = new THREE.Vector3();
  private readonly marker = makeMarker();
  private readonly keys = new Set<string>();
  private lastSend = 0;

  constructor(private readonly host: PlayerHost) {
    this.marker.visible = false;
    host.world.scene.add(this.marker);
  }

  /** Stand in the middle of a new scenario's ground. */
  placeAtCenter(): void {
    const { boundsMin, boundsMax } = this.host.world;
    const c = new THREE.Vector3().addVectors(boundsMin, boundsMax).multiplyScalar(0.5);
    this.position.set(c.x, this.host.groundHeight(c.x, c.z), c.z);
  }

  setActive(on: boolean): void {
    if (on && this.host.timeline.active) return;
    // Take over the player where the simulation has it standing.
    if (on && this.host.entities.playerPosition) this.position.copy(this.host.entities.playerPosition);
    this.active = on;
    this.host.rig.keysCaptured = on;
    this.marker.visible = on;
    document.getElementById("player")?.classList.toggle("active", on);
    document.getElementById("player-panel")?.classList.toggle("hidden", !on);
    document.body.classList.toggle("aiming", on);
  }

  press(code: string): void {
    this.keys.add(code);
  }

  release(code: string): void {
    this.keys.delete(code);
  }

  /** Forget every held key (the window lost focus: its key-up events will not come). */
  releaseAll(): void {
    this.keys.clear();
  }

  /** Fire from the player's eyes (or the camera, when not playing) toward a world point. */
  fireAt(target: THREE.Vector3): void {
    if (this.host.timeline.active) return;
    const origin = this.active
      ? this.position.clone().add(new THREE.Vector3(0, 1.6, 0))
      : this.host.world.camera.position.clone();
    const direction = target.clone().sub(origin);
    if (direction.lengthSq() < 1e-9) return;
    direction.normalize();
    this.host.send({ type: "fire", origin: vec(origin), direction: vec(direction) });
  }

  /** Drop an apple above a point, or (when playing) throw one from the hand so that it lands there. */
  appleAt(target: THREE.Vector3, drop: boolean): void {
    if (this.host.timeline.active) return;
    if (drop || !this.active) {
      this.host.send({ type: "throw_apple", origin: vec(target.clone().add(new THREE.Vector3(0, 2, 0))), velocity: [0, 0, 0] });
      return;
    }
    // A ballistic throw: the flight time grows with the distance, and the upward speed
    // cancels what gravity takes over that time.
    const origin = this.position.clone().add(new THREE.Vector3(0, 1.5, 0));
    const delta = target.clone().sub(origin);
    const flight = THREE.MathUtils.clamp(delta.length() / 12, 0.4, 2.5);
    const velocity = delta.divideScalar(flight).add(new THREE.Vector3(0, 0.5 * 9.81 * flight, 0));
    this.host.send({ type: "throw_apple", origin: vec(origin), velocity: vec(velocity) });
  }

  /** Walk with the held keys, relative to where the camera looks, and keep the marker on the ground. */
  update(dt: number): void {
    if (!this.active) return;
    const { world, entities } = this.host;
    const forward = new THREE.Vector3();
    world.camera.getWorldDirection(forward);
    forward.y = 0;
    if (forward.lengthSq() < 1e-6) forward.set(0, 0, -1);
    forward.normalize();
    const right = new THREE.Vector3().crossVectors(forward, new THREE.Vector3(0, 1, 0));
    const move = new THREE.Vector3()
      .addScaledVector(forward, (this.keys.has("KeyW") ? 1 : 0) - (this.keys.has("KeyS") ? 1 : 0))
      .addScaledVector(right, (this.keys.has("KeyD") ? 1 : 0) - (this.keys.has("KeyA") ? 1 : 0));
    const size = new THREE.Vector3().subVectors(world.boundsMax, world.boundsMin);
    if (move.lengthSq() > 0) {
      const speed = Math.max(4, Math.max(size.x, size.z) / 30);
      const p = this.position;
      p.addScaledVector(move.normalize(), speed * dt);
      p.x = THREE.MathUtils.clamp(p.x, world.boundsMin.x, world.boundsMax.x);
      p.z = THREE.MathUtils.clamp(p.z, world.boundsMin.z, world.boundsMax.z);
      p.y = this.host.groundHeight(p.x, p.z);
      const now = performance.now();
      if (this.host.scene()?.player.move_player && now - this.lastSend > SEND_INTERVAL_MS) {
        this.lastSend = now;
        this.host.send({ type: "move_player", position: vec(p), direction: vec(forward) });
      }
    }
    this.marker.position.copy(this.position);
    this.marker.scale.setScalar(Math.max(1, Math.max(size.x, size.z) / 150));
    // Where the simulation streams its player, the figure is drawn there: keep only the ring.
    const body = this.marker.getObjectByName("player-body");
    if (body) body.visible = !entities.playerPosition;
  }
}

function vec(v: THREE.Vector3): Vec3 {
  return [v.x, v.y, v.z];
}

/** An orange figure standing in a yellow ring, about as tall as a person. */
function makeMarker(): THREE.Group {
  const group = new THREE.Group();
  const body = new THREE.Mesh(new THREE.CapsuleGeometry(0.35, 1.0, 4, 8), new THREE.MeshLambertMaterial({ color: 0xff8c42 }));
  body.position.y = 0.85;
  body.name = "player-body";
  const ring = new THREE.Mesh(
    new THREE.RingGeometry(0.6, 0.8, 32).rotateX(-Math.PI / 2),
    new THREE.MeshBasicMaterial({ color: 0xffd166, transparent: true, opacity: 0.7, side: THREE.DoubleSide }),
  );
  ring.position.y = 0.03;
  group.add(body, ring);
  group.name = "player";
  return group;
}
