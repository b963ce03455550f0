/**
 * The software-rasteriser tier (`World.software`): what the viewer draws differently
 * when WebGL runs on the CPU, and that it still draws the same scene.
 */
import { describe, expect, it } from "vitest";
import * as THREE from "three";
import { parseFrame } from "../src/protocol/frame";
import type { Heightfield } from "../src/protocol/messages";
import { MERGED_ROW, SpeciesLayer } from "../src/render/animals";
import { coarsenHeightfield, EnvironmentView, TERRAIN_LITE_SAMPLES, terrainColor } from "../src/render/environment";
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
  it("draws a meadow-sized terrain from half the samples per side, simplified and unlit", () => {
    const n = 2 * (TERRAIN_LITE_SAMPLES - 1) + 1;
    // a gentle slope with a square hill: mostly one plane, so it simplifies
    const heights = Array.from({ length: n * n }, (_, v) => {
      const i = v % n, j = Math.floor(v / n);
      return 0.05 * i + (Math.abs(i - 100) < 10 && Math.abs(j - 100) < 10 ? 3 : 0);
    });
    const big: Heightfield = { origin: [-100, -100], size: [200, 200], resolution: [n, n], heights };
    const lite = environment(true), full = environment(false);
    lite.set({ terrain: big });
    full.set({ terrain: big });
    const cells = (TERRAIN_LITE_SAMPLES - 1) ** 2;
    // Clicks aim at a mesh of every kept sample, which is not drawn ...
    expect(lite.terrain!.geometry.getAttribute("position").count).toBe(cells * 6);
    expect((lite.terrain!.material as THREE.Material).visible).toBe(false);
    // ... while the drawn one has far fewer triangles, unlit.
    const drawn = lite.drawnTerrain!;
    expect(drawn).not.toBe(lite.terrain);
    expect(lite.group.children).toContain(drawn);
    expect((drawn.material as THREE.Material).type).toBe("MeshBasicMaterial");
    expect(drawn.geometry.getAttribute("position").count / 3).toBeLessThan((2 * cells) / 10);
    // Heights still see every sample; the full view draws its one mesh.
    expect(lite.heightAt(-100 + 200 / (n - 1), -100)).toBeCloseTo(0.05, 6);
    expect(full.drawnTerrain).toBe(full.terrain);
    expect((full.terrain!.material as THREE.Material).visible).toBe(true);
  });

  it("bakes into each drawn facet the light the full view computes for a facet of that place and slope", () => {
    const t: Heightfield = { origin: [0, 0], size: [10, 10], resolution: [3, 3], heights: [0, 1, 2, 0, 5, 2, 0, 0, 9] };
    const full = environment(false), lite = environment(true);
    full.set({ terrain: t });
    lite.set({ terrain: t });
    expect((full.terrain!.material as THREE.Material).type).toBe("MeshLambertMaterial");
    const g = lite.drawnTerrain!.geometry;
    const pos = g.getAttribute("position"), baked = g.getAttribute("color");
    expect(pos.count).toBeGreaterThan(0);
    const albedo = new THREE.Color(), want = new THREE.Color();
    const p = [new THREE.Vector3(), new THREE.Vector3(), new THREE.Vector3()], nrm = new THREE.Vector3();
    for (let v = 0; v < pos.count; v += 3) {
      p.forEach((q, k) => q.fromBufferAttribute(pos, v + k));
      nrm.crossVectors(p[1].clone().sub(p[0]), p[2].clone().sub(p[0])).normalize();
      const c = p[0].clone().add(p[1]).add(p[2]).divideScalar(3);
      // the full view's colour of a facet here (heights 0 to 9, no water), lit as MeshLambertMaterial would
      terrainColor(albedo, c.x, c.y, c.z, nrm.y, 0, 9, null);
      bakeLambert(want, albedo, nrm);
      expect(baked.getX(v)).toBeCloseTo(want.r, 6);
      expect(baked.getZ(v + 2)).toBeCloseTo(want.b, 6);
      // Lit facets differ from their albedo: the bake did something.
      expect(Math.abs(baked.getX(v) - albedo.r)).toBeGreaterThan(0.01);
    }
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

  /** What the merged program reads for vertex `v`: its animal's three texels, as the shader addresses them. */
  const fetched = (layer: SpeciesLayer, v: number) => {
    const verts = layer.material.defines.VERTS as number;
    const texture = layer.material.uniforms.uInstances.value as THREE.DataTexture;
    const { data, width } = texture.image as { data: Float32Array; width: number };
    const i = Math.floor(v / verts);
    const x = 3 * (i % MERGED_ROW), y = Math.floor(i / MERGED_ROW);
    const texel = (dx: number) => Array.from(data.subarray(4 * (y * width + x + dx), 4 * (y * width + x + dx) + 4));
    return { position: texel(0).slice(0, 3), phase: texel(0)[3], quaternion: texel(1), anim: texel(2) };
  };
  const walkers = (n: number, step = 0) => {
    const set = {
      positions: new Float32Array(3 * n), quaternions: new Float32Array(4 * n), speeds: new Float32Array(n), uids: new Uint32Array(n),
    };
    for (let i = 0; i < n; i++) {
      set.positions.set([i, (7 * i) % 13, -2 * i], 3 * i);
      const yaw = 0.01 * i;
      set.quaternions.set([0, Math.sin(yaw / 2), 0, Math.cos(yaw / 2)], 4 * i);
      set.speeds[i] = 0.5 + (i % 5);
      set.uids[i] = 1000 + 3 * i;
    }
    return parseFrame(encodeFrame([set], { step, time: step / 30, dt: 1 / 30, sequence: step, paused: false })).species[0];
  };

  it("are drawn in one plain batch whose vertices fetch their animal's numbers from a texture", () => {
    const layer = new SpeciesLayer(info("sheep"), lights(), { alwaysLite: true, merged: true });
    const model = buildModel("sheep", true).geometry.getAttribute("position");
    expect(layer.geometry).not.toBeInstanceOf(THREE.InstancedBufferGeometry);
    expect(layer.material.defines).toMatchObject({ MERGED: 1, MERGED_ROW, VERTS: model.count });
    expect(animalVertex).toContain("int i = gl_VertexID / VERTS;");
    expect(animalVertex).toContain("ivec2 at = ivec2(3 * (i % MERGED_ROW), i / MERGED_ROW);");
    // more animals than the first buffers hold, and more than one texture row
    const n = MERGED_ROW + 37;
    layer.update(walkers(n));
    expect(layer.geometry.drawRange).toMatchObject({ start: 0, count: n * model.count });
    const position = layer.geometry.getAttribute("position");
    expect(position.count).toBeGreaterThanOrEqual(n * model.count);
    for (const i of [0, 1, 517, MERGED_ROW - 1, MERGED_ROW, n - 1]) {
      for (const corner of [0, model.count - 1]) {
        const v = i * model.count + corner;
        // the vertex is the model's own vertex ...
        expect([position.getX(v), position.getY(v), position.getZ(v)]).toEqual([model.getX(corner), model.getY(corner), model.getZ(corner)]);
        // ... and reads animal i's numbers, the ones an instanced draw gives it
        const got = fetched(layer, v);
        expect(got.position).toEqual(Array.from(layer.positions.subarray(3 * i, 3 * i + 3)));
        expect(got.quaternion).toEqual(Array.from(layer.quaternions.subarray(4 * i, 4 * i + 4)));
        expect(got.phase).toBeCloseTo(((layer.uids[i] * 0.6180339887) % 1), 6);
        expect(got.anim[0]).toBeCloseTo(0.5 + (i % 5), 1);
      }
    }
    // fewer animals next frame: only their copies are drawn
    layer.update(walkers(3, 1));
    expect(layer.geometry.drawRange.count).toBe(3 * model.count);
  });

  it("merged, still show the selection and its neighbours", () => {
    const layer = new SpeciesLayer(info("wolf"), lights(), { alwaysLite: true, merged: true });
    layer.update(walkers(3));
    layer.setHighlights(new Map([[1006, 2], [1000, 1]]));
    const verts = layer.material.defines.VERTS as number;
    expect([0, 1, 2].map((i) => fetched(layer, i * verts + 1).anim[3])).toEqual([1, 0, 2]);
    layer.setHighlights(new Map());
    expect([0, 1, 2].map((i) => fetched(layer, i * verts).anim[3])).toEqual([0, 0, 0]);
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
