/**
 * Dynamic resolution for software rasterisers: the drawing buffer's scale (its
 * pixels per CSS pixel) follows the frame rate, down when frames come too slowly
 * and back up when there is room, between `min` and 1. On a CPU rasteriser most
 * of a frame is its pixels, so a smaller buffer, stretched to the page by the
 * browser, is the one knob that buys frame rate without changing what is drawn.
 *
 * It is fed the time between drawn frames and decides once per window (about a
 * second), so a single slow frame does not move it; a pause longer than `stall`
 * (a background tab, a blocking dialog) starts a new window instead of counting.
 */
export interface ResolutionOptions {
  /** Frame rate to hold (frames per second). */
  target: number;
  /** Smallest scale (fraction of the CSS size per side). */
  min: number;
  /** Seconds of frames per decision. */
  window: number;
  /** A gap between frames longer than this (seconds) is not counted. */
  stall: number;
}

export const RESOLUTION_DEFAULTS: ResolutionOptions = { target: 30, min: 0.5, window: 1, stall: 0.25 };

/** The smallest scale `?scale=` may pin. */
export const MIN_PINNED_SCALE = 0.25;

/**
 * `?scale=S` in the page's address pins the drawing buffer's scale (no governor): a
 * user's own trade of sharpness for frame rate. Null when absent; a value that is not
 * a number from MIN_PINNED_SCALE to 1 throws, saying so.
 */
export function pinnedScale(search: string): number | null {
  const raw = new URLSearchParams(search).get("scale");
  if (raw === null) return null;
  const value = Number(raw);
  if (raw.trim() === "" || !(value >= MIN_PINNED_SCALE && value <= 1)) {
    throw new Error(`scale=${raw} in the address is ignored: it takes a number from ${MIN_PINNED_SCALE} to 1, the share of the window's resolution to draw at`);
  }
  return value;
}

/** Scales are multiples of this, so that the buffer is not resized for nothing. */
const QUANTUM = 0.05;

function quantise(round: (x: number) => number, scale: number): number {
  return Math.round(round(scale / QUANTUM + 1e-9) * QUANTUM * 100) / 100;
}

export class DynamicResolution {
  scale = 1;
  private frames = 0;
  private elapsed = 0;
  private readonly options: ResolutionOptions;

  constructor(options: Partial<ResolutionOptions> = {}) {
    this.options = { ...RESOLUTION_DEFAULTS, ...options };
  }

  /**
   * Count one drawn frame, `dt` seconds after the previous one. Returns the new scale
   * when it changes, otherwise null.
   */
  frame(dt: number): number | null {
    const { target, min, window, stall } = this.options;
    if (!(dt > 0) || dt > stall) {
      this.frames = 0;
      this.elapsed = 0;
      return null;
    }
    this.frames++;
    this.elapsed += dt;
    if (this.elapsed < window - 1e-9) return null;
    const fps = this.frames / this.elapsed;
    this.frames = 0;
    this.elapsed = 0;
    let next = this.scale;
    if (fps < target) {
      // Frame time grows with the pixels (the square of the scale); step down at most
      // a fifth at a time, since not all of a frame is pixels, and at least one quantum.
      next = quantise(Math.floor, this.scale * Math.max(0.8, Math.sqrt(fps / target)));
    } else if (fps > 1.6 * target) {
      // Well above the target: a tenth back up (the gap keeps it from see-sawing).
      next = quantise(Math.round, this.scale * 1.1);
    }
    next = Math.min(1, Math.max(min, next));
    if (next === this.scale) return null;
    this.scale = next;
    return next;
  }
}
