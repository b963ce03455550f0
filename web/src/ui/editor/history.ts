/**
 * Undo and redo over whole configs. Only configs the server accepted enter the history,
 * so every undo lands on a state that ran; `original` is the scenario as loaded.
 */
export type Config = Record<string, unknown>;

export class History {
  private past: Config[] = [];
  private future: Config[] = [];
  private present: Config;
  readonly original: Config;

  constructor(loaded: Config, private readonly limit = 100) {
    this.present = structuredClone(loaded);
    this.original = structuredClone(loaded);
  }

  get current(): Config { return structuredClone(this.present); }
  get canUndo(): boolean { return this.past.length > 0; }
  get canRedo(): boolean { return this.future.length > 0; }

  /** An accepted change: it becomes the present, and what could be redone is forgotten. */
  push(config: Config): void {
    if (same(config, this.present)) return;
    this.past.push(this.present);
    if (this.past.length > this.limit) this.past.shift();
    this.present = structuredClone(config);
    this.future = [];
  }

  /** The config to go back to (and make present), or null when there is none. */
  undo(): Config | null {
    const previous = this.past.pop();
    if (!previous) return null;
    this.future.push(this.present);
    this.present = previous;
    return this.current;
  }

  redo(): Config | null {
    const next = this.future.pop();
    if (!next) return null;
    this.past.push(this.present);
    this.present = next;
    return this.current;
  }
}

export function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
