/**
 * What the server says can be chosen where (`GET /api/catalog`), and the dropdowns'
 * filters: a group offers only behaviours of its kind whose result the species' merger
 * accepts (thesis 10.1.1), so an impossible combination cannot be picked.
 */
import type { Schema } from "./schema";

export type GroupKind = "simple" | "neighbor" | "ray";

export interface BehaviorEntry {
  name: string;
  group: GroupKind;
  result: string;
  components: string[];
  target_components: string[];
  doc: string;
  schema: Schema;
}

export interface MergerEntry { name: string; accepts: string[]; doc: string; schema: Schema }
export interface MoverEntry { name: string; doc: string; schema: Schema }

export interface Catalog {
  result_types: string[];
  behaviors: BehaviorEntry[];
  mergers: MergerEntry[];
  movers: MoverEntry[];
  query_methods: { name: string; doc: string }[];
  /** What a neighbour query may target besides species (apples, carcasses, sounds, the player). */
  populations: string[];
  brain_actions: { name: string; doc: string; schema: Schema }[];
  forms: Record<string, Schema>;
}

/** Behaviours that fit a group of `kind` under the merger named `merger`. */
export function behaviorChoices(catalog: Catalog, kind: GroupKind, merger: string | undefined): BehaviorEntry[] {
  const accepts = catalog.mergers.find((m) => m.name === merger)?.accepts ?? catalog.result_types;
  return catalog.behaviors.filter((b) => b.group === kind && accepts.includes(b.result));
}

/** Mergers that accept every result the species' behaviours produce. */
export function mergerChoices(catalog: Catalog, results: Iterable<string>): MergerEntry[] {
  const needed = [...new Set(results)];
  return catalog.mergers.filter((m) => needed.every((r) => m.accepts.includes(r)));
}

/** The components the named behaviours read: their own and their targets' (shown, not edited). */
export function requiredComponents(catalog: Catalog, kinds: Iterable<string>): { own: string[]; targets: string[] } {
  const own = new Set<string>(), targets = new Set<string>();
  for (const kind of kinds) {
    const entry = catalog.behaviors.find((b) => b.name === kind);
    entry?.components.forEach((c) => own.add(c));
    entry?.target_components.forEach((c) => targets.add(c));
  }
  return { own: [...own].sort(), targets: [...targets].sort() };
}

/** A new parameter table of `kind`: its defaults, as the schema gives them. */
export function defaults(schema: Schema, kind?: string): Record<string, unknown> {
  const out: Record<string, unknown> = kind ? { kind } : {};
  const props = (schema.properties ?? {}) as Record<string, Schema>;
  for (const [name, p] of Object.entries(props)) {
    if (name === "kind") continue;
    if ("default" in p && p.default !== null) out[name] = structuredClone(p.default);
  }
  return out;
}

/** The neighbour query's form, its targets a checklist of this scenario's species and populations. */
export function queryForm(catalog: Catalog, species: string[]): Schema {
  const form = structuredClone(catalog.forms.QueryConfig);
  const props = (form.properties ?? {}) as Record<string, Schema>;
  const names = [...species, ...catalog.populations];
  if (props.targets) {
    props.targets = { ...props.targets, uniqueItems: true, format: "checkbox", items: { type: "string", enum: names } };
  }
  const methods = catalog.query_methods.map((q) => q.name);
  if (props.method && methods.length) props.method = { ...props.method, enum: methods };
  return form;
}
