"""What can be chosen where: the registered building blocks, described for an editor.

The JSON Schema (:func:`starling.config.io.json_schema`) says what a valid scenario looks
like, but not which choices make sense together: which behaviours belong in a neighbour
group and which in a ray group, which results a merger accepts (thesis 10.1.1), or which
components a behaviour needs. The editor's dropdowns come from this catalog, so a plugin's
behaviour appears in them, with its own parameter form, without front-end changes.
"""
from __future__ import annotations

from typing import Any

from ..steering import registry


def _schema(model: type) -> dict:
    return model.model_json_schema() if hasattr(model, "model_json_schema") else {}


def _refs(node: Any, found: set[str], defs: dict) -> None:
    """Collect the names of the definitions ``node`` refers to, transitively."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref[len("#/$defs/"):]
            if name not in found and name in defs:
                found.add(name)
                _refs(defs[name], found, defs)
        for value in node.values():
            _refs(value, found, defs)
    elif isinstance(node, list):
        for value in node:
            _refs(value, found, defs)


def _form(name: str, defs: dict) -> dict:
    """Definition ``name`` as a standalone schema, carrying only the definitions it uses."""
    used: set[str] = set()
    _refs(defs[name], used, defs)
    return {**defs[name], "$defs": {n: defs[n] for n in sorted(used)}}


_cache: dict[int, dict[str, Any]] = {}


def catalog() -> dict[str, Any]:
    """Every registered behaviour, merger, mover, neighbour query and brain action, with its
    parameter schema; plus the schemas of the group queries the editor builds forms from.

    Built once per registry version (a plugin registering something makes a new one)."""
    version = registry.version()
    if version not in _cache:
        _cache.clear()
        _cache[version] = _build()
    return _cache[version]


def _build() -> dict[str, Any]:
    from .models import scenario_model

    defs = scenario_model().model_json_schema().get("$defs", {})
    return {
        "result_types": list(registry.RESULT_TYPES),
        "behaviors": [{
            "name": spec.name,
            "group": spec.kind,  # simple | neighbor | ray
            "result": spec.result,
            "components": list(spec.components),
            "target_components": list(spec.target_components),
            "doc": spec.doc,
            "schema": _schema(spec.params),
        } for spec in sorted(registry.behaviors(), key=lambda s: s.name)],
        "mergers": [{"name": m.name, "accepts": list(m.accepts), "doc": m.doc, "schema": _schema(m.params)}
                    for m in sorted(registry.mergers(), key=lambda m: m.name)],
        "movers": [{"name": m.name, "doc": m.doc, "schema": _schema(m.params)}
                   for m in sorted(registry.movers(), key=lambda m: m.name)],
        # what a neighbour query can target besides the species: the populations systems provide
        "populations": sorted({name for sec in registry.sections() for name in sec.provides}),
        "query_methods": [{"name": q.name, "doc": q.doc} for q in sorted(registry.queries(), key=lambda q: q.name)],
        "brain_actions": [{"name": a.name, "doc": a.doc, "schema": _schema(a.params)}
                          for a in sorted(registry.brain_actions(), key=lambda a: a.name)],
        # the forms of the parts that are not chosen from a list, with the definitions they refer to
        "forms": {name: _form(name, defs) for name in (
            "QueryConfig", "RayQuerySpec", "BrainConfig", "SpeciesEcologyConfig", "AppearanceConfig",
            "SpawnConfig", "BodyConfig", "PackConfig", "VariationConfig") if name in defs},
    }
