"""Sounds scatter a flock; the player moves, fires (first animal on the ray dies) and throws apples."""
import copy

import numpy as np
import pytest

import starling
from starling.simulation import PlayerUnavailable

FLOCK = {
    "name": "gunshot", "dt": 1 / 30, "seed": 4,
    "world": {"bounds_min": [-150, 0, -150], "bounds_max": [150, 120, 150]},
    "ecology": {"sounds": {"speed": 60.0, "range": 40.0, "lifetime": 1.5}},
    "species": [{
        "name": "bird", "count": 300,
        "spawn": {"shape": "sphere", "center": [0, 45, 0], "radius": 15.0, "speed": [3, 5]},
        "mover": {"kind": "free", "max_speed": 7.5, "speed_up_acceleration": 8.0, "slow_down_acceleration": 8.0,
                  "lateral_acceleration": 8.0},
        "groups": [
            {"label": "flocking", "query": {"targets": ["bird"], "max_distance": 5.0, "k": 7, "fov_deg": 270},
             "behaviors": [{"kind": "cohesion", "weight_direction": 0.8},
                           {"kind": "alignment", "priority": 1, "weight_direction": 0.8, "weight_speed": 0.3},
                           {"kind": "separation", "priority": 4, "weight_direction": 0.6, "max_distance": 2.0}]},
            # table 11.10
            {"label": "sounds", "query": {"targets": ["sound"], "max_distance": 15.0, "k": 4, "fov_deg": 360},
             "behaviors": [{"kind": "avoid_sound", "priority": 4, "weight_direction": 0.7, "weight_speed": 0.7}]},
        ],
        "behaviors": [
            {"kind": "multi_homing", "priority": 5, "weight_direction": 0.8,
             "homes": [{"center": [0, 45, 0], "min_radius": 35.0, "max_radius": 400.0}]},
            {"kind": "wandering", "weight_direction": 0.02, "weight_speed": 0.1, "min_speed": 4.0, "max_speed": 5.0},
        ],
    }],
}


def test_a_gunshot_near_a_flock_makes_the_birds_within_its_radius_speed_up_away_within_a_second(build):
    quiet, _ = build(FLOCK)
    loud, eco = build(FLOCK)
    quiet.step(30)
    loud.step(30)
    birds = loud.population("bird")
    shot = birds.position.mean(axis=0) + np.float32([8.0, 0.0, 0.0])  # at the flock's edge
    eco.fire(shot, (1.0, 0.0, 0.0))  # fired outward (it may drop a straggler)
    near = birds.uid[np.linalg.norm(birds.position - shot, axis=1) < 12.0]
    assert near.size > 30
    quiet.step(30)  # one second
    loud.step(30)

    def radial_and_speed(sim):
        b = sim.population("bird")
        rows = np.flatnonzero(np.isin(b.uid, near))
        rel = b.position[rows] - shot
        away = rel / np.linalg.norm(rel, axis=1, keepdims=True)
        return np.einsum("ij,ij->i", b.velocity[rows], away).mean(), np.linalg.norm(b.velocity[rows], axis=1).mean()

    q_radial, q_speed = radial_and_speed(quiet)
    l_radial, l_speed = radial_and_speed(loud)
    assert l_speed > q_speed + 1.0, (l_speed, q_speed)          # they sped up (measured: 3.6 -> 5.9 m/s)
    assert l_radial > q_radial + 2.0, (l_radial, q_radial)      # away from the shot (0.4 -> 5.7 m/s)


def test_sounds_grow_and_expire(build):
    sim, eco = build({**FLOCK, "species": [{**FLOCK["species"][0], "count": 5}]})
    eco.make_sound((0, 10, 0), loudness=0.5, lifetime=0.5)
    sim.step(1)
    sounds = sim.population("sound")
    assert sounds.n == 1 and sounds.component("sound_radius")[0] == 0.0
    sim.step(1)
    assert sounds.component("sound_radius")[0] == pytest.approx(60.0 / 30)
    sim.step(10)  # capped at range x loudness = 20 m
    assert sounds.component("sound_radius")[0] == pytest.approx(20.0)
    sim.step(5)
    assert sounds.n == 0
    with pytest.raises(ValueError, match="lifetime"):
        eco.make_sound((0, 0, 0), lifetime=-1.0)


LINE = {
    "name": "range", "dt": 1 / 30,
    "world": {"bounds_min": [-100, 0, -100], "bounds_max": [100, 50, 100]},
    "ecology": {"ground_height": 0.0, "player": {"position": [0, 0, -10], "eye_height": 1.5,
                                                 "gun": {"range": 50.0}}},
    "species": [
        {"name": "sheep", "count": 3, "spawn": {"center": [0, 1.5, 0], "size": [0, 0, 0], "speed": [0, 0]},
         "mover": {"kind": "free", "max_speed": 0.01},
         "ecology": {"body_radius": 0.5, "carcass": {"tag": "dead_sheep"}}},
    ],
}


def test_the_gun_kills_the_first_animal_on_the_ray_with_sounds_at_muzzle_and_impact(build):
    sim, eco = build(LINE)
    sheep = sim.population("sheep")
    sheep.position[:] = np.float32([[0.3, 1.5, 5], [0, 1.5, 2], [0, 1.5, 20]])  # in a row along +z
    uids = sheep.uid.copy()
    assert hasattr(sim, "fire") and hasattr(sim, "throw_apple") and hasattr(sim, "move_player")
    out = sim.fire((0, 1.5, -10), (0, 0, 1))
    assert out["hit"] == {"species": "sheep", "uid": int(uids[1])}  # the nearest, not the first row
    assert out["impact"] == pytest.approx([0, 1.5, 1.5])  # where the ray enters its body
    sim.step(1)
    assert sorted(sheep.uid.tolist()) == sorted([int(uids[0]), int(uids[2])])
    sounds = sim.population("sound")
    assert sounds.n == 2
    assert sorted(sounds.component("loudness").tolist()) == pytest.approx([0.6, 1.0])  # impact, muzzle
    carcass = sim.population("carcass")
    assert carcass.n == 1 and carcass.tags[0] & sim.world.tag_bit("dead_sheep")
    assert sim.species_summary("sheep")["deaths"] == 1
    sim.step(30)
    assert carcass.position[0, 1] == pytest.approx(0.0)  # it fell to the ground
    # a miss that goes down stops at the ground; out of range it stops nowhere
    out = sim.fire((0, 1.5, -10), (1, -0.15, 0))
    assert out["hit"] is None and out["impact"][1] == pytest.approx(0.0, abs=1e-6)
    assert sim.fire((0, 1.5, -10), (0, 1, 0)) == {"hit": None, "impact": None}
    with pytest.raises(ValueError, match="direction"):
        sim.fire((0, 1.5, -10), (0, 0, 0))


def test_the_player_moves_stands_still_and_throws(build):
    sim, eco = build(LINE)
    player = sim.population("player")
    assert player.n == 1 and player.position[0] == pytest.approx([0, 0, -10])
    sim.step(30)
    assert player.component("still_time")[0] == pytest.approx(1.0)
    sim.move_player((1.0, 0.0, -10.0), (1.0, 0.0, 0.0))
    sim.step(1)
    assert player.component("still_time")[0] == 0.0
    assert player.forward[0] == pytest.approx([1, 0, 0])
    sim.throw_apple((1.0, 1.5, -10.0), (0.0, 3.0, 4.0))
    sim.step(60)
    apple = sim.population("apple")
    assert apple.n == 1 and apple.position[0, 1] == pytest.approx(0.0)  # landed
    assert apple.position[0, 2] > -10.0 + 2.0


def test_avoid_player_lets_a_still_player_come_closer(kernel):
    params = {"max_distance": 10.0, "fov_deg": 360.0, "max_speed": 4.0, "still_radius_factor": 0.5,
              "shrink_time": 5.0, "weight_direction": 0.5, "weight_speed": 0.5}
    animals = {"position": [[0, 0, 7]]}
    walking = kernel("avoid_player", params, animals, {"position": [[0, 0, 0]], "comps": {"still_time": 0.0}})
    standing = kernel("avoid_player", params, animals, {"position": [[0, 0, 0]], "comps": {"still_time": 10.0}})
    assert walking.direction[0] == pytest.approx([0, 0, 1])
    assert 0 < walking.direction_desire[0] <= 0.5
    assert standing.direction_desire[0] == 0.0  # 7 m is outside the 5 m radius of a still player


def test_scenarios_without_a_player_say_so(build):
    flock = starling.load_scenario("flock", overrides=["species.bird.count=20"])
    assert not hasattr(flock, "fire")
    with pytest.raises(ValueError, match="^fire is not available in this scenario$"):
        flock.fire((0, 0, 0), (0, 0, 1))
    with pytest.raises(PlayerUnavailable, match="throw_apple is not available"):
        flock.throw_apple((0, 0, 0), (0, 0, 0))
    data = copy.deepcopy(LINE)
    del data["ecology"]["player"]
    sim, eco = build(data)
    with pytest.raises(ValueError, match="move_player is not available"):
        sim.move_player((0, 0, 0))


def test_walls_of_the_environment_stop_bullets(build):
    pytest.importorskip("starling.environment.system")
    data = copy.deepcopy(LINE)
    data["environment"] = {"shapes": [{"kind": "box", "center": [0, 1.5, -3], "half_extents": [2, 2, 0.2],
                                       "layer": "environment"}]}
    sim, eco = build(data)
    sheep = sim.population("sheep")
    sheep.position[:] = np.float32([[0, 1.5, 0], [0, 1.5, 5], [10, 1.5, 0]])
    out = sim.fire((0, 1.5, -10), (0, 0, 1))
    assert out["hit"] is None
    assert out["impact"] == pytest.approx([0, 1.5, -3.2], abs=1e-4)  # the wall's near face
    out = sim.fire((10, 1.5, -10), (0, 0, 1))  # beside the wall
    assert out["hit"] == {"species": "sheep", "uid": int(sheep.uid[2])}
