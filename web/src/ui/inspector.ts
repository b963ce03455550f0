/**
 * The side panel describing the selected animal: identity, state, energy and
 * hunger, speed, neighbours, and every behaviour's result (direction and speed
 * desires as bars, its priority) in the colours of its arrow in the 3D view.
 */
import type { InspectMessage } from "../protocol/messages";
import { BEHAVIOR_COLORS } from "../render/debug";

const fmt = (v: number | null | undefined, digits = 2) => (typeof v === "number" && Number.isFinite(v) ? v.toFixed(digits) : "—");

function escape(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] as string);
}

/** Colours of well-known brain states; others get one from their name. */
const STATE_COLORS: Record<string, string> = {
  normal: "#06d6a0", chill: "#06d6a0", calm: "#06d6a0", grazing: "#9ef01a",
  alone: "#b388ff", hunting: "#ffd166", afraid: "#ff9f1c", fleeing: "#ff9f1c", attacking: "#ff6b6b",
};

/** The badge colour of a brain state (stable for a name). */
export function stateColor(state: string): string {
  const known = STATE_COLORS[state.toLowerCase()];
  if (known) return known;
  let h = 0;
  for (const c of state) h = (h * 31 + c.charCodeAt(0)) >>> 0;
  return BEHAVIOR_COLORS[h % BEHAVIOR_COLORS.length];
}

/** An animal's own drawn parameter values, under its behaviour's name ("" when none vary). */
function drawn(values: Record<string, number> | undefined): string {
  const entries = Object.entries(values ?? {});
  if (!entries.length) return "";
  return `<div class="drawn" title="drawn for this animal">${entries.map(([k, v]) => `${escape(k)} ${fmt(v)}`).join(" · ")}</div>`;
}

function bar(value: number, color: string): string {
  const pct = Math.max(0, Math.min(1, value)) * 100;
  return `<span class="bar"><span style="width:${pct.toFixed(1)}%;background:${color}"></span></span>`;
}

export class Inspector {
  private shown = "";
  private body: HTMLElement | null = null;
  /** Whether the "all components" list is unfolded; kept across redraws. */
  private componentsOpen = false;

  constructor(private readonly root: HTMLElement, private readonly onClose: () => void, private readonly onFollow: () => void) {}

  /**
   * Show an inspection. The header (with its buttons) is built once per animal and
   * only the body is redrawn, so a click is never lost to a redraw under the pointer.
   */
  show(info: InspectMessage): void {
    this.root.classList.remove("hidden");
    const key = `${info.species}#${info.uid}`;
    if (key !== this.shown || !this.body) {
      this.shown = key;
      this.root.innerHTML = `
        <header>
          <h2><span class="species-name">${escape(info.species)}</span> <span class="uid">#${info.uid}</span> <span class="state-badge hidden"></span></h2>
          <div class="actions"><button data-act="follow" title="Follow with the camera (3)">Follow</button><button class="icon" data-act="close" title="Deselect (Esc)">✕</button></div>
        </header>
        <div class="inspector-body"></div>`;
      this.root.querySelector('[data-act="close"]')?.addEventListener("click", () => this.onClose());
      this.root.querySelector('[data-act="follow"]')?.addEventListener("click", () => this.onFollow());
      this.body = this.root.querySelector(".inspector-body");
      this.body!.addEventListener("toggle", (e) => {
        const details = e.target as HTMLDetailsElement;
        if (details.classList.contains("components")) this.componentsOpen = details.open;
      }, true);
    }
    // The brain's state (ecologies with brains) as a badge by the name: it changes often and matters.
    const badge = this.root.querySelector<HTMLElement>(".state-badge");
    if (badge) {
      const state = info.alive ? info.state : null;
      badge.classList.toggle("hidden", !state);
      if (state && badge.textContent !== state) {
        badge.textContent = state;
        badge.style.setProperty("--state", stateColor(state));
      }
    }
    this.body!.innerHTML = info.alive ? this.details(info) : `<p class="muted">This animal is no longer alive.</p>`;
  }

  private details(info: InspectMessage): string {
    const comps = info.components ?? {};
    const energy = comps.energy;
    const hunger = comps.hunger;
    // per-animal behaviour parameters are shown with their behaviour, not as components
    const others = Object.entries(comps).filter(([k]) => k !== "energy" && k !== "hunger" && !k.startsWith("param_"));
    const behaviors = info.behaviors ?? [];
    const rows = behaviors.map((b, i) => {
      const color = BEHAVIOR_COLORS[i % BEHAVIOR_COLORS.length];
      return `<tr>
        <td><span class="swatch" style="background:${color}"></span>${escape(b.name)}${b.kind !== b.name ? `<span class="kind">${escape(b.kind)}</span>` : ""}${drawn(b.drawn)}</td>
        <td>${bar(b.direction_desire, color)}<small>${fmt(b.direction_desire)}</small></td>
        <td>${bar(b.speed_desire, color)}<small>${fmt(b.speed_desire)} @ ${fmt(b.speed, 1)}</small></td>
        <td class="prio">${b.priority}</td></tr>`;
    }).join("");
    const dv = info.desired_velocity ?? [0, 0, 0];
    const desiredSpeed = Math.hypot(dv[0], dv[1], dv[2]);
    return `
      <dl class="facts">
        <dt>State</dt><dd id="insp-state">${info.state ? `<span class="swatch" style="background:${stateColor(info.state)}"></span>${escape(info.state)}` : "— <small class=\"muted\">no brain</small>"}</dd>
        <dt>Speed</dt><dd>${fmt(info.speed)} m/s <small class="muted">→ ${fmt(desiredSpeed)}</small></dd>
        <dt>Energy</dt><dd>${energy == null ? "—" : bar(energy, "#06d6a0") + fmt(energy)}</dd>
        <dt>Hunger</dt><dd>${hunger == null ? "—" : bar(hunger, "#ff9f1c") + fmt(hunger)}</dd>
        <dt>Neighbours</dt><dd>${(info.neighbors ?? []).length}</dd>
        <dt>View</dt><dd>${fmt(info.fov_deg, 0)}° · ${fmt(info.view_distance, 1)} m</dd>
        <dt>Position</dt><dd class="mono">${(info.position ?? []).map((v) => fmt(v, 1)).join(", ")}</dd>
      </dl>
      ${others.length ? `<details class="components"${this.componentsOpen ? " open" : ""}><summary>All components (${others.length})</summary>
        <dl class="facts">${others.map(([k, v]) => `<dt>${escape(k)}</dt><dd class="mono">${fmt(v)}</dd>`).join("")}</dl></details>` : ""}
      <h3>Behaviours <small class="muted">arrow length = direction desire</small></h3>
      <table class="behaviors"><thead><tr><th>name</th><th>direction</th><th>speed</th><th>prio</th></tr></thead><tbody>${rows || `<tr><td colspan="4" class="muted">none reported</td></tr>`}</tbody></table>
      <p class="legend"><span class="swatch" style="background:#fff"></span>desired velocity <span class="swatch" style="background:#9aa5b1"></span>velocity <span class="swatch" style="background:#40c4ff"></span>neighbours</p>`;
  }

  hide(): void {
    this.root.classList.add("hidden");
    this.root.innerHTML = "";
    this.shown = "";
    this.body = null;
  }
}
