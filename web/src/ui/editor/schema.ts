/**
 * The server's JSON Schemas (pydantic, draft 2020-12) rewritten into the dialect the form
 * library understands (draft 4 with `definitions`), with what a designer needs to read:
 * units and ranges in each field's description, the fixed `kind` hidden, and the
 * "a number or a per-animal distribution" choices named in words.
 */
export type Schema = { [key: string]: unknown };

const DEFS = "#/$defs/";

/** A copy of `schema` the form library can render. */
export function formSchema(schema: Schema): Schema {
  const out = adapt(schema, "") as Schema;
  if (out.$defs) {
    const defs = out.$defs as Record<string, Schema>;
    delete out.$defs;
    out.definitions = Object.fromEntries(Object.entries(defs).map(([k, v]) =>
      [k, k === "Distribution" ? { ...v, title: "per-animal distribution" } : v]));
  }
  return out;
}

function adapt(node: unknown, key: string, option = false): unknown {
  if (Array.isArray(node)) return node.map((v) => adapt(v, "", option));
  if (!node || typeof node !== "object") return node;
  const src = node as Schema;
  const out: Schema = {};
  for (const [k, v] of Object.entries(src)) {
    if (k === "properties" && v && typeof v === "object") {
      out.properties = Object.fromEntries(Object.entries(v as Schema).map(([name, p]) => [name, adapt(p, name)]));
    } else if (k === "$ref" && typeof v === "string" && v.startsWith(DEFS)) {
      out.$ref = `#/definitions/${v.slice(DEFS.length)}`;
    } else if (k === "anyOf" || k === "oneOf") {
      out[k] = adapt(v, "", true);
    } else {
      out[k] = adapt(v, "");
    }
  }
  if (Array.isArray(out.prefixItems)) { // a fixed-length tuple (a point, a range): draft 4's items array
    out.items = out.prefixItems;
    delete out.prefixItems;
    out.format = "table";
    out.options = { ...(out.options as Schema | undefined), disable_array_add: true, disable_array_delete: true,
      disable_array_reorder: true };
  } else if (out.type === "array" && (out.items as Schema | undefined)?.type === "string" && !out.format) {
    out.format = "table"; // a list of names: one compact row each
    out.options = { ...(out.options as Schema | undefined), disable_array_reorder: true };
  }
  for (const [bound, plain] of [["exclusiveMinimum", "minimum"], ["exclusiveMaximum", "maximum"]] as const) {
    if (typeof out[bound] === "number") {
      out[plain] = out[bound];
      out[bound] = true;
    }
  }
  if ("const" in out) { // the `kind` of a parameter table: chosen from the dropdown, not typed
    out.enum = [out.const];
    out.options = { ...(out.options as Schema | undefined), hidden: true };
  }
  if (Array.isArray(out.anyOf)) { // "a number or a per-animal distribution", "a number or none": named choices
    out.anyOf = (out.anyOf as Schema[]).map((o) => ({ ...o, title: optionTitle(o) }));
  }
  if (option) return out; // the switcher names an option by its title: its range goes on the field
  const range = rangeText(out) || (Array.isArray(out.anyOf) ? (out.anyOf as Schema[]).map(rangeText).find(Boolean) ?? "" : "");
  if (range) out.description = out.description ? `${out.description} (${range})` : range;
  if (key && out.title === undefined) out.title = words(key);
  return out;
}

/** What a choice among `anyOf` options is called in the form's type switcher. */
function optionTitle(option: Schema): string {
  if (typeof option.title === "string" && option.title) return option.title;
  if (typeof option.$ref === "string") {
    const name = option.$ref.split("/").pop() ?? "";
    return name === "Distribution" ? "per-animal distribution" : words(name.replace(/(Config|Params)$/, ""));
  }
  switch (option.type) {
    case "null": return "none";
    case "number": return "a number";
    case "integer": return "a whole number";
    case "string": return "text";
    case "boolean": return "yes / no";
    case "array": return "list";
    default: return "value";
  }
}

/** The allowed range of a number, as a designer reads it: "0 – 1", "> 0", "≥ 0". */
export function rangeText(s: Schema): string {
  if (s.type !== "number" && s.type !== "integer") return "";
  const lo = typeof s.minimum === "number" ? s.minimum : null;
  const hi = typeof s.maximum === "number" ? s.maximum : null;
  const loX = s.exclusiveMinimum === true, hiX = s.exclusiveMaximum === true;
  if (lo !== null && hi !== null) return `range ${loX ? "(" : "["}${lo}, ${hi}${hiX ? ")" : "]"}`;
  if (lo !== null) return `${loX ? ">" : "≥"} ${lo}`;
  if (hi !== null) return `${hiX ? "<" : "≤"} ${hi}`;
  return "";
}

/** `max_distance` → "Max distance". */
export function words(name: string): string {
  const spaced = name.replace(/_/g, " ").replace(/([a-z])([A-Z])/g, "$1 $2").toLowerCase().trim();
  return spaced.charAt(0).toUpperCase() + spaced.slice(1);
}
