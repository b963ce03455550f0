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

function bar(value: number, color: string): string {
  const pct = Math.max(0, Math.min(1, value)) * 100;
  return `<span class="bar"><span style="width:${pct.toFixed(1)}%;background:${color}"></span></span>`;
}

export class Inspector {
  constructor(private readonly root: HTMLElement, private readonly onClose: () => void, private readonly onFollow: () => void) {}

  show(info: InspectMessage): void {
    this.root.classList.remove("hidden");
    if (!info.alive) {
      this.root.innerHTML = `<header><h2>${escape(info.species)} #${info.uid}</h2><button class="icon" data-act="close" title="Close">✕</button></header>
        <p class="muted">This animal is no longer alive.</p>`;
      this.bind();
      return;
    }
    const comps = info.components ?? {};
    const energy = comps.energy;
    const hunger = comps.hunger;
    const others = Object.entries(comps).filter(([k]) => k !== "energy" && k !== "hunger");
    const behaviors = info.behaviors ?? [];
    const rows = behaviors.map((b, i) => {
      const color = BEHAVIOR_COLORS[i % BEHAVIOR_COLORS.length];
      return `<tr>
        <td><span class="swatch" style="background:${color}"></span>${escape(b.name)}<span class="kind">${escape(b.kind)}</span></td>
        <td>${bar(b.direction_desire, color)}<small>${fmt(b.direction_desire)}</small></td>
        <td>${bar(b.speed_desire, color)}<small>${fmt(b.speed_desire)} @ ${fmt(b.speed, 1)}</small></td>
        <td class="prio">${b.priority}</td></tr>`;
    }).join("");
    const dv = info.desired_velocity ?? [0, 0, 0];
    const desiredSpeed = Math.hypot(dv[0], dv[1], dv[2]);
    this.root.innerHTML = `
      <header>
        <h2><span class="species-name">${escape(info.species)}</span> <span class="uid">#${info.uid}</span></h2>
        <div class="actions"><button data-act="follow" title="Follow with the camera">Follow</button><button class="icon" data-act="close" title="Deselect (Esc)">✕</button></div>
      </header>
      <dl class="facts">
        <dt>State</dt><dd id="insp-state">${escape(info.state ?? "—")}</dd>
        <dt>Speed</dt><dd>${fmt(info.speed)} m/s <small class="muted">→ ${fmt(desiredSpeed)}</small></dd>
        <dt>Energy</dt><dd>${energy == null ? "—" : bar(energy, "#06d6a0") + fmt(energy)}</dd>
        <dt>Hunger</dt><dd>${hunger == null ? "—" : bar(hunger, "#ff9f1c") + fmt(hunger)}</dd>
        <dt>Neighbours</dt><dd>${(info.neighbors ?? []).length}</dd>
        <dt>View</dt><dd>${fmt(info.fov_deg, 0)}° · ${fmt(info.view_distance, 1)} m</dd>
        <dt>Position</dt><dd class="mono">${(info.position ?? []).map((v) => fmt(v, 1)).join(", ")}</dd>
        ${others.map(([k, v]) => `<dt>${escape(k)}</dt><dd>${fmt(v)}</dd>`).join("")}
      </dl>
      <h3>Behaviours <small class="muted">arrow length = direction desire</small></h3>
      <table class="behaviors"><thead><tr><th>name</th><th>direction</th><th>speed</th><th>prio</th></tr></thead><tbody>${rows || `<tr><td colspan="4" class="muted">none reported</td></tr>`}</tbody></table>
      <p class="legend"><span class="swatch" style="background:#fff"></span>desired velocity <span class="swatch" style="background:#9aa5b1"></span>velocity <span class="swatch" style="background:#40c4ff"></span>neighbours</p>`;
    this.bind();
  }

  hide(): void {
    this.root.classList.add("hidden");
    this.root.innerHTML = "";
  }

  private bind(): void {
    this.root.querySelector('[data-act="close"]')?.addEventListener("click", () => this.onClose());
    this.root.querySelector('[data-act="follow"]')?.addEventListener("click", () => this.onFollow());
  }
}
