import { describe, expect, it } from "vitest";
import * as THREE from "three";
import type { SpeciesLayer } from "../src/render/animals";
import type { CameraRig } from "../src/render/cameras";
import { AutoFraming, type FramingHost } from "../src/render/framing";
import { Motion } from "../src/render/models";

/** A camera rig that only records where it was told to look. */
class FakeRig {
  userMoved = false;
  looks: { position: number[]; target: number[] }[] = [];
  glides = 0;
  lookFrom(position: THREE.Vector3, target: THREE.Vector3): void {
    this.looks.push({ position: position.toArray(), target: target.toArray() });
  }
  glideTo(): void {
    this.glides += 1;
  }
  drifts = 0;
  drift(): void {
    this.drifts += 1;
  }
}

/** A walker species of three animals around (x, 2, z). */
function herd(x: number, z: number): SpeciesLayer {
  const positions = new Float32Array([x - 1, 2, z, x + 1, 2, z, x, 2, z + 1]);
  return {
    count: 3, positions, info: { name: "sheep", scale: 1 }, model: { motion: Motion.Walker },
    centre: () => new THREE.Vector3(x, 2, z + 1 / 3),
  } as unknown as SpeciesLayer;
}

function framing(layers: SpeciesLayer[]): { auto: AutoFraming; rig: FakeRig; band: { top: number; bottom: number } } {
  const rig = new FakeRig();
  const band = { top: 60, bottom: 555 };
  const camera = new THREE.PerspectiveCamera(50, 1.6, 0.1, 5000);
  const host: FramingHost = {
    world: { camera, canvas: { getBoundingClientRect: () => new DOMRectReadOnly(0, 0, 1280, 800) } } as never,
    rig: rig as unknown as CameraRig,
    layers: () => layers,
    floorAt: () => 0,
    freeBand: () => ({ ...band }),
  };
  return { auto: new AutoFraming(host), rig, band };
}

/** Where `point` is drawn (normalised device coordinates) by a camera looking as `look` says. */
function shownAt(look: { position: number[]; target: number[] }, point: number[]): THREE.Vector3 {
  const camera = new THREE.PerspectiveCamera(50, 1.6, 0.1, 5000);
  camera.position.fromArray(look.position);
  camera.lookAt(new THREE.Vector3().fromArray(look.target));
  camera.updateMatrixWorld();
  return new THREE.Vector3().fromArray(point).project(camera);
}

// node has no DOMRect; the framing reads only its height and top
class DOMRectReadOnly {
  constructor(readonly x: number, readonly y: number, readonly width: number, readonly height: number) {}
  get top(): number { return this.y; }
}

describe("AutoFraming", () => {
  it("takes a scenario's opening view at once and never reframes or follows the animals", () => {
    const { auto, rig } = framing([herd(10, 50)]);
    auto.reset(null); // the previous scenario's framing, still waiting for its animals
    auto.reset({ position: [42, 24, 90], target: [-5, 6, 20] });
    expect(rig.looks.length).toBe(1);
    expect(rig.looks[0].position).toEqual([42, 24, 90]);
    // the view's target is drawn in the middle of the free band (60-555 of 800 px), not of the canvas
    const seen = shownAt(rig.looks[0], [-5, 6, 20]);
    expect(seen.x).toBeCloseTo(0, 6);
    expect(seen.y).toBeCloseTo(1 - (2 * (60 + 555)) / 2 / 800, 6);
    for (const t of [0, 1, 5, 30]) auto.onFrame(t);
    expect(rig.looks.length).toBe(1);
    expect(rig.glides).toBe(0);
    expect(auto.framed).toBeNull();
  });

  it("frames the animals on the first frame without a view, and again a few seconds later", () => {
    const { auto, rig } = framing([herd(10, 50)]);
    auto.reset(null);
    expect(rig.looks.length).toBe(0);
    auto.onFrame(0);
    expect(rig.looks.length).toBe(1);
    expect(auto.framed?.species).toBe("sheep");
    auto.onFrame(5);
    expect(rig.glides).toBe(1);
  });

  it("places the opening view again when the panels' free band moves, until the user takes the camera", () => {
    const { auto, rig, band } = framing([herd(10, 50)]);
    auto.reset({ position: [42, 24, 90], target: [-5, 6, 20] });
    band.bottom = 470; // the chart panel grew as its legends filled in
    auto.onFrame(0);
    expect(rig.looks.length).toBe(1); // frames do not poll the panels
    auto.panelsMoved();
    expect(rig.looks.length).toBe(2);
    expect(shownAt(rig.looks[1], [-5, 6, 20]).y).toBeCloseTo(1 - (60 + 470) / 800, 6);
    auto.panelsMoved();
    expect(rig.looks.length).toBe(2); // the band did not move: not placed again
    rig.userMoved = true;
    band.bottom = 555;
    auto.panelsMoved();
    expect(rig.looks.length).toBe(2);
  });

  it("stops following the last scenario's animals the moment a view is taken", () => {
    const { auto, rig } = framing([herd(10, 50)]);
    auto.reset(null);
    auto.onFrame(0); // framed and following the herd
    auto.drift(0.1);
    expect(rig.drifts).toBe(1);
    auto.reset({ position: [42, 24, 90], target: [-5, 6, 20] });
    auto.drift(0.1); // drawn before the new scenario's first frame arrives
    expect(rig.drifts).toBe(1);
  });

  it("frames the animals on 'Frame all' even where the scenario has a view", () => {
    const { auto, rig } = framing([herd(10, 50)]);
    auto.reset({ position: [42, 24, 90], target: [-5, 6, 20] });
    auto.request();
    auto.onFrame(2);
    expect(rig.looks.length).toBe(2);
    expect(auto.framed?.species).toBe("sheep");
    expect(rig.looks[1].target).not.toEqual([-5, 6, 20]);
  });
});
