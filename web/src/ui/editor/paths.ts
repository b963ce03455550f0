/**
 * Addresses inside a config: `species.0.groups.1.behaviors.2` as a list of keys, and the
 * server's error paths (which name species by name: `species.fish.…`) mapped back to the
 * panel's cards, which are addressed by index.
 */
import type { Config } from "./history";

export type Key = string | number;

export function getAt(root: unknown, path: Key[]): unknown {
  let node: unknown = root;
  for (const key of path) {
    if (node === null || typeof node !== "object") return undefined;
    node = (node as Record<string, unknown>)[key as string];
  }
  return node;
}

export function setAt(root: Config, path: Key[], value: unknown): void {
  let node: Record<string | number, unknown> = root;
  for (const key of path.slice(0, -1)) {
    const next = node[key];
    if (next === null || typeof next !== "object") node[key] = typeof key === "number" ? [] : {};
    node = node[key] as Record<string | number, unknown>;
  }
  const last = path[path.length - 1];
  if (value === undefined) delete node[last];
  else node[last] = value;
}

export function pathText(path: Key[]): string {
  return path.join(".");
}

/** `species.fish.groups.0.k` → `species.0.groups.0.k` (indices of `config.species`). */
export function indexPath(path: string, config: Config): string {
  const parts = path.split(".");
  if (parts[0] === "species" && parts.length > 1 && !/^\d+$/.test(parts[1])) {
    const species = (config.species ?? []) as { name?: string }[];
    const i = species.findIndex((s) => s?.name === parts[1]);
    if (i >= 0) parts[1] = String(i);
  }
  return parts.join(".");
}

/** The longest of `known` that `path` lies within (the card an error belongs to), or null. */
export function owner(path: string, known: Iterable<string>): string | null {
  let best: string | null = null;
  for (const candidate of known) {
    const inside = path === candidate || path.startsWith(`${candidate}.`);
    if (inside && (best === null || candidate.length > best.length)) best = candidate;
  }
  return best;
}

/** Rename a species and every query that targets it, so a new tag keeps its groups working. */
export function renameSpecies(config: Config, from: string, to: string): void {
  const species = (config.species ?? []) as Record<string, unknown>[];
  for (const s of species) {
    if (s.name === from) s.name = to;
    for (const groups of [s.groups, s.ray_groups] as unknown[]) {
      for (const group of (groups ?? []) as { query?: { targets?: string[] } }[]) {
        const targets = group.query?.targets;
        if (targets) group.query!.targets = targets.map((t) => (t === from ? to : t));
      }
    }
  }
}

/** Move item `i` of `list` by `by` places (−1 up, +1 down), if it stays inside the list. */
export function move<T>(list: T[], i: number, by: number): boolean {
  const j = i + by;
  if (j < 0 || j >= list.length) return false;
  [list[i], list[j]] = [list[j], list[i]];
  return true;
}
