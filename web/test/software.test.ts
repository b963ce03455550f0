/**
 * The software-rasteriser tier (`World.software`): what the viewer draws differently
 * when WebGL runs on the CPU, and that it still draws the same scene.
 */
import { describe, expect, it } from "vitest";
import * as THREE from "three";
import { parseFrame } from "../src/protocol/frame";
import type { Heightfield } from "../src/protocol/messages";
import { SpeciesLayer } from "../src/render/animals";
import { coarsenHeightfield, EnvironmentView, TERRAIN_LITE_SAMPLES } from "../src/render/environment";
import { buildModel, MODEL_KINDS, Motion } from "../src/render/models";
import { animalVertex } from "../src/render/shaders";
import { bakeLambert, LIGHTS } from "../src/render/world";
import { encodeFrame } from "./encode";
import { lights } from "./lights";

/** A species of this model as the scene message describes it. */
const info = (model: string) => ({ index: 0, name: model, model, color: "#888888", scale: 1 });

const environment = (lite: boolean) => new EnvironmentView(lights(), new THREE.Vector3(0, 1, 0), new THREE.Color(), lite);

describe("baked Lambert light", () => {
  it("gives MeshLambertMaterial's colour: albedo/π times sun·cos plus the hemisphere", () => {
    const c = new THREE.Color();
    // Facing up: the sun's cosine is the sun direction's y, 0.8/|(0.45, 0.8, 0.35)| =
    // 0.8/0.982344 = 0.814379, and the hemisphere gives its sky colour. Red channel:
    // sun 0xff → 1.0 linear × 2.2; sky 0x9f = 0.623529 sRGB → 0.346704 linear × 1.4 = 0.485386.
    // (2.2 × 0.814379 + 0.485386) / π = 2.277019 / π = 0.724798.
    bakeLambert(c, new THREE.Color(1, 1, 1), new THREE.Vector3(0, 1, 0));
    expect(c.r).toBeCloseTo(0.724798, 5);
    // Facing down: no sun, only the ground colour: 0x3a = 0.227451 sRGB → 0.042311 linear
    // × 1.4 = 0.059235, / π = 0.018855; halved by an albedo of 0.5.
    bakeLambert(c, new THREE.Color(0.5, 0.5, 0.5), new THREE.Vector3(0, -1, 0));
    expect(c.r).toBeCloseTo(0.5 * 0.018855, 5);
    // Sideways, away from the sun (its x is positive): half sky, half ground, no sun.
    bakeLambert(c, new THREE.Color(1, 1, 1), new THREE.Vector3(-1, 0, 0));
    expect(c.g).toBeCloseTo((0.5 * (LIGHTS.sky.g + LIGHTS.ground.g)) / Math.PI, 6);
  });
});

describe("coarsened heightfields", () => {
  const field = (nx: number, nz: number): Heightfield => ({
    origin: [0, 0], size: [10, 4], resolution: [nx, nz], heights: Array.from({ length: nx * nz }, (_, v) => v),
  });

  it("keep every stride-th sample and the last row and column, at their true offsets", () => {
    const t = coarsenHeightfield(field(6, 3), 3); // stride ceil(5 / 2) = 3: columns 0, 3, 5; rows 0, 2
    expect(t.resolution).toEqual([3, 2]);
    expect(t.columns).toEqual([0, 6, 10]);
    expect(t.rows).toEqual([0, 4]);
    expect(t.heights).toEqual([0, 3, 5, 12, 15, 17]); // heights[j * 6 + i], kept, not averaged
  });

  it("leave a field that is small enough as it is, evenly spaced", () => {
    const t = coarsenHeightfield(field(3, 2), 101);
    expect(t.resolution).toEqual([3, 2]);
    expect(t.heights).toEqual([0, 1, 2, 3, 4, 5]);
    expect(t.columns).toEqual([0, 5, 10]);
    expect(coarsenHeightfield(field(3, 2), Infinity).resolution).toEqual([3, 2]);
  });
});

describe("the environment on a software rasteriser", () => {
  it("draws a meadow-sized terrain at half the samples per side, unlit, with its light baked in", () => {
    const n = 2 * (TERRAIN_LITE_SAMPLES - 1) + 1;
    const big: Heightfield = { origin: [-100, -100], size: [200, 200], resolution: [n, n], heights: Array.from({ length: n * n }, (_, v) => Math.sin(v)) };
    const lite = environment(true);
    lite.set({ terrain: big });
    const cells = (TERRAIN_LITE_SAMPLES - 1) ** 2;
    expect(lite.terrain!.geometry.getAttribute("position").count).toBe(cells * 6);
    expect((lite.terrain!.material as THREE.Material).type).toBe("MeshBasicMaterial");
    // Clicks and heights still see every sample.
    expect(lite.heightAt(-100 + 200 / (n - 1), -100)).toBeCloseTo(Math.sin(1), 6);
  });

  it("bakes into each facet exactly the light the full view computes for it", () => {
    const t: Heightfield = { origin: [0, 0], size: [10, 10], resolution: [3, 3], heights: [0, 1, 2, 0, 5, 2, 0, 0, 9] };
    const full = environment(false), lite = environment(true);
    full.set({ terrain: t });
    lite.set({ terrain: t });
    expect((full.terrain!.material as THREE.Material).type).toBe("MeshLambertMaterial");
    const albedo = full.terrain!.geometry.getAttribute("color"), baked = lite.terrain!.geometry.getAttribute("color");
    const normals = lite.terrain!.geometry.getAttribute("normal");
    expect(baked.count).toBe(albedo.count);
    const want = new THREE.Color(), a = new THREE.Color(), nrm = new THREE.Vector3();
    for (let v = 0; v < baked.count; v++) {
      bakeLambert(want, a.fromBufferAttribute(albedo as THREE.BufferAttribute, v), nrm.fromBufferAttribute(normals, v));
      expect(baked.getX(v)).toBeCloseTo(want.r, 6);
      expect(baked.getZ(v)).toBeCloseTo(want.b, 6);
    }
    // Lit facets differ from their albedo: the bake did something.
    expect(Math.abs(baked.getX(0) - albedo.getX(0))).toBeGreaterThan(0.01);
  });

  it("sums the water's waves per vertex instead of per pixel", () => {
    const water = { level: 0, bounds_min: [0, 0] as [number, number], bounds_max: [40, 40] as [number, number] };
    const lite = environment(true), full = environment(false);
    lite.set({ water });
    full.set({ water });
    const material = (env: EnvironmentView) => (env.group.getObjectByName("water") as THREE.Mesh).material as THREE.ShaderMaterial;
    expect(material(lite).defines.WATER_PER_VERTEX).toBe(1);
    expect(material(full).defines.WATER_PER_VERTEX).toBeUndefined();
  });
});

describe("animals on a software rasteriser", () => {
  it("are drawn with the lite model however few they are", () => {
    const layer = new SpeciesLayer(info("bird"), lights(), { alwaysLite: true });
    const lite = buildModel("bird", true).geometry.getAttribute("position").count;
    expect(layer.lite).toBe(true);
    expect(layer.geometry.getAttribute("position").count).toBe(lite);
    const one = { positions: Float32Array.from([0, 0, 0]), quaternions: Float32Array.from([0, 0, 0, 1]), speeds: Float32Array.from([1]), uids: Uint32Array.from([1]) };
    layer.update(parseFrame(encodeFrame([one], { step: 0, time: 0, dt: 1 / 30, sequence: 0, paused: false })).species[0]);
    expect(layer.lite).toBe(true);
    expect(layer.geometry.getAttribute("position").count).toBe(lite);
    expect(new SpeciesLayer(info("bird"), lights()).lite).toBe(false);
  });

  it("the lite bird, a flat dart, is inflated with distance as the full bird is", () => {
    expect(buildModel("bird", true).thickness).toBe(buildModel("bird", false).thickness);
  });

  it.each(MODEL_KINDS.filter((k) => k !== "bird"))("%s: the lite model is inflated by its own thickness", (kind) => {
    const lite = buildModel(kind, true);
    const box = new THREE.Box3().setFromBufferAttribute(lite.geometry.getAttribute("position") as THREE.BufferAttribute);
    const size = box.getSize(new THREE.Vector3());
    expect(lite.thickness).toBeCloseTo(Math.max(Math.min(size.x, size.y), 0.02), 6);
  });
});

describe("animal programs", () => {
  it("compile in only their species' motion (a constant, not a uniform branch)", () => {
    expect(new SpeciesLayer(info("bird"), lights()).material.defines.MOTION).toBe(Motion.Flyer);
    expect(new SpeciesLayer(info("fish"), lights()).material.defines.MOTION).toBe(Motion.Swimmer);
    expect(new SpeciesLayer(info("shark"), lights()).material.defines.MOTION).toBe(Motion.Shark);
    expect(new SpeciesLayer(info("sheep"), lights()).material.defines.MOTION).toBe(Motion.Walker);
    expect(new SpeciesLayer(info("sheep"), lights(), { lying: true }).material.defines.MOTION).toBe(Motion.Rigid);
    expect(animalVertex).not.toMatch(/uMotion/);
    for (const kind of [1, 4]) expect(animalVertex).toContain(`MOTION == ${kind}`);
  });
});
