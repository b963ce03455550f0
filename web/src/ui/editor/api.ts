/**
 * The editor's HTTP API (docs/editor.md), typed. A refused request resolves to its list of
 * `{path, message}` problems instead of throwing, so the panel can show each one in place.
 */
import type { Catalog } from "./catalog";
import type { Config } from "./history";

export interface Problem { path: string; message: string }
export type Outcome<T> = { ok: true; value: T } | { ok: false; problems: Problem[] };

async function call<T>(method: string, url: string, body?: unknown): Promise<Outcome<T>> {
  let response: Response;
  try {
    response = await fetch(url, {
      method,
      headers: body === undefined ? undefined : { "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (err) {
    return { ok: false, problems: [{ path: "", message: `the server did not answer: ${String(err)}` }] };
  }
  let data: unknown = null;
  try {
    data = await response.json();
  } catch {
    return { ok: false, problems: [{ path: "", message: `the server answered ${response.status} without JSON` }] };
  }
  if (response.ok) return { ok: true, value: data as T };
  const errors = (data as { errors?: Problem[] } | null)?.errors;
  return { ok: false, problems: errors?.length ? errors : [{ path: "", message: `HTTP ${response.status}` }] };
}

export interface WorkspaceFile { name: string; file: string; bytes: number; modified: string }

export const api = {
  catalog: () => call<Catalog>("GET", "/api/catalog"),
  config: () => call<Config>("GET", "/api/config"),
  apply: (config: Config) => call<{ applied: boolean; step: number }>("PUT", "/api/config", config),
  save: (name: string) => call<{ saved: string; file: string; bytes: number }>("POST", "/api/config/save", { name }),
  files: () => call<{ workspace: string; files: WorkspaceFile[] }>("GET", "/api/config/files"),
  load: (name: string) => call<{ applied: boolean }>("POST", "/api/config/load", { name }),
  upload: (toml: string) => call<{ applied: boolean }>("POST", "/api/config/load", { toml }),
  toml: () => call<{ toml: string }>("GET", "/api/config/toml"),
};
