"""Mergers register like behaviours: a name, a parameter model and the result types they accept."""
from __future__ import annotations

from typing import Literal

import numpy as np
import pytest

import starling
from starling.config import ConfigError
from starling.steering import registry
from starling.steering.params import MergerParams
from starling.steering.registry import RegistryError


class _SlowestParams(MergerParams):
    """Every animal takes its first behaviour's direction at ``factor`` times its current speed."""

    kind: Literal["test_slowest"] = "test_slowest"
    factor: float = 0.5


def _slowest(stacked, velocity, forward, desired, p, parallel):
    direction = stacked[0]
    n = desired.shape[0]
    speed = np.linalg.norm(velocity[:n], axis=1, keepdims=True)
    desired[:] = direction[0, :n] * speed * p.factor


@pytest.fixture
def slowest():
    registry.merger("test_slowest", params=_SlowestParams)(_slowest)
    yield
    registry._mergers.pop("test_slowest", None)
    registry._version[0] += 1


def test_the_built_in_mergers_are_registered_with_their_parameters():
    names = {m.name: m for m in registry.mergers()}
    assert set(names) >= {"priority_desire", "weighted_mean", "weighted_sum", "first_non_zero"}
    assert "max_desire" in names["priority_desire"].params.model_fields
    assert "max_desire" not in names["weighted_sum"].params.model_fields
    assert all(m.accepts == ("velocity",) for m in names.values())


def test_a_registered_merger_runs_a_scenario_with_its_own_parameters(slowest):
    sim = starling.load_scenario("flock", seed=3, overrides=[
        "species.bird.count=30", 'species.bird.merger={kind = "test_slowest", factor = 0.25}'])
    assert sim.pipelines[0].merger.factor == 0.25
    pop = sim.population("bird")
    before = np.linalg.norm(pop.velocity, axis=1).copy()
    sim.step()
    pipe = sim.pipelines[0]
    # the desired speed is a quarter of the step-start speed wherever the first behaviour had an opinion
    wants = np.linalg.norm(pipe.desired[:pop.n], axis=1)
    has = np.linalg.norm(pipe.results.direction[0, :pop.n], axis=1) > 0.5
    assert has.any()
    np.testing.assert_allclose(wants[has], 0.25 * before[has], rtol=1e-5)


def test_a_merger_parameter_is_validated_with_its_path(slowest):
    with pytest.raises(ConfigError) as err:
        starling.load_scenario("flock", seed=3, overrides=['species.bird.merger={kind = "test_slowest", factr = 1.0}'])
    assert "species.bird.merger" in str(err.value) and "factr" in str(err.value)


def test_an_unknown_merger_names_the_registered_ones():
    with pytest.raises(ConfigError) as err:
        starling.load_scenario("flock", seed=3, overrides=['species.bird.merger={kind = "loudest"}'])
    text = str(err.value)
    assert "species.bird.merger" in text and "loudest" in text and "priority_desire" in text


def test_a_merger_is_declared_with_a_fixed_kind_and_known_result_types():
    class Loose(MergerParams):
        kind: str = "test_loose"

    with pytest.raises(RegistryError, match="Literal"):
        registry.merger("test_loose", params=Loose)(_slowest)
    with pytest.raises(RegistryError, match="accepts"):
        registry.merger("test_slowest", params=_SlowestParams, accepts=("force",))(_slowest)
    with pytest.raises(RegistryError, match="MergerParams"):
        registry.merger("test_slowest", params=dict)(_slowest)
