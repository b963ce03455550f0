/**
 * Words over animals' heads: a small species' brain state and pack rank (the status's
 * `labels`), and a brief marker where an animal died, with its cause (the `events`
 * message). Plain DOM over the canvas, placed every frame from projected positions.
 */
export type Project = (species: string, uid: number) => { x: number; y: number } | null;
export type ProjectPoint = (position: number[]) => { x: number; y: number } | null;

interface Marker { el: HTMLElement; position: number[]; until: number }

const MARKER_MS = 4000;

export class HeadLabels {
  private readonly tags = new Map<string, HTMLElement>();
  private labels: Record<string, [number, string][]> = {};
  private readonly markers: Marker[] = [];

  constructor(private readonly layer: HTMLElement) {}

  /** The status's labels: species → [uid, text] (species without labels get none). */
  set(labels: Record<string, [number, string][]> | undefined): void {
    this.labels = labels ?? {};
    const keep = new Set<string>();
    for (const [species, rows] of Object.entries(this.labels)) {
      for (const [uid, text] of rows) {
        const key = `${species}:${uid}`;
        keep.add(key);
        let el = this.tags.get(key);
        if (!el) {
          el = document.createElement("div");
          el.className = "head-label";
          el.dataset.species = species;
          el.dataset.uid = String(uid);
          this.layer.appendChild(el);
          this.tags.set(key, el);
        }
        if (el.textContent !== text) el.textContent = text;
      }
    }
    for (const [key, el] of this.tags) {
      if (!keep.has(key)) { el.remove(); this.tags.delete(key); }
    }
  }

  /** A death: a marker where it happened, for a few seconds. */
  mark(position: number[], text: string): void {
    const el = document.createElement("div");
    el.className = "death-marker";
    el.textContent = text;
    this.layer.appendChild(el);
    this.markers.push({ el, position, until: performance.now() + MARKER_MS });
    while (this.markers.length > 30) this.markers.shift()!.el.remove();
  }

  clear(): void {
    this.set({});
    for (const m of this.markers.splice(0)) m.el.remove();
  }

  /** Place everything for the frame about to be drawn. */
  update(project: Project, projectPoint: ProjectPoint): void {
    for (const el of this.tags.values()) {
      const at = project(el.dataset.species!, Number(el.dataset.uid));
      place(el, at, -26);
    }
    const now = performance.now();
    for (let i = this.markers.length - 1; i >= 0; i--) {
      const m = this.markers[i];
      if (now > m.until) { m.el.remove(); this.markers.splice(i, 1); continue; }
      place(m.el, projectPoint(m.position), -14);
      m.el.style.opacity = String(Math.min(1, (m.until - now) / 1000));
    }
  }

  /** How many labels are shown (tests). */
  get count(): number {
    return this.tags.size;
  }
}

function place(el: HTMLElement, at: { x: number; y: number } | null, dy: number): void {
  if (!at) { el.style.display = "none"; return; }
  el.style.display = "";
  el.style.transform = `translate(${Math.round(at.x)}px, ${Math.round(at.y + dy)}px) translate(-50%, -100%)`;
}
