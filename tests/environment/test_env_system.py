"""The environment in the step: ray groups, collisions, media, start positions, the scene (seed 000, 7.1–7.2, 9.5)."""
import numpy as np
import pytest

import starling
from starling.config import ConfigError, validate_scenario
from starling.server import protocol as P

WALLS = [  # two walls meeting at a right angle: the faces x = 1 and z = 1
    {"kind": "box", "min_corner": [1.0, -5.0, -10.0], "max_corner": [1.5, 5.0, 10.0]},
    {"kind": "box", "min_corner": [-10.0, -5.0, 1.0], "max_corner": [10.0, 5.0, 1.5]},
]
POND = {  # a basin: flat bottom at y = -6, banks up to dry ground at y = 1 around 18 m from the centre
    "terrain": {"size": [60.0, 60.0], "resolution": [121, 121], "base_height": 1.0,
                "pond": {"center": [0.0, 0.0], "bottom_radius": 10.0, "bank_width": 8.0, "depth": 7.0}},
    "water": [{"surface_height": 0.0, "fill_pond": True}],
}


def one_species(environment, **species):
    sp = {"name": "a", "count": 1, "spawn": {"shape": "box", "center": [0, 0, 0], "size": [0, 0, 0], "speed": [0, 0]}}
    sp.update(species)
    return {"name": "t", "seed": 3, "world": {"bounds_min": [-40, -20, -40], "bounds_max": [40, 20, 40]},
            "environment": environment, "species": [sp]}


def pushed_toward(home, speed, weight=1.0):
    """Behaviours that drive an animal at ``speed`` toward ``home`` whatever is in the way."""
    return [{"kind": "homing", "home": list(home), "min_radius": 0.0, "max_radius": 1.0, "weight_direction": weight,
             "priority": 9},
            {"kind": "go_forward", "speed": speed, "weight_direction": 0.0, "weight_speed": 1.0, "priority": 9}]


FAST = {"kind": "free", "max_speed": 40.0, "speed_up_acceleration": 200.0, "slow_down_acceleration": 200.0,
        "lateral_acceleration": 200.0, "banking": 0.0}


# ---------------------------------------------------------------------------------------------- collisions

def test_an_animal_driven_into_a_corner_slides_into_it_and_rests_without_jitter_or_tunnelling():
    data = one_species({"shapes": WALLS}, spawn={"shape": "box", "center": [-6, 0, -3], "size": [0, 0, 0],
                                                 "speed": [0, 0]},
                       body={"radius": 0.5}, mover=FAST, behaviors=pushed_toward((6.0, 0.0, 6.0), 30.0))
    sim = starling.Simulation(validate_scenario(data))
    track = []
    for _ in range(150):
        sim.step()
        track.append(sim.population("a").position[0].astype(np.float64))
        assert sim.health()["inside_solid"] == 0
    track = np.array(track)
    # 1 m per step toward the walls, never through them: the centre stays a radius in front of both faces
    assert track[:, 0].max() <= 0.5 + 1e-3 and track[:, 2].max() <= 0.5 + 1e-3
    np.testing.assert_allclose(track[-1], (0.5, 0.0, 0.5), atol=0.02)
    # at rest in the corner: no bouncing from one wall to the other
    assert np.abs(np.diff(track[-60:], axis=0)).max() < 1e-4


def test_a_walker_is_stopped_by_an_obstacle_taller_than_its_step():
    env = {"terrain": {"size": [60, 60], "resolution": [61, 61]},
           "shapes": [{"kind": "box", "min_corner": [3.0, -1.0, -10.0], "max_corner": [5.0, 1.2, 10.0]}]}
    data = one_species(env, spawn={"shape": "box", "center": [-5, 3, 0], "size": [0, 0, 0], "speed": [0, 0]},
                       body={"radius": 0.4}, mover={"kind": "ground", "max_speed": 4.0, "center_height": 0.5},
                       behaviors=pushed_toward((20.0, 0.5, 0.0), 4.0))
    sim = starling.Simulation(validate_scenario(data))
    for _ in range(120):
        sim.step()
    p = sim.population("a").position[0]
    assert p[0] == pytest.approx(3.0 - 0.4 - 0.01, abs=0.02)  # resting against the face x = 3
    assert p[1] == pytest.approx(0.5, abs=1e-3)
    assert sim.health() == {"nan": 0, "inside_solid": 0, "out_of_medium": 0}
    # the viewer's inspector shows the walking state (the ground mover's state_array, not its snapshot method)
    info = sim.inspect("a", int(sim.population("a").uid[0]))
    assert info["ground_state"] == "grounded" and info["medium"] == "ground"


# ---------------------------------------------------------------------------------------------- media

def test_fish_pushed_toward_the_shore_never_leave_the_water():
    data = one_species(POND, count=40, spawn={"shape": "sphere", "center": [0, -3, 0], "radius": 5},
                       body={"radius": 0.3, "medium": "water"}, mover={"kind": "free", "max_speed": 6.0},
                       behaviors=pushed_toward((40.0, 4.0, 10.0), 6.0))
    sim = starling.Simulation(validate_scenario(data))
    for _ in range(20):
        sim.step(15)
        assert sim.health()["out_of_medium"] == 0 and sim.health()["inside_solid"] == 0
    fish = sim.population("a").position
    assert fish[:, 1].max() <= -0.3 + 1e-4  # a body radius under the surface
    # all up against the bank, wedged between it and the surface
    assert np.hypot(fish[:, 0], fish[:, 2]).min() > 15.0


def test_fish_at_the_edge_of_a_water_region_are_held_in_it():
    # water over a rectangle of a deep floor: nothing solid marks the edge, the medium does
    env = {"shapes": [{"kind": "plane", "point": [0, -8, 0]}],
           "water": [{"surface_height": 0.0, "rectangle": [-10.0, -10.0, 10.0, 10.0]}]}
    data = one_species(env, count=20, spawn={"shape": "box", "center": [0, -4, 0], "size": [6, 4, 6]},
                       body={"radius": 0.3, "medium": "water"}, mover={"kind": "free", "max_speed": 6.0},
                       behaviors=pushed_toward((40.0, -4.0, 3.0), 6.0))
    sim = starling.Simulation(validate_scenario(data))
    system = next(s for s in sim.systems if s.name == "environment")
    for _ in range(10):
        sim.step(15)
        assert sim.health()["out_of_medium"] == 0
    fish = sim.population("a").position
    assert int(system.held[0]) > 0
    assert fish[:, 0].max() <= 10.0 and fish[:, 0].min() > 8.5


def test_fliers_never_go_under_the_ground_and_walkers_never_below_the_terrain():
    env = {"terrain": {"size": [60, 60], "resolution": [61, 61],
                       "hills": [{"center": [0.0, 0.0], "radius": 20.0, "height": 6.0}]}}
    data = one_species(env, count=30, spawn={"shape": "box", "center": [0, 12, 0], "size": [20, 2, 20]},
                       mover=FAST, behaviors=pushed_toward((0.0, -30.0, 0.0), 20.0))
    data["species"].append({"name": "b", "count": 30, "mover": {"kind": "ground", "max_speed": 5.0},
                            "spawn": {"shape": "box", "center": [0, 0, 0], "size": [30, 0, 30]},
                            "behaviors": pushed_toward((0.0, -30.0, 0.0), 5.0)})
    sim = starling.Simulation(validate_scenario(data))
    for _ in range(10):
        sim.step(10)
        assert sim.health() == {"nan": 0, "inside_solid": 0, "out_of_medium": 0}
    env_ = sim.environment
    for name in ("a", "b"):
        p = sim.population(name).position
        assert (p[:, 1] >= env_.height_at(p[:, 0], p[:, 2]) - 1e-3).all()


def test_animals_start_in_valid_places_whatever_their_spawn_region():
    env = dict(POND, scatter=[{"kind": "rocks", "count": 40, "seed": 2, "region": [-25, -25, 25, 25],
                               "avoid_water": False, "size_range": [0.8, 1.6], "min_spacing": 2.0}])
    data = one_species(env, count=200, spawn={"shape": "sphere", "center": [0, 0, 0], "radius": 14},
                       body={"radius": 0.3, "medium": "water"})
    data["species"].append({"name": "w", "count": 200, "mover": {"kind": "ground", "center_height": 0.6},
                            "body": {"radius": 0.5}, "spawn": {"shape": "box", "center": [0, 15, 0],
                                                              "size": [56, 4, 56]}})
    sim = starling.Simulation(validate_scenario(data))
    assert sim.health() == {"nan": 0, "inside_solid": 0, "out_of_medium": 0}
    env_ = sim.environment
    fish = sim.population("a").position
    assert (fish[:, 1] <= -0.3).all() and env_.in_water(fish).all()
    walkers = sim.population("w").position
    assert not env_.in_water(walkers).any()
    assert not env_.is_inside_solid(walkers, 0.5, ["environment"]).any()  # clear of every rock
    # standing on the terrain, 0.6 m under the centre
    np.testing.assert_allclose(walkers[:, 1] - env_.height_at(walkers[:, 0], walkers[:, 2]), 0.6, atol=1e-4)


def test_a_spawn_region_without_room_for_the_medium_is_one_clear_error():
    data = one_species(POND, count=5, spawn={"shape": "box", "center": [25, 3, 25], "size": [2, 1, 2]},
                       body={"medium": "water"})
    with pytest.raises(ConfigError, match=r"species.a\.spawn: cannot place 5 of 5 'a' validly"):
        starling.Simulation(validate_scenario(data))


# ---------------------------------------------------------------------------------------------- ray groups

def test_ray_groups_cast_from_the_step_start_state_and_hand_hits_to_their_behaviours():
    data = one_species({"shapes": WALLS}, count=1, spawn={"shape": "box", "center": [-1, 0, 0], "size": [0, 0, 0],
                                                          "speed": [1, 1]},
                       mover={"kind": "free", "max_speed": 2.0},
                       ray_groups=[{"label": "eyes",
                                    "query": {"shape": "single", "max_distance": 5.0, "direction": [1, 0, 0],
                                              "world_space": True, "layers": ["environment"]},
                                    "behaviors": [{"kind": "environment_avoidance", "fov_deg": 360.0}]}])
    sim = starling.Simulation(validate_scenario(data))
    start = sim.population("a").position.copy()
    sim.step()
    view = sim.pipelines[0].ray_groups[0].view
    assert view.hit.shape == (1, 1) and view.normal.shape == (1, 1, 3) and view.direction.shape == (1, 1, 3)
    assert bool(view.hit[0, 0]) and int(view.layer[0, 0]) == 3
    assert float(view.distance[0, 0]) == pytest.approx(1.0 - start[0, 0], abs=1e-5)  # from where the step began
    np.testing.assert_allclose(view.normal[0, 0], (-1, 0, 0), atol=1e-6)
    info = sim.inspect("a", int(sim.population("a").uid[0]))
    assert info["rays"][0]["group"] == "eyes" and info["rays"][0]["hit"]
    np.testing.assert_allclose(info["rays"][0]["origin"], start[0])  # cast from the step-start snapshot
    assert not np.allclose(sim.population("a").position[0], start[0])
    avoid = next(b for b in info["behaviors"] if b["kind"] == "environment_avoidance")
    np.testing.assert_allclose(avoid["direction"], (-1, 0, 0), atol=1e-6)
    assert avoid["direction_desire"] > 0


@pytest.mark.parametrize("species, path, message", [
    ({"ray_groups": [{"query": {"layers": ["terrain", "lava"]}}]}, "species.a.ray_groups.0.query.layers.1",
     "unknown layer 'lava'"),
    ({"ray_groups": [{"query": {"max_distance": 2, "cone": 3}}]}, "species.a.ray_groups.0.query.cone",
     "unknown field"),
    ({"ray_groups": [{"behaviors": [{"kind": "avoid_ground", "weight_direction": 2}]}]},
     "species.a.ray_groups.0.behaviors.0.avoid_ground.weight_direction", "less than or equal to 1"),
    ({"ray_behaviors": []}, "species.a.ray_behaviors", "unknown field"),
    ({"body": {"collide_with": ["rock"]}}, "species.a.body.collide_with.0", "unknown layer 'rock'"),
    ({"mover": {"kind": "ground", "ground_layers": ["mud"]}}, "species.a.mover.ground_layers.0",
     "unknown layer 'mud'"),
])
def test_bad_ray_groups_and_bodies_name_the_field(species, path, message):
    with pytest.raises(ConfigError) as err:
        validate_scenario(one_species({"shapes": WALLS}, **species))
    assert any(p.path == path and message in p.message for p in err.value.problems), err.value.format()


@pytest.mark.parametrize("species, path", [
    ({"ray_groups": [{"behaviors": [{"kind": "avoid_ground"}]}]}, "species.a.ray_groups.0"),
    ({"mover": {"kind": "ground"}}, "species.a.mover"),
    ({"body": {"radius": 0.4}}, "species.a.body"),
])
def test_what_needs_the_environment_says_so_without_one(species, path):
    data = one_species(None, **species)
    del data["environment"]
    with pytest.raises(ConfigError) as err:
        validate_scenario(data)
    assert [p.path for p in err.value.problems] == [path]
    assert "[environment]" in err.value.problems[0].message


# ---------------------------------------------------------------------------------------------- the scene

def test_the_scene_describes_the_environment_in_the_viewer_protocol():
    env = dict(POND, shapes=[
        {"kind": "box", "center": [20, 2, 20], "half_extents": [1, 2, 3], "yaw_pitch_roll_deg": [30, 10, 5]},
        {"kind": "capsule", "base": [-20, 1, 20], "height": 2, "radius": 0.5},
        {"kind": "cylinder", "base": [-20, 1, -20], "axis": [1, 1, 0], "height": 3, "radius": 0.4},
    ])
    sim = starling.Simulation(validate_scenario(one_species(env, body={"medium": "water"})))
    scene = sim.scene()["environment"]
    assert sim.describe_environment() == scene
    model = P.Environment.model_validate(scene)
    t = model.terrain
    assert t.resolution == (121, 121) and len(t.heights) == 121 * 121
    assert t.origin == (-30.0, -30.0) and t.size == (60.0, 60.0)
    assert min(t.heights) == pytest.approx(-6.0) and max(t.heights) == pytest.approx(1.0)
    assert model.water.level == 0.0 and model.water.bounds_min == (-18.0, -18.0)
    shapes = sorted(o.shape for o in model.obstacles)
    assert shapes == ["box", "cylinder", "cylinder", "sphere", "sphere"]  # the capsule: a cylinder and two spheres
    box = next(o for o in model.obstacles if o.shape == "box")
    assert box.size == (2.0, 4.0, 6.0)
    # three.js applies rotation_deg as Euler XYZ: it must rebuild the box's rotation (yaw, pitch, roll)
    from scipy.spatial.transform import Rotation

    from starling.environment.rotations import rotation_matrix
    np.testing.assert_allclose(Rotation.from_euler("XYZ", box.rotation_deg, degrees=True).as_matrix(),
                               rotation_matrix((30, 10, 5), None), atol=1e-5)
    tilted = next(o for o in model.obstacles if o.shape == "cylinder" and o.rotation_deg != (0.0, 0.0, 0.0))
    axis = Rotation.from_euler("XYZ", tilted.rotation_deg, degrees=True).apply([0.0, 1.0, 0.0])
    np.testing.assert_allclose(axis, np.array([1.0, 1.0, 0.0]) / np.sqrt(2.0), atol=1e-6)


def test_fliers_are_lifted_above_the_ground_and_those_above_its_highest_point_are_left_alone():
    # the air medium's kernel skips the terrain lookup above the highest point plus the body radius
    # (a bird over the meadow): positions and velocities must be what the rule gives everywhere
    from starling.environment import Environment
    from starling.environment.builders import pasture_config
    from starling.environment.system import AIR, _keep_in_medium

    env = Environment.from_config(pasture_config(size=64, resolution=33, obstacles=0, seed=5))
    a = env.arrays
    top = float(a.ter_f[6])
    radius = 0.4
    rng = np.random.default_rng(8)
    n = 3000
    xz = rng.uniform(-31, 31, (n, 2))
    j, i = np.unravel_index(np.argmax(a.ter_h), a.ter_h.shape)
    xz[:300] = [a.ter_f[1] + i * a.ter_f[3], a.ter_f[2] + j * a.ter_f[4]]  # over the highest vertex
    y = np.concatenate([top + radius + np.linspace(-0.01, 0.01, 300), rng.uniform(top - 10, top + 5, n - 300)])
    pos = np.column_stack([xz[:, 0], y, xz[:, 1]]).astype(np.float32)
    vel = rng.normal(size=(n, 3)).astype(np.float32)
    ground = env.height_at(xz[:, 0].astype(np.float32), xz[:, 1].astype(np.float32)).astype(np.float64)
    below = pos[:, 1].astype(np.float64) < ground + radius
    want_pos, want_vel = pos.copy(), vel.copy()
    want_pos[below, 1] = (ground[below] + radius).astype(np.float32)
    want_vel[below & (vel[:, 1] < 0), 1] = 0.0
    held = np.zeros(1, np.int64)
    _keep_in_medium(AIR, pos, vel, pos.copy(), radius, 0.0, a.ter_h, a.ter_f, a.w_f, a.w_i, a.w_poly, held)
    assert below[:300].any() and not below[:300].all() and below[300:].any()
    np.testing.assert_array_equal(pos, want_pos)
    np.testing.assert_array_equal(vel, want_vel)
    assert held[0] == 0
