/**
 * The viewer application: wires the connection, the 3D world and the UI.
 *
 * Frames are applied at most once per animation frame and only the newest one
 * (older ones that arrived in between are simply dropped), so a slow GPU
 * lowers the drawn rate without queueing work or latency.
 */
import * as THREE from "three";
import { Connection } from "./net/connection";
import { parseFrame } from "./protocol/frame";
import type {
  ClientMessage, EventsMessage, InspectMessage, SceneMessage, ServerMessage, StatusMessage,
} from "./protocol/messages";
import { Player } from "./player";
import { SpeciesLayer, Highlight } from "./render/animals";
import { CameraRig, isTyping, type CameraMode, type FollowTarget } from "./render/cameras";
import { EntityView } from "./render/entities";
import { AutoFraming, type Framed } from "./render/framing";
import { SelectionOverlay } from "./render/debug";
import { EnvironmentView } from "./render/environment";
import { DynamicResolution, pinnedScale } from "./render/resolution";
import { Screen } from "./render/screen";
import { World } from "./render/world";
import { Charts } from "./ui/charts";
import { EditorPanel } from "./ui/editor/panel";
import { HeadLabels } from "./ui/headlabels";
import { Inspector } from "./ui/inspector";
import { Timeline } from "./ui/timeline";

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;

export interface Selection {
  species: string;
  uid: number;
}

export class App {
  readonly world: World;
  readonly env: EnvironmentView;
  readonly entities: EntityView;
  readonly rig: CameraRig;
  readonly overlay: SelectionOverlay;
  readonly inspector: Inspector;
  readonly charts: Charts;
  readonly timeline: Timeline;
  readonly editor: EditorPanel;
  readonly headLabels: HeadLabels;
  /** Deaths the server told of since the page loaded (tests). */
  deaths: { species: string; uid: number; cause: string | null }[] = [];
  readonly connection: Connection;
  layers: SpeciesLayer[] = [];
  scene: SceneMessage | null = null;
  status: StatusMessage | null = null;
  inspect: InspectMessage | null = null;
  selection: Selection | null = null;
  errors: string[] = [];
  acks: { action: string; result?: unknown }[] = [];
  step = 0;
  time = 0;
  framesApplied = 0;
  /** Draws since the page loaded (tests wait for fresh draws instead of sleeping). */
  framesRendered = 0;
  /** Software rasterisers only: the drawing buffer's scale follows the frame rate. */
  private resolution: DynamicResolution | null = null;
  renderFps = 0;
  framesPerS = 0;
  decodeMs = 0;
  frameBytes = 0;
  readonly player: Player;
  /** From page pixels to the world and back (picking, aiming, projecting). */
  readonly screen: Screen;
  private pendingFrame: ArrayBuffer | null = null;
  private lastTick = performance.now();
  private fpsFrames = 0;
  private fpsWindow = performance.now();
  private framesAtWindow = 0;
  private lastPanel = 0;
  private lastHud = 0;
  private scenarioShown = "";
  private statusError: string | null = null;
  /** Aims the orbit camera at the animals when a scenario starts, and follows them until the user moves it. */
  private readonly framing: AutoFraming;
  /** The camera as last framed on the animals (tests): target, distance and group radius. */
  get framed(): Framed | null {
    return this.framing.framed;
  }
  private pointerDown: { x: number; y: number; t: number } | null = null;
  /** When this page last sent a pause, speed, step or restart (its own changes are not news). */
  private lastOwnControl = -Infinity;

  constructor(canvas: HTMLCanvasElement) {
    this.world = new World(canvas);
    document.body.classList.toggle("software", this.world.software);
    this.env = new EnvironmentView(this.world.lightUniforms, this.world.sunWorld, this.world.skyTop, this.world.software);
    this.world.scene.add(this.env.group);
    this.entities = new EntityView(this.world.lightUniforms);
    this.world.scene.add(this.entities.group);
    this.rig = new CameraRig(this.world.camera, canvas);
    this.framing = new AutoFraming({
      world: this.world,
      rig: this.rig,
      layers: () => this.layers,
      floorAt: (x, z) => Math.max(this.groundHeight(x, z), this.env.waterShape?.level ?? -Infinity),
      freeBand: (rect) => {
        const top = Math.max($("topbar").getBoundingClientRect().bottom, rect.top);
        const charts = $("charts");
        const chartsShown = !document.body.classList.contains("no-charts") && charts.offsetParent !== null;
        return { top, bottom: chartsShown ? Math.min(charts.getBoundingClientRect().top, rect.bottom) : rect.bottom };
      },
    });
    this.overlay = new SelectionOverlay($("labels"));
    this.world.scene.add(this.overlay.group);
    this.inspector = new Inspector($("inspector"), () => this.deselect(), () => this.setCamera("follow"));
    this.charts = new Charts($("charts"));
    this.timeline = new Timeline($("timeline"), (m) => this.send(m));
    this.headLabels = new HeadLabels($("labels"));
    this.editor = new EditorPanel($("editor"), (text, kind) => this.toast(text, kind), () => this.toggleEditor(false));
    // keep the key hint just above the chart panel, whatever its height (legends wrap)
    // (and an opening view keeps its target in the middle of the band the two leave free)
    const chartsPanel = $("charts");
    new ResizeObserver(() => {
      document.body.style.setProperty("--charts-h", `${chartsPanel.offsetHeight}px`);
      this.framing.panelsMoved();
    }).observe(chartsPanel);
    // and the panels just below the top bar, however many rows its buttons wrap into
    const topbar = $("topbar");
    new ResizeObserver(() => {
      document.body.style.setProperty("--below-top", `${topbar.offsetTop + topbar.offsetHeight + 10}px`);
      this.framing.panelsMoved();
    }).observe(topbar);
    this.screen = new Screen(this.world, () => this.layers, () => this.env.surfaces);
    this.player = new Player({
      world: this.world,
      rig: this.rig,
      entities: this.entities,
      timeline: this.timeline,
      scene: () => this.scene,
      send: (m) => this.send(m),
      groundHeight: (x, z) => this.groundHeight(x, z),
    });
    this.connection = new Connection(
      Connection.defaultUrl(),
      (buffer) => { this.pendingFrame = buffer; },
      (message) => this.onMessage(message),
      (connected) => this.onConnection(connected),
    );
    this.bindUi(canvas);
    this.chooseResolution();
    window.addEventListener("resize", () => {
      this.world.resize();
      this.charts.resize();
      this.framing.panelsMoved(); // the canvas's height moves the free band's middle too
    });
  }

  /** `?scale=` pins the drawing buffer's scale; otherwise a software rasteriser gets the governor. */
  private chooseResolution(): void {
    let pinned: number | null = null;
    try {
      pinned = pinnedScale(location.search);
    } catch (error) {
      this.toast((error as Error).message);
    }
    if (pinned !== null) this.world.setRenderScale(pinned);
    else if (this.world.software) this.resolution = new DynamicResolution();
  }

  start(): void {
    this.connection.open();
    const loop = () => {
      this.tick();
      requestAnimationFrame(loop);
    };
    requestAnimationFrame(loop);
  }

  send(message: ClientMessage): boolean {
    if (["pause", "resume", "step", "speed", "mode", "restart", "scenario"].includes(message.type)) {
      this.lastOwnControl = performance.now();
    }
    return this.connection.send(message);
  }

  /** Frame every animal again, in the orbit view (after following one, or flying off). */
  frameAll(): void {
    if (this.rig.mode !== "orbit") this.setCamera("orbit");
    this.rig.resetUserMoved();
    this.framing.request();
  }

  // ---- server messages ---------------------------------------------------------------

  private onConnection(connected: boolean): void {
    $("conn").classList.toggle("ok", connected);
    $("conn-text").textContent = connected ? this.liveWord() : "reconnecting…";
    if (!connected) this.clearSelection();
  }

  private onMessage(message: ServerMessage): void {
    switch (message.type) {
      case "scene": this.onScene(message); break;
      case "status": this.onStatus(message); break;
      case "inspect": this.onInspect(message); break;
      case "error":
        this.errors.push(message.message);
        if (this.errors.length > 50) this.errors.shift();
        this.toast(message.message, "error");
        break;
      case "ack":
        this.acks.push({ action: message.action, result: message.result });
        if (this.acks.length > 50) this.acks.shift();
        if (message.action !== "move_player") {
          this.toast(this.timeline.describeAck(message) ?? describeAck(message.action, message.result), "info");
        }
        break;
      case "events": this.onEvents(message); break;
      case "pong": break;
    }
  }

  /** Deaths: a marker where each happened; a toast too where the species is small (a catch is news). */
  private onEvents(message: EventsMessage): void {
    for (const e of message.events) {
      this.deaths.push({ species: e.species, uid: e.uid, cause: e.cause });
      if (this.deaths.length > 200) this.deaths.shift();
      const what = e.cause ? `${e.species} #${e.uid} ${e.cause}` : `${e.species} #${e.uid} died`;
      this.headLabels.mark(e.position, `✕ ${what}`);
      const alive = this.status?.counts?.[e.species] ?? Infinity;
      if (alive < 60) this.toast(`${what} at ${e.time.toFixed(1)} s`, "info");
    }
  }

  private onScene(scene: SceneMessage): void {
    const changed = !this.scene || this.scene.scenario !== scene.scenario;
    // a live edit of the scenario's opening view (the editor, the API) is shown at once
    const viewEdited = !changed && JSON.stringify(this.scene?.view ?? null) !== JSON.stringify(scene.view ?? null);
    if (changed) this.headLabels.clear();
    this.scene = scene;
    for (const layer of this.layers) {
      this.world.scene.remove(layer.mesh);
      layer.dispose();
    }
    this.layers = scene.species.map((info) => new SpeciesLayer(info, this.world.lightUniforms, { alwaysLite: this.world.software, merged: this.world.software }));
    for (const layer of this.layers) this.world.scene.add(layer.mesh);
    const env = scene.environment;
    this.world.setBounds(scene.world.bounds_min, scene.world.bounds_max, !!env?.terrain);
    this.env.set(env);
    this.entities.set(scene.entities ?? []);
    const size = new THREE.Vector3().subVectors(this.world.boundsMax, this.world.boundsMin);
    this.entities.playerScale = Math.max(1, Math.max(size.x, size.z) / 150);
    const opening = changed || this.scenarioShown !== scene.scenario;
    if (opening) {
      this.rig.frame(this.world.boundsMin, this.world.boundsMax);
      this.rig.resetUserMoved();
      this.player.placeAtCenter();
      this.scenarioShown = scene.scenario;
    }
    // an edit keeps the selected animal (its species may have new behaviours to show);
    // another scenario, or its species removed, ends the selection
    if (changed || !this.selection || !scene.species.some((s) => s.name === this.selection!.species)) this.clearSelection();
    else this.applyHighlights();
    this.timeline.set(scene.replay ?? null);
    if (scene.replay && this.player.active) this.player.setActive(false);
    this.charts.setSpecies(scene.species);
    // after the chart panel has its new legends (the band an opening view is placed in)
    if (viewEdited) {  // the user asked for this view: it wins over where they had taken the camera
      if (this.rig.mode !== "orbit") this.setCamera("orbit");
      this.rig.resetUserMoved();
    }
    if (opening || viewEdited) this.framing.reset(scene.view ?? null);
    if (scene.replay && this.editor.visible) this.toggleEditor(false);
    this.editor.onScene(scene.scenario);
    const select = $<HTMLSelectElement>("scenario");
    select.innerHTML = "";
    const descriptions = scene.descriptions ?? {};
    for (const name of scene.scenarios) {
      const option = document.createElement("option");
      option.value = option.textContent = name;
      option.title = descriptions[name] ?? "";
      select.appendChild(option);
    }
    select.value = scene.scenario;
    const about = $("scenario-about");
    const description = descriptions[scene.scenario] ?? "";
    about.textContent = about.title = scene.replay ? `Replay of ${scene.replay.file}: ${description}` : description;
    const missing = Object.entries(scene.player).filter(([, ok]) => !ok).map(([k]) => k.replace("_", " "));
    $("player-availability").textContent = missing.length
      ? `Not available in this scenario: ${missing.join(", ")}.`
      : "All player actions are available.";
    $("hint-player").classList.toggle("hidden", !scene.player.fire && !scene.player.throw_apple);
    $<HTMLButtonElement>("act-fire").disabled = !scene.player.fire;
    $<HTMLButtonElement>("act-apple").disabled = !scene.player.throw_apple;
  }

  /** The loading overlay: what the server is doing (compiling kernels takes a while the first time). */
  private showLoading(status: StatusMessage): void {
    $("loading").classList.toggle("hidden", !status.loading);
    if (!status.loading) return;
    $("loading-stage").textContent = status.loading_stage ?? `loading ${status.scenario}…`;
    const progress = status.loading_progress;
    $("loading-progress").style.width = progress != null ? `${Math.round(progress * 100)}%` : "";
    $("loading-progress").parentElement!.classList.toggle("indeterminate", progress == null);
  }

  /**
   * Pause and speed are shared by every viewer of a simulation: a change this tab did not
   * ask for is said out loud, and a page that opens on a paused simulation says so.
   */
  private noticeOthers(before: StatusMessage | null, now: StatusMessage): void {
    const mine = performance.now() - this.lastOwnControl < 3000;
    if (!before) {
      if (now.paused && !now.loading) this.toast("The simulation is paused (shared with every open page): Space resumes it", "info");
      return;
    }
    if (mine || now.loading || before.loading || before.scenario !== now.scenario) return;
    if (before.paused !== now.paused) {
      this.toast(now.paused ? "Paused from another page" : "Resumed from another page", "info");
    }
    if (before.speed !== now.speed) this.toast(`Speed set to ${now.speed}× from another page`, "info");
    if (before.mode !== now.mode) this.toast(`Mode set to ${now.mode === "fast" ? "fast" : "real time"} from another page`, "info");
  }

  /** What the connection badge says while connected. */
  private liveWord(): string {
    return this.timeline.active ? "replay" : "live";
  }

  private onStatus(status: StatusMessage): void {
    this.noticeOthers(this.status, status);
    this.status = status;
    this.headLabels.set(status.loading ? {} : status.labels);
    $("paused-badge").classList.toggle("hidden", !status.paused || status.loading);
    const behind = $("behind-badge");
    behind.classList.toggle("hidden", !status.behind);
    if (status.behind && status.realtime_factor != null) {
      behind.textContent = `Cannot keep real time: ${status.realtime_factor.toFixed(2)}× of the requested ${status.speed}×`;
    }
    this.showLoading(status);
    $("play").textContent = status.paused ? "Play" : "Pause";
    $("play").classList.toggle("active", status.paused);
    $("mode").textContent = status.mode === "fast" ? "Fast" : "Real time";
    $("mode").classList.toggle("active", status.mode === "fast");
    const speed = $<HTMLSelectElement>("speed");
    if (document.activeElement !== speed) speed.value = String(status.speed);
    this.charts.push(status);
    this.timeline.onStatus(status);
    if (status.error && status.error !== this.statusError) this.toast(status.error, "error");
    this.statusError = status.error;
    if (status.loading) $("conn-text").textContent = `loading ${status.scenario}…`;
    else if (this.connection.connected) $("conn-text").textContent = this.liveWord();
  }

  private onInspect(info: InspectMessage): void {
    if (!this.selection || info.species !== this.selection.species || info.uid !== this.selection.uid) return;
    const neighborKey = (m: InspectMessage | null) => (m?.neighbors ?? []).map((n) => `${n.species}:${n.uid}`).join(",");
    const highlightChanged = !this.inspect || neighborKey(this.inspect) !== neighborKey(info) || !info.alive;
    this.inspect = info;
    this.overlay.setInspect(info);
    if (highlightChanged) this.applyHighlights();
    const now = performance.now();
    if (!info.alive || now - this.lastPanel > 150) {
      this.inspector.show(info);
      this.lastPanel = now;
    }
    if (!info.alive) this.selection = null;
  }

  private applyHighlights(): void {
    const byName = new Map<string, Map<number, number>>();
    for (const layer of this.layers) byName.set(layer.info.name, new Map());
    if (this.selection && this.inspect?.alive) {
      for (const n of this.inspect.neighbors ?? []) byName.get(n.species)?.set(n.uid, Highlight.Neighbor);
      byName.get(this.selection.species)?.set(this.selection.uid, Highlight.Selected);
    } else if (this.selection) {
      byName.get(this.selection.species)?.set(this.selection.uid, Highlight.Selected);
    }
    for (const layer of this.layers) layer.setHighlights(byName.get(layer.info.name) ?? new Map());
  }

  // ---- selection -----------------------------------------------------------------------

  select(species: string, uid: number): void {
    this.selection = { species, uid };
    // the new animal's first report opens the panel at once, however recently the last one's updated it
    this.lastPanel = -Infinity;
    this.inspect = null;
    this.overlay.setInspect(null);
    this.applyHighlights();
    this.send({ type: "select", species, uid });
  }

  deselect(): void {
    if (this.selection) this.send({ type: "deselect" });
    this.clearSelection();
    if (this.rig.mode === "follow") this.setCamera("orbit");
  }

  private clearSelection(): void {
    this.selection = null;
    this.inspect = null;
    this.overlay.setInspect(null);
    this.inspector.hide();
    for (const layer of this.layers) layer.setHighlights(new Map());
  }

  /** Select the animal drawn closest to the middle of the view (test hook and the `N` key). */
  selectNearestCenter(): Selection | null {
    const best = this.screen.nearestToCenter();
    if (best) this.select(best.species, best.uid);
    return best;
  }

  private followTarget(): FollowTarget | null {
    if (!this.selection) return null;
    const layer = this.layers.find((l) => l.info.name === this.selection!.species);
    if (!layer) return null;
    const i = layer.indexOf(this.selection.uid);
    if (i < 0) return null;
    return {
      position: new THREE.Vector3(layer.positions[3 * i], layer.positions[3 * i + 1], layer.positions[3 * i + 2]),
      quaternion: new THREE.Quaternion(layer.quaternions[4 * i], layer.quaternions[4 * i + 1], layer.quaternions[4 * i + 2], layer.quaternions[4 * i + 3]),
      scale: layer.info.scale,
    };
  }

  setCamera(mode: CameraMode): void {
    if (mode === "follow" && !this.selection) {
      this.toast("Select an animal to follow it", "info");
      return;
    }
    this.rig.setMode(mode);
    if (mode === "follow") this.rig.followDistance = Math.max((this.layers.find((l) => l.info.name === this.selection?.species)?.info.scale ?? 1) * 8, 3);
    document.querySelectorAll<HTMLButtonElement>("[data-camera]").forEach((b) => b.classList.toggle("active", b.dataset.camera === mode));
  }

  // ---- player ----------------------------------------------------------------------------

  private groundHeight(x: number, z: number): number {
    return this.env.heightAt(x, z) ?? this.world.groundY;
  }

  // ---- per frame -------------------------------------------------------------------------

  private applyFrame(buffer: ArrayBuffer): void {
    const t0 = performance.now();
    let frame;
    try {
      frame = parseFrame(buffer);
    } catch (err) {
      this.toast(`bad frame: ${(err as Error).message}`, "error");
      return;
    }
    this.entities.beginFrame();
    for (const block of frame.species) {
      if (block.index < this.layers.length) this.layers[block.index].update(block);
      else this.entities.update(block, frame.time);
    }
    this.framing.onFrame(frame.time);
    this.decodeMs = 0.8 * this.decodeMs + 0.2 * (performance.now() - t0);
    this.step = frame.step;
    this.timeline.showFrame(frame.step);
    this.time = frame.time;
    this.frameBytes = frame.byteLength;
    this.framesApplied++;
  }

  /**
   * Settle the framed view where its glide and drift were taking it, and keep it there
   * (tests compare pixels with projected positions, which needs a camera that holds still).
   */
  holdCamera(): void {
    if (this.rig.mode !== "orbit") return;
    this.rig.finishGlide();
    this.framing.drift(Infinity);
    this.rig.userMoved = true;
  }

  /**
   * Show or hide one part of the drawn scene: "terrain", "water", "obstacles" (every other
   * piece of scenery), "animals", or one species by name. Nothing else changes (clicks still
   * aim at hidden scenery): it is for measuring what each part costs a frame
   * (`scripts/render_cost.py`). False when the scene has no such part.
   */
  showPart(part: string, visible: boolean): boolean {
    const env = this.env;
    const water = env.group.getObjectByName("water");
    let parts: THREE.Object3D[];
    if (part === "terrain") parts = env.drawnTerrain ? [env.drawnTerrain] : [];
    else if (part === "water") parts = water ? [water] : [];
    else if (part === "obstacles") parts = env.group.children.filter((o) => o !== env.terrain && o !== env.drawnTerrain && o !== water);
    else if (part === "animals") parts = this.layers.map((l) => l.mesh);
    else parts = this.layers.filter((l) => l.info.name === part).map((l) => l.mesh);
    for (const o of parts) o.visible = visible;
    return parts.length > 0;
  }

  private tick(): void {
    const now = performance.now();
    const gap = (now - this.lastTick) / 1000;
    const dt = Math.min(gap, 0.1);
    this.lastTick = now;
    const scale = this.resolution?.frame(gap) ?? null;
    if (scale !== null) this.world.setRenderScale(scale);
    if (this.pendingFrame) {
      const buffer = this.pendingFrame;
      this.pendingFrame = null;
      this.applyFrame(buffer);
    }
    const clock = now / 1000;
    for (const layer of this.layers) layer.setTime(clock % 3600);
    this.entities.setTime(clock % 3600);
    this.env.update(clock % 3600);
    this.player.update(dt);
    const target = this.followTarget();
    if (this.rig.mode === "follow" && !target) this.setCamera("orbit");
    this.framing.drift(dt);
    this.rig.update(dt, target);
    this.world.camera.updateMatrixWorld();
    if (target && this.inspect) {
      this.overlay.update(target.position, target.quaternion, target.scale, this.world.camera, this.world.canvas);
    } else {
      this.overlay.hide();
    }
    this.headLabels.update((species, uid) => this.screen.project(species, uid), (p) => this.screen.projectPoint(p));
    this.world.render();
    this.framesRendered++;
    this.fpsFrames++;
    if (now - this.fpsWindow >= 1000) {
      const span = (now - this.fpsWindow) / 1000;
      this.renderFps = this.fpsFrames / span;
      this.framesPerS = (this.connection.framesReceived - this.framesAtWindow) / span;
      this.framesAtWindow = this.connection.framesReceived;
      this.fpsFrames = 0;
      this.fpsWindow = now;
    }
    if (now - this.lastHud > 250) {
      this.lastHud = now;
      this.updateHud();
    }
  }

  private updateHud(): void {
    const s = this.status;
    const count = this.layers.reduce((sum, l) => sum + l.count, 0);
    $("hud-fps").textContent = this.renderFps.toFixed(0);
    const scale = this.world.renderScale;
    $("hud-scale").textContent = scale < 1 ? `at ${Math.round(scale * 100)} % resolution` : "";
    $("hud-frames").textContent = this.framesPerS.toFixed(0);
    $("hud-sps").textContent = s ? s.steps_per_s.toFixed(0) : "–";
    $("hud-stepms").textContent = s ? s.step_ms.toFixed(2) : "–";
    $("hud-count").textContent = count.toLocaleString();
    $("hud-time").textContent = this.time.toFixed(1);
    $("hud-step").textContent = String(this.step);
    $("hud-kb").textContent = (this.frameBytes / 1024).toFixed(0);
    $("hud-decode").textContent = this.decodeMs.toFixed(2);
  }

  toast(text: string, kind: "error" | "info" = "error"): void {
    const el = document.createElement("div");
    el.className = `toast ${kind}`;
    el.textContent = text;
    const box = $("toasts");
    box.appendChild(el);
    while (box.children.length > 4) box.firstElementChild?.remove();
    setTimeout(() => el.remove(), 4500);
  }

  // ---- UI wiring -------------------------------------------------------------------------

  private bindUi(canvas: HTMLCanvasElement): void {
    $("play").addEventListener("click", () => this.togglePause());
    $("step").addEventListener("click", () => this.send({ type: "step", n: 1 }));
    $<HTMLSelectElement>("speed").addEventListener("change", (e) => {
      this.send({ type: "speed", multiplier: Number((e.target as HTMLSelectElement).value) });
    });
    $("mode").addEventListener("click", () => {
      this.send({ type: "mode", mode: this.status?.mode === "fast" ? "realtime" : "fast" });
    });
    $<HTMLSelectElement>("scenario").addEventListener("change", (e) => {
      const name = (e.target as HTMLSelectElement).value;
      if (name && name !== this.scene?.scenario) this.send({ type: "scenario", name });
    });
    document.querySelectorAll<HTMLButtonElement>("[data-camera]").forEach((b) => {
      b.addEventListener("click", () => this.setCamera(b.dataset.camera as CameraMode));
    });
    $("player").addEventListener("click", () => this.player.setActive(!this.player.active));
    $("charts-toggle").addEventListener("click", () => this.toggleCharts());
    $("editor-toggle").addEventListener("click", () => this.toggleEditor());
    $("restart").addEventListener("click", () => this.send({ type: "restart", keep_edits: true }));
    $("reset").addEventListener("click", () => this.send({ type: "restart", keep_edits: false }));
    $("frame-all").addEventListener("click", () => this.frameAll());
    $("act-fire").addEventListener("click", () => this.player.fireAt(this.screen.centerAim()));
    $("act-apple").addEventListener("click", () => this.player.appleAt(this.screen.centerAim(), false));

    let lastMove = { x: 0, y: 0 };
    canvas.addEventListener("pointermove", (e) => { lastMove = { x: e.clientX, y: e.clientY }; });
    canvas.addEventListener("pointerdown", (e) => {
      this.pointerDown = { x: e.clientX, y: e.clientY, t: performance.now() };
    });
    canvas.addEventListener("pointerup", (e) => {
      const down = this.pointerDown;
      this.pointerDown = null;
      if (!down || e.button !== 0) return;
      if (Math.hypot(e.clientX - down.x, e.clientY - down.y) > 5) return; // a drag, not a click
      if (e.shiftKey) {
        this.player.fireAt(this.screen.aimPoint(e.clientX, e.clientY));
      } else if (e.altKey) {
        this.player.appleAt(this.screen.aimPoint(e.clientX, e.clientY), true);
      } else {
        const hit = this.screen.pickAt(e.clientX, e.clientY);
        if (hit) this.select(hit.layer.info.name, hit.uid);
        else this.deselect();
      }
    });
    window.addEventListener("keydown", (e) => {
      if (isTyping(e)) return;
      this.player.press(e.code);
      switch (e.code) {
        case "Space": e.preventDefault(); this.togglePause(); break;
        case "Period": this.send({ type: "step", n: 1 }); break;
        case "Escape": this.deselect(); break;
        case "Digit1": this.setCamera("orbit"); break;
        case "Digit2": this.setCamera("fly"); break;
        case "Digit3": this.setCamera("follow"); break;
        case "KeyP": this.player.setActive(!this.player.active); break;
        case "KeyC": this.toggleCharts(); break;
        case "KeyE": this.toggleEditor(); break;
        case "KeyH": this.frameAll(); break;
        case "KeyR": this.send({ type: "restart", keep_edits: true }); break;
        case "KeyN": this.selectNearestCenter(); break;
        case "KeyF": this.player.fireAt(this.screen.aimPoint(lastMove.x, lastMove.y)); break;
        case "KeyG": this.player.appleAt(this.screen.aimPoint(lastMove.x, lastMove.y), !this.player.active); break;
      }
    });
    window.addEventListener("keyup", (e) => this.player.release(e.code));
    window.addEventListener("blur", () => this.player.releaseAll());
  }

  togglePause(): void {
    this.send({ type: this.status?.paused ? "resume" : "pause" });
  }

  /** Open or close the editor panel (a replay cannot be edited: it shows what was recorded). */
  toggleEditor(open = !this.editor.visible): void {
    if (open && (this.timeline.active || !this.scene)) return;
    document.body.classList.toggle("editing", open);
    $("editor-toggle").classList.toggle("active", open);
    if (open) void this.editor.show(this.scene!.scenario);
    else this.editor.hide();
  }

  private toggleCharts(): void {
    const hidden = document.body.classList.toggle("no-charts");
    $("charts-toggle").classList.toggle("active", !hidden);
    if (!hidden) requestAnimationFrame(() => this.charts.resize());
  }
}

/** A short human line for an acknowledged player action (the fire result names what was hit). */
function describeAck(action: string, result: unknown): string {
  if (action === "fire" && result && typeof result === "object" && "hit" in result) {
    const hit = (result as { hit: { species: string; uid: number } | null }).hit;
    return hit ? `Shot hit ${hit.species} #${hit.uid}` : "Shot fired — missed";
  }
  if (action === "throw_apple") return "Apple thrown";
  return `${action.replace("_", " ")} ✓`;
}
