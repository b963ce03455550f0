/**
 * Decoder for the binary frames the server streams (layout: docs/protocol.md).
 *
 * `parseFrame` only reads headers and returns typed-array *views* into the
 * received buffer (the layout keeps every array aligned so no copy is needed);
 * the renderer then dequantises straight into its GPU attribute arrays with
 * `dequantisePositions` / `unpackQuaternions`, so a 100,000-animal frame costs
 * one pass and no allocation. `decodeFrame` is the allocating convenience used
 * by tests and tools.
 */

export const MAGIC = "STRL";
export const VERSION = 1;
export const FRAME_HEADER_BYTES = 32;
export const SPECIES_HEADER_BYTES = 32;
export const BYTES_PER_ANIMAL = 16;
export const FLAG_PAUSED = 1;
/** Metres per second per speed step (speeds travel as uint16 centimetres per second). */
export const SPEED_UNIT = 0.01;

const HALF_SQRT2 = Math.SQRT1_2;
const Q10_STEP = (2 * HALF_SQRT2) / 1023;

export interface SpeciesBlock {
  /** Position of this species in the scene message's `species` list. */
  index: number;
  count: number;
  boundsMin: [number, number, number];
  boundsMax: [number, number, number];
  uids: Uint32Array;
  /** Smallest-three packed quaternions, one uint32 per animal. */
  rotations: Uint32Array;
  /** Quantised positions, x y z interleaved, relative to the bounds. */
  positions: Uint16Array;
  /** Centimetres per second. */
  speeds: Uint16Array;
}

export interface FrameHeader {
  version: number;
  step: number;
  paused: boolean;
  time: number;
  dt: number;
  sequence: number;
}

export interface Frame extends FrameHeader {
  species: SpeciesBlock[];
  byteLength: number;
}

export class FrameFormatError extends Error {}

/** Read the headers of a frame and return zero-copy views of its arrays. */
export function parseFrame(buffer: ArrayBuffer): Frame {
  if (buffer.byteLength < FRAME_HEADER_BYTES) throw new FrameFormatError("frame shorter than its header");
  const view = new DataView(buffer);
  const magic = String.fromCharCode(view.getUint8(0), view.getUint8(1), view.getUint8(2), view.getUint8(3));
  if (magic !== MAGIC) throw new FrameFormatError(`bad magic ${JSON.stringify(magic)}`);
  const version = view.getUint16(4, true);
  if (version !== VERSION) throw new FrameFormatError(`frame version ${version} is not supported (expected ${VERSION})`);
  const speciesCount = view.getUint16(6, true);
  const step = view.getUint32(8, true);
  const flags = view.getUint32(12, true);
  const time = view.getFloat64(16, true);
  const dt = view.getFloat32(24, true);
  const sequence = view.getUint32(28, true);
  const species: SpeciesBlock[] = [];
  let offset = FRAME_HEADER_BYTES;
  for (let s = 0; s < speciesCount; s++) {
    if (offset + SPECIES_HEADER_BYTES > buffer.byteLength) throw new FrameFormatError("frame truncated in a species header");
    const count = view.getUint32(offset, true);
    const index = view.getUint16(offset + 4, true);
    const boundsMin: [number, number, number] = [
      view.getFloat32(offset + 8, true), view.getFloat32(offset + 12, true), view.getFloat32(offset + 16, true),
    ];
    const boundsMax: [number, number, number] = [
      view.getFloat32(offset + 20, true), view.getFloat32(offset + 24, true), view.getFloat32(offset + 28, true),
    ];
    offset += SPECIES_HEADER_BYTES;
    if (offset + BYTES_PER_ANIMAL * count > buffer.byteLength) throw new FrameFormatError("frame truncated in a species block");
    species.push({
      index,
      count,
      boundsMin,
      boundsMax,
      uids: new Uint32Array(buffer, offset, count),
      rotations: new Uint32Array(buffer, offset + 4 * count, count),
      positions: new Uint16Array(buffer, offset + 8 * count, 3 * count),
      speeds: new Uint16Array(buffer, offset + 14 * count, count),
    });
    offset += BYTES_PER_ANIMAL * count;
  }
  return { version, step, paused: (flags & FLAG_PAUSED) !== 0, time, dt, sequence, species, byteLength: buffer.byteLength };
}

/** Quantised positions → metres, written to `out` (x y z interleaved). */
export function dequantisePositions(block: SpeciesBlock, out: Float32Array): void {
  const q = block.positions;
  const [x0, y0, z0] = block.boundsMin;
  const sx = (block.boundsMax[0] - x0) / 65535;
  const sy = (block.boundsMax[1] - y0) / 65535;
  const sz = (block.boundsMax[2] - z0) / 65535;
  for (let i = 0, n = block.count * 3; i < n; i += 3) {
    out[i] = x0 + q[i] * sx;
    out[i + 1] = y0 + q[i + 1] * sy;
    out[i + 2] = z0 + q[i + 2] * sz;
  }
}

/** Unpack one smallest-three quaternion into `out[o..o+3]` as x, y, z, w. */
export function unpackQuaternion(p: number, out: Float32Array | number[], o: number): void {
  const a = ((p >>> 20) & 1023) * Q10_STEP - HALF_SQRT2;
  const b = ((p >>> 10) & 1023) * Q10_STEP - HALF_SQRT2;
  const c = (p & 1023) * Q10_STEP - HALF_SQRT2;
  const d = Math.sqrt(Math.max(0, 1 - a * a - b * b - c * c));
  switch (p >>> 30) {
    case 0: out[o] = d; out[o + 1] = a; out[o + 2] = b; out[o + 3] = c; break;
    case 1: out[o] = a; out[o + 1] = d; out[o + 2] = b; out[o + 3] = c; break;
    case 2: out[o] = a; out[o + 1] = b; out[o + 2] = d; out[o + 3] = c; break;
    default: out[o] = a; out[o + 1] = b; out[o + 2] = c; out[o + 3] = d; break;
  }
}

/** All orientations of a block → (x, y, z, w) quaternions in `out`. */
export function unpackQuaternions(block: SpeciesBlock, out: Float32Array): void {
  const r = block.rotations;
  for (let i = 0; i < block.count; i++) unpackQuaternion(r[i], out, 4 * i);
}

/**
 * Split a frame's blocks by the scene message: the first `speciesCount` indices are
 * species, the rest entities (the scene's `entities`, see docs/protocol.md).
 */
export function splitBlocks(frame: Frame, speciesCount: number): { species: SpeciesBlock[]; entities: SpeciesBlock[] } {
  const species: SpeciesBlock[] = [];
  const entities: SpeciesBlock[] = [];
  for (const block of frame.species) (block.index < speciesCount ? species : entities).push(block);
  return { species, entities };
}

/** A sound block's radii in metres: sound blocks carry each sound's radius where species carry speed. */
export function soundRadii(block: SpeciesBlock): Float32Array {
  const out = new Float32Array(block.count);
  for (let i = 0; i < block.count; i++) out[i] = block.speeds[i] * SPEED_UNIT;
  return out;
}

export interface DecodedSpecies {
  index: number;
  uids: Uint32Array;
  positions: Float32Array;
  quaternions: Float32Array;
  speeds: Float32Array;
}

/** Fully decoded frame in fresh arrays (tests, tools); the renderer uses the views instead. */
export function decodeFrame(buffer: ArrayBuffer): FrameHeader & { species: DecodedSpecies[] } {
  const frame = parseFrame(buffer);
  const species = frame.species.map((block) => {
    const positions = new Float32Array(block.count * 3);
    const quaternions = new Float32Array(block.count * 4);
    const speeds = new Float32Array(block.count);
    dequantisePositions(block, positions);
    unpackQuaternions(block, quaternions);
    for (let i = 0; i < block.count; i++) speeds[i] = block.speeds[i] * SPEED_UNIT;
    return { index: block.index, uids: block.uids.slice(), positions, quaternions, speeds };
  });
  return { ...frame, species };
}
