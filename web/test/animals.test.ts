import { describe, expect, it } from "vitest";
import * as THREE from "three";
import { parseFrame } from "../src/protocol/frame";
import { LITE_ON, SpeciesLayer } from "../src/render/animals";
import { buildModel, MODEL_KINDS, Motion, Part } from "../src/render/models";
import { encodeFrame, type AnimalSet } from "./encode";
import { lights } from "./lights";

/** One animal per entry: position and yaw (radians about +y; yaw 0 faces +z). */
function herd(entries: { uid: number; p: [number, number, number]; yaw: number; speed?: number }[]): AnimalSet {
  const n = entries.length;
  const set: AnimalSet = {
    positions: new Float32Array(3 * n), quaternions: new Float32Array(4 * n),
    speeds: new Float32Array(n), uids: new Uint32Array(n),
  };
  entries.forEach((e, i) => {
    set.positions.set(e.p, 3 * i);
    set.quaternions.set([0, Math.sin(e.yaw / 2), 0, Math.cos(e.yaw / 2)], 4 * i);
    set.speeds[i] = e.speed ?? 1;
    set.uids[i] = e.uid;
  });
  return set;
}

const frameOf = (set: AnimalSet, step = 0) =>
  parseFrame(encodeFrame([set], { step, time: step / 30, dt: 1 / 30, sequence: step, paused: false })).species[0];

describe("procedural models", () => {
  it.each(MODEL_KINDS)("%s has geometry, rig and colour attributes in both details", (kind) => {
    for (const lite of [false, true]) {
      const model = buildModel(kind, lite);
      const pos = model.geometry.getAttribute("position");
      expect(pos.count).toBeGreaterThan(6);
      expect(pos.count % 3).toBe(0);
      expect(model.geometry.getAttribute("aRig").count).toBe(pos.count);
      expect(model.geometry.getAttribute("aColor").count).toBe(pos.count);
      if (!lite) expect(pos.count).toBeGreaterThan(buildModel(kind, true).geometry.getAttribute("position").count);
      const box = new THREE.Box3().setFromBufferAttribute(pos as THREE.BufferAttribute);
      expect(box.max.z - box.min.z).toBeGreaterThan(0.7); // about one body length nose to tail
      expect(box.max.z - box.min.z).toBeLessThan(1.5);
    }
  });

  it.each(["sheep", "wolf", "zebra", "lion", "elephant"])("lite %s: 34 triangles, no belly, spike legs whose open tops hide in the body and whose tips are the hooves", (kind) => {
    const g = buildModel(kind, true).geometry;
    const pos = g.getAttribute("position"), rig = g.getAttribute("aRig");
    expect(pos.count).toBe(34 * 3);
    // the body's faces: none looks down, and the head's box is whole (5 + 6 faces)
    const a = new THREE.Vector3(), b = new THREE.Vector3(), c = new THREE.Vector3();
    const normals: number[] = [];
    for (let v = 0; v < pos.count; v += 3) {
      if (rig.getX(v) !== Part.Body) continue;
      a.fromBufferAttribute(pos, v); b.fromBufferAttribute(pos, v + 1); c.fromBufferAttribute(pos, v + 2);
      normals.push(new THREE.Triangle(a, b, c).getNormal(new THREE.Vector3()).y);
    }
    expect(normals.length).toBe(22);
    expect(normals.filter((y) => y < -0.99).length).toBe(2); // the head's underside only
    const body = { bottom: Infinity };
    const legs = new Map<number, { top: number; bottom: number; count: number }>();
    for (let v = 0; v < pos.count; v++) {
      const part = rig.getX(v), y = pos.getY(v);
      if (part === Part.Body) { body.bottom = Math.min(body.bottom, y); continue; }
      const leg = legs.get(part) ?? { top: -Infinity, bottom: Infinity, count: 0 };
      legs.set(part, { top: Math.max(leg.top, y), bottom: Math.min(leg.bottom, y), count: leg.count + 1 });
    }
    expect([...legs.keys()].sort()).toEqual([Part.LegFrontLeft, Part.LegFrontRight, Part.LegBackLeft, Part.LegBackRight]);
    for (const leg of legs.values()) {
      expect(leg.count).toBe(3 * 3); // three sides meeting at the hoof, no cap
      expect(leg.bottom).toBeCloseTo(0, 6);
      expect(leg.top).toBeGreaterThan(body.bottom);
    }
    // each spike's lowest corners are one point, the hoof
    for (const part of legs.keys()) {
      const low = new Set<string>();
      for (let v = 0; v < pos.count; v++) {
        if (rig.getX(v) === part && pos.getY(v) < 1e-6) low.add(`${pos.getX(v).toFixed(5)},${pos.getZ(v).toFixed(5)}`);
      }
      expect(low.size).toBe(1);
    }
  });

  it("gives each animal family its motion", () => {
    expect(buildModel("bird").motion).toBe(Motion.Flyer);
    expect(buildModel("fish").motion).toBe(Motion.Swimmer);
    expect(buildModel("shark").motion).toBe(Motion.Shark);
    for (const kind of ["sheep", "wolf", "zebra", "lion", "elephant"]) expect(buildModel(kind).motion).toBe(Motion.Walker);
  });
});

describe("species layer", () => {
  const info = (model: string) => ({ index: 0, name: model, model, color: "#ff8800", scale: 2 });

  it("copies a frame into instance attributes and finds animals by uid after reordering", () => {
    const layer = new SpeciesLayer(info("bird"), lights());
    layer.update(frameOf(herd([{ uid: 5, p: [0, 0, 0], yaw: 0 }, { uid: 9, p: [10, 2, -4], yaw: 1 }])));
    expect(layer.count).toBe(2);
    expect(layer.geometry.instanceCount).toBe(2);
    expect(layer.indexOf(9)).toBe(1);
    layer.update(frameOf(herd([{ uid: 9, p: [10, 2, -4], yaw: 1 }, { uid: 5, p: [0, 0, 0], yaw: 0 }, { uid: 70000, p: [1, 1, 1], yaw: 0 }]), 1));
    expect(layer.indexOf(9)).toBe(0);
    expect(layer.indexOf(5)).toBe(1);
    expect(layer.indexOf(70000)).toBe(2);
    expect(layer.indexOf(12345)).toBe(-1);
    const i = layer.indexOf(9);
    expect(layer.positions[3 * i]).toBeCloseTo(10, 3);
    expect(layer.positions[3 * i + 2]).toBeCloseTo(-4, 3);
  });

  it("picks the animal nearest a ray", () => {
    const layer = new SpeciesLayer(info("sheep"), lights());
    layer.update(frameOf(herd([{ uid: 1, p: [0, 0, 0], yaw: 0 }, { uid: 2, p: [5, 0, 0], yaw: 0 }])));
    const ray = new THREE.Ray(new THREE.Vector3(5.2, 20, 0), new THREE.Vector3(0, -1, 0));
    expect(layer.pick(ray, 0.001)?.uid).toBe(2);
    const miss = new THREE.Ray(new THREE.Vector3(50, 20, 0), new THREE.Vector3(0, -1, 0));
    expect(layer.pick(miss, 0.001)).toBeNull();
  });

  it("measures a swimmer's turn as curvature toward the side it turns to", () => {
    const layer = new SpeciesLayer(info("fish"), lights());
    // A fish on a circle of radius 10 turning toward its local +X (left-handed from above: yaw grows).
    const R = 10;
    let step = 0;
    for (let a = 0; a < 0.6; a += 0.05) {
      // Heading yaw = a; moving along +z rotated by a; the centre lies on the local +X side.
      const p: [number, number, number] = [R * (1 - Math.cos(a)), 0, R * Math.sin(a)];
      layer.update(frameOf(herd([{ uid: 3, p, yaw: a }]), step++));
    }
    const anim = layer.geometry.getAttribute("iAnim").array as Float32Array;
    expect(anim[1]).toBeGreaterThan(0.5 / R);
    expect(anim[1]).toBeLessThan(1.5 / R);
    expect(Math.abs(anim[2])).toBeLessThan(0.02);
  });

  it("switches to the lite model for very large populations and back", () => {
    const layer = new SpeciesLayer(info("bird"), lights());
    const many = herd(Array.from({ length: LITE_ON + 1 }, (_, i) => ({ uid: i, p: [i % 100, 10, Math.floor(i / 100)] as [number, number, number], yaw: 0 })));
    const full = layer.geometry.getAttribute("position").count;
    layer.update(frameOf(many));
    expect(layer.lite).toBe(true);
    expect(layer.geometry.getAttribute("position").count).toBeLessThan(full);
    layer.update(frameOf(herd([{ uid: 1, p: [0, 0, 0], yaw: 0 }])));
    expect(layer.lite).toBe(false);
  });

  it("highlights the selection and its neighbours wherever they move in the arrays", () => {
    const layer = new SpeciesLayer(info("wolf"), lights());
    layer.update(frameOf(herd([{ uid: 1, p: [0, 0, 0], yaw: 0 }, { uid: 2, p: [1, 0, 0], yaw: 0 }, { uid: 3, p: [2, 0, 0], yaw: 0 }])));
    layer.setHighlights(new Map([[3, 2], [1, 1]]));
    layer.update(frameOf(herd([{ uid: 3, p: [2, 0, 0], yaw: 0 }, { uid: 2, p: [1, 0, 0], yaw: 0 }, { uid: 1, p: [0, 0, 0], yaw: 0 }]), 1));
    const anim = layer.geometry.getAttribute("iAnim").array as Float32Array;
    expect([anim[3], anim[7], anim[11]]).toEqual([2, 0, 1]);
  });
});
