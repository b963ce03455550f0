import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import {
  decodeFrame, dequantisePositions, FrameFormatError, parseFrame, unpackQuaternions,
} from "../src/protocol/frame";
import { encodeFrame, randomAnimals } from "./encode";

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

function loadFixture(): { buffer: ArrayBuffer; expected: any } {
  const bytes = readFileSync(fixture("frame_v1.bin"));
  const buffer = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  return { buffer, expected: JSON.parse(readFileSync(fixture("frame_v1.json"), "utf8")) };
}

/** Rotate v by unit quaternion q = (x, y, z, w). */
function rotate(q: ArrayLike<number>, v: [number, number, number]): [number, number, number] {
  const [x, y, z, w] = [q[0], q[1], q[2], q[3]];
  const tx = 2 * (y * v[2] - z * v[1]), ty = 2 * (z * v[0] - x * v[2]), tz = 2 * (x * v[1] - y * v[0]);
  return [v[0] + w * tx + (y * tz - z * ty), v[1] + w * ty + (z * tx - x * tz), v[2] + w * tz + (x * ty - y * tx)];
}

const angleDeg = (a: number[], b: number[]) => {
  const dot = a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
  const na = Math.hypot(a[0], a[1], a[2]), nb = Math.hypot(b[0], b[1], b[2]);
  return (Math.acos(Math.min(1, Math.max(-1, dot / (na * nb)))) * 180) / Math.PI;
};

describe("frame decoder against the Python encoder's fixture", () => {
  it("reads the header", () => {
    const { buffer, expected } = loadFixture();
    const frame = parseFrame(buffer);
    expect(frame.step).toBe(expected.step);
    expect(frame.sequence).toBe(expected.sequence);
    expect(frame.paused).toBe(expected.paused);
    expect(frame.time).toBeCloseTo(expected.time, 9);
    expect(frame.dt).toBeCloseTo(expected.dt, 6);
    expect(frame.species.map((s) => s.count)).toEqual(expected.species.map((s: any) => s.uids.length));
  });

  it("decodes exactly what the Python reference decoder decodes", () => {
    const { buffer, expected } = loadFixture();
    const frame = decodeFrame(buffer);
    frame.species.forEach((s, i) => {
      const e = expected.species[i];
      expect(s.index).toBe(e.index);
      expect(Array.from(s.uids)).toEqual(e.uids);
      s.positions.forEach((v, k) => expect(v).toBeCloseTo(e.positions[k], 3));
      s.quaternions.forEach((v, k) => expect(v).toBeCloseTo(e.quaternions[k], 5));
      s.speeds.forEach((v, k) => expect(v).toBeCloseTo(e.speeds[k], 3)); // float32 vs float64
    });
  });

  it("recovers the encoder's inputs within the documented precision", () => {
    const { buffer, expected } = loadFixture();
    const frame = decodeFrame(buffer);
    frame.species.forEach((s, i) => {
      const e = expected.species[i];
      const block = parseFrame(buffer).species[i];
      for (let a = 0; a < s.uids.length; a++) {
        for (let k = 0; k < 3; k++) {
          const step = (block.boundsMax[k] - block.boundsMin[k]) / 65535;
          expect(Math.abs(s.positions[3 * a + k] - e.input_positions[3 * a + k])).toBeLessThanOrEqual(step / 2 + 1e-4);
        }
        const q = s.quaternions.subarray(4 * a, 4 * a + 4);
        expect(angleDeg(rotate(q, [0, 0, 1]), e.input_forward.slice(3 * a, 3 * a + 3))).toBeLessThan(0.25);
        // The fixture's first animal points straight up with up = forward: there is no up to keep.
        if (i === 0 && a === 0) continue;
        expect(angleDeg(rotate(q, [0, 1, 0]), e.input_up.slice(3 * a, 3 * a + 3))).toBeLessThan(0.25);
      }
    });
  });
});

describe("frame decoder against the documented format", () => {
  it("round-trips a frame built from docs/protocol.md", () => {
    const animals = [randomAnimals(500, 3), randomAnimals(0, 4), randomAnimals(37, 5, 2)];
    const buffer = encodeFrame(animals, { step: 99, time: 12.5, dt: 0.02, sequence: 5, paused: true });
    const frame = decodeFrame(buffer);
    expect(frame.paused).toBe(true);
    frame.species.forEach((s, i) => {
      const a = animals[i];
      expect(Array.from(s.uids)).toEqual(Array.from(a.uids));
      for (let j = 0; j < s.uids.length; j++) {
        const q = s.quaternions.subarray(4 * j, 4 * j + 4);
        const dot = Math.abs(q[0] * a.quaternions[4 * j] + q[1] * a.quaternions[4 * j + 1] + q[2] * a.quaternions[4 * j + 2] + q[3] * a.quaternions[4 * j + 3]);
        expect(2 * Math.acos(Math.min(1, dot)) * 180 / Math.PI).toBeLessThan(0.25);
        expect(Math.abs(s.speeds[j] - a.speeds[j])).toBeLessThanOrEqual(0.005 + 1e-6);
        for (let k = 0; k < 3; k++) expect(Math.abs(s.positions[3 * j + k] - a.positions[3 * j + k])).toBeLessThan(0.01);
      }
    });
  });

  it("refuses foreign and truncated buffers", () => {
    expect(() => parseFrame(new ArrayBuffer(8))).toThrow(FrameFormatError);
    const bad = new Uint8Array(64);
    bad.set([0x4e, 0x4f, 0x50, 0x45]);
    expect(() => parseFrame(bad.buffer)).toThrow(/magic/);
    const good = encodeFrame([randomAnimals(10)], { step: 0, time: 0, dt: 1, sequence: 0, paused: false });
    expect(() => parseFrame(good.slice(0, good.byteLength - 4))).toThrow(/truncated/);
    const v2 = good.slice(0);
    new DataView(v2).setUint16(4, 2, true);
    expect(() => parseFrame(v2)).toThrow(/version/);
  });

  it("decodes a 100,000-animal frame in a few milliseconds", () => {
    const n = 100_000;
    const buffer = encodeFrame([randomAnimals(n, 9, 300)], { step: 1, time: 1, dt: 1 / 30, sequence: 1, paused: false });
    expect(buffer.byteLength).toBe(32 + 32 + 16 * n);
    const positions = new Float32Array(3 * n), quaternions = new Float32Array(4 * n);
    const times: number[] = [];
    for (let r = 0; r < 15; r++) {
      const t0 = performance.now();
      const frame = parseFrame(buffer);
      dequantisePositions(frame.species[0], positions);
      unpackQuaternions(frame.species[0], quaternions);
      times.push(performance.now() - t0);
    }
    times.sort((a, b) => a - b);
    const median = times[Math.floor(times.length / 2)];
    console.log(`decode 100k animals: median ${median.toFixed(2)} ms, ${(buffer.byteLength / 1e6).toFixed(2)} MB`);
    // Generous bound (slow CI machines): the point is that it is far inside a 33 ms frame budget.
    expect(median).toBeLessThan(25);
  });
});
