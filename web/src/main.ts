/**
 * Entry point: starts the viewer and exposes `window.__starling`, a small,
 * stable hook for the browser tests (and for poking at a running session from
 * the console) so they need not reverse-engineer pixels to find an animal.
 */
import "./style.css";
import * as THREE from "three";
import { App } from "./app";
import type { ClientMessage } from "./protocol/messages";

const canvas = document.getElementById("view") as HTMLCanvasElement;
const app = new App(canvas);
app.start();

export interface StarlingHook {
  state(): {
    connected: boolean;
    scenario: string | null;
    species: string[];
    step: number;
    time: number;
    paused: boolean | null;
    framesReceived: number;
    framesApplied: number;
    /** Draws since the page loaded: wait for a fresh one instead of sleeping. */
    framesRendered: number;
    renderFps: number;
    /** Drawing-buffer scale per side (below 1 when a software rasteriser cannot hold 30 fps at full size). */
    renderScale: number;
    /** "software": WebGL runs on the CPU (or `?quality=low`) and the view draws its light tier. */
    quality: "software" | "full";
    framesPerS: number;
    stepsPerS: number | null;
    decodeMs: number;
    counts: Record<string, number>;
    selection: { species: string; uid: number } | null;
    inspect: unknown;
    errors: string[];
    acks: { action: string; result?: unknown }[];
    camera: string;
    metrics: Record<string, Record<string, number | null | undefined>>;
    metricsStep: number;
    /** Entities in the latest frame by kind (apple, carcass, sound, player). */
    entities: Record<string, number>;
    /** Height of the scene's water surface (null without water). */
    water: number | null;
    /** The view the camera took when it framed the animals (null until it has). */
    framed: { target: number[]; position: number[]; radius: number; species: string } | null;
    /** Where the orbit camera is and what it looks at now (world coordinates). */
    view: { position: number[]; target: number[] };
    /** Replays only: the frame drawn (from its step), the recording's length and whether it plays. */
    replay: { frame: number; n_frames: number; playing: boolean } | null;
    /** Labels drawn over heads now, and the deaths the server told of. */
    headLabels: number;
    deaths: { species: string; uid: number; cause: string | null }[];
    /** The editor panel: open, its status, how many configs it applied, what was refused. */
    editor: { open: boolean; status: string; applied: number; problems: { path: string; message: string }[];
      canUndo: boolean; canRedo: boolean; draft: unknown };
  };
  selectNearestCenter(): { species: string; uid: number } | null;
  /** Where an animal is drawn, in CSS pixels of the page (null when off screen or unknown). */
  project(species: string, uid: number): { x: number; y: number } | null;
  /** Where a world point is drawn, in CSS pixels of the page (null when off screen). */
  projectPoint(point: number[]): { x: number; y: number } | null;
  /** Where a species' centre of mass is drawn, in CSS pixels (null when off screen). */
  centroid(species: string): { x: number; y: number } | null;
  /**
   * Up to `limit` animals of a species as drawn: uid, world position and page position
   * in CSS pixels (null when off screen).
   */
  animals(species: string, limit?: number): { uid: number; position: number[]; screen: { x: number; y: number } | null }[];
  /** Where the entities of a kind (apple, carcass, sound, player) are, as of the latest frame. */
  entities(kind: string): number[][];
  /** Put the orbit camera at `position` looking at `target` (world coordinates). */
  look(position: number[], target: number[]): void;
  /** Settle the framed view where it was heading and stop it following the animals. */
  hold(): void;
  /** Show or hide "terrain", "water", "obstacles", "animals" or one species (see App.showPart); false when absent. */
  show(part: string, visible: boolean): boolean;
  select(species: string, uid: number): void;
  deselect(): void;
  send(message: ClientMessage): boolean;
}

const hook: StarlingHook = {
  state: () => ({
    connected: app.connection.connected,
    scenario: app.scene?.scenario ?? null,
    species: app.layers.map((l) => l.info.name),
    step: app.step,
    time: app.time,
    paused: app.status ? app.status.paused : null,
    framesReceived: app.connection.framesReceived,
    framesApplied: app.framesApplied,
    framesRendered: app.framesRendered,
    renderFps: app.renderFps,
    renderScale: app.world.renderScale,
    quality: app.world.software ? "software" : "full",
    framesPerS: app.framesPerS,
    stepsPerS: app.status ? app.status.steps_per_s : null,
    decodeMs: app.decodeMs,
    counts: Object.fromEntries(app.layers.map((l) => [l.info.name, l.count])),
    selection: app.selection,
    inspect: app.inspect,
    errors: [...app.errors],
    acks: [...app.acks],
    camera: app.rig.mode,
    metrics: (app.status?.metrics ?? {}) as Record<string, Record<string, number | null | undefined>>,
    metricsStep: app.status?.metrics_step ?? -1,
    entities: { ...app.entities.counts },
    water: app.env.waterShape?.level ?? null,
    framed: app.framed,
    view: { position: app.world.camera.position.toArray(), target: app.rig.orbit.target.toArray() },
    replay: app.timeline.info
      ? { frame: app.timeline.frame, n_frames: app.timeline.info.n_frames, playing: app.timeline.playing }
      : null,
    headLabels: app.headLabels.count,
    deaths: [...app.deaths],
    editor: {
      open: app.editor.visible, status: app.editor.status, applied: app.editor.applied,
      problems: [...app.editor.problems], canUndo: !!app.editor.history?.canUndo,
      canRedo: !!app.editor.history?.canRedo, draft: app.editor.draft,
    },
  }),
  selectNearestCenter: () => app.selectNearestCenter(),
  project: (species, uid) => app.screen.project(species, uid),
  projectPoint: (point) => app.screen.projectPoint(point),
  centroid: (species) => app.screen.centroid(species),
  animals: (species, limit = 10000) => {
    const layer = app.layers.find((l) => l.info.name === species);
    if (!layer) return [];
    const out = [];
    for (let i = 0; i < Math.min(layer.count, limit); i++) {
      const uid = layer.uids[i];
      out.push({ uid, position: Array.from(layer.positions.subarray(3 * i, 3 * i + 3)), screen: app.screen.project(species, uid) });
    }
    return out;
  },
  entities: (kind) => app.entities.positionsOf(kind),
  look: (position, target) => {
    app.setCamera("orbit");
    app.rig.lookFrom(new THREE.Vector3(...position.slice(0, 3)), new THREE.Vector3(...target.slice(0, 3)));
    app.rig.userMoved = true;
  },
  hold: () => app.holdCamera(),
  show: (part, visible) => app.showPart(part, visible),
  select: (species, uid) => app.select(species, uid),
  deselect: () => app.deselect(),
  send: (message) => app.send(message),
};

declare global {
  interface Window {
    __starling: StarlingHook;
  }
}
window.__starling = hook;
