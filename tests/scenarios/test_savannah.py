"""The savannah's pride: a synchronized attack, the catch rule, stop conditions, pack against alone."""
import copy
import math

import numpy as np
import pytest

import starling
from starling import Simulation
from starling.config import ConfigError, read_scenario_data, validate_scenario
from starling.ecology.pack import PackSystem
from starling.experiments.backends import make_backend
from starling.experiments.driver import run_sweep_file
from starling.experiments.savannah import sweep_spec
from starling.experiments.sweep_file import check_sweep


def _states(sim):
    lion = sim.world.population("lion")
    names = [s.name for s in sim.scenario.species[1].brain.states]
    return [names[int(s)] for s in lion.component("state")[: lion.n]]


def _pack(sim) -> PackSystem:
    return next(s for s in sim.systems if isinstance(s, PackSystem))


def _until_decided(sim, limit_s=300.0):
    while sim.outcome is None and sim.time < limit_s:
        sim.step(25)
    return sim.outcome


def test_the_pride_attacks_together_only_once_every_lion_is_within_twenty_metres_of_its_point():
    sim = starling.load_scenario("savannah", overrides=["lions=3", "zebras=10"], seed=2, record_debug=False)
    lion = sim.world.population("lion")
    preparing = {"stalking", "leading", "flanking"}
    far_steps = 0
    while sim.time < 200:
        before = _states(sim)
        start = lion.position[:3].copy()              # what this step's attack points are computed from
        sim.step()
        after = _states(sim)
        # this step's attack points (a preparing lion's goal) against where each lion stood
        gap = np.hypot(lion.component("goal_x")[:3] - start[:, 0], lion.component("goal_z")[:3] - start[:, 2])
        if not all(s in preparing for s in before):
            continue
        ready = gap.max() < 20.0
        assert lion.component("pack_ready")[0] == float(ready)
        if not ready:
            far_steps += 1
            assert after == before, "a lion attacked while another was still on its way"
        else:
            assert after == ["attacking"] * 3          # the whole pride at once
            break
    else:
        pytest.fail("the pride never attacked")
    assert far_steps > 100                              # it did wait for the slowest lion
    ranks = sorted(lion.component("rank")[:3].tolist())
    assert ranks == [0.0, 1.0, 2.0]


def test_a_catch_needs_the_attacking_state_and_five_metres():
    sim = starling.load_scenario("savannah", overrides=["lions=1", "zebras=10"], seed=1, record_debug=False)
    pack = _pack(sim)
    lion = sim.world.population("lion")
    zebra = sim.world.population("zebra")
    names = [s.name for s in sim.scenario.species[1].brain.states]
    lion.position[0] = (50.0, 0.0, 50.0)
    zebra.position[0] = (54.0, 0.0, 50.0)               # 4 m away

    lion.component("state")[0] = names.index("stalking")
    pack.after_move(sim, sim.dt)
    assert lion.component("pack_fed")[0] == 0.0         # close enough, but not attacking

    lion.component("state")[0] = names.index("attacking")
    zebra.position[0] = (56.0, 0.0, 50.0)               # 6 m away
    pack.after_move(sim, sim.dt)
    assert lion.component("pack_fed")[0] == 0.0         # attacking, but too far

    zebra.position[0] = (54.9, 0.0, 50.0)               # 4.9 m
    caught_uid = int(zebra.uid[0])
    pack.after_move(sim, sim.dt)
    assert lion.component("pack_fed")[0] == 1.0
    sim.step()                                          # the kill takes effect at the end of the step
    assert caught_uid not in set(zebra.uid[: zebra.n].tolist()) and zebra.n == 9
    assert sim.outcome["outcome"] == "caught"
    assert _states(sim) == ["eating"]


def test_the_pride_gathers_at_the_carcass_after_a_catch():
    sim = starling.load_scenario("savannah", overrides=["lions=3", "zebras=10"], seed=1, record_debug=False)
    assert _until_decided(sim)["outcome"] == "caught"
    assert _states(sim) == ["eating"] * 3
    lion = sim.world.population("lion")
    carcass = _pack(sim).prides[0].carcass
    sim.step(5)                                          # a live simulation carries on
    assert np.allclose(lion.component("goal_x")[:3], carcass[0]) and np.allclose(lion.component("goal_z")[:3], carcass[1])


def test_a_lone_lion_that_tires_retreats_and_the_run_says_so():
    sim = starling.load_scenario("savannah", overrides=["lions=1", "zebras=30"], seed=1, record_debug=False)
    outcome = _until_decided(sim)
    assert outcome["outcome"] == "retreated"
    lion = sim.world.population("lion")
    assert lion.component("stamina")[0] < 10.0          # tired: the seed's 0.25 × 40
    assert 25.0 < outcome["time"] < 40.0                # 30 s of full-speed chase from 40 to below 10


def test_the_time_limit_decides_when_nothing_else_does():
    sim = starling.load_scenario("savannah", overrides=["lions=3", "stop.2.at=2.0"], seed=1, record_debug=False)
    assert _until_decided(sim) == {"outcome": "timeout", "step": 100, "time": pytest.approx(2.0)}


def test_a_pride_catches_in_most_runs_a_lone_lion_rarely(tmp_path):
    # the experiment's own protocol (seeds 1..10 of each setup, every run until decided), on two
    # worker processes: twenty runs of up to 80 simulated seconds each
    spec = {**sweep_spec(10), "parameters": {"lions": [3, 1], "zebras": [10]}}
    output, _ = run_sweep_file(check_sweep(spec, "pride against alone"), make_backend("local", 2, None), tmp_path)
    rows = [r for r in output.rows if r["status"] == "ok"]
    assert sorted((r["lions"], r["seed"]) for r in rows) == [(n, s) for n in (1, 3) for s in range(1, 11)]
    assert all(r["outcome"] in ("caught", "retreated") for r in rows)     # each decided before the time limit
    pride = sum(r["outcome"] == "caught" for r in rows if r["lions"] == 3)
    alone = sum(r["outcome"] == "caught" for r in rows if r["lions"] == 1)
    assert pride >= 6 and alone <= 2, (pride, alone)


def _data():
    data, label = read_scenario_data("savannah")
    return copy.deepcopy(data), label


def test_a_pride_names_unknown_states_and_missing_components():
    data, label = _data()
    data["species"][1]["pack"]["attacking_state"] = "chasing"
    del data["species"][1]["components"]["power"]
    scenario = validate_scenario(data, label)
    with pytest.raises(ConfigError) as err:
        Simulation(scenario, record_debug=False)
    text = str(err.value)
    assert "species.lion.pack.attacking_state: unknown state 'chasing'" in text
    assert "species.lion.components: a pride declares its components: add power = -1.0" in text


def test_a_pride_hunts_a_species_that_exists():
    data, label = _data()
    data["species"][1]["pack"]["prey"] = "gnu"
    with pytest.raises(ConfigError, match="species.lion.pack.prey: unknown species 'gnu'"):
        Simulation(validate_scenario(data, label), record_debug=False)


def test_the_power_range_must_be_ordered():
    data, label = _data()
    data["species"][1]["pack"]["power_range"] = [50.0, 10.0]
    with pytest.raises(ConfigError, match="power_range"):
        validate_scenario(data, label)


def test_a_lion_that_loses_the_herd_keeps_its_attack_point_unless_faithful():
    for faithful, expected in ((False, 1.0), (True, 0.0)):
        sim = starling.load_scenario("savannah", overrides=["lions=1", f"faithful={str(faithful).lower()}"], seed=1,
                                     record_debug=False)
        lion = sim.world.population("lion")
        names = [s.name for s in sim.scenario.species[1].brain.states]
        sim.step(2)                                        # step 1 enters stalking, step 2 aims at the point
        assert _states(sim) == ["stalking"] and lion.component("goal_on")[0] == 1.0
        lion.position[0] = (-190.0, 0.0, 190.0)           # far beyond its 150 m sight of the herd
        lion.component("state")[0] = names.index("stalking")
        _pack(sim).before_behaviors(sim, sim.dt)
        assert lion.component("goal_on")[0] == expected, faithful


def _turn_after_one_step(sim, row):
    """Face +z, move +x, step once: the yaw's turn in degrees (the rotation limit binds)."""
    zebra = sim.world.population("zebra")
    zebra.forward[row] = (0.0, 0.0, 1.0)
    zebra.velocity[row] = (1.2, 0.0, 0.0)
    sim.step()
    return math.degrees(math.atan2(zebra.forward[row, 0], zebra.forward[row, 2]))


def test_a_lone_zebra_turns_at_five_degrees_a_second_a_herded_one_at_forty_five():
    sim = starling.load_scenario("savannah", overrides=["lions=1", "zebras=2"], seed=1, record_debug=False)
    zebra = sim.world.population("zebra")
    names = [s.name for s in sim.scenario.species[0].brain.states]
    zebra.position[0] = (0.0, 0.0, 0.0)
    zebra.position[1] = (100.0, 0.0, 0.0)                 # 100 m apart: each alone (mates within 30 m: none)
    sim.step()
    assert [names[int(s)] for s in zebra.component("state")[:2]] == ["alone", "alone"]
    assert _turn_after_one_step(sim, 0) == pytest.approx(5.0 * sim.dt, abs=1e-3)      # 0.1° in a 0.02 s step
    zebra.position[1] = (10.0, 0.0, 0.0)                  # a herd mate within 30 m
    sim.step()
    assert [names[int(s)] for s in zebra.component("state")[:2]] == ["idle", "idle"]
    assert _turn_after_one_step(sim, 0) == pytest.approx(45.0 * sim.dt, abs=1e-3)     # 0.9°


def test_a_state_cannot_limit_the_rotation_of_a_mover_without_one():
    data, label = _data()
    data["species"][0]["mover"] = {"kind": "constant_speed", "max_speed": 7.0, "planar": True}
    scenario = validate_scenario(data, label)
    with pytest.raises(ConfigError, match=r"species\.zebra\.brain\.states\.1\.max_rotation_deg: the mover "
                                          r"'constant_speed' has no rotation limit"):
        Simulation(scenario, record_debug=False)


def test_an_attacking_lion_keeps_its_zebra_and_leads_it_unless_faithful():
    for faithful in (False, True):
        sim = starling.load_scenario("savannah", overrides=["lions=1", "zebras=2", f"faithful={str(faithful).lower()}"],
                                     seed=1, record_debug=False)
        lion = sim.world.population("lion")
        zebra = sim.world.population("zebra")
        names = [s.name for s in sim.scenario.species[1].brain.states]
        lion.position[0] = (0.0, 0.0, 0.0)
        zebra.position[:2] = [(0.0, 0.0, 40.0), (30.0, 0.0, 0.0)]    # 40 m north, 30 m east
        zebra.velocity[:2] = [(4.0, 0.0, 0.0), (0.0, 0.0, 0.0)]
        lion.component("state")[0] = names.index("attacking")
        lion.component("prey_uid")[0] = float(zebra.uid[0])          # chasing the northern one
        _pack(sim).before_behaviors(sim, sim.dt)
        goal = (lion.component("goal_x")[0], lion.component("goal_z")[0])
        if faithful:   # the nearest, where it is
            assert goal == pytest.approx((30.0, 0.0))
        else:          # kept (30 m is not under half of 40 m), led min(40 / 1, 1.5) s at 4 m/s east
            assert goal == pytest.approx((6.0, 40.0)) and lion.component("prey_uid")[0] == zebra.uid[0]


def test_a_pride_is_labelled_with_ranks_only_once_it_has_ranked_itself():
    """Ranks are drawn at the pride's first step: before it the lions' labels say their state
    alone (they once all said "#1"), after it a rank each, the strongest "#1"."""
    from starling.simulation import load_scenario

    sim = load_scenario("savannah", seed=3, record_debug=False)
    before = sim.animal_labels("lion")
    assert len(before) == 3 and not any(label.startswith("#") for label in before), before
    sim.step()
    after = sim.animal_labels("lion")
    assert sorted(label.split(" · ")[0] for label in after) == ["#1", "#2", "#3"], after
    power = sim.population("lion").component("power")[:3]
    strongest = int(np.argmax(power))
    assert after[strongest].startswith("#1 · ")
