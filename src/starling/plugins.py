"""Plugins: where behaviours, queries, mergers, movers, config sections and brain actions come from.

Everything Starling can name in a scenario registers itself in the registry when its
module is imported. Which modules are imported is decided here, in one way for all:

* packages declare modules in the entry-point group ``starling.plugins`` (Starling's own
  built-ins are declared there too, in ``pyproject.toml``), loaded when ``starling`` is imported;
* ``--plugin MODULE`` on any command (or :func:`load_plugin`) imports one more module by
  dotted name from the working directory, or a ``.py`` file by path.

An entry point names a module (imported for its registrations) or a callable (called once
with no arguments). A plugin that fails to load is reported in one line naming it; it
never prevents Starling itself from starting.
"""
from __future__ import annotations

import importlib
import sys
import warnings
from importlib import metadata
from pathlib import Path
from typing import Optional

GROUP = "starling.plugins"

#: the built-ins, as pyproject.toml declares them (used as they are when Starling runs
#: from a source tree that was never installed, so no entry points exist)
BUILTINS = {
    "behaviors": "starling.steering.behaviors",
    "mergers": "starling.steering.mergers",
    "queries": "starling.steering.queries.neighbors",
    "movers": "starling.motion.movers",
    "environment": "starling.environment.system",
    "ground_mover": "starling.environment.walking",
    "ecology": "starling.ecology",
}

_loaded: dict[str, str] = {}  # what was loaded -> where it came from


class PluginError(ValueError):
    """A plugin could not be found or failed while loading."""


def loaded() -> dict[str, str]:
    """Every plugin loaded in this process (module or entry point -> its source)."""
    return dict(_loaded)


def load_installed() -> list[str]:
    """Load the built-ins and every installed package's ``starling.plugins`` entry points (once)."""
    names = []
    points = list(metadata.entry_points(group=GROUP))
    ours = {ep.value for ep in points if ep.dist is not None and ep.dist.name == "starling"}
    for name, module in BUILTINS.items():  # the built-ins first, whatever the install state
        if module not in ours:
            _import(module, f"built-in {name}")
            names.append(module)
    for ep in sorted(points, key=lambda e: (e.dist is None or e.dist.name != "starling", e.name)):
        key = f"{ep.dist.name if ep.dist else '?'}:{ep.name}"
        if key in _loaded:
            continue
        try:
            target = ep.load()
            if callable(target) and not isinstance(target, type(sys)):
                target()
        except Exception as exc:  # one broken package must not stop Starling
            if ep.dist is not None and ep.dist.name == "starling":
                raise
            warnings.warn(f"starling: plugin {ep.name!r} ({ep.value}) failed to load: {type(exc).__name__}: {exc}",
                          RuntimeWarning, stacklevel=2)
            continue
        _loaded[key] = ep.value
        names.append(ep.value)
    return names


def load_plugin(spec: str) -> str:
    """Import ``spec``: a dotted module name (the working directory is searched first) or a ``.py`` path.

    Raises :class:`PluginError` naming the plugin and the reason.
    """
    spec = str(spec).strip()
    if not spec:
        raise PluginError("--plugin: empty module name")
    if spec in _loaded:
        return spec
    path = Path(spec)
    if spec.endswith(".py") or path.is_file():
        if not path.is_file():
            raise PluginError(f"--plugin {spec}: no such file")
        # imported by its own name from its folder, so Numba's cache and pickle can find it again
        folder, module = str(path.resolve().parent), path.stem
        existing = sys.modules.get(module)
        if existing is not None and Path(getattr(existing, "__file__", "") or "").resolve() != path.resolve():
            raise PluginError(f"--plugin {spec}: a different module named {module!r} is already loaded")
    else:
        folder, module = str(Path.cwd()), spec
    if folder not in sys.path:
        sys.path.insert(0, folder)
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name and module.startswith(exc.name):
            raise PluginError(f"--plugin {spec}: no module named {exc.name!r} "
                              f"(give a dotted module name importable from {folder}, or a .py file)") from None
        raise PluginError(f"--plugin {spec}: {type(exc).__name__}: {exc}") from None
    except Exception as exc:
        raise PluginError(f"--plugin {spec}: {type(exc).__name__}: {exc}") from None
    _loaded[spec] = "--plugin"
    return spec


def _import(module: str, what: str) -> Optional[object]:
    mod = importlib.import_module(module)
    _loaded[module] = what
    return mod
