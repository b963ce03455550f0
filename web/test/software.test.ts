/**
 * The software-rasteriser tier (`World.software`): what the viewer draws differently
 * when WebGL runs on the CPU, and that it still draws the same scene.
 */
import { describe, expect, it } from "vitest";
import * as THREE from "three";
import { parseFrame } from "../src/protocol/frame";
import type { Heightfield } from "../src/protocol/messages";
import { MERGED_ROW, shareVertices, SpeciesLayer } from "../src/render/animals";
import { farDistance } from "../src/render/far";
import {
  coarsenHeightfield, defaultWaves, EnvironmentView, liteWaves, obstacleColor, TERRAIN_LITE_SAMPLES, terrainColor, WATER_LITE_SAMPLES_PER_WAVE,
  WATER_LITE_WAVES, waterSegments,
} from "../src/render/environment";
import { buildModel, MODEL_KINDS, Motion } from "../src/render/models";
import { animalVertex } from "../src/render/shaders";
import { BAKED_FOG_VERTEX, bakedMaterial, bakeLambert, LIGHTS } from "../src/render/world";
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
      // ... in the canvas's sRGB, which the drawn terrain's material does not convert again
      bakeLambert(want, albedo, nrm).convertLinearToSRGB();
      expect(baked.getX(v)).toBeCloseTo(want.r, 6);
      expect(baked.getZ(v + 2)).toBeCloseTo(want.b, 6);
      // Lit facets differ from their albedo: the bake did something.
      expect(Math.abs(baked.getX(v) - albedo.r)).toBeGreaterThan(0.01);
    }
  });

  it("draws baked colours without converting every pixel to sRGB, the fog mixed in at the corners", () => {
    const material = bakedMaterial();
    const shader = {
      vertexShader: THREE.ShaderLib.basic.vertexShader, fragmentShader: THREE.ShaderLib.basic.fragmentShader, uniforms: {},
    };
    expect(shader.fragmentShader).toContain("#include <colorspace_fragment>");
    expect(shader.fragmentShader).toContain("#include <fog_fragment>");
    material.onBeforeCompile(shader as unknown as THREE.WebGLProgramParametersWithUniforms, {} as THREE.WebGLRenderer);
    // no conversion and no fog left per pixel ...
    expect(shader.fragmentShader).not.toContain("#include <colorspace_fragment>");
    expect(shader.fragmentShader).not.toContain("#include <fog_fragment>");
    // ... the fog at each corner, after three.js's depth, with its uniforms
    expect(shader.vertexShader).toContain(BAKED_FOG_VERTEX);
    const at = (text: string) => shader.vertexShader.indexOf(text);
    for (const uniform of ["uniform vec3 fogColor;", "uniform float fogNear;", "uniform float fogFar;"]) {
      expect(at(uniform)).toBeGreaterThan(0);
      expect(at(uniform)).toBeLessThan(at("void main()"));
    }
    expect(at("#include <fog_vertex>")).toBeGreaterThan(at("#include <project_vertex>"));
    expect(at("vColor.rgb = mix(")).toBeGreaterThan(at("#include <fog_vertex>"));
    // the same linear fog three.js mixes per pixel (a three.js upgrade that changed it would show here)
    expect(THREE.ShaderChunk.fog_fragment).toContain("float fogFactor = smoothstep( fogNear, fogFar, vFogDepth );");
    expect(THREE.ShaderChunk.fog_fragment).toContain("gl_FragColor.rgb = mix( gl_FragColor.rgb, fogColor, fogFactor );");
    expect(BAKED_FOG_VERTEX).toContain("vColor.rgb = mix( vColor.rgb, fogColor, smoothstep( fogNear, fogFar, vFogDepth ) );");
    expect(THREE.ShaderChunk.fog_vertex).toContain("vFogDepth = - mvPosition.z;");
    expect(material.vertexColors).toBe(true);
    // its own program: three.js must not reuse a converting MeshBasicMaterial's
    expect(material.customProgramCacheKey()).not.toBe(new THREE.MeshBasicMaterial({ vertexColors: true }).customProgramCacheKey());
    const lite = environment(true);
    lite.set({ terrain: { origin: [0, 0], size: [10, 10], resolution: [3, 3], heights: [0, 1, 2, 0, 5, 2, 0, 0, 9] } });
    expect((lite.drawnTerrain!.material as THREE.Material).customProgramCacheKey()).toBe(material.customProgramCacheKey());
  });

  it("draws the obstacles in one batch of facets lit as the full view lights them; clicks still find each", () => {
    const obstacles = [
      { shape: "box" as const, center: [3, 1, -2] as [number, number, number], size: [2, 1, 4] as [number, number, number], rotation_deg: [0, 30, 0] as [number, number, number] },
      { shape: "cylinder" as const, center: [-5, 2, 0] as [number, number, number], radius: 0.4, height: 4 },
      { shape: "sphere" as const, center: [-5, 4.5, 0] as [number, number, number], radius: 1.5 },
      { shape: "sphere" as const, center: [8, 0, 8] as [number, number, number], radius: 0.6, color: "#aa3311" },
    ];
    const lite = environment(true), full = environment(false);
    lite.set({ obstacles });
    full.set({ obstacles });
    const named = (env: EnvironmentView) => env.group.children.filter((o) => o.name.startsWith("obstacle:")) as THREE.Mesh[];
    // the full view draws each obstacle with its own lit material; the lite one keeps them, undrawn, for clicks
    expect(named(full).map((m) => (m.material as THREE.Material).visible)).toEqual([true, true, true, true]);
    expect(named(lite).map((m) => (m.material as THREE.Material).visible)).toEqual([false, false, false, false]);
    expect(lite.surfaces).toEqual(expect.arrayContaining(named(lite)));
    expect(full.group.getObjectByName("obstacles-drawn")).toBeUndefined();
    const batch = lite.group.getObjectByName("obstacles-drawn") as THREE.Mesh;
    expect((batch.material as THREE.Material).customProgramCacheKey()).toBe(bakedMaterial().customProgramCacheKey());
    const pos = batch.geometry.getAttribute("position"), color = batch.geometry.getAttribute("color");
    // every facet of every obstacle, where the full view draws it, with the full view's light baked in
    let at = 0;
    const a = new THREE.Vector3(), b = new THREE.Vector3(), c = new THREE.Vector3(), n = new THREE.Vector3(), want = new THREE.Color();
    named(full).forEach((mesh, k) => {
      mesh.updateMatrixWorld();
      const g = mesh.geometry.index ? mesh.geometry.toNonIndexed() : mesh.geometry;
      const p = g.getAttribute("position");
      const albedo = (mesh.material as THREE.MeshLambertMaterial).color;
      expect(albedo.getHexString()).toBe(new THREE.Color(obstacles[k].color ?? obstacleColor(["rock", "trunk", "canopy", "rock"][k] as never, k)).getHexString());
      for (let v = 0; v < p.count; v += 3, at += 3) {
        [a, b, c].forEach((q, j) => q.fromBufferAttribute(p, v + j).applyMatrix4(mesh.matrixWorld));
        [a, b, c].forEach((q, j) => {
          expect(pos.getX(at + j)).toBeCloseTo(q.x, 5);
          expect(pos.getY(at + j)).toBeCloseTo(q.y, 5);
          expect(pos.getZ(at + j)).toBeCloseTo(q.z, 5);
        });
        n.subVectors(b, a).cross(c.clone().sub(a)).normalize();
        bakeLambert(want, albedo, n).convertLinearToSRGB();
        for (let j = 0; j < 3; j++) {
          expect(color.getX(at + j)).toBeCloseTo(want.r, 5);
          expect(color.getZ(at + j)).toBeCloseTo(want.b, 5);
        }
      }
    });
    expect(pos.count).toBe(at);
  });

  it("sums only the largest waves, on a grid that samples the shortest of them", () => {
    const shuffled = [3, 0, 5, 1, 4, 2].map((i) => defaultWaves(72, 6)[i]);
    const kept = liteWaves(shuffled);
    expect(kept.map((w) => w.amplitude)).toEqual(defaultWaves(72, WATER_LITE_WAVES).map((w) => w.amplitude));
    const shortest = Math.min(...kept.map((w) => w.wavelength));
    const lite = waterSegments(72, kept, true);
    expect(72 / lite).toBeLessThanOrEqual(shortest / WATER_LITE_SAMPLES_PER_WAVE);
    expect(72 / (lite - 1)).toBeGreaterThan(shortest / WATER_LITE_SAMPLES_PER_WAVE);
    // the meadow's pond: a vertex every 2.5 m or so instead of 1.5 m
    expect(lite).toBeLessThan(waterSegments(72, defaultWaves(72), false) * 0.7);
    expect(waterSegments(72, defaultWaves(72), false)).toBe(48);
    // a grid no finer than the full view's, whatever the waves
    expect(waterSegments(30, [{ amplitude: 0.1, wavelength: 1, speed: 1, direction: [1, 0] }], true)).toBe(20);
    const env = environment(true);
    env.set({ water: { level: 0, bounds_min: [0, 0], bounds_max: [72, 40] } });
    const drawn = (env.group.getObjectByName("water") as THREE.Mesh);
    expect((drawn.material as THREE.ShaderMaterial).uniforms.uWaveCount.value).toBe(WATER_LITE_WAVES);
    expect(drawn.geometry.getAttribute("position").count).toBe((lite + 1) ** 2);
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
    const model = buildModel("sheep", true).geometry;
    const corners = model.getAttribute("position").count; // the model's triangles, three corners each
    const shared = shareVertices(model);
    expect(layer.geometry).not.toBeInstanceOf(THREE.InstancedBufferGeometry);
    expect(layer.material.defines).toMatchObject({ MERGED: 1, MERGED_ROW, VERTS: shared.count });
    expect(animalVertex).toContain("int i = gl_VertexID / VERTS;");
    expect(animalVertex).toContain("ivec2 at = ivec2(3 * (i % MERGED_ROW), i / MERGED_ROW);");
    // more animals than the first buffers hold, and more than one texture row
    const n = MERGED_ROW + 37;
    layer.update(walkers(n));
    expect(layer.geometry.drawRange).toMatchObject({ start: 0, count: n * corners });
    const index = layer.geometry.getIndex()!;
    expect(index.count).toBeGreaterThanOrEqual(n * corners);
    const attributes = ["position", "aRig", "aColor"].map((name) => [layer.geometry.getAttribute(name), model.getAttribute(name)] as const);
    for (const i of [0, 1, 517, MERGED_ROW - 1, MERGED_ROW, n - 1]) {
      for (let corner = 0; corner < corners; corner++) {
        const v = index.getX(i * corners + corner);
        // the corner is the model's own corner (where it is, which limb, what colour) ...
        for (const [drawn, own] of attributes) {
          for (let c = 0; c < own.itemSize; c++) expect(drawn.getComponent(v, c)).toBe(own.getComponent(corner, c));
        }
        if (corner % 47 !== 0 && corner !== corners - 1) continue;
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
    expect(layer.geometry.drawRange.count).toBe(3 * corners);
  });

  it.each(MODEL_KINDS)("%s: the merged batch shades each distinct corner of the lite model once", (kind) => {
    const model = buildModel(kind, true).geometry;
    const shared = shareVertices(model);
    const corners = model.getAttribute("position").count;
    expect(shared.index.length).toBe(corners);
    for (const name of ["position", "aRig", "aColor"]) {
      const own = model.getAttribute(name), values = shared.attributes[name], size = own.itemSize;
      expect(values.length).toBe(shared.count * size);
      for (let corner = 0; corner < corners; corner++) {
        for (let c = 0; c < size; c++) expect(values[shared.index[corner] * size + c]).toBe(own.getComponent(corner, c));
      }
    }
    // no two kept vertices alike
    const keys = new Set(Array.from({ length: shared.count }, (_, v) =>
      ["position", "aRig", "aColor"].map((name) => Array.from(shared.attributes[name].subarray(v * model.getAttribute(name).itemSize, (v + 1) * model.getAttribute(name).itemSize))).join("|")));
    expect(keys.size).toBe(shared.count);
  });

  it("shares a corner between facets only where its limb and colour are the same too", () => {
    const g = new THREE.BufferGeometry();
    // two facets on one edge (x = 0..1), then a copy of the first on another limb, then one in another colour
    g.setAttribute("position", new THREE.Float32BufferAttribute([0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, -1, 0,
      0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0], 3));
    const rig = Array(12).fill([0, 0, 0, 0]).flat();
    rig.splice(24, 4, 3, 0, 0, 0); rig.splice(28, 4, 3, 0, 0, 0); rig.splice(32, 4, 3, 0, 0, 0);
    g.setAttribute("aRig", new THREE.Float32BufferAttribute(rig, 4));
    const color = Array(12).fill([1, 1, 1, 1]).flat();
    color.splice(36, 4, 0.5, 1, 1, 1);
    g.setAttribute("aColor", new THREE.Float32BufferAttribute(color, 4));
    const shared = shareVertices(g);
    // the first facet: 3 corners; the second adds 1 (two are the first's); the limb's copy 3 of its own;
    // the last shares the body's white corners and adds its one blue corner
    expect(Array.from(shared.index)).toEqual([0, 1, 2, 1, 0, 3, 4, 5, 6, 7, 1, 2]);
    expect(shared.count).toBe(8);
  });

  it("the lite walkers' corners are shared by their facets: a sheep shades 32 vertices, not 102", () => {
    const sheep = buildModel("sheep", true).geometry;
    expect(sheep.getAttribute("position").count).toBe(102);
    expect(shareVertices(sheep).count).toBe(32); // 8 corners of the body, 8 of the head, 4 of each leg
  });

  it("merged, draw only the animals whose reach meets the camera's view", () => {
    const layer = new SpeciesLayer(info("sheep"), lights(), { alwaysLite: true, merged: true });
    const per = shareVertices(buildModel("sheep", true).geometry).index.length;
    const n = 300;
    const frame = walkers(n); // animal i at (i, 7i mod 13, -2i)
    layer.update(frame);
    // before any draw, every animal is packed
    expect(layer.geometry.drawRange.count).toBe(n * per);
    const camera = new THREE.PerspectiveCamera(30, 1.5, 0.1, 1000);
    camera.position.set(100, 5, -200);
    camera.lookAt(100, 5, -260);
    camera.updateMatrixWorld();
    layer.mesh.onBeforeRender({} as THREE.WebGLRenderer, new THREE.Scene(), camera, layer.geometry, layer.material, null as never);
    const frustum = new THREE.Frustum().setFromProjectionMatrix(
      new THREE.Matrix4().multiplyMatrices(camera.projectionMatrix, camera.matrixWorldInverse));
    const seen = (i: number, radius: number) =>
      frustum.intersectsSphere(new THREE.Sphere(new THREE.Vector3(...layer.positions.subarray(3 * i, 3 * i + 3)), radius));
    const kept = Array.from({ length: n }, (_, i) => i).filter((i) => seen(i, layer.reach));
    expect(kept.length).toBeGreaterThan(10);
    expect(kept.length).toBeLessThan(n / 3);
    expect(layer.geometry.drawRange.count).toBe(kept.length * per);
    // the kept animals, in order, each with all its numbers; an animal whose position is just out of
    // view but whose inflated body may reach into it is among them
    kept.forEach((i, slot) => {
      const got = fetched(layer, slot * (layer.material.defines.VERTS as number));
      expect(got.position).toEqual(Array.from(layer.positions.subarray(3 * i, 3 * i + 3)));
      expect(got.quaternion).toEqual(Array.from(layer.quaternions.subarray(4 * i, 4 * i + 4)));
      expect(got.anim[0]).toBeCloseTo(0.5 + (i % 5), 1);
    });
    expect(kept.some((i) => !seen(i, 0))).toBe(true);
    // drawn again from the same view, nothing is packed or uploaded again ...
    const texture = layer.material.uniforms.uInstances.value as THREE.DataTexture;
    const version = texture.version;
    layer.mesh.onBeforeRender({} as THREE.WebGLRenderer, new THREE.Scene(), camera, layer.geometry, layer.material, null as never);
    expect(texture.version).toBe(version);
    // ... while a new frame is packed at once for that view (the first 100 animals now)
    layer.update(walkers(100, 1));
    expect(layer.geometry.drawRange.count).toBe(kept.filter((i) => i < 100).length * per);
    expect(texture.version).toBeGreaterThan(version);
    layer.update(frame);
    // the reach holds the lite sheep three times inflated
    const bounds = buildModel("sheep", true).geometry.boundingSphere!;
    expect(layer.reach).toBeGreaterThanOrEqual(3 * (bounds.center.length() + bounds.radius) * info("sheep").scale);
    // a camera that sees them all draws them all again
    camera.position.set(150, 300, -300);
    camera.lookAt(150, 0, -300);
    camera.far = 2000;
    camera.fov = 120;
    camera.updateProjectionMatrix();
    camera.updateMatrixWorld();
    layer.mesh.onBeforeRender({} as THREE.WebGLRenderer, new THREE.Scene(), camera, layer.geometry, layer.material, null as never);
    expect(layer.geometry.drawRange.count).toBe(n * per);
  });

  it("merged, draw the birds too far to make out as points, packed after the near ones; highlighted ones keep their model", () => {
    const pixelWorld = 0.004;
    const layer = new SpeciesLayer(info("bird"), { ...lights(), uPixelWorld: { value: pixelWorld } }, { alwaysLite: true, merged: true });
    const per = shareVertices(buildModel("bird", true).geometry).index.length;
    const n = 300;
    layer.update(walkers(n)); // animal i at (i, 7i mod 13, -2i)
    expect(layer.far!.count).toBe(0); // before any draw: every animal a model
    const camera = new THREE.PerspectiveCamera(100, 1.5, 0.1, 2000);
    camera.position.set(100, 30, -150);
    camera.lookAt(100, 0, -260);
    camera.updateMatrixWorld();
    const draw = () => layer.mesh.onBeforeRender({} as THREE.WebGLRenderer, new THREE.Scene(), camera, layer.geometry, layer.material, null as never);
    draw();
    const frustum = new THREE.Frustum().setFromProjectionMatrix(
      new THREE.Matrix4().multiplyMatrices(camera.projectionMatrix, camera.matrixWorldInverse));
    const at = (i: number) => new THREE.Vector3(...layer.positions.subarray(3 * i, 3 * i + 3));
    const beyond = farDistance(info("bird").scale, pixelWorld); // 1 m drawn 5 pixels long: 50 m away
    expect(beyond).toBeCloseTo(50, 6);
    const split = (highlighted: Set<number>) => {
      const seen = Array.from({ length: n }, (_, i) => i).filter((i) => frustum.intersectsSphere(new THREE.Sphere(at(i), layer.reach)));
      const far = seen.filter((i) => at(i).distanceTo(camera.position) > beyond && !highlighted.has(i));
      return { near: seen.filter((i) => !far.includes(i)), far };
    };
    const check = (highlighted: Set<number>) => {
      const { near, far } = split(highlighted);
      expect(near.length).toBeGreaterThan(10);
      expect(far.length).toBeGreaterThan(10);
      expect(layer.geometry.drawRange.count).toBe(near.length * per);
      expect([layer.far!.base, layer.far!.count]).toEqual([near.length, far.length]);
      const verts = layer.material.defines.VERTS as number;
      [...near, ...far].forEach((i, row) => expect(fetched(layer, row * verts).position).toEqual(at(i).toArray()));
      return far;
    };
    const far = check(new Set());
    // the selection, far or not, is drawn as a model
    layer.setHighlights(new Map([[1000 + 3 * far[3], 2]]));
    check(new Set([far[3]]));
    // the points have a vertex for every animal the layer has room for
    layer.update(walkers(2000));
    expect(layer.far!.points.geometry.getAttribute("position").count).toBeGreaterThanOrEqual(2000);
    // walkers and swimmers keep their models however far
    for (const kind of ["sheep", "fish", "shark"]) {
      const other = new SpeciesLayer(info(kind), { ...lights(), uPixelWorld: { value: pixelWorld } }, { alwaysLite: true, merged: true });
      other.update(walkers(n));
      other.mesh.onBeforeRender({} as THREE.WebGLRenderer, new THREE.Scene(), camera, other.geometry, other.material, null as never);
      expect(other.far).toBeNull();
      const seen = Array.from({ length: n }, (_, i) => i).filter((i) => frustum.intersectsSphere(new THREE.Sphere(at(i), other.reach)));
      expect(other.geometry.drawRange.count).toBe(seen.length * shareVertices(buildModel(kind, true).geometry).index.length);
    }
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
