"""Sweep files: what they mean (runs, values, draws) and what they refuse, each with the field named."""
import pytest

from starling.config import ConfigError
from starling.experiments.driver import check_metrics
from starling.experiments.sweep_file import check_sweep

SMALLEST = {"scenario": "vicsek", "steps": 200, "replicates": 2, "design": "grid", "parameters": {"eta": [0.5, 4.0]}}


def test_the_smallest_sweep_file_means_four_runs():
    sweep = check_sweep(dict(SMALLEST))
    runs = sweep.runs()
    assert [(r.params, r.seed) for r in runs] == [({"eta": 0.5}, 1), ({"eta": 0.5}, 2), ({"eta": 4.0}, 1),
                                                  ({"eta": 4.0}, 2)]
    assert len({r.id for r in runs}) == 4 and [r.index for r in runs] == [0, 1, 2, 3]
    assert sweep.columns() == ["particle.count", "particle.polarization", "particle.milling",
                               "particle.largest_group"]
    task = sweep.task(runs[2])
    assert task["overrides"] == ["eta=4.0"] and task["seed"] == 1 and task["steps"] == 200


def test_ranges_give_the_hand_computed_values_and_a_grid_is_their_product():
    sweep = check_sweep({"scenario": "vicsek", "steps": 10, "parameters": {
        "eta": {"range": [0, 1], "num": 5},
        "species.particle.count": {"range": [100, 400], "step": 150, "integer": True},
        "speed": {"range": [0.01, 1], "num": 3, "log": True}}})
    runs = sweep.runs()
    assert len(runs) == 5 * 3 * 3
    assert sorted({r.params["eta"] for r in runs}) == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert sorted({r.params["species.particle.count"] for r in runs}) == [100, 250, 400]
    assert sorted({r.params["speed"] for r in runs}) == pytest.approx([0.01, 0.1, 1.0])
    assert runs[0].params == {"eta": 0.0, "species.particle.count": 100, "speed": pytest.approx(0.01)}


def test_a_random_design_draws_the_same_sets_from_the_same_seed():
    raw = {"scenario": "vicsek", "steps": 10, "design": "random", "samples": 6, "replicates": 2, "seed": 5,
           "parameters": {"eta": {"distribution": "uniform", "low": 0.0, "high": 6.0}, "speed": [0.03, 0.1]}}
    a, b = check_sweep(dict(raw)).runs(), check_sweep(dict(raw)).runs()
    assert [r.params for r in a] == [r.params for r in b] and len(a) == 12
    etas = [r.params["eta"] for r in a[::2]]
    assert len(set(etas)) == 6 and all(0 <= e <= 6 for e in etas)
    assert {r.params["speed"] for r in a} <= {0.03, 0.1}
    assert [r.seed for r in a[:2]] == [5, 6]
    other = check_sweep({**raw, "seed": 6}).runs()
    assert [r.params for r in other] != [r.params for r in a]


@pytest.mark.parametrize("change,field,words", [
    ({"parameters": {"no_such_knob": [1, 2]}}, "parameters.no_such_knob", "unknown parameter"),
    ({"parameters": {"eta": []}}, "parameters", "value list is empty"),
    ({"replicates": -1}, "replicates", "greater than or equal to 1"),
    ({"steps": 0}, "steps", "greater than or equal to 1"),
    ({"parameters": {"eta": {"distribution": "uniform", "low": 0, "high": 1}}}, "",
     "a distribution needs design = \"random\""),
    ({"design": "random"}, "", "needs 'samples'"),
    ({"parameters": {"eta": {"range": [0, 1]}}}, "parameters.eta", "exactly one of 'num' or 'step'"),
    ({"parameters": {"species.particle.count": [-5]}}, "parameters.species.particle.count", "greater than or equal"),
    ({"scenario": "no_such_scene"}, "scenario", "no_such_scene"),
    ({"metrics": [{"name": "polarization", "species": "wolf"}]}, "metrics.0.species", "'wolf' is not a species"),
    ({"typo_field": 1}, "typo_field", "Extra inputs are not permitted"),
])
def test_a_wrong_sweep_file_is_refused_with_the_field_named(change, field, words):
    with pytest.raises(ConfigError) as info:
        check_sweep({**SMALLEST, **change})
    problems = info.value.problems
    assert any(p.path.startswith(field) and words in p.message for p in problems), problems


def test_a_metric_the_scenario_does_not_report_is_refused_before_any_run():
    sweep = check_sweep({**SMALLEST, "metrics": [{"name": "happiness"}]})
    with pytest.raises(ConfigError) as info:
        check_metrics(sweep)
    assert info.value.problems[0].path == "metrics.0.name" and "polarization" in info.value.problems[0].message
