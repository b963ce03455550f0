"""The step cost estimate behind ``starling validate``'s real-time warning (starling.config.cost)."""
from __future__ import annotations

import pytest

from starling.config import read_scenario_data, scenario_names, validate_scenario
from starling.config.cost import PER_BEHAVIOUR_US, PER_RAY_US, WARN_FACTOR, estimate_step_cost


def _scenario(name: str, **species_fields):
    data, label = read_scenario_data(name)
    data["species"][0].update(species_fields)
    return validate_scenario(data, label)


@pytest.mark.parametrize("name", scenario_names())
def test_no_built_in_scenario_is_flagged(name):
    data, label = read_scenario_data(name)
    cost = estimate_step_cost(validate_scenario(data, label))
    assert cost.ratio < WARN_FACTOR and cost.warning() is None


def test_a_hundred_thousand_animals_with_rays_are_far_over_their_dt():
    rays = [{"query": {"shape": "cone2d", "count": 8, "max_distance": 3.0, "layers": ["environment"]},
             "behaviors": [{"kind": "environment_avoidance"}]}]
    cost = estimate_step_cost(_scenario("pasture", count=100_000, ray_groups=rays))
    assert cost.ratio > 10 * WARN_FACTOR
    line = cost.warning()
    assert line is not None and "sheep" in line and f"{cost.ms:.0f} ms" in line and "real time" in line


def test_the_estimate_grows_with_animals_and_rays():
    small, big = estimate_step_cost(_scenario("flock", count=1000)), estimate_step_cost(_scenario("flock", count=4000))
    assert big.ms == pytest.approx(4 * small.ms)
    rays = [{"query": {"shape": "cone2d", "count": 8, "max_distance": 3.0, "layers": ["environment"]},
             "behaviors": [{"kind": "environment_avoidance"}]}]
    base = estimate_step_cost(_scenario("pasture", count=1000, ray_groups=[]))
    more = estimate_step_cost(_scenario("pasture", count=1000, ray_groups=rays))
    assert more.ms - base.ms == pytest.approx(1000 * (8 * PER_RAY_US + PER_BEHAVIOUR_US) / 1000)
