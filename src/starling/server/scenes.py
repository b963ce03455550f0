"""What the server knows of scenarios apart from running one: how to build one by name, which
names a viewer may switch to with their descriptions, and the scene message that tells a
viewer how to draw a simulation (docs/protocol.md).

Shared by the live runner and the replay server, which describes a rebuilt simulation the
same way the live app does.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Optional, Sequence

from . import protocol as P
from .live_view import EntityBlock

Loader = Callable[[str, Optional[int]], Any]
Names = Callable[[], list[str]]


def scenario_loader(overrides: tuple[str, ...] = (), scenario: Optional[str] = None) -> Loader:
    """A loader over the public API.

    ``overrides`` (``"species.bird.count=5000"``) apply whenever ``scenario`` is
    (re)loaded and to no other scenario, whose fields they would not match.
    """

    def load(name: str, seed: Optional[int]) -> Any:
        import starling

        extra = overrides if scenario is None or name == scenario else ()
        return starling.load_scenario(name, seed=seed, overrides=extra)

    return load


def default_scenario_names() -> list[str]:
    """The built-in scenarios, the ones a viewer may switch to unless the server says otherwise."""
    import starling

    return list(starling.scenario_names())


@functools.lru_cache(maxsize=None)
def description(name: str) -> str:
    """A built-in scenario's one-line description for the scene picker ("" when unknown)."""
    from ..config import read_scenario_data

    try:
        data, _ = read_scenario_data(name)
    except Exception:  # a test's or a plugin's name that is not a built-in: no description
        return ""
    return str(data.get("description", ""))


def scene_message(sim: Any, scenario: str, names: Sequence[str], entities: Sequence[EntityBlock]) -> dict[str, Any]:
    """Everything a viewer needs to set up drawing ``sim`` (see docs/protocol.md): its species and
    their looks, the world box, the environment, the entity blocks of its frames, the player's
    actions and the scenario's opening camera; ``names`` are the scenarios the picker offers."""
    config = sim.scenario
    by_name = {s.name: s for s in config.species}
    species = []
    for index, name in enumerate(sim.species):
        look = by_name[name].appearance
        species.append(P.SpeciesInfo(
            index=index, name=name, model=str(look.model), color=str(look.color), scale=float(look.scale)
        ).model_dump())
    environment = None
    describe = getattr(sim, "describe_environment", None)
    if callable(describe):
        raw = describe()
        if raw is not None:
            environment = P.Environment.model_validate(raw).model_dump(exclude_none=True)
    names = list(names)
    return {
        "type": "scene",
        "scenario": scenario,
        "scenarios": names,
        "descriptions": {n: description(n) for n in names},
        "dt": float(sim.dt),
        "species": species,
        "world": {
            "bounds_min": [float(v) for v in config.world.bounds_min],
            "bounds_max": [float(v) for v in config.world.bounds_max],
        },
        "environment": environment,
        "entities": [dict(block.info) for block in entities],
        "player": {t: callable(getattr(sim, m, None)) for t, m in P.PLAYER_ACTIONS.items()},
        "view": _view(config),
    }


def _view(config: Any) -> Optional[dict[str, list[float]]]:
    """The scenario's opening camera, or None: the viewer then frames the animals itself."""
    return None if config.view is None else config.view.model_dump(mode="json")
