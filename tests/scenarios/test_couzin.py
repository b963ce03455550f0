"""couzin: the four collective states of Couzin et al. 2002 where the paper places them, and the hysteresis."""
import numpy as np
import pytest

import starling
from starling.config import ConfigError, load_scenario_config

pytestmark = pytest.mark.slow


def _order(sim, steps=1500, average=300):
    pol, mill = [], []
    for i in range(steps):
        sim.step()
        if i >= steps - average:
            m = sim.metrics()["fish"]
            pol.append(m["polarization"])
            mill.append(m["milling"])
    return float(np.mean(pol)), float(np.mean(mill))


def _fresh(dr_o, seed=2002):
    return starling.load_scenario("couzin", seed=seed, overrides=[f"dr_orientation={dr_o}"], record_debug=False)


@pytest.mark.parametrize("dr_o, state", [(0.0, "swarm"), (1.5, "torus"), (4.0, "dynamic parallel"),
                                          (13.0, "highly parallel")])
def test_each_collective_state_appears_where_the_paper_places_it(dr_o, state):
    pol, mill = _order(_fresh(dr_o))
    if state == "swarm":  # cohesive, but neither aligned nor rotating
        assert pol < 0.4 and mill < 0.4, (pol, mill)
    elif state == "torus":  # milling about an empty core, no net heading
        assert mill > 0.7 and pol < 0.4, (pol, mill)
    elif state == "dynamic parallel":  # moving together, but less aligned than at large zones
        assert 0.6 < pol < 0.97 and mill < 0.3, (pol, mill)
    else:
        assert pol > 0.97, (pol, mill)


def test_a_parallel_group_stays_parallel_when_the_orientation_zone_shrinks_again():
    # the collective memory of the paper: fresh at Δr_o = 1.5 the group mills; arriving from a
    # parallel group at Δr_o = 13 it keeps moving in parallel at the same Δr_o
    sim = _fresh(13.0)
    _order(sim, steps=600, average=1)
    for dr_o in (10.0, 7.0, 4.0, 2.0, 1.5):
        sim.set(f"dr_orientation={dr_o}")
        pol, mill = _order(sim, steps=600, average=200)
    assert pol > 0.7 and mill < 0.4, (pol, mill)


def test_the_named_parameters_work_and_a_misspelt_one_is_rejected():
    scenario = load_scenario_config("couzin", ["turn_rate_deg=60", "blind_angle_deg=60", "speed=2", "n=50"])
    fish = scenario.species[0]
    assert fish.mover.turn_rate_deg == 60 and fish.mover.max_speed == 2 and fish.spawn.speed == (2.0, 2.0)
    assert fish.groups[0].behaviors[0].blind_angle_deg == 60 and fish.count == 50
    with pytest.raises(ConfigError, match="dr_orientaton: unknown parameter"):
        load_scenario_config("couzin", ["dr_orientaton=3"])
