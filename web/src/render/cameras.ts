/**
 * Three ways to look: `orbit` (OrbitControls around a target), `fly` (free
 * WASD + drag-to-look, for getting inside a flock) and `follow` (a chase camera
 * behind the selected animal, smoothed so that its jitter does not shake the view).
 */
import * as THREE from "three";
import { OrbitControls } from "three/addons/controls/OrbitControls.js";

export type CameraMode = "orbit" | "fly" | "follow";

export interface FollowTarget {
  position: THREE.Vector3;
  quaternion: THREE.Quaternion;
  scale: number;
}

export interface GroupFraming {
  /** Centre of mass of the group. */
  center: THREE.Vector3;
  /** Distance from the centre within which `share` of the members are. */
  radius: number;
  /** Camera distance at which the group spans `fill` of the visible view. */
  distance: number;
}

/**
 * How far to stand to show a group of `count` points: the group (its `share` closest
 * members to the centroid, so a few strays do not count) should span `fill` of the
 * visible view. `visible` is the part of the canvas height not hidden by panels; the
 * narrower of that height and the width decides.
 */
export function frameGroup(
  positions: ArrayLike<number>, count: number,
  options: { fovDeg: number; aspect: number; fill?: number; share?: number; minRadius?: number; visible?: number },
): GroupFraming | null {
  if (count <= 0) return null;
  const center = new THREE.Vector3();
  for (let i = 0; i < count; i++) {
    center.x += positions[3 * i];
    center.y += positions[3 * i + 1];
    center.z += positions[3 * i + 2];
  }
  center.divideScalar(count);
  if (![center.x, center.y, center.z].every(Number.isFinite)) return null;
  // Distances of (at most ~4,000 evenly picked) members, for the quantile.
  const stride = Math.max(1, Math.floor(count / 4000));
  const d: number[] = [];
  for (let i = 0; i < count; i += stride) {
    const dx = positions[3 * i] - center.x, dy = positions[3 * i + 1] - center.y, dz = positions[3 * i + 2] - center.z;
    d.push(Math.sqrt(dx * dx + dy * dy + dz * dz));
  }
  d.sort((a, b) => a - b);
  const share = options.share ?? 0.75;
  const radius = Math.max(d[Math.min(d.length - 1, Math.floor(share * (d.length - 1)))], options.minRadius ?? 1);
  const half = Math.tan(THREE.MathUtils.degToRad(options.fovDeg) / 2);
  const extent = Math.min(half * (options.visible ?? 1), half * options.aspect);
  const distance = radius / ((options.fill ?? 0.5) * extent);
  return { center, radius, distance };
}

export class CameraRig {
  readonly orbit: OrbitControls;
  mode: CameraMode = "orbit";
  private readonly keys = new Set<string>();
  private yaw = 0;
  private pitch = 0;
  private dragging = false;
  private lastX = 0;
  private lastY = 0;
  flySpeed = 20;
  followDistance = 8;
  private readonly followPos = new THREE.Vector3();
  private followInit = false;
  /** Set to true by the app while keys belong to player mode. */
  keysCaptured = false;
  /** Whether the user has moved the orbit camera since `resetUserMoved` (a glide never overrides them). */
  userMoved = false;
  private glide: { fromPos: THREE.Vector3; fromTarget: THREE.Vector3; toPos: THREE.Vector3; toTarget: THREE.Vector3; t: number; start: number; duration: number } | null = null;

  constructor(private readonly camera: THREE.PerspectiveCamera, dom: HTMLElement) {
    this.orbit = new OrbitControls(camera, dom);
    this.orbit.enableDamping = true;
    this.orbit.dampingFactor = 0.08;
    this.orbit.maxPolarAngle = Math.PI * 0.495;
    this.orbit.addEventListener("start", () => {
      this.userMoved = true;
      this.glide = null;
    });
    window.addEventListener("keydown", (e) => {
      if (isTyping(e)) return;
      this.keys.add(e.code);
    });
    window.addEventListener("keyup", (e) => this.keys.delete(e.code));
    window.addEventListener("blur", () => this.keys.clear());
    dom.addEventListener("pointerdown", (e) => {
      if (this.mode !== "fly") return;
      this.dragging = true;
      this.lastX = e.clientX;
      this.lastY = e.clientY;
    });
    window.addEventListener("pointerup", () => { this.dragging = false; });
    window.addEventListener("pointermove", (e) => {
      if (!this.dragging || this.mode !== "fly") return;
      this.yaw -= (e.clientX - this.lastX) * 0.004;
      this.pitch = THREE.MathUtils.clamp(this.pitch - (e.clientY - this.lastY) * 0.004, -1.5, 1.5);
      this.lastX = e.clientX;
      this.lastY = e.clientY;
    });
    dom.addEventListener("wheel", (e) => {
      if (this.mode === "fly") this.flySpeed = THREE.MathUtils.clamp(this.flySpeed * (e.deltaY > 0 ? 0.85 : 1.18), 0.5, 2000);
      if (this.mode === "follow") this.followDistance = THREE.MathUtils.clamp(this.followDistance * (e.deltaY > 0 ? 1.12 : 0.89), 0.5, 5000);
    }, { passive: true });
  }

  /** Point the orbit camera at a box so that all of it is in view. */
  frame(min: THREE.Vector3, max: THREE.Vector3): void {
    const center = new THREE.Vector3().addVectors(min, max).multiplyScalar(0.5);
    const radius = Math.max(new THREE.Vector3().subVectors(max, min).length() / 2, 5);
    const distance = radius / Math.sin(THREE.MathUtils.degToRad(this.camera.fov / 2)) * 0.9;
    this.orbit.target.copy(center);
    this.camera.position.copy(center).add(new THREE.Vector3(0.55, 0.45, 0.7).normalize().multiplyScalar(distance));
    this.camera.lookAt(center);
    this.orbit.update();
    this.flySpeed = Math.max(radius / 4, 2);
  }

  resetUserMoved(): void {
    this.userMoved = false;
    this.glide = null;
  }

  /** Move the orbit camera smoothly to `position` looking at `target` (the user's first drag stops it). */
  glideTo(position: THREE.Vector3, target: THREE.Vector3, duration = 1.5): void {
    if (this.mode !== "orbit" || this.userMoved) return;
    this.glide = {
      fromPos: this.camera.position.clone(), fromTarget: this.orbit.target.clone(),
      toPos: position.clone(), toTarget: target.clone(), t: 0, start: performance.now(), duration,
    };
  }

  /**
   * Move the orbit camera and its target together toward `target` (smoothed over about half
   * a second), keeping the view's angle and distance: a framed group stays in view as it
   * travels. The camera stays at or above `minY`. Nothing happens once the user has moved
   * the camera, or during a glide.
   */
  drift(target: THREE.Vector3, dt: number, minY = -Infinity): void {
    if (this.mode !== "orbit" || this.userMoved || this.glide) return;
    const delta = target.clone().sub(this.orbit.target).multiplyScalar(1 - Math.exp(-dt / 0.5));
    // Never down into the ground or the water (`minY`): the view tilts instead.
    if (this.camera.position.y + delta.y < minY) delta.y = Math.min(0, minY - this.camera.position.y);
    this.orbit.target.add(delta);
    this.camera.position.add(delta);
  }

  /** End a glide at once, where it was heading. */
  finishGlide(): void {
    if (this.glide) this.lookFrom(this.glide.toPos, this.glide.toTarget);
  }

  /** Put the orbit camera at `position`, orbiting (and looking at) `target`. */
  lookFrom(position: THREE.Vector3, target: THREE.Vector3): void {
    this.glide = null;
    this.orbit.target.copy(target);
    this.camera.position.copy(position);
    this.camera.lookAt(target);
    this.orbit.update();
    this.flySpeed = Math.max(position.distanceTo(target) / 4, 2);
  }

  setMode(mode: CameraMode): void {
    this.mode = mode;
    this.glide = null;
    if (mode !== "orbit") this.userMoved = true;
    this.orbit.enabled = mode === "orbit";
    if (mode === "fly") {
      const e = new THREE.Euler().setFromQuaternion(this.camera.quaternion, "YXZ");
      this.yaw = e.y;
      this.pitch = e.x;
    }
    if (mode === "orbit") {
      // Continue orbiting around what is in front of the camera.
      const ahead = new THREE.Vector3(0, 0, -1).applyQuaternion(this.camera.quaternion);
      const d = Math.max(this.camera.position.distanceTo(this.orbit.target), 10);
      this.orbit.target.copy(this.camera.position).addScaledVector(ahead, d);
      this.orbit.update();
    }
    this.followInit = false;
  }

  update(dt: number, target: FollowTarget | null): void {
    if (this.mode === "orbit" && this.glide) {
      const g = this.glide;
      // Wall-clock progress: a slow renderer should not stretch the glide.
      g.t = Math.min((performance.now() - g.start) / 1000, g.duration);
      const k = THREE.MathUtils.smootherstep(g.t / g.duration, 0, 1);
      this.camera.position.lerpVectors(g.fromPos, g.toPos, k);
      this.orbit.target.lerpVectors(g.fromTarget, g.toTarget, k);
      this.camera.lookAt(this.orbit.target);
      if (g.t >= g.duration) this.glide = null;
      this.orbit.update();
    } else if (this.mode === "orbit") {
      this.orbit.update();
    } else if (this.mode === "fly") {
      this.camera.quaternion.setFromEuler(new THREE.Euler(this.pitch, this.yaw, 0, "YXZ"));
      if (!this.keysCaptured) {
        const move = new THREE.Vector3(
          (this.keys.has("KeyD") ? 1 : 0) - (this.keys.has("KeyA") ? 1 : 0),
          (this.keys.has("KeyE") || this.keys.has("Space") ? 1 : 0) - (this.keys.has("KeyQ") ? 1 : 0),
          (this.keys.has("KeyS") ? 1 : 0) - (this.keys.has("KeyW") ? 1 : 0),
        );
        if (move.lengthSq() > 0) {
          const boost = this.keys.has("ShiftLeft") || this.keys.has("ShiftRight") ? 4 : 1;
          move.normalize().multiplyScalar(this.flySpeed * boost * dt).applyQuaternion(this.camera.quaternion);
          this.camera.position.add(move);
        }
      }
    } else if (this.mode === "follow" && target) {
      const back = new THREE.Vector3(0, 0, -1).applyQuaternion(target.quaternion);
      const distance = Math.max(this.followDistance, target.scale * 3);
      const wanted = target.position.clone()
        .addScaledVector(back, distance)
        .add(new THREE.Vector3(0, distance * 0.35, 0));
      if (!this.followInit) {
        this.followPos.copy(wanted);
        this.followInit = true;
      }
      this.followPos.lerp(wanted, 1 - Math.exp(-dt * 4));
      this.camera.position.copy(this.followPos);
      this.camera.lookAt(target.position);
      this.orbit.target.copy(target.position);
    }
  }
}

export function isTyping(e: KeyboardEvent): boolean {
  const t = e.target as HTMLElement | null;
  return !!t && (t.tagName === "INPUT" || t.tagName === "SELECT" || t.tagName === "TEXTAREA" || t.isContentEditable);
}
