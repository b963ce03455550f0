/**
 * Debug drawing for the selected animal: its field of view (a spherical sector
 * of `fov_deg` and `view_distance`), one arrow per behaviour whose length is
 * that behaviour's direction desire (the thesis' result semantics, seed 000
 * §4.4), a label with its priority, and the merged desired velocity next to
 * the actual velocity. The arrows are world-space, anchored on the animal.
 */
import * as THREE from "three";
import type { InspectMessage } from "../protocol/messages";

/** Distinct, readable colours for behaviour arrows (by position in the list). */
export const BEHAVIOR_COLORS = [
  "#ff6b6b", "#ffd166", "#06d6a0", "#4cc9f0", "#b388ff", "#ff9f1c", "#f15bb5", "#9ef01a", "#00bbf9", "#e07a5f",
];

function fovGeometry(fovDeg: number): { lines: THREE.BufferGeometry; fan: THREE.BufferGeometry } {
  const half = THREE.MathUtils.degToRad(Math.min(Math.max(fovDeg, 1), 360) / 2);
  const pts: number[] = [];
  const dir = (theta: number, phi: number) => [Math.sin(theta) * Math.cos(phi), Math.sin(theta) * Math.sin(phi), Math.cos(theta)];
  const meridians = 12, steps = 24;
  for (let m = 0; m < meridians; m++) {
    const phi = (m / meridians) * Math.PI * 2;
    for (let s = 0; s < steps; s++) pts.push(...dir((s / steps) * half, phi), ...dir(((s + 1) / steps) * half, phi));
    if (half < Math.PI - 1e-3) pts.push(0, 0, 0, ...dir(half, phi));
  }
  if (half < Math.PI - 1e-3) {
    const ring = 48;
    for (let r = 0; r < ring; r++) pts.push(...dir(half, (r / ring) * Math.PI * 2), ...dir(half, ((r + 1) / ring) * Math.PI * 2));
  }
  const lines = new THREE.BufferGeometry();
  lines.setAttribute("position", new THREE.Float32BufferAttribute(pts, 3));
  // A translucent horizontal slice makes the angle readable at a glance.
  const fan: number[] = [];
  const segs = 48;
  for (let s = 0; s < segs; s++) {
    const a0 = -half + (2 * half * s) / segs, a1 = -half + (2 * half * (s + 1)) / segs;
    fan.push(0, 0, 0, Math.sin(a0), 0, Math.cos(a0), Math.sin(a1), 0, Math.cos(a1));
  }
  const fanGeometry = new THREE.BufferGeometry();
  fanGeometry.setAttribute("position", new THREE.Float32BufferAttribute(fan, 3));
  return { lines, fan: fanGeometry };
}

export class SelectionOverlay {
  readonly group = new THREE.Group();
  private readonly fov = new THREE.Group();
  private fovDeg = -1;
  private arrows: THREE.ArrowHelper[] = [];
  private readonly velocity = new THREE.ArrowHelper(new THREE.Vector3(0, 0, 1), new THREE.Vector3(), 1, 0x9aa5b1);
  private readonly desired = new THREE.ArrowHelper(new THREE.Vector3(0, 0, 1), new THREE.Vector3(), 1, 0xffffff);
  private labels: HTMLDivElement[] = [];
  private inspect: InspectMessage | null = null;
  private readonly tip = new THREE.Vector3();

  constructor(private readonly labelLayer: HTMLElement) {
    this.group.name = "selection";
    this.group.add(this.fov, this.velocity, this.desired);
    this.group.visible = false;
  }

  setInspect(inspect: InspectMessage | null): void {
    this.inspect = inspect && inspect.alive ? inspect : null;
    if (!this.inspect) this.hide();
  }

  hide(): void {
    this.group.visible = false;
    for (const label of this.labels) label.style.display = "none";
  }

  private ensureFov(fovDeg: number): void {
    if (Math.abs(fovDeg - this.fovDeg) < 0.5) return;
    this.fovDeg = fovDeg;
    for (const child of [...this.fov.children]) {
      const m = child as THREE.Mesh;
      m.geometry.dispose();
      (m.material as THREE.Material).dispose();
    }
    this.fov.clear();
    const { lines, fan } = fovGeometry(fovDeg);
    this.fov.add(new THREE.LineSegments(lines, new THREE.LineBasicMaterial({ color: 0x7fdbff, transparent: true, opacity: 0.22, depthWrite: false })));
    this.fov.add(new THREE.Mesh(fan, new THREE.MeshBasicMaterial({ color: 0x7fdbff, transparent: true, opacity: 0.1, side: THREE.DoubleSide, depthWrite: false })));
  }

  /**
   * Place everything on the animal. `position`/`quaternion` come from the latest
   * frame (smooth, every frame); the behaviour data from the latest inspect message.
   */
  update(position: THREE.Vector3, quaternion: THREE.Quaternion, scale: number, camera: THREE.Camera, canvas: HTMLCanvasElement): void {
    const info = this.inspect;
    if (!info) return;
    this.group.visible = true;
    const view = info.view_distance ?? scale * 10;
    this.ensureFov(info.fov_deg ?? 360);
    this.fov.position.copy(position);
    this.fov.quaternion.copy(quaternion);
    this.fov.scale.setScalar(Math.max(view, 1e-3));

    const reach = Math.max(view * 0.4, scale * 3);
    const behaviors = info.behaviors ?? [];
    while (this.arrows.length < behaviors.length) {
      const color = BEHAVIOR_COLORS[this.arrows.length % BEHAVIOR_COLORS.length];
      const arrow = new THREE.ArrowHelper(new THREE.Vector3(0, 0, 1), new THREE.Vector3(), 1, color);
      this.arrows.push(arrow);
      this.group.add(arrow);
      const label = document.createElement("div");
      label.className = "arrow-label";
      label.style.borderColor = color;
      this.labelLayer.appendChild(label);
      this.labels.push(label);
    }
    const rect = canvas.getBoundingClientRect();
    const placed: { x: number; y: number }[] = [];
    for (let i = 0; i < this.arrows.length; i++) {
      const arrow = this.arrows[i];
      const label = this.labels[i];
      const b = behaviors[i];
      const length = b ? b.direction_desire * reach : 0;
      const dir = b ? new THREE.Vector3(...b.direction) : new THREE.Vector3();
      if (!b || length < 1e-4 || dir.lengthSq() < 1e-12) {
        arrow.visible = false;
        label.style.display = "none";
        continue;
      }
      dir.normalize();
      arrow.visible = true;
      arrow.position.copy(position);
      arrow.setDirection(dir);
      arrow.setLength(length, Math.min(length * 0.3, reach * 0.12), Math.min(length * 0.15, reach * 0.06));
      this.tip.copy(dir).multiplyScalar(length).add(position).project(camera);
      if (this.tip.z > 1) {
        label.style.display = "none";
        continue;
      }
      label.style.display = "block";
      label.textContent = `${b.name} · p${b.priority}`;
      // Short arrows end close together: stack their labels instead of overprinting them.
      const x = ((this.tip.x + 1) / 2) * rect.width + 6;
      let y = ((1 - this.tip.y) / 2) * rect.height - 8;
      while (placed.some((p) => Math.abs(p.x - x) < 120 && Math.abs(p.y - y) < 17)) y += 17;
      placed.push({ x, y });
      label.style.transform = `translate(${x}px, ${y}px)`;
    }
    // Velocity and desired velocity on one scale, the longer of the two spanning `reach`.
    const v = new THREE.Vector3(...(info.velocity ?? [0, 0, 0]));
    const d = new THREE.Vector3(...(info.desired_velocity ?? [0, 0, 0]));
    const unit = reach / Math.max(v.length(), d.length(), 1e-6);
    for (const [arrow, vec] of [[this.velocity, v], [this.desired, d]] as const) {
      const len = vec.length() * unit;
      arrow.visible = len > 1e-4;
      if (!arrow.visible) continue;
      arrow.position.copy(position);
      arrow.setDirection(vec.clone().normalize());
      arrow.setLength(len, Math.min(len * 0.25, reach * 0.1), Math.min(len * 0.12, reach * 0.05));
    }
  }
}
