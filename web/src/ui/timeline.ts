/**
 * The replay timeline: a slider over the recorded frames (showing step and time), play and
 * pause, speed, and jumps to the previous or next recorded event, whose markers are drawn
 * along the slider. It appears only when the scene says the server replays a recording;
 * it then marks the page (`body.replay`) so the live-only controls hide.
 *
 * The slider follows the frames actually drawn (their step), not the status, so what it
 * shows is what is on screen; while the user drags it, it follows the hand instead and
 * sends `seek` at most every `SEEK_INTERVAL_MS` (and once more where the drag ends).
 */
import type { AckMessage, ClientMessage, ReplayInfo, StatusMessage } from "../protocol/messages";

const SEEK_INTERVAL_MS = 40;

/** Marker colours per event kind (others get the accent colour). */
export const EVENT_COLORS: Record<string, string> = {
  death: "#ff6b6b", spawn: "#06d6a0", fire: "#ff9f1c", apple: "#9ef01a",
  move_player: "#8b98a5", edit: "#b388ff", scripted: "#7fdbff",
};

/** The frame showing `step`: the last frame whose step is at or before it (steps increase). */
export function frameOfStep(steps: number[], step: number): number {
  let lo = 0, hi = steps.length - 1;
  if (hi < 0 || step <= steps[0]) return 0;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (steps[mid] <= step) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** Where frame `frame` of `n` sits along the track, as a fraction of its width. */
export function markerFraction(frame: number, n: number): number {
  return n > 1 ? Math.min(Math.max(frame / (n - 1), 0), 1) : 0;
}

const $ = <T extends HTMLElement = HTMLElement>(root: HTMLElement, sel: string) => root.querySelector(sel) as T;

export class Timeline {
  info: ReplayInfo | null = null;
  /** The frame drawn last (from its step). */
  frame = 0;
  playing = false;
  private dragging = false;
  private lastSeek = 0;
  private pendingSeek: number | null = null;
  private readonly slider: HTMLInputElement;
  private readonly markers: HTMLCanvasElement;
  private readonly label: HTMLElement;
  private readonly play: HTMLButtonElement;
  private readonly speed: HTMLSelectElement;
  private readonly kind: HTMLSelectElement;

  constructor(private readonly root: HTMLElement, private readonly send: (m: ClientMessage) => boolean) {
    root.innerHTML = `
      <button class="tl-play" title="Play / pause (Space)">Play</button>
      <button class="tl-prev" title="Previous event ([)">◀ Event</button>
      <div class="tl-track">
        <canvas class="tl-markers"></canvas>
        <input class="tl-slider" type="range" min="0" max="0" step="1" value="0" aria-label="Recorded frame" />
      </div>
      <button class="tl-next" title="Next event (])">Event ▶</button>
      <select class="tl-kind" title="Which events the jumps stop at"><option value="">any event</option></select>
      <label class="field">Speed
        <select class="tl-speed" title="Recorded seconds per second">
          <option value="0.25">¼×</option><option value="0.5">½×</option><option value="1" selected>1×</option>
          <option value="2">2×</option><option value="4">4×</option><option value="8">8×</option>
        </select>
      </label>
      <span class="tl-label mono"></span>`;
    this.slider = $(root, ".tl-slider");
    this.markers = $(root, ".tl-markers");
    this.label = $(root, ".tl-label");
    this.play = $(root, ".tl-play");
    this.speed = $(root, ".tl-speed");
    this.kind = $(root, ".tl-kind");
    this.play.addEventListener("click", () => this.send({ type: this.playing ? "pause" : "resume" }));
    $(root, ".tl-prev").addEventListener("click", () => this.jump(-1));
    $(root, ".tl-next").addEventListener("click", () => this.jump(1));
    this.speed.addEventListener("change", () => this.send({ type: "speed", multiplier: Number(this.speed.value) }));
    this.slider.addEventListener("pointerdown", () => { this.dragging = true; });
    this.slider.addEventListener("input", () => this.seek(Number(this.slider.value), false));
    this.slider.addEventListener("change", () => {
      this.dragging = false;
      this.seek(Number(this.slider.value), true);
    });
    window.addEventListener("pointerup", () => { this.dragging = false; });
    window.addEventListener("resize", () => this.drawMarkers());
    window.addEventListener("keydown", (e) => {
      if (!this.active || (e.target as HTMLElement)?.closest?.("input, select, textarea")) return;
      if (e.code === "BracketLeft") this.jump(-1);
      else if (e.code === "BracketRight") this.jump(1);
      else if (e.code === "ArrowLeft") this.seek(Math.max(this.frame - 1, 0), true);
      else if (e.code === "ArrowRight") this.seek(Math.min(this.frame + 1, (this.info?.n_frames ?? 1) - 1), true);
    });
  }

  /** Whether the app shows a recording (the live-only controls are off). */
  get active(): boolean {
    return this.info !== null;
  }

  /** A new scene: show the timeline for a recording, hide it for a live simulation. */
  set(info: ReplayInfo | null): void {
    this.info = info;
    document.body.classList.toggle("replay", info !== null);
    this.root.classList.toggle("hidden", info === null);
    if (!info) return;
    this.slider.max = String(Math.max(info.n_frames - 1, 0));
    const kinds = [...new Set(info.events.map((e) => e.kind))].sort();
    this.kind.innerHTML = `<option value="">any event</option>` +
      kinds.map((k) => `<option value="${k}">${k.replace("_", " ")}</option>`).join("");
    const counts = kinds.map((k) => `${info.events.filter((e) => e.kind === k).length} ${k.replace("_", " ")}`);
    this.markers.title = counts.length ? counts.join(", ") : "no recorded events";
    this.showFrame(info.steps[0] ?? 0);
    requestAnimationFrame(() => this.drawMarkers());
  }

  /** A frame was drawn: move the slider there (unless the user holds it) and label it. */
  showFrame(step: number): void {
    const info = this.info;
    if (!info) return;
    this.frame = frameOfStep(info.steps, step);
    if (!this.dragging) this.slider.value = String(this.frame);
    const time = info.times[this.frame] ?? 0;
    this.label.textContent = `${info.file} · step ${step} · ${time.toFixed(2)} s · frame ${this.frame + 1}/${info.n_frames}`;
  }

  onStatus(status: StatusMessage): void {
    if (!this.info || !status.replay) return;
    this.playing = status.replay.playing;
    this.play.textContent = this.playing ? "Pause" : "Play";
    this.play.classList.toggle("active", !this.playing);
    if (document.activeElement !== this.speed) this.speed.value = String(status.speed);
  }

  /** A short line for the answer to an event jump (null: not a replay action). */
  describeAck(ack: AckMessage): string | null {
    if (ack.action !== "next_event" && ack.action !== "prev_event") return null;
    const result = ack.result as { frame: number; event: { kind: string; species?: string | null; uid?: number | null; step: number } } | null;
    if (!result) return ack.action === "next_event" ? "No later event" : "No earlier event";
    const e = result.event;
    const who = e.species ? ` of ${e.species}${e.uid !== null && e.uid !== undefined ? ` #${e.uid}` : ""}` : "";
    return `${e.kind.replace("_", " ")}${who} at step ${e.step}`;
  }

  private jump(direction: 1 | -1): void {
    const kind = this.kind.value || null;
    this.send({ type: direction > 0 ? "next_event" : "prev_event", kind });
  }

  private seek(frame: number, final: boolean): void {
    const now = performance.now();
    if (!final && now - this.lastSeek < SEEK_INTERVAL_MS) {
      this.pendingSeek = frame;
      setTimeout(() => this.flushSeek(), SEEK_INTERVAL_MS);
      return;
    }
    this.pendingSeek = null;
    this.lastSeek = now;
    this.send({ type: "seek", frame });
  }

  private flushSeek(): void {
    if (this.pendingSeek === null || performance.now() - this.lastSeek < SEEK_INTERVAL_MS) return;
    this.seek(this.pendingSeek, true);
  }

  private drawMarkers(): void {
    const info = this.info;
    const canvas = this.markers;
    const width = canvas.clientWidth, height = canvas.clientHeight;
    if (!info || !width || !height) return;
    const ratio = window.devicePixelRatio || 1;
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(height * ratio);
    const g = canvas.getContext("2d");
    if (!g) return;
    g.setTransform(ratio, 0, 0, ratio, 0, 0);
    g.clearRect(0, 0, width, height);
    // The slider's thumb centre travels over the track minus one thumb width.
    const inset = 7;
    for (const e of info.events) {
      const x = inset + markerFraction(e.frame, info.n_frames) * (width - 2 * inset);
      g.fillStyle = EVENT_COLORS[e.kind] ?? "#7fdbff";
      g.fillRect(Math.round(x) - 1, 0, 2, height);
    }
  }
}
