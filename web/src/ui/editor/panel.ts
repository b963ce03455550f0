/**
 * The no-code editor (thesis ch. 10): every part of every species, edited in forms and
 * applied live through `PUT /api/config` (the server's `Simulation.reconfigure`), so the
 * animals keep their places. Only configs the server accepted enter the undo history; a
 * value the schema refuses is flagged in its form and never sent.
 */
import { api, type Problem } from "./api";
import {
  behaviorChoices, defaults, mergerChoices, queryForm, requiredComponents, type Catalog, type GroupKind,
} from "./catalog";
import { Form, loadForms, type FieldError } from "./forms";
import { History, same, type Config } from "./history";
import { getAt, indexPath, move, owner, pathText, renameSpecies, setAt, type Key } from "./paths";
import { words, type Schema } from "./schema";

type Obj = Record<string, unknown>;
type Status = "closed" | "loading" | "applied" | "pending" | "invalid" | "refused";

const APPLY_DELAY_MS = 300;
/** Optional tables of a species, each edited as one form (added and removed whole). */
const SECTIONS: [key: string, form: string, what: string][] = [
  ["brain", "BrainConfig", "states with their speeds and weights, and the transitions between them"],
  ["ecology", "SpeciesEcologyConfig", "energy, hunger, mouths, eating, food and carcasses"],
  ["appearance", "AppearanceConfig", "model, colour and size in the app"],
  ["spawn", "SpawnConfig", "where and how animals start (used for new animals)"],
  ["body", "BodyConfig", "the animal's body for collisions"],
  ["pack", "PackConfig", "a pack that hunts together"],
  ["variation", "VariationConfig", "individual differences between animals"],
];
const GROUPS: [key: "groups" | "ray_groups", kind: GroupKind, title: string, form: string][] = [
  ["groups", "neighbor", "Neighbour groups", "QueryConfig"],
  ["ray_groups", "ray", "Ray groups", "RayQuerySpec"],
];
const NAME = /^[A-Za-z_][A-Za-z0-9_\-]*$/;

function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Obj = {}, ...children: (Node | string)[]): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = String(v);
    else if (k.startsWith("on") && typeof v === "function") node.addEventListener(k.slice(2), v as EventListener);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  node.append(...children);
  return node;
}

export class EditorPanel {
  status: Status = "closed";
  /** Configs the server accepted since the page loaded (tests wait on it). */
  applied = 0;
  problems: Problem[] = [];
  catalog: Catalog | null = null;
  draft: Config | null = null;
  history: History | null = null;
  species = 0;
  private scenario = "";
  private forms: Form[] = [];
  private invalid = new Map<string, FieldError[]>();
  private timer: number | undefined;
  private chain: Promise<void> = Promise.resolve();
  private readonly body: HTMLElement;
  private readonly statusLine: HTMLElement;
  private readonly problemList: HTMLElement;
  private readonly speciesBar: HTMLElement;
  private readonly buttons: Record<"undo" | "redo" | "revert", HTMLButtonElement>;
  private readonly fileSelect: HTMLSelectElement;
  private readonly saveName: HTMLInputElement;

  constructor(private readonly root: HTMLElement, private readonly toast: (text: string, kind?: "error" | "info") => void,
    private readonly onClose: () => void) {
    const button = (label: string, title: string, action: () => void, data = "") =>
      el("button", { title, "data-action": data || undefined, onclick: action }, label);
    this.buttons = {
      undo: button("Undo", "Undo the last applied change (Ctrl+Z)", () => this.undo(), "undo"),
      redo: button("Redo", "Redo (Ctrl+Shift+Z)", () => this.redo(), "redo"),
      revert: button("Revert", "Back to the scenario as loaded, keeping the animals where they are", () => this.revert(), "revert"),
    };
    this.statusLine = el("div", { class: "ed-status", "aria-live": "polite" });
    this.problemList = el("ul", { class: "ed-problems" });
    this.speciesBar = el("div", { class: "ed-species-bar" });
    this.body = el("div", { class: "ed-body" });
    this.fileSelect = el("select", { title: "Scenario files in the workspace", "data-action": "files" });
    this.saveName = el("input", { type: "text", placeholder: "file name", title: "Save as (letters, digits, _ and -)", "data-action": "save-name" });
    const upload = el("input", { type: "file", accept: ".toml,text/plain", class: "hidden", "data-action": "upload" });
    upload.addEventListener("change", () => { const f = upload.files?.[0]; upload.value = ""; if (f) void this.upload(f); });
    root.append(
      el("header", {}, el("h2", {}, "Editor"), el("div", { class: "group" }, this.buttons.undo, this.buttons.redo, this.buttons.revert,
        button("×", "Close the editor (E)", () => this.onClose()))),
      this.statusLine, this.problemList, this.speciesBar, this.body,
      el("footer", { class: "ed-files" },
        el("div", { class: "row" }, this.saveName, button("Save", "Save the running scenario to the workspace", () => void this.save(), "save"),
          button("Download", "Download the running scenario as TOML", () => void this.download(), "download")),
        el("div", { class: "row" }, this.fileSelect, button("Load", "Load the chosen workspace file", () => void this.load(), "load"),
          button("Upload…", "Load a TOML file from this computer", () => upload.click(), "upload-button"), upload)),
    );
    root.addEventListener("keydown", (e) => {
      if ((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === "z") {
        e.preventDefault();
        if (e.shiftKey) this.redo(); else this.undo();
      }
    });
  }

  // ---- opening, and the scenario changing under the panel --------------------------------

  async show(scenario: string): Promise<void> {
    this.root.classList.remove("hidden");
    if (this.status !== "closed" && this.scenario === scenario && this.draft) return;
    this.setStatus("loading", "loading the editor…");
    const [, catalog] = await Promise.all([loadForms(), api.catalog()]);
    if (!catalog.ok) return this.fail(catalog.problems);
    this.catalog = catalog.value;
    this.chain = this.chain.then(() => this.reload(scenario, true));
    await this.chain;
  }

  hide(): void {
    this.root.classList.add("hidden");
  }

  get visible(): boolean {
    return !this.root.classList.contains("hidden");
  }

  /** The server showed a new scene: another scenario, or an edit (ours or another tab's). */
  onScene(scenario: string): void {
    if (this.status === "closed" || !this.catalog) return;
    if (scenario !== this.scenario) {
      this.chain = this.chain.then(() => this.reload(scenario, true));
    } else {
      // after our own applies have settled (they record what they sent), so only a change
      // made elsewhere differs from the history's present
      this.chain = this.chain.then(() => this.reload(scenario, false));
    }
  }

  /** The user has edits not yet applied (or not valid): a reload must not overwrite them. */
  private get editing(): boolean {
    return this.status === "pending" || this.status === "invalid" || this.invalid.size > 0;
  }

  private async reload(scenario: string, fresh: boolean): Promise<void> {
    if (!fresh && this.editing) return;
    const config = await api.config();
    if (!config.ok) return this.fail(config.problems);
    if (fresh || !this.history) {
      this.history = new History(config.value);
      this.scenario = scenario;
      this.species = 0;
      this.saveName.value = `${scenario}_edited`;
    } else if (this.editing || same(config.value, this.history.current)) {
      return;
    } else {
      this.history.push(config.value); // changed elsewhere (another tab, a file load): undoable here too
    }
    this.draft = config.value;
    this.problems = [];
    this.render();
    this.setStatus("applied", fresh ? "showing the running configuration" : "the configuration was changed elsewhere");
    void this.refreshFiles();
  }

  // ---- applying ------------------------------------------------------------------------------

  /** The draft changed: apply it shortly (edits in quick succession go as one). */
  private changed(): void {
    window.clearTimeout(this.timer);
    if (this.invalid.size) {
      this.setStatus("invalid", "fix the flagged values: nothing is applied while a value is invalid");
      return;
    }
    this.setStatus("pending", "applying…");
    this.timer = window.setTimeout(() => { this.chain = this.chain.then(() => this.apply()); }, APPLY_DELAY_MS);
  }

  private async apply(config: Config | null = this.draft, record = true): Promise<void> {
    if (!config || this.invalid.size) return;
    const sent = structuredClone(config);
    const result = await api.apply(sent);
    if (!result.ok) {
      this.problems = result.problems;
      this.showProblems();
      const n = result.problems.length;
      this.setStatus("refused", `${n} problem${n === 1 ? "" : "s"}: nothing was applied`);
      return;
    }
    const fresh = await api.config();
    const accepted = fresh.ok ? fresh.value : sent;
    if (record) this.history?.push(accepted);
    // the draft stays the object the panel's controls edit (they hold its lists); the server's
    // copy differs only by the defaults it filled in
    this.problems = [];
    this.showProblems();
    this.applied += 1;
    this.setStatus("applied", `applied live at step ${result.value.step}`);
  }

  undo(): void { this.travel(this.history?.undo() ?? null, "nothing to undo"); }
  redo(): void { this.travel(this.history?.redo() ?? null, "nothing to redo"); }

  revert(): void {
    if (!this.history) return;
    this.draft = this.history.original;
    this.render();
    this.changed();
  }

  private travel(config: Config | null, none: string): void {
    if (!config) { this.toast(none, "info"); return; }
    window.clearTimeout(this.timer);
    this.draft = config;
    this.invalid.clear();
    this.render();
    this.setStatus("pending", "applying…");
    this.chain = this.chain.then(() => this.apply(config, false));
  }

  private setStatus(status: Status, text: string): void {
    this.status = status;
    this.statusLine.textContent = text;
    this.statusLine.dataset.status = status;
    this.buttons.undo.disabled = !this.history?.canUndo;
    this.buttons.redo.disabled = !this.history?.canRedo;
  }

  private fail(problems: Problem[]): void {
    this.problems = problems;
    this.showProblems();
    this.setStatus("refused", problems.map((p) => p.message).join("; "));
  }

  // ---- problems, shown where they are ----------------------------------------------------

  private showProblems(): void {
    this.root.querySelectorAll(".ed-error.server").forEach((n) => n.remove());
    this.problemList.innerHTML = "";
    const cards = new Map<string, HTMLElement>();
    this.root.querySelectorAll<HTMLElement>("[data-path]").forEach((c) => cards.set(c.dataset.path!, c));
    for (const p of this.problems) {
      const where = this.draft ? indexPath(p.path, this.draft) : p.path;
      this.problemList.append(el("li", {}, el("code", {}, p.path || "(the whole config)"), " ", p.message));
      const card = owner(where, cards.keys());
      if (card) cards.get(card)!.querySelector(":scope > .ed-errors")?.append(el("div", { class: "ed-error server" }, `${where.slice(card.length + 1) || "here"}: ${p.message}`));
    }
  }

  // ---- the panel's contents ----------------------------------------------------------------

  private render(): void {
    for (const f of this.forms) f.destroy();
    this.forms = [];
    this.invalid.clear();
    this.body.innerHTML = "";
    this.renderSpeciesBar();
    const list = this.speciesList();
    if (!list.length) {
      this.body.append(el("p", { class: "muted" }, "This scenario has no species: add one."));
      return;
    }
    this.species = Math.min(this.species, list.length - 1);
    const s = ["species", this.species] as Key[];
    this.renderSpecies(s);
    for (const [key, kind, title, form] of GROUPS) this.renderGroups(s, key, kind, title, form);
    this.renderBehaviorList(this.body, [...s, "behaviors"], "simple", "Simple behaviours");
    this.renderChoice(s, "merger", "Merger", "how the behaviours' results become one desired velocity (thesis 10.1)");
    this.renderChoice(s, "mover", "Mover", "how the desired velocity moves the animal");
    for (const [key, form, what] of SECTIONS) this.renderSection(s, key, form, what);
    this.showProblems();
  }

  private speciesList(): Obj[] {
    return ((this.draft?.species ?? []) as Obj[]);
  }

  private renderSpeciesBar(): void {
    const select = el("select", { "data-action": "species", title: "The species to edit" });
    this.speciesList().forEach((sp, i) => {
      select.append(el("option", { value: i }, `${sp.name} (${sp.count ?? 0})`));
    });
    select.value = String(this.species);
    select.addEventListener("change", () => { this.species = Number(select.value); this.render(); });
    const template = el("select", { "data-action": "new-species-from", title: "What the new species starts as" },
      el("option", { value: "" }, "blank"),
      ...this.speciesList().map((sp, i) => el("option", { value: i }, `copy of ${sp.name}`)));
    this.speciesBar.replaceChildren(
      el("label", { class: "field" }, "Species", select),
      el("button", { "data-action": "add-species", title: "Add a species with 50 animals", onclick: () => this.addSpecies(template.value) }, "+ Species"),
      template,
      el("button", { "data-action": "remove-species", title: "Remove this species and its animals", onclick: () => this.removeSpecies() }, "Remove"),
    );
  }

  private addSpecies(from: string): void {
    const list = this.speciesList();
    const taken = new Set(list.map((sp) => sp.name));
    let n = list.length + 1;
    while (taken.has(`species${n}`)) n++;
    const name = `species${n}`;
    const base: Obj = from === "" ? {} : structuredClone(list[Number(from)]);
    const palette = ["#ff6b6b", "#4ecdc4", "#ffd166", "#c77dff", "#80ed99", "#f4a261"];
    const appearance = { ...(base.appearance as Obj | undefined), color: palette[list.length % palette.length] };
    list.push({ ...base, name, count: 50, appearance });
    this.draft!.species = list;
    this.species = list.length - 1;
    this.render();
    this.changed();
  }

  private removeSpecies(): void {
    const list = this.speciesList();
    if (!list.length) return;
    list.splice(this.species, 1);
    this.species = Math.max(0, this.species - 1);
    this.render();
    this.changed();
  }

  /** A titled box whose errors land in it; `path` is how server errors find it. */
  private card(parent: HTMLElement, title: string, path: Key[] | null, actions: HTMLElement[] = [], note = ""): HTMLElement {
    const box = el("section", { class: "ed-card", "data-path": path ? pathText(path) : undefined },
      el("header", {}, el("h3", {}, title), el("div", { class: "group" }, ...actions)));
    if (note) box.append(el("p", { class: "muted small" }, note));
    box.append(el("div", { class: "ed-errors" }));
    parent.append(box);
    return box;
  }

  private listActions(list: unknown[], i: number, what: string): HTMLElement[] {
    const act = (label: string, title: string, data: string, fn: () => boolean | void) =>
      el("button", { class: "small", title, "data-action": data, onclick: () => { if (fn() !== false) { this.render(); this.changed(); } } }, label);
    return [
      act("↑", `Move this ${what} up`, "up", () => move(list, i, -1)),
      act("↓", `Move this ${what} down`, "down", () => move(list, i, 1)),
      act("✕", `Remove this ${what}`, "remove", () => { list.splice(i, 1); }),
    ];
  }

  private renderSpecies(s: Key[]): void {
    const sp = getAt(this.draft, s) as Obj;
    const box = this.card(this.body, `Species: ${sp.name}`, s);
    const name = el("input", { type: "text", value: String(sp.name ?? ""), "data-field": "name", title: "The species' tag: queries target animals by it" });
    const count = el("input", { type: "number", min: 0, step: 1, value: String(sp.count ?? 0), "data-field": "count", title: "How many animals" });
    const flag = (input: HTMLInputElement, message: string | null, key: string) => {
      input.classList.toggle("invalid", !!message);
      input.title = message ?? input.title;
      const where = pathText([...s, key]);
      if (message) this.invalid.set(where, [{ path: where, message }]); else this.invalid.delete(where);
      box.querySelector(`.ed-error[data-for="${key}"]`)?.remove();
      if (message) box.querySelector(".ed-errors")!.append(el("div", { class: "ed-error", "data-for": key }, `${key}: ${message}`));
    };
    name.addEventListener("change", () => {
      const v = name.value.trim();
      const clash = this.speciesList().some((o, i) => i !== this.species && o.name === v);
      const message = !NAME.test(v) ? "a plain name: letters, digits, _ and -, not starting with a digit"
        : clash ? `another species is already called ${v}` : null;
      flag(name, message, "name");
      if (message) return this.changed();
      renameSpecies(this.draft!, String(sp.name), v);
      this.renderSpeciesBar();
      box.querySelector("h3")!.textContent = `Species: ${v}`;
      this.changed();
    });
    count.addEventListener("input", () => {
      const v = Number(count.value);
      const message = count.value.trim() === "" || !Number.isInteger(v) || v < 0 ? "a whole number ≥ 0" : null;
      flag(count, message, "count");
      if (!message) setAt(this.draft!, [...s, "count"], v);
      this.changed();
    });
    const kinds = this.behaviorKinds(sp);
    const needed = requiredComponents(this.catalog!, kinds);
    box.append(el("div", { class: "ed-fields" },
      el("label", { class: "field" }, "Tag", name), el("label", { class: "field" }, "Count", count)));
    box.append(el("p", { class: "muted small", "data-field": "components" },
      "Components the behaviours need: ", needed.own.length ? needed.own.join(", ") : "none",
      needed.targets.length ? ` · read from targets: ${needed.targets.join(", ")}` : ""));
  }

  private behaviorKinds(sp: Obj): string[] {
    const kinds: string[] = [];
    for (const g of [...((sp.groups ?? []) as Obj[]), ...((sp.ray_groups ?? []) as Obj[])]) {
      for (const b of (g.behaviors ?? []) as Obj[]) kinds.push(String(b.kind));
    }
    for (const b of (sp.behaviors ?? []) as Obj[]) kinds.push(String(b.kind));
    return kinds;
  }

  private renderGroups(s: Key[], key: "groups" | "ray_groups", kind: GroupKind, title: string, form: string): void {
    const sp = getAt(this.draft, s) as Obj;
    const groups = ((sp[key] ?? []) as Obj[]);
    sp[key] = groups;
    const what = kind === "neighbor" ? "neighbour group" : "ray group";
    const section = el("div", { class: "ed-section", "data-section": key }, el("h3", { class: "ed-section-title" }, title));
    this.body.append(section);
    groups.forEach((g, i) => {
      const path = [...s, key, i];
      const box = this.card(section, String(g.label ?? `${what} ${i + 1}`), path, this.listActions(groups, i, what));
      const label = el("input", { type: "text", value: String(g.label ?? ""), placeholder: "label", title: "A name for this group", "data-field": "label" });
      label.addEventListener("change", () => { setAt(this.draft!, [...path, "label"], label.value.trim() || undefined); this.changed(); });
      box.append(el("label", { class: "field" }, "Label", label));
      const query = el("div", { class: "ed-form", "data-path": pathText([...path, "query"]) }, el("h4", {}, kind === "neighbor" ? "Query" : "Rays"), el("div", { class: "ed-errors" }));
      box.append(query);
      const schema = kind === "neighbor"
        ? queryForm(this.catalog!, this.speciesList().map((o) => String(o.name)))
        : this.catalog!.forms[form];
      this.form(query, schema, [...path, "query"]);
      this.renderBehaviorList(box, [...path, "behaviors"], kind, "Behaviours");
    });
    const add = el("button", { "data-action": `add-${key}`, title: `Add a ${what}` }, `+ ${words(what)}`);
    add.addEventListener("click", () => {
      const query = kind === "neighbor" ? { targets: [String(sp.name)] } : {};
      groups.push({ label: `${what} ${groups.length + 1}`, query, behaviors: [] });
      this.render();
      this.changed();
    });
    section.append(add);
  }

  private renderBehaviorList(parent: HTMLElement, path: Key[], kind: GroupKind, title: string): void {
    let list = getAt(this.draft, path) as Obj[] | undefined;
    if (!Array.isArray(list)) { list = []; setAt(this.draft!, path, list); }
    const items = list;
    const wrap = el("div", { class: "ed-behaviors", "data-list": pathText(path) }, el("h4", {}, title));
    parent.append(wrap);
    items.forEach((b, i) => {
      const entry = this.catalog!.behaviors.find((e) => e.name === b.kind);
      const box = this.card(wrap, words(String(b.kind)), [...path, i], this.listActions(items, i, "behaviour"),
        entry ? firstLine(entry.doc) : `not registered: ${String(b.kind)}`);
      box.dataset.kind = String(b.kind);
      if (entry) this.form(box, entry.schema, [...path, i]);
    });
    const merger = String((getAt(this.draft, path.slice(0, 2)) as Obj).merger && ((getAt(this.draft, path.slice(0, 2)) as Obj).merger as Obj).kind || "");
    const choices = behaviorChoices(this.catalog!, kind, merger || undefined);
    const picker = el("select", { "data-action": `add-behavior`, "data-group": kind, title: "Add a behaviour (only those this group and the merger accept)" },
      el("option", { value: "" }, "+ behaviour…"), ...choices.map((c) => el("option", { value: c.name, title: firstLine(c.doc) }, words(c.name))));
    picker.addEventListener("change", () => {
      const entry = choices.find((c) => c.name === picker.value);
      if (!entry) return;
      items.push(defaults(entry.schema, entry.name));
      this.render();
      this.changed();
    });
    wrap.append(picker);
  }

  private renderChoice(s: Key[], key: "merger" | "mover", title: string, note: string): void {
    const sp = getAt(this.draft, s) as Obj;
    const current = (sp[key] ?? {}) as Obj;
    const options = key === "merger"
      ? mergerChoices(this.catalog!, this.behaviorKinds(sp).map((k) => this.catalog!.behaviors.find((b) => b.name === k)?.result ?? "velocity"))
      : this.catalog!.movers;
    const box = this.card(this.body, title, [...s, key], [], note);
    const select = el("select", { "data-action": `choose-${key}`, title: `The ${key}` },
      ...options.map((o) => el("option", { value: o.name, title: firstLine(o.doc) }, words(o.name))));
    if (!current.kind) select.prepend(el("option", { value: "" }, "(default)"));
    select.value = String(current.kind ?? "");
    select.addEventListener("change", () => {
      const entry = options.find((o) => o.name === select.value);
      setAt(this.draft!, [...s, key], entry ? defaults(entry.schema, entry.name) : undefined);
      this.render();
      this.changed();
    });
    box.append(select);
    const entry = options.find((o) => o.name === current.kind);
    if (entry) this.form(box, entry.schema, [...s, key]);
  }

  private renderSection(s: Key[], key: string, form: string, what: string): void {
    const schema = this.catalog!.forms[form];
    if (!schema) return;
    const sp = getAt(this.draft, s) as Obj;
    const present = sp[key] !== undefined && sp[key] !== null;
    const toggle = el("button", { class: "small", "data-action": present ? `remove-${key}` : `add-${key}`,
      title: present ? `Remove the ${key}` : `Add a ${key}` }, present ? "✕" : "+ Add");
    toggle.addEventListener("click", () => {
      setAt(this.draft!, [...s, key], present ? undefined : defaults(schema));
      this.render();
      this.changed();
    });
    const box = this.card(this.body, words(key), [...s, key], [toggle], what);
    if (present) this.form(box, schema, [...s, key]);
  }

  /** A generated form for the table at `path`, writing every valid edit into the draft. */
  private form(parent: HTMLElement, schema: Schema | undefined, path: Key[]): void {
    if (!schema) return;
    const holder = el("div", { class: "ed-jsonform" });
    parent.append(holder);
    const where = pathText(path);
    this.forms.push(new Form(holder, schema, getAt(this.draft, path) ?? {}, (value) => {
      setAt(this.draft!, path, value);
      this.changed();
    }, (errors) => {
      const had = this.invalid.has(where);
      const slot = parent.querySelector(":scope > .ed-errors");
      slot?.querySelectorAll(".ed-error.local").forEach((n) => n.remove());
      for (const e of errors) slot?.append(el("div", { class: "ed-error local" }, `${e.path || "value"}: ${e.message}`));
      if (errors.length) this.invalid.set(where, errors); else this.invalid.delete(where);
      if (errors.length) this.changed();
      else if (had && !this.invalid.size) this.changed();
    }));
  }

  // ---- files ---------------------------------------------------------------------------------

  async refreshFiles(): Promise<void> {
    const result = await api.files();
    if (!result.ok) return;
    const chosen = this.fileSelect.value;
    this.fileSelect.replaceChildren(el("option", { value: "" }, result.value.files.length ? "workspace file…" : "(no saved files)"),
      ...result.value.files.map((f) => el("option", { value: f.name, title: `${f.bytes} bytes, ${f.modified}` }, f.file)));
    this.fileSelect.value = result.value.files.some((f) => f.name === chosen) ? chosen : "";
  }

  async save(): Promise<void> {
    const result = await api.save(this.saveName.value.trim());
    if (!result.ok) { this.fail(result.problems); return; }
    this.toast(`Saved ${result.value.file}`, "info");
    await this.refreshFiles();
    this.fileSelect.value = result.value.saved;
  }

  async download(): Promise<void> {
    const result = await api.toml();
    if (!result.ok) { this.fail(result.problems); return; }
    const url = URL.createObjectURL(new Blob([result.value.toml], { type: "application/toml" }));
    const link = el("a", { href: url, download: `${this.saveName.value.trim() || this.scenario}.toml` });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  }

  async load(): Promise<void> {
    const name = this.fileSelect.value;
    if (!name) { this.toast("Choose a workspace file to load", "info"); return; }
    await this.loaded(await api.load(name), `${name}.toml`);
  }

  async upload(file: File): Promise<void> {
    const bytes = new Uint8Array(await file.arrayBuffer());
    let text: string;
    try {
      text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    } catch {
      this.fail([{ path: "toml", message: `${file.name} is not UTF-8 text: a scenario is a TOML text file` }]);
      return;
    }
    await this.loaded(await api.upload(text), file.name);
  }

  private async loaded(result: Awaited<ReturnType<typeof api.load>>, label: string): Promise<void> {
    if (!result.ok) { this.fail(result.problems); return; }
    const config = await api.config();
    if (config.ok) {
      this.history?.push(config.value);
      this.draft = config.value;
      this.render();
    }
    this.applied += 1;
    this.setStatus("applied", `loaded ${label}`);
  }
}

function firstLine(doc: string): string {
  return doc.split("\n")[0].trim();
}
