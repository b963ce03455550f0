"""Property: any edit applied live equals a simulation built fresh from the edited config with the same state.

For every built-in scenario, hypothesis picks numeric, integer and boolean fields of
the species' pipelines (behaviour parameters, queries, merger, mover) and gives them
new values. An edit the config rejects must leave the running simulation
bit-identical; an accepted one must step exactly like ``Simulation.restore`` of the
same state under the edited config (the fresh-build path).
"""
import copy
import pickle

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import starling
from starling import kernel_calls
from starling.config import ConfigError

SCENARIOS = starling.scenario_names()
_START: dict = {}


def _started(name: str) -> dict:
    """A snapshot a few steps into the scenario (built once per scenario)."""
    if name not in _START:
        sim = starling.load_scenario(name, seed=11, record_debug=False)
        sim.step(6)
        _START[name] = sim.snapshot()
    return _START[name]


def _leaves(data: dict) -> list[tuple[tuple, object]]:
    """Editable leaves of the species' pipelines: (path, value) for numbers and booleans."""
    out = []

    def walk(node, path):
        if isinstance(node, dict) and ("uniform" in node or "normal" in node):
            return  # a changed distribution is redrawn live by design; a fresh build keeps the draws it is given
        if isinstance(node, dict):
            for k, v in node.items():
                if k in ("count", "spawn", "appearance", "components", "name", "label", "seed", "kind"):
                    continue
                walk(v, path + (k,))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, path + (i,))
        elif isinstance(node, (bool, int, float)):
            out.append((path, node))

    for s, sp in enumerate(data["species"]):
        for key in ("groups", "ray_groups", "behaviors", "mover", "merger"):
            if key in sp:
                walk(sp[key], ("species", s, key))
    return out


def _new_value(draw, path, value):
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return draw(st.integers(min_value=0, max_value=max(2 * value, 8)))
    if str(path[-1]).startswith("weight") or path[-1] in ("max_desire",):
        return draw(st.floats(min_value=0.0, max_value=1.0, allow_nan=False))
    return value * draw(st.sampled_from([0.0, 0.5, 0.9, 1.1, 2.0, -1.0]))


def _set(data: dict, path: tuple, value) -> None:
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value


def _arrays(sim) -> dict:
    return {(name, f): np.array(getattr(pop, f), copy=True)
            for name, pop in sim.world.populations.items()
            for f in ("position", "velocity", "forward", "up", "uid")} | {
        (name, c): pop.component(c).copy() for name, pop in sim.world.populations.items() for c in pop.component_names}


@pytest.mark.parametrize("name", SCENARIOS)
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_a_live_edit_steps_like_a_fresh_build_from_the_edited_config(name, data):
    snap = _started(name)
    sim = starling.Simulation.restore(snap)
    config = sim.config_data()
    leaves = _leaves(config)
    edited = copy.deepcopy(config)
    picks = data.draw(st.lists(st.sampled_from(leaves), min_size=1, max_size=3, unique_by=lambda x: x[0]))
    for path, value in picks:
        _set(edited, path, _new_value(data.draw, path, value))
    before = pickle.dumps(sim.snapshot())
    try:
        sim.reconfigure(edited)
    except ConfigError as err:
        event("rejected")
        assert err.problems and all(p.path for p in err.problems)
        assert pickle.dumps(sim.snapshot()) == before  # a failed edit changes nothing
        return
    event("applied")
    fresh_snap = dict(snap)
    fresh_snap["config"] = sim.scenario.model_dump(mode="json")
    fresh = starling.Simulation.restore(fresh_snap)
    for _ in range(3):
        with kernel_calls.checking():  # the edited simulation's call sites type again what changed
            sim.step()
        fresh.step()
        a, b = _arrays(sim), _arrays(fresh)
        assert a.keys() == b.keys()
        for key in a:
            assert np.array_equal(a[key], b[key], equal_nan=True), (key, picks)


def test_an_animal_can_be_inspected_between_a_reconfigure_and_the_next_step():
    """The live app inspects a selected animal on every frame, also the one right after an edit."""
    import starling

    sim = starling.load_scenario("flock", seed=1)
    sim.step(3)
    data = sim.config_data()
    data["species"][0]["groups"].append({"label": "g2", "query": {"targets": ["bird"]},
                                         "behaviors": [{"kind": "separation"}]})
    sim.reconfigure(data)
    uid = int(sim.population("bird").uid[-1])  # a row far past any initial buffer capacity
    info = sim.inspect("bird", uid)
    assert info is not None and info["uid"] == uid and len(info["desired_velocity"]) == 3
    sim.step(1)
    kinds = [b["kind"] for b in sim.inspect("bird", uid)["behaviors"]]
    assert kinds.count("separation") == 2
