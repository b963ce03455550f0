import { describe, expect, it } from "vitest";
import { behaviorChoices, defaults, mergerChoices, queryForm, requiredComponents, type Catalog } from "../src/ui/editor/catalog";
import { History } from "../src/ui/editor/history";
import { getAt, indexPath, move, owner, renameSpecies, setAt } from "../src/ui/editor/paths";
import { formSchema, rangeText, words } from "../src/ui/editor/schema";

const behavior = (name: string, group: "simple" | "neighbor" | "ray", result = "velocity", components: string[] = []) =>
  ({ name, group, result, components, target_components: [], doc: `${name} doc\nmore`, schema: {} });

const catalog: Catalog = {
  result_types: ["velocity", "force"],
  behaviors: [behavior("separation", "neighbor", "velocity", ["hunger"]), behavior("push", "neighbor", "force", ["energy"]),
    behavior("wandering", "simple"), behavior("avoid_ground", "ray")],
  mergers: [{ name: "priority_desire", accepts: ["velocity"], doc: "", schema: {} },
    { name: "sum_all", accepts: ["velocity", "force"], doc: "", schema: {} }],
  movers: [], query_methods: [{ name: "grid", doc: "" }, { name: "brute", doc: "" }], brain_actions: [],
  populations: ["apple", "player"],
  forms: { QueryConfig: { type: "object", properties: { targets: { type: "array", items: { type: "string" } }, method: { type: "string" } } } },
};

describe("the editor's dropdowns", () => {
  it("offer only behaviours of the group's kind whose result the merger accepts", () => {
    expect(behaviorChoices(catalog, "neighbor", "priority_desire").map((b) => b.name)).toEqual(["separation"]);
    expect(behaviorChoices(catalog, "neighbor", "sum_all").map((b) => b.name)).toEqual(["separation", "push"]);
    expect(behaviorChoices(catalog, "ray", "sum_all").map((b) => b.name)).toEqual(["avoid_ground"]);
    expect(behaviorChoices(catalog, "simple", undefined).map((b) => b.name)).toEqual(["wandering"]);
  });
  it("offer only mergers that accept every result in use", () => {
    expect(mergerChoices(catalog, ["velocity"]).map((m) => m.name)).toEqual(["priority_desire", "sum_all"]);
    expect(mergerChoices(catalog, ["velocity", "force"]).map((m) => m.name)).toEqual(["sum_all"]);
  });
  it("list the components the chosen behaviours need", () => {
    expect(requiredComponents(catalog, ["push", "separation", "wandering"]).own).toEqual(["energy", "hunger"]);
  });
  it("make a query's targets a checklist of species and populations", () => {
    const form = queryForm(catalog, ["fish", "shark"]);
    const targets = (form.properties as Record<string, Record<string, unknown>>).targets;
    expect(targets.format).toBe("checkbox");
    expect((targets.items as { enum: string[] }).enum).toEqual(["fish", "shark", "apple", "player"]);
    expect((form.properties as Record<string, Record<string, unknown>>).method.enum).toEqual(["grid", "brute"]);
    expect(catalog.forms.QueryConfig.properties).not.toHaveProperty("targets.format"); // the catalog is not changed
  });
  it("start a new table from the schema's defaults, with its kind", () => {
    const schema = { properties: { kind: { const: "x" }, weight: { default: 0.5 }, label: { default: null }, p: { default: [1, 2] } } };
    expect(defaults(schema, "x")).toEqual({ kind: "x", weight: 0.5, p: [1, 2] });
  });
});

describe("the schema as the form library reads it", () => {
  const pydantic = {
    type: "object",
    properties: {
      kind: { const: "separation", default: "separation", type: "string" },
      max_distance: { type: "number", exclusiveMinimum: 0, description: "Reach, m." },
      weight: { anyOf: [{ type: "number", minimum: 0, maximum: 1 }, { $ref: "#/$defs/Distribution" }], description: "Weight." },
      center: { type: "array", prefixItems: [{ type: "number" }, { type: "number" }], minItems: 2, maxItems: 2 },
    },
    $defs: { Distribution: { type: "object", properties: { uniform: { anyOf: [{ type: "array" }, { type: "null" }] } } } },
  };
  const out = formSchema(pydantic) as { properties: Record<string, Record<string, unknown>>; definitions: Record<string, Record<string, unknown>> };

  it("moves $defs to definitions and rewrites references", () => {
    expect(out.definitions.Distribution.title).toBe("per-animal distribution");
    expect((out.properties.weight.anyOf as { $ref?: string }[])[1].$ref).toBe("#/definitions/Distribution");
  });
  it("hides the fixed kind and writes ranges into descriptions", () => {
    expect(out.properties.kind.enum).toEqual(["separation"]);
    expect((out.properties.kind.options as { hidden: boolean }).hidden).toBe(true);
    expect(out.properties.max_distance).toMatchObject({ minimum: 0, exclusiveMinimum: true, description: "Reach, m. (> 0)" });
    expect(out.properties.weight.description).toBe("Weight. (range [0, 1])");
    expect((out.properties.weight.anyOf as { title: string }[]).map((o) => o.title)).toEqual(["a number", "per-animal distribution"]);
  });
  it("turns a tuple into a fixed-length table", () => {
    expect(out.properties.center.items).toHaveLength(2);
    expect(out.properties.center.format).toBe("table");
    expect(out.properties.center).not.toHaveProperty("prefixItems");
  });
  it("reads ranges and names as a designer would", () => {
    expect(rangeText({ type: "integer", minimum: 1 })).toBe("≥ 1");
    expect(rangeText({ type: "number", maximum: 5, exclusiveMaximum: true })).toBe("< 5");
    expect(rangeText({ type: "string" })).toBe("");
    expect(words("max_distance")).toBe("Max distance");
    expect(words("SpeciesEcology")).toBe("Species ecology");
  });
});

describe("undo and redo", () => {
  it("walk back and forth over accepted configs and forget the future on a new change", () => {
    const h = new History({ n: 1 });
    h.push({ n: 2 });
    h.push({ n: 3 });
    h.push({ n: 3 }); // the same config again is not a step
    expect(h.undo()).toEqual({ n: 2 });
    expect(h.undo()).toEqual({ n: 1 });
    expect(h.undo()).toBeNull();
    expect(h.redo()).toEqual({ n: 2 });
    h.push({ n: 9 });
    expect(h.canRedo).toBe(false);
    expect(h.undo()).toEqual({ n: 2 });
    expect(h.original).toEqual({ n: 1 });
  });
  it("keeps copies, so editing what it returned does not change its past", () => {
    const h = new History({ a: [1] });
    const c = h.current;
    (c.a as number[]).push(2);
    expect(h.current).toEqual({ a: [1] });
  });
});

describe("paths", () => {
  const config = () => ({ species: [{ name: "fish", groups: [{ query: { targets: ["fish", "shark"] } }] },
    { name: "shark", groups: [{ query: { targets: ["fish"] } }] }] });
  it("read and write nested values", () => {
    const c = config();
    expect(getAt(c, ["species", 1, "name"])).toBe("shark");
    setAt(c, ["species", 0, "count"], 5);
    expect(getAt(c, ["species", 0, "count"])).toBe(5);
    setAt(c, ["species", 0, "count"], undefined);
    expect(getAt(c, ["species", 0])).not.toHaveProperty("count");
  });
  it("map the server's species names to the panel's indices and find the owning card", () => {
    expect(indexPath("species.shark.groups.0.query.k", config())).toBe("species.1.groups.0.query.k");
    expect(indexPath("species.3.count", config())).toBe("species.3.count");
    expect(owner("species.1.groups.0.query.k", ["species.1", "species.1.groups.0", "species.1.groups.0.query"])).toBe("species.1.groups.0.query");
    expect(owner("species.10.count", ["species.1"])).toBeNull();
  });
  it("rename a species in every query that targets it", () => {
    const c = config();
    renameSpecies(c, "fish", "sardine");
    expect(c.species[0].name).toBe("sardine");
    expect(c.species[0].groups[0].query.targets).toEqual(["sardine", "shark"]);
    expect(c.species[1].groups[0].query.targets).toEqual(["sardine"]);
  });
  it("move items within their list only", () => {
    const list = ["a", "b", "c"];
    expect(move(list, 0, -1)).toBe(false);
    expect(move(list, 0, 1)).toBe(true);
    expect(list).toEqual(["b", "a", "c"]);
  });
});

import { tickLabels } from "../src/ui/charts";

describe("chart axes", () => {
  it("label every tick distinctly with as few decimals as that takes", () => {
    expect(tickLabels([0, 0.5, 1])).toEqual(["0", "0.5", "1"]);
    expect(tickLabels([1250, 1300, 1350])).toEqual(["1.25k", "1.3k", "1.35k"]);
    expect(tickLabels([0.001, 0.002, 0.003])).toEqual(["0.001", "0.002", "0.003"]);
    expect(tickLabels([0, 100, 200])).toEqual(["0", "100", "200"]);
    expect(tickLabels([2e6, 2.5e6, null])).toEqual(["2M", "2.5M", ""]);
  });
});
