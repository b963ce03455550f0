/**
 * A test-only encoder written from docs/protocol.md (not from the Python code),
 * so the decoder is checked against the documented format as well as against
 * the fixture the Python encoder produced.
 */
export interface AnimalSet {
  positions: Float32Array; // x y z per animal
  quaternions: Float32Array; // x y z w per animal (unit)
  speeds: Float32Array; // m/s
  uids: Uint32Array;
}

function q10(c: number): number {
  return Math.max(0, Math.min(1023, Math.round((c * Math.SQRT2 + 1) / 2 * 1023)));
}

export function packQuaternion(x: number, y: number, z: number, w: number): number {
  const comps = [x, y, z, w];
  let idx = 0;
  for (let i = 1; i < 4; i++) if (Math.abs(comps[i]) > Math.abs(comps[idx])) idx = i;
  const sign = comps[idx] < 0 ? -1 : 1;
  const rest = comps.filter((_, i) => i !== idx).map((c) => q10(sign * c));
  return ((idx << 30) | (rest[0] << 20) | (rest[1] << 10) | rest[2]) >>> 0;
}

export function encodeFrame(species: AnimalSet[], header: { step: number; time: number; dt: number; sequence: number; paused: boolean }): ArrayBuffer {
  const size = 32 + species.reduce((s, a) => s + 32 + 16 * a.uids.length, 0);
  const buffer = new ArrayBuffer(size);
  const view = new DataView(buffer);
  "STRL".split("").forEach((c, i) => view.setUint8(i, c.charCodeAt(0)));
  view.setUint16(4, 1, true);
  view.setUint16(6, species.length, true);
  view.setUint32(8, header.step, true);
  view.setUint32(12, header.paused ? 1 : 0, true);
  view.setFloat64(16, header.time, true);
  view.setFloat32(24, header.dt, true);
  view.setUint32(28, header.sequence, true);
  let offset = 32;
  species.forEach((a, index) => {
    const n = a.uids.length;
    const lo = [Infinity, Infinity, Infinity], hi = [-Infinity, -Infinity, -Infinity];
    for (let i = 0; i < n; i++) for (let k = 0; k < 3; k++) {
      lo[k] = Math.min(lo[k], a.positions[3 * i + k]);
      hi[k] = Math.max(hi[k], a.positions[3 * i + k]);
    }
    for (let k = 0; k < 3; k++) if (!n) { lo[k] = 0; hi[k] = 0; }
    const lo32 = Float32Array.from(lo), hi32 = Float32Array.from(hi);
    view.setUint32(offset, n, true);
    view.setUint16(offset + 4, index, true);
    for (let k = 0; k < 3; k++) {
      view.setFloat32(offset + 8 + 4 * k, lo32[k], true);
      view.setFloat32(offset + 20 + 4 * k, hi32[k], true);
    }
    offset += 32;
    const uids = new Uint32Array(buffer, offset, n);
    const rot = new Uint32Array(buffer, offset + 4 * n, n);
    const pos = new Uint16Array(buffer, offset + 8 * n, 3 * n);
    const spd = new Uint16Array(buffer, offset + 14 * n, n);
    for (let i = 0; i < n; i++) {
      uids[i] = a.uids[i];
      rot[i] = packQuaternion(a.quaternions[4 * i], a.quaternions[4 * i + 1], a.quaternions[4 * i + 2], a.quaternions[4 * i + 3]);
      for (let k = 0; k < 3; k++) {
        const extent = hi32[k] - lo32[k];
        const q = extent > 0 ? Math.round(((a.positions[3 * i + k] - lo32[k]) / extent) * 65535) : 0;
        pos[3 * i + k] = Math.max(0, Math.min(65535, q));
      }
      spd[i] = Math.max(0, Math.min(65535, Math.round(a.speeds[i] / 0.01)));
    }
    offset += 16 * n;
  });
  return buffer;
}

/** Deterministic random animals (a small LCG keeps tests reproducible without dependencies). */
export function randomAnimals(n: number, seed = 1, spread = 200): AnimalSet {
  let s = seed >>> 0;
  const rand = () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 4294967296);
  const positions = new Float32Array(3 * n), quaternions = new Float32Array(4 * n), speeds = new Float32Array(n), uids = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    for (let k = 0; k < 3; k++) positions[3 * i + k] = (rand() * 2 - 1) * spread;
    let x = rand() * 2 - 1, y = rand() * 2 - 1, z = rand() * 2 - 1, w = rand() * 2 - 1;
    const len = Math.hypot(x, y, z, w) || 1;
    x /= len; y /= len; z /= len; w /= len;
    quaternions.set([x, y, z, w], 4 * i);
    speeds[i] = rand() * 30;
    uids[i] = (i * 7 + 3) >>> 0;
  }
  return { positions, quaternions, speeds, uids };
}
