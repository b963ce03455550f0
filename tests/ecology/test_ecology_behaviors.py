"""The ecology behaviours against hand-computed results, fleeing with memory in a running
simulation, and a property test: no NaN, desires within their weights, unit or zero directions."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

MOUTH = {"hunger": 1.0, "chew": 0.0}


def with_mouth(mouth, **extra):
    return {**MOUTH, "mouth_x": mouth[0], "mouth_y": mouth[1], "mouth_z": mouth[2], **extra}


def test_chase_food_aims_from_the_mouth_not_the_body_centre(kernel):
    # thesis fig. 11.8: a shark's mouth is 2 m ahead of its centre; the fish is 1 m to the side of the mouth
    r = kernel("chase_food", {"max_distance": 10.0, "fov_deg": 360.0, "max_speed": 8.0},
               agents={"position": [[0, 0, 0]], "comps": with_mouth((0, 0, 2))},
               others={"position": [[1, 0, 2]], "comps": {"food": 1.0, "nutrition": 1.0}})
    assert r.direction[0] == pytest.approx([1, 0, 0], abs=1e-6)  # from the centre it would be (1, 0, 2)/√5


def test_chase_food_weighs_nutrition_and_proximity(kernel):
    params = {"max_distance": 10.0, "fov_deg": 360.0, "min_speed": 1.0, "max_speed": 5.0,
              "weight_direction": 0.8, "weight_speed": 0.6, "easing": "q4", "easing_power": 2.0}
    r = kernel("chase_food", params, agents={"position": [[0, 0, 0]], "comps": with_mouth((0, 0, 0))},
               others={"position": [[0, 0, 4], [3, 0, 0]],
                       "comps": {"food": [1.0, 1.0], "nutrition": [2.0, 1.0]}})
    # weights: 2·(1 − 4/10) = 1.2 and 1·(1 − 3/10) = 0.7; the heavier one sets a = q4(0.6) = 1 − 0.4²
    d = np.array([0.7, 0.0, 1.2])
    assert r.direction[0] == pytest.approx(d / np.linalg.norm(d), abs=1e-6)
    a = 1 - 0.4 ** 2
    assert r.direction_desire[0] == pytest.approx(0.8 * a)
    assert r.speed_desire[0] == pytest.approx(0.6 * a)
    assert r.speed[0] == pytest.approx(1.0 + 4.0 * a)
    # eaten-up food and a chewing mouth count for nothing
    r = kernel("chase_food", params, agents={"position": [[0, 0, 0]] * 2,
                                             "comps": {**with_mouth((0, 0, 0)), "chew": [0.0, 0.5]}},
               others={"position": [[0, 0, 4]], "comps": {"food": 0.0, "nutrition": 1.0}})
    assert r.direction_desire.tolist() == [0.0, 0.0]


def test_avoid_when_eating_only_while_chewing(kernel):
    params = {"max_distance": 4.0, "fov_deg": 360.0, "max_speed": 3.0, "weight_direction": 0.3,
              "weight_speed": 0.3}
    r = kernel("avoid_when_eating", params, agents={"position": [[0, 0, 0]] * 2, "comps": {"chew": [1.0, 0.0]}},
               others={"position": [[0, 0, 1]]})
    assert r.direction[0] == pytest.approx([0, 0, -1])
    assert r.direction_desire.tolist() == pytest.approx([0.3 * 0.75, 0.0])
    assert r.speed[0] == 3.0 and r.speed_desire[0] == pytest.approx(0.3 * 0.75)


def test_get_pushed_by_faster_neighbours_in_the_cone_behind(kernel):
    params = {"max_distance": 2.5, "fov_deg": 360.0, "push_angle_deg": 90.0, "weight_direction": 0.3,
              "weight_speed": 0.3}
    me = {"position": [[0, 0, 0]], "velocity": [[0, 0, 1]]}
    pushers = {"position": [[0, 0, -1], [0, 0, 1], [0, 0, -1.5], [1, 0, 0]],
               "velocity": [[0, 0, 3], [0, 0, 3], [0, 0, 0.5], [0, 0, 3]]}
    r = kernel("get_pushed", params, me, pushers)
    # only the first pushes: (3 − 1)/3 · (1 − 0/45°) · (1 − 1/2.5) = 0.4
    assert r.direction[0] == pytest.approx([0, 0, 1])
    assert r.speed[0] == pytest.approx(3.0)
    assert r.direction_desire[0] == pytest.approx(0.3 * 0.4)
    r = kernel("get_pushed", params, me, {"position": [[0, 0, -1]], "velocity": [[0, 0, 0.5]]})
    assert r.direction_desire[0] == 0.0


def test_avoid_sound_hears_only_a_sphere_that_has_reached_it(kernel):
    params = {"max_distance": 15.0, "fov_deg": 360.0, "max_speed": 7.0, "weight_direction": 0.7,
              "weight_speed": 0.7}
    me = {"position": [[0, 0, 0]]}
    early = kernel("avoid_sound", params, me, {"position": [[5, 0, 0]], "comps": {"loudness": 1.0, "sound_radius": 3.0}})
    heard = kernel("avoid_sound", params, me, {"position": [[5, 0, 0]], "comps": {"loudness": 1.0, "sound_radius": 9.0}})
    assert early.direction_desire[0] == 0.0
    assert heard.direction[0] == pytest.approx([-1, 0, 0])
    assert heard.direction_desire[0] == pytest.approx(0.7 * (1 - 5 / 15))
    assert heard.speed[0] == 7.0


def test_flee_memory_flees_a_remembered_threat_and_forgets_it(kernel):
    params = {"max_distance": 6.0, "fov_deg": 300.0, "max_speed": 5.0, "weight_direction": 0.8,
              "weight_speed": 0.7, "easing": "q4", "easing_power": 2.0}
    threat = {"threat_x": 0.0, "threat_y": 0.0, "threat_z": -3.0, "threat_level": 0.8}
    nobody = {"position": [[100, 0, 0]]}  # out of range: nothing visible
    remembered = kernel("flee_memory", params, {"position": [[0, 0, 0]], "comps": {**threat, "threat_memory": 0.5}},
                        nobody)
    assert remembered.direction[0] == pytest.approx([0, 0, 1])
    assert remembered.direction_desire[0] == pytest.approx(0.8 * (1 - 0.2 ** 2) * 0.5)
    forgotten = kernel("flee_memory", params, {"position": [[0, 0, 0]], "comps": {**threat, "threat_memory": 0.0}},
                       nobody)
    assert forgotten.direction_desire[0] == 0.0
    seen = kernel("flee_memory", params, {"position": [[0, 0, 0]], "comps": {**threat, "threat_memory": 0.0}},
                  {"position": [[0, 0, 3]]})
    flee = kernel("flee", params, {"position": [[0, 0, 0]]}, {"position": [[0, 0, 3]]})
    assert seen.direction_desire[0] == pytest.approx(flee.direction_desire[0])
    assert seen.direction_desire[0] > 0
    assert seen.direction[0] == pytest.approx(flee.direction[0])


def test_cruise_asks_for_the_states_target_speed(kernel):
    r = kernel("cruise", {"weight_speed": 0.4}, {"position": [[0, 0, 0]] * 2, "comps": {"target_speed": [3.0, -1.0]}})
    assert r.speed.tolist() == [3.0, 0.0] and r.speed_desire.tolist() == pytest.approx([0.4, 0.0])
    assert r.direction_desire.tolist() == [0.0, 0.0]


PREY = {
    "name": "memory", "dt": 1 / 30,
    "world": {"bounds_min": [-200, -50, -200], "bounds_max": [200, 50, 200]},
    "species": [
        {"name": "fish", "count": 2, "spawn": {"center": [0, 0, 0], "size": [0, 0, 0], "speed": [0, 0]},
         "mover": {"kind": "free", "max_speed": 0.001},
         "ecology": {},
         "groups": [{"query": {"targets": ["shark"], "max_distance": 6.0, "k": 2, "fov_deg": 300},
                     "behaviors": [{"kind": "flee_memory", "remember": 1.0},
                                   {"kind": "flee"}]}]},
        {"name": "shark", "count": 1, "spawn": {"center": [0, 0, 3], "size": [0, 0, 0], "speed": [0, 0]},
         "mover": {"kind": "free", "max_speed": 0.001}},
    ],
}


def test_fleeing_continues_for_the_remembered_time_after_the_threat_leaves_the_view(build):
    sim, eco = build(PREY)
    fish = sim.population("fish")
    fish.forward[:] = np.float32([0, 0, 1])
    uid = int(fish.uid[0])

    def desires():
        info = sim.inspect("fish", uid)
        return {b["kind"]: b["direction_desire"] for b in info["behaviors"]}

    sim.step(2)
    assert desires()["flee"] > 0 and desires()["flee_memory"] == pytest.approx(desires()["flee"])
    sim.population("shark").position[0] = np.float32([0, 0, 150])  # gone
    sim.step(1)
    d = desires()
    assert d["flee"] == 0.0  # plain flee forgets at once (thesis 12.2's complaint)
    assert d["flee_memory"] > 0.5 * 0.8 * 0.5
    sim.step(15)
    assert 0 < desires()["flee_memory"] < d["flee_memory"]  # fading
    sim.step(16)
    assert desires()["flee_memory"] == 0.0  # forgotten after one second


KERNELS = {
    "chase_food": dict(comps=("hunger", "chew", "mouth_x", "mouth_y", "mouth_z"), others=("food", "nutrition")),
    "avoid_when_eating": dict(comps=("chew",), others=()),
    "avoid_sound": dict(comps=(), others=("loudness", "sound_radius")),
    "get_pushed": dict(comps=(), others=()),
    "avoid_player": dict(comps=(), others=("still_time",)),
    "flee_memory": dict(comps=("threat_x", "threat_y", "threat_z", "threat_level", "threat_memory"), others=()),
}

coord = st.floats(-20, 20, allow_nan=False, width=32)
value = st.floats(-2, 20, allow_nan=False, width=32)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(sorted(KERNELS)), data=st.data(),
       n=st.integers(1, 6), m=st.integers(0, 6), r=st.floats(0.5, 30), w=st.floats(0, 1))
def test_no_nan_ever_and_desires_within_their_weights(kernel, name, data, n, m, r, w):
    spec = KERNELS[name]

    def points(k):
        return np.array(data.draw(st.lists(st.tuples(coord, coord, coord), min_size=k, max_size=k)),
                        np.float32).reshape(k, 3)

    def comps(names, k):
        return {c: np.array(data.draw(st.lists(value, min_size=k, max_size=k)), np.float32) for c in names}

    pos = points(n)
    if data.draw(st.booleans()):
        pos[:] = pos[0]  # everyone on the same spot
    agents = {"position": pos, "velocity": points(n), "forward": points(n), "comps": comps(spec["comps"], n)}
    others = {"position": points(m) if m else np.zeros((0, 3), np.float32), "velocity": points(m) if m else None,
              "comps": comps(spec["others"], m), "k": 4}
    if m == 0:
        others["velocity"] = np.zeros((0, 3), np.float32)
    params = {"max_distance": r, "fov_deg": 270.0, "weight_direction": w, "weight_speed": w}
    if name != "get_pushed":
        params["max_speed"] = 5.0
    out = kernel(name, params, agents, others)
    for arr in out:
        assert np.all(np.isfinite(arr))
    assert np.all((out.direction_desire >= 0) & (out.direction_desire <= w + 1e-6))
    assert np.all((out.speed_desire >= 0) & (out.speed_desire <= w + 1e-6))
    assert np.all(out.speed >= 0)
    length = np.linalg.norm(out.direction, axis=1)
    assert np.all((np.abs(length - 1) < 1e-4) | (length == 0))
