import { describe, expect, it } from "vitest";
import { DynamicResolution, pinnedScale } from "../src/render/resolution";

/** Feed `seconds` of frames at `fps`; returns the scales it changed to. */
function run(r: DynamicResolution, fps: number, seconds: number): number[] {
  const changes: number[] = [];
  for (let i = 0; i < Math.round(fps * seconds); i++) {
    const s = r.frame(1 / fps);
    if (s !== null) changes.push(s);
  }
  return changes;
}

describe("dynamic resolution", () => {
  it("leaves a view that holds its frame rate alone", () => {
    const r = new DynamicResolution();
    expect(run(r, 60, 5)).toEqual([]);
    expect(run(r, 40, 5)).toEqual([]); // above the target, below 1.6 × it: no see-saw
    expect(r.scale).toBe(1);
  });

  it("steps down by the square root of the shortfall, at most a fifth a second, to its floor", () => {
    const r = new DynamicResolution();
    // 10 fps of 30: √(1/3) = 0.577 is capped at 0.8; then 0.8 × 0.8 = 0.64 → 0.60; then 0.48 → the floor 0.5.
    expect(run(r, 10, 3.05)).toEqual([0.8, 0.6, 0.5]);
    expect(run(r, 10, 3)).toEqual([]);
    const near = new DynamicResolution();
    expect(run(near, 25, 1.02)).toEqual([0.9]); // √(25/30) = 0.913 → 0.90
    const barely = new DynamicResolution();
    expect(run(barely, 29.5, 1.02)).toEqual([0.95]); // at least one step of 0.05
  });

  it("climbs back a tenth a second when frames come well above the target", () => {
    const r = new DynamicResolution({ min: 0.5 });
    run(r, 10, 3.05);
    expect(r.scale).toBe(0.5);
    // 0.5 × 1.1 = 0.55; 0.605 → 0.6; 0.66 → 0.65; 0.715 → 0.7 ... until 1.
    expect(run(r, 60, 3.02)).toEqual([0.55, 0.6, 0.65]);
    run(r, 60, 10);
    expect(r.scale).toBe(1);
  });

  it("does not count a stall (a background tab) as slow frames", () => {
    const r = new DynamicResolution();
    for (let i = 0; i < 5; i++) expect(r.frame(0.5)).toBeNull();
    // Half a second of frames, a stall, half a second more: no window of a second completed.
    run(r, 60, 0.5);
    expect(r.frame(2)).toBeNull();
    expect(run(r, 60, 0.5)).toEqual([]);
    expect(r.scale).toBe(1);
  });
});

describe("a pinned scale in the address", () => {
  it("is read from ?scale= and absent without it", () => {
    expect(pinnedScale("?scale=0.6")).toBe(0.6);
    expect(pinnedScale("?quality=low&scale=1")).toBe(1);
    expect(pinnedScale("?scale=0.25")).toBe(0.25);
    expect(pinnedScale("")).toBeNull();
    expect(pinnedScale("?quality=low")).toBeNull();
  });

  it.each(["abc", "", "0", "0.2", "1.5", "-1", "NaN"])("?scale=%s is refused, naming the value and the range", (raw) => {
    expect(() => pinnedScale(`?scale=${raw}`)).toThrow(`scale=${raw} in the address is ignored: it takes a number from 0.25 to 1`);
  });
});
