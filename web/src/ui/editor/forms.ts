/**
 * One parameter form, generated from a JSON Schema by @json-editor/json-editor, so a
 * plugin's behaviour gets its form without front-end changes. The library (about half a
 * megabyte) loads the first time the editor opens, not with the app.
 */
import { formSchema, rangeText, type Schema } from "./schema";

/* eslint-disable @typescript-eslint/no-explicit-any */
type Editor = any;
let library: Promise<void> | null = null;
let JSONEditorClass: any = null;

/** Load the form library once; forms can be made (synchronously) once this resolves. */
export function loadForms(): Promise<void> {
  library ??= import("@json-editor/json-editor").then((m: any) => {
    JSONEditorClass = m.JSONEditor ?? m.default?.JSONEditor ?? m.default;
    // "a number or a distribution" refused: the field's range (shown under it) says why
    JSONEditorClass.defaults.languages.en.error_anyOf = "outside the allowed range, or not a valid choice";
  });
  return library;
}

export interface FieldError { path: string; message: string }

/**
 * A live form: `onChange(value)` is called with every valid edit; an invalid one is shown
 * inline by the library and reported through `onInvalid` instead, so it is never applied.
 */
export class Form {
  private editor: Editor;
  private last: string;
  private ready = false;
  private readonly schema: Schema;

  constructor(
    readonly holder: HTMLElement,
    schema: Schema,
    value: unknown,
    onChange: (value: unknown) => void,
    onInvalid: (errors: FieldError[]) => void,
  ) {
    this.schema = formSchema(schema);
    if (!JSONEditorClass) throw new Error("the form library is not loaded yet (await loadForms())");
    this.editor = new JSONEditorClass(holder, {
      schema: this.schema,
      startval: value,
      theme: "html",
      iconlib: null,
      disable_edit_json: true,
      disable_properties: true,
      disable_collapse: true,
      disable_array_delete_all_rows: true,
      disable_array_delete_last_row: true,
      prompt_before_delete: false,
      no_additional_properties: true,
      show_errors: "always",
      keep_oneof_values: false,
    });
    this.last = JSON.stringify(value);
    this.editor.on("ready", () => {
      this.ready = true;
      this.last = JSON.stringify(this.editor.getValue()); // the library fills in defaults: not an edit
    });
    this.editor.on("change", () => {
      if (!this.ready) return;
      const errors = this.errors();
      if (errors.length) {
        onInvalid(errors);
        return;
      }
      onInvalid([]);
      const now = this.editor.getValue();
      const text = JSON.stringify(now);
      if (text === this.last) return;
      this.last = text;
      onChange(now);
    });
  }

  /** What the library finds wrong with the current values (paths like `root.max_distance`). */
  errors(): FieldError[] {
    const value = this.editor.getValue();
    return (this.editor.validate() as { path: string; property: string; message: string }[]).map((e) => {
      const path = e.path.replace(/^root\.?/, "");
      return { path, message: e.property === "anyOf" ? this.plainly(path, value) ?? e.message : e.message };
    });
  }

  /**
   * "A number or a distribution" refuses -3 with "must validate against at least one
   * schema"; a designer needs the number's own range instead.
   */
  private plainly(path: string, value: unknown): string | null {
    let node: Schema | undefined = this.schema;
    let here: unknown = value;
    for (const key of path ? path.split(".") : []) {
      node = this.resolve(node);
      node = (node?.properties as Record<string, Schema> | undefined)?.[key];
      here = here && typeof here === "object" ? (here as Record<string, unknown>)[key] : undefined;
    }
    if (typeof here !== "number" || !Array.isArray(node?.anyOf)) return null;
    const numeric = (node!.anyOf as Schema[]).find((o) => o.type === "number" || o.type === "integer");
    const range = numeric ? rangeText(numeric) : "";
    return range ? `must be ${range.replace(/^range /, "in ")}, not ${here}` : null;
  }

  private resolve(node: Schema | undefined): Schema | undefined {
    const ref = node?.$ref;
    if (typeof ref !== "string") return node;
    return (this.schema.definitions as Record<string, Schema> | undefined)?.[ref.split("/").pop()!];
  }

  value(): unknown {
    return this.editor.getValue();
  }

  /**
   * Take the form off the page. The library's own destroy() is not called: it may still
   * have a change queued from the last edit, which then runs against the torn-down editor
   * and throws; an editor that is only unhooked and detached is collected with its DOM.
   */
  destroy(): void {
    this.editor.off("change");
    this.holder.remove();
  }
}
