import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import * as THREE from "three";
import { decodeFrame, parseFrame, soundRadii, splitBlocks } from "../src/protocol/frame";
import type { EntityInfo, Obstacle } from "../src/protocol/messages";
import { SpeciesLayer } from "../src/render/animals";
import { frameGroup } from "../src/render/cameras";
import { carcassColor, EntityView, soundFade } from "../src/render/entities";
import { classifyObstacles, EnvironmentView, obstacleColor, terrainColor } from "../src/render/environment";
import { worldBox } from "../src/render/world";
import { encodeFrame, type AnimalSet } from "./encode";
import { lights } from "./lights";

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

function loadFixture(): { buffer: ArrayBuffer; expected: any } {
  const bytes = readFileSync(fixture("frame_entities_v1.bin"));
  const buffer = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  return { buffer, expected: JSON.parse(readFileSync(fixture("frame_entities_v1.json"), "utf8")) };
}

function one(p: [number, number, number], q: [number, number, number, number], speed: number, uid: number): AnimalSet {
  return { positions: Float32Array.from(p), quaternions: Float32Array.from(q), speeds: Float32Array.from([speed]), uids: Uint32Array.from([uid]) };
}

/** An entity view set up for the fixture's scene, with the fixture's frame applied. */
function viewOfFixtureFrame(): EntityView {
  const { buffer, expected } = loadFixture();
  const view = new EntityView(lights());
  view.set(expected.scene.entities);
  const frame = parseFrame(buffer);
  view.beginFrame();
  for (const block of splitBlocks(frame, 1).entities) view.update(block, frame.time);
  return view;
}

describe("entity blocks from the Python runner's fixture", () => {
  it("follow the species blocks and split by the scene's species count", () => {
    const { buffer, expected } = loadFixture();
    const frame = parseFrame(buffer);
    const { species, entities } = splitBlocks(frame, expected.scene.species.length);
    expect(species.map((b) => b.index)).toEqual([0]);
    expect(entities.map((b) => b.index)).toEqual(expected.scene.entities.map((e: EntityInfo) => e.index));
    const kinds = entities.map((b) => expected.scene.entities.find((e: EntityInfo) => e.index === b.index).kind);
    expect(kinds).toEqual(["sound", "apple", "carcass", "carcass", "player"]);
  });

  it("decode to what the Python reference decoder read, and sounds carry their radius", () => {
    const { buffer, expected } = loadFixture();
    const frame = decodeFrame(buffer);
    frame.species.forEach((s, i) => {
      const e = expected.blocks[i];
      expect(s.index).toBe(e.index);
      expect(Array.from(s.uids)).toEqual(e.uids);
      s.positions.forEach((v, k) => expect(v).toBeCloseTo(e.positions[k], 3));
    });
    const sound = parseFrame(buffer).species[1];
    expect(Array.from(soundRadii(sound))).toEqual(expected.blocks[1].speeds.map((v: number) => expect.closeTo(v, 5)));
    expect(soundRadii(sound)[0]).toBeCloseTo(12.5, 2);
  });

  it("are drawn by the entity view: apples, carcasses by species, sounds and the player", () => {
    const view = viewOfFixtureFrame();
    expect(view.counts).toEqual({ sound: 2, apple: 1, carcass: 3, player: 1 });
    expect(view.carcasses.size).toBe(1); // the fish carcasses; the unknown one is a lump
    expect(view.playerPosition?.toArray()).toEqual([expect.closeTo(-15, 2), expect.closeTo(1.5, 2), expect.closeTo(-12, 2)]);
    const sound = view.group.children.filter((o) => o.name === "sound" && o.visible);
    expect(sound.map((o) => o.scale.x).sort((a, b) => a - b)).toEqual([expect.closeTo(0.3, 2), expect.closeTo(12.5, 2)]);
    const player = view.group.getObjectByName("player-figure")!;
    expect(player.rotation.y).toBeCloseTo(Math.atan2(0.6, 0.8), 2); // faces where it looks
  });
});

describe("entity drawables made with the scene", () => {
  // what a draw does to the view's objects: the onAfterRender of each mesh in the draw's list
  const draw = (view: EntityView) => {
    const list: THREE.Object3D[] = [];
    view.group.traverseVisible((o) => { if ((o as THREE.Mesh).isMesh) list.push(o); });
    for (const o of list) o.onAfterRender(null as any, null as any, null as any, null as any, null as any, null as any);
    return list;
  };
  const named = (view: EntityView, name: string) => view.group.children.filter((o) => o.name === name) as THREE.Mesh[];

  it("are made with the scene, and a copy of each is drawn once, shrunk to nothing, before the first entity appears", () => {
    const { expected } = loadFixture();
    const view = new EntityView(lights());
    view.set(expected.scene.entities);
    const [shell] = named(view, "sound"), ring = view.group.children.find((o) => (o as THREE.Mesh).geometry?.type === "RingGeometry") as THREE.Mesh, [apples] = named(view, "apples") as THREE.InstancedMesh[];
    const [lumps] = named(view, "carcass-lumps") as THREE.InstancedMesh[], player = view.group.getObjectByName("player-figure")!;
    // the real ones show nothing until a frame says so
    expect([shell.visible, player.visible, apples.count, lumps.count]).toEqual([false, false, 0, 0]);
    const warm = named(view, "warm-up");
    expect(warm.length).toBe(4); // sound, apple, lumps, player
    const materials = new Set<THREE.Material>();
    for (const group of warm) {
      expect(group.scale.x).toBeLessThan(1e-5);
      group.traverse((o) => { if ((o as THREE.Mesh).isMesh) materials.add((o as THREE.Mesh).material as THREE.Material); });
    }
    const real = [shell.material, ring.material as THREE.Material, apples.material, lumps.material];
    player.traverse((o) => { if ((o as THREE.Mesh).isMesh) real.push((o as THREE.Mesh).material as THREE.Material); });
    expect(new Set(real)).toEqual(materials); // the copies draw with the real objects' materials, every one of them
    const drawn = draw(view);
    const inWarm = (o: THREE.Object3D) => warm.includes(o.parent as THREE.Mesh) || warm.includes(o.parent?.parent as THREE.Mesh);
    expect(drawn.filter(inWarm).length).toBe(2 + 1 + 1 + 10);
    expect(named(view, "warm-up")).toEqual([]);
    expect([shell.visible, player.visible, apples.count, lumps.count]).toEqual([false, false, 0, 0]);
  });

  it("leave what the first frame shows as it shows it", () => {
    const view = viewOfFixtureFrame();
    draw(view);
    expect((named(view, "apples")[0] as THREE.InstancedMesh).count).toBe(1);
    expect(view.group.getObjectByName("player-figure")!.visible).toBe(true);
    const sounds = named(view, "sound").filter((o) => o.visible);
    expect(sounds.map((o) => o.scale.x).sort((a, b) => a - b)).toEqual([expect.closeTo(0.3, 2), expect.closeTo(12.5, 2)]);
  });
});

describe("entity looks", () => {
  it("fades a sound out over its lifetime", () => {
    expect(soundFade(0, 1.5)).toBe(1);
    expect(soundFade(0.75, 1.5)).toBeCloseTo(0.25, 5);
    expect(soundFade(1.5, 1.5)).toBe(0);
    expect(soundFade(3, 1.5)).toBe(0);
  });

  it("dulls a carcass toward grey", () => {
    const c = new THREE.Color(carcassColor("#e0b040"));
    const hsl = c.getHSL({ h: 0, s: 0, l: 0 }, THREE.SRGBColorSpace);
    expect(hsl.s).toBeLessThan(new THREE.Color("#e0b040").getHSL({ h: 0, s: 0, l: 0 }, THREE.SRGBColorSpace).s / 2);
  });

  it("lays a carcass on its side, body resting on its point", () => {
    const layer = new SpeciesLayer({ index: 0, name: "dead", model: "sheep", color: "#888888", scale: 1 }, lights(), { lying: true });
    const block = parseFrame(encodeFrame([one([4, 0, 2], [0, 0, 0, 1], 0, 7)], { step: 0, time: 0, dt: 0.1, sequence: 0, paused: false })).species[0];
    layer.update(block);
    const q = new THREE.Quaternion(...(Array.from(layer.quaternions.subarray(0, 4)) as [number, number, number, number]));
    const up = new THREE.Vector3(0, 1, 0).applyQuaternion(q);
    const forward = new THREE.Vector3(0, 0, 1).applyQuaternion(q);
    expect(Math.abs(up.y)).toBeLessThan(5e-3); // its back is now sideways (within the packing's precision)
    expect(forward.z).toBeCloseTo(1, 2); // still pointing where it pointed
    // The body's centre (model y = 0.56 for the sheep) sits just above the point, not under the ground.
    const centre = new THREE.Vector3(0, 0.56, 0).applyQuaternion(q).add(new THREE.Vector3(...(Array.from(layer.positions.subarray(0, 3)) as [number, number, number])));
    expect(centre.x).toBeCloseTo(4, 2);
    expect(centre.z).toBeCloseTo(2, 2);
    expect(centre.y).toBeGreaterThan(0.05);
    expect(centre.y).toBeLessThan(0.3);
    expect(layer.material.defines.MOTION).toBe(0); // no wing beats or gaits
  });
});

describe("the world's box", () => {
  it("frames a world in open air and is left out over terrain", () => {
    const min = new THREE.Vector3(-50, 0, -40), max = new THREE.Vector3(50, 30, 40);
    const box = worldBox(min, max, false)!;
    expect(box.box.min.toArray()).toEqual([-50, 0, -40]);
    expect(box.box.max.toArray()).toEqual([50, 30, 40]);
    expect(box.box.min).not.toBe(min); // its own copy: the world's bounds may change
    expect(worldBox(min, max, true)).toBeNull();
  });
});

describe("scenery colours", () => {
  const tree = (x: number, z: number): Obstacle[] => [
    { shape: "cylinder", center: [x, 2.2, z], radius: 0.3, height: 5, rotation_deg: [0, 0, 0] },
    { shape: "sphere", center: [x, 4.7, z], radius: 2 },
  ];

  it("finds the trees among the obstacles: trunk under a canopy", () => {
    const obstacles: Obstacle[] = [
      ...tree(0, 0),
      { shape: "box", center: [5, 0.3, 5], size: [1, 0.6, 0.8], rotation_deg: [0, 30, 0] },
      { shape: "sphere", center: [9, 0.5, 0], radius: 0.8 },
      { shape: "cylinder", center: [20, 5, 0], radius: 1, height: 10 }, // a pillar: no canopy
      { shape: "box", center: [0, 5, 30], size: [40, 10, 1] }, // a wall
      ...tree(12, -7),
    ];
    expect(classifyObstacles(obstacles)).toEqual(["trunk", "canopy", "rock", "rock", "stone", "stone", "trunk", "canopy"]);
  });

  it("gives trunks brown, canopies green and rocks grey-brown", () => {
    const hue = (c: string) => new THREE.Color(c).getHSL({ h: 0, s: 0, l: 0 }, THREE.SRGBColorSpace);
    for (let i = 0; i < 5; i++) {
      const trunk = hue(obstacleColor("trunk", i)), canopy = hue(obstacleColor("canopy", i)), rock = hue(obstacleColor("rock", i));
      expect(trunk.h).toBeGreaterThan(0.04); expect(trunk.h).toBeLessThan(0.12); // brown
      expect(canopy.h).toBeGreaterThan(0.22); expect(canopy.h).toBeLessThan(0.4); // green
      expect(rock.s).toBeLessThan(0.15); // greyish
    }
  });

  it("lets a colour in the scene win over the guessed one", () => {
    const env = new EnvironmentView(lights(), new THREE.Vector3(0, 1, 0), new THREE.Color());
    env.set({ obstacles: [...tree(0, 0), { shape: "sphere", center: [0, 4.7, 5], radius: 2, color: "#ff0000" }] });
    const colours = env.group.children.map((o) => `#${((o as THREE.Mesh).material as THREE.MeshLambertMaterial).color.getHexString()}`);
    expect(colours[0]).toBe(new THREE.Color(obstacleColor("trunk", 0)).getHexString().replace(/^/, "#"));
    expect(colours[2]).toBe("#ff0000");
  });

  it("shades terrain by height and slope: grass low, rock steep, light stone high, mud under water", () => {
    const c = new THREE.Color();
    const hsl = () => c.getHSL({ h: 0, s: 0, l: 0 }, THREE.SRGBColorSpace);
    terrainColor(c, 0, 1, 0, 1, 0, 20, null);
    expect(hsl().h).toBeGreaterThan(0.2); expect(hsl().h).toBeLessThan(0.35); // grass green
    const grass = hsl();
    terrainColor(c, 0, 1, 0, 0.55, 0, 20, null);
    expect(hsl().s).toBeLessThan(grass.s); // steep: rock
    terrainColor(c, 0, 19.5, 0, 1, 0, 20, null);
    expect(hsl().l).toBeGreaterThan(grass.l + 0.2); // near the top: light
    const water = { level: 0, min: [-10, -10] as [number, number], max: [10, 10] as [number, number], color: new THREE.Color("#2f8f8a") };
    terrainColor(c, 0, -5, 0, 1, 0, 20, water);
    expect(c.b).toBeGreaterThan(new THREE.Color("#5f6a4c").b); // tinted toward the water
    // An explicit terrain colour wins everywhere.
    const env = new EnvironmentView(lights(), new THREE.Vector3(0, 1, 0), new THREE.Color());
    env.set({ terrain: { origin: [0, 0], size: [10, 10], resolution: [3, 3], heights: [0, 1, 2, 0, 5, 2, 0, 0, 9], color: "#123456" } });
    const colors = env.terrain!.geometry.getAttribute("color");
    const want = new THREE.Color("#123456");
    for (let v = 0; v < colors.count; v++) expect(colors.getX(v)).toBeCloseTo(want.r, 5);
  });
});

describe("terrain heights", () => {
  it("are read off the height grid, between samples too", () => {
    const env = new EnvironmentView(lights(), new THREE.Vector3(0, 1, 0), new THREE.Color());
    // 3 × 2 samples over x 0..10, z 0..4: heights[j * 3 + i]
    env.set({ terrain: { origin: [0, 0], size: [10, 4], resolution: [3, 2], heights: [0, 2, 4, 1, 3, 5] } });
    expect(env.heightAt(0, 0)).toBeCloseTo(0, 6);
    expect(env.heightAt(10, 4)).toBeCloseTo(5, 6);
    expect(env.heightAt(2.5, 2)).toBeCloseTo(1.5, 6); // halfway in both directions of the first cell
    expect(env.heightAt(-1, 0)).toBeNull();
    env.set(null);
    expect(env.heightAt(1, 1)).toBeNull();
  });
});

describe("camera framing", () => {
  it("stands back so that the group fills half the view and ignores strays", () => {
    const n = 1000;
    const p = new Float32Array(3 * n);
    let s = 7;
    const rand = () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 4294967296);
    for (let i = 0; i < n; i++) {
      // a ball of radius 10 around (5, 40, -3); one stray far away
      let x, y, z;
      do { x = rand() * 2 - 1; y = rand() * 2 - 1; z = rand() * 2 - 1; } while (x * x + y * y + z * z > 1);
      p.set(i === 0 ? [500, 40, 500] : [5 + 10 * x, 40 + 10 * y, -3 + 10 * z], 3 * i);
    }
    const f = frameGroup(p, n, { fovDeg: 60, aspect: 1.6, fill: 0.5, share: 0.75 })!;
    expect(f.center.y).toBeCloseTo(40, 0);
    expect(f.radius).toBeGreaterThan(8);
    expect(f.radius).toBeLessThan(10);
    // the group's diameter is half the view's height at that distance
    const viewHeight = 2 * f.distance * Math.tan(Math.PI / 6);
    expect((2 * f.radius) / viewHeight).toBeCloseTo(0.5, 5);
    expect(frameGroup(p, 0, { fovDeg: 60, aspect: 1 })).toBeNull();
  });
});
