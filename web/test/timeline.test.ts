import { describe, expect, it } from "vitest";
import { frameOfStep, markerFraction } from "../src/ui/timeline";

describe("frameOfStep", () => {
  const steps = [0, 2, 4, 6];
  it("finds the frame recorded at a step", () => {
    expect(frameOfStep(steps, 0)).toBe(0);
    expect(frameOfStep(steps, 4)).toBe(2);
    expect(frameOfStep(steps, 6)).toBe(3);
  });
  it("takes the last frame at or before a step between frames, clamped to the recording", () => {
    expect(frameOfStep(steps, 5)).toBe(2);
    expect(frameOfStep(steps, 99)).toBe(3);
    expect(frameOfStep(steps, -3)).toBe(0);
    expect(frameOfStep([], 7)).toBe(0);
  });
});

describe("markerFraction", () => {
  it("spreads frames over the track, first at 0 and last at 1", () => {
    expect(markerFraction(0, 5)).toBe(0);
    expect(markerFraction(1, 5)).toBe(0.25);
    expect(markerFraction(4, 5)).toBe(1);
    expect(markerFraction(9, 5)).toBe(1);
    expect(markerFraction(0, 1)).toBe(0);
  });
});
