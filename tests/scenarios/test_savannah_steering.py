"""The savannah's steering formulas (seed 001, listings A.1, A.5–A.10), each against hand-computed values."""
import math

import numpy as np
import pytest

from starling import Simulation
from starling.config import validate_scenario
from starling.ecology.pack import PackConfig, attack_distance, attack_point, chase_target
from starling.motion.yaw import _yaw_range, turn_toward
from starling.steering.behaviors.savannah.goals import flee_strength, seek_strength


def test_seek_is_zero_inside_the_arrive_radius_and_grows_with_the_square_of_the_distance_up_to_the_cap():
    assert seek_strength(5.0, 100.0, 10.0, 5.0) == 0.0            # inside 10 m: arrived
    assert seek_strength(12.0, 100.0, 10.0, 5.0) == 5.0           # 100 · 144 capped at 5
    assert seek_strength(0.1, 100.0, 0.0, 5.0) == pytest.approx(1.0)   # 100 · 0.01
    assert seek_strength(0.2, 100.0, 0.0, 5.0) == pytest.approx(4.0)   # 100 · 0.04


def test_flee_falls_with_the_square_of_the_distance_below_the_cap():
    assert flee_strength(20.0, 1000.0, 5.0) == pytest.approx(2.5)      # 1000 / 400
    assert flee_strength(10.0, 1000.0, 5.0) == 5.0                     # 1000 / 100 = 10, capped
    assert flee_strength(100.0, 1000.0, 5.0) == pytest.approx(0.1)      # 1000 / 10000


def test_attack_points_lie_on_the_alphas_side_and_opposite_it():
    centre = (0.0, 0.0)
    alpha = (-30.0, 0.0)
    assert attack_point(centre, 16.0, alpha, alpha, is_alpha=True) == pytest.approx([-16.0, 0.0])
    assert attack_point(centre, 16.0, (5.0, 40.0), alpha, is_alpha=False) == pytest.approx([16.0, 0.0])
    # a 3-4-5 direction: the point is 16 m from the centre along it
    assert attack_point((1.0, 1.0), 16.0, (4.0, 5.0), alpha, is_alpha=True) == pytest.approx([10.6, 13.8])


def _pack(**kw):
    return PackConfig(prey="zebra", preparing_states=["stalking"], **kw)


def test_the_attack_distance_is_eight_radii_when_faithful_and_a_standoff_beyond_the_radius_by_default():
    assert attack_distance(2.0, _pack(faithful=True)) == 16.0            # the seed: 8 × 2
    assert attack_distance(18.0, _pack(faithful=True)) == 144.0          # a spread herd: 8 × 18
    assert attack_distance(2.0, _pack()) == 72.0                         # 2 + 70
    assert attack_distance(18.0, _pack()) == 88.0                        # 18 + 70: grows by the spread alone


def test_the_chase_keeps_its_prey_until_another_is_twice_as_close_and_leads_it():
    seen = np.array([[10.0, 0.0], [0.0, 12.0], [0.0, -30.0]])
    uid = np.array([7, 8, 9])
    vel = np.array([[0.0, 4.0], [3.0, 0.0], [0.0, 0.0]])
    me = np.array([0.0, 0.0])
    dist = np.hypot(*(seen - me).T)                                     # 10, 12 and 30 m
    # faithful: the nearest (uid 7, 10 m), where it is
    assert chase_target(seen, dist, uid, vel, 5.0, 8, _pack(faithful=True)) == (7, pytest.approx([10.0, 0.0]))
    # default: uid 8 (12 m) is kept, 7 is not closer than 0.5 × 12 = 6 m; aimed 12 / 6 = 2 s ahead,
    # capped at the 1.5 s lead: (0, 12) + (3, 0) · 1.5
    got_uid, aim = chase_target(seen, dist, uid, vel, 6.0, 8, _pack())
    assert got_uid == 8 and aim == pytest.approx([4.5, 12.0])
    # a zebra closer than half the kept one's distance takes over: 9 kept at 30 m, 7 at 10 m;
    # led 10 / 5 = 2 s, capped at 1.5: (10, 0) + (0, 4) · 1.5
    got_uid, aim = chase_target(seen, dist, uid, vel, 5.0, 9, _pack())
    assert got_uid == 7 and aim == pytest.approx([10.0, 6.0])
    # no prey kept yet (-1): the nearest; a slow lion leads by distance / max(speed, 1 m/s) = 10 / 1, capped
    got_uid, aim = chase_target(seen, dist, uid, vel, 0.0, -1, _pack(lead_time=0.5))
    assert got_uid == 7 and aim == pytest.approx([10.0, 2.0])


def test_the_yaw_turns_toward_the_velocity_by_at_most_the_rotation_limit():
    fx, fz = turn_toward(0.0, 1.0, 1.0, 0.0, math.radians(4.5))   # facing +z, moving +x: 4.5° of 90°
    assert (fx, fz) == pytest.approx((math.sin(math.radians(4.5)), math.cos(math.radians(4.5))))
    fx, fz = turn_toward(0.0, 1.0, -1.0, 0.0, math.radians(4.5))  # the other way round
    assert (fx, fz) == pytest.approx((-math.sin(math.radians(4.5)), math.cos(math.radians(4.5))))
    assert turn_toward(0.0, 1.0, 0.6, 0.8, 1.0) == pytest.approx((0.6, 0.8))   # within the limit: all the way


def _move(velocity, accel, dt=0.1, table=(7.0, 5.0, math.radians(45.0))):
    pos = np.zeros((1, 3), np.float32)
    vel = np.array([velocity], np.float32)
    fwd = np.array([[0.0, 0.0, 1.0]], np.float32)
    up = np.array([[0.0, 1.0, 0.0]], np.float32)
    desired = vel + np.array([accel], np.float32)      # the merger's v + a · 1 s
    empty = np.zeros(0, np.float32)
    _yaw_range(0, 1, pos, vel, fwd, up, desired, np.array([table], np.float64), 1.0, dt, empty, empty, empty)
    return pos[0], vel[0], fwd[0]


def test_the_yaw_mover_crops_the_acceleration_moves_with_the_old_velocity_and_clamps_the_speed():
    pos, vel, fwd = _move([0.0, 0.0, 0.0], [10.0, 3.0, 0.0])   # |a| = 10 on the ground, cropped to 5; y dropped
    assert pos == pytest.approx([0.0, 0.0, 0.0])                 # moved with the velocity before the step
    assert vel == pytest.approx([0.5, 0.0, 0.0])
    assert fwd == pytest.approx([math.sin(math.radians(4.5)), 0.0, math.cos(math.radians(4.5))], abs=1e-6)
    pos, vel, _ = _move([7.0, 0.0, 0.0], [5.0, 0.0, 0.0])        # 7.5 m/s clamped to 7
    assert pos == pytest.approx([0.7, 0.0, 0.0])
    assert vel == pytest.approx([7.0, 0.0, 0.0])


def _scene(zebras, lions, zebra_velocities=None, shapes=(), rays=(3, 90), faithful=False, extra_groups=()):
    """Zebras and lions placed by hand; every zebra behaviour in one pipeline (results read directly)."""
    data = {
        "name": "savannah steering", "seed": 1, "dt": 0.02,
        "world": {"bounds_min": [-100, -5, -100], "bounds_max": [100, 20, 100]},
        "species": [
            {"name": "zebra", "count": len(zebras), "spawn": {"center": [0, 0, 0], "size": [1, 0, 1]},
             "mover": {"kind": "yaw"}, "merger": {"kind": "acceleration_sum", "acceleration": 1.0},
             "groups": [{"query": {"targets": ["zebra"], "max_distance": 30, "k": 4},
                         "behaviors": [{"kind": "herd_separation", "factor": 0.7},
                                       {"kind": "herd_cohesion", "factor": 0.1},
                                       {"kind": "herd_velocity_matching", "factor": 0.2}]},
                        {"query": {"targets": ["lion"], "max_distance": 60, "k": 3},
                         "behaviors": [{"kind": "flee_centroid", "factor": 1.0}]}, *extra_groups],
             "ray_groups": [{"query": {"shape": "cone2d", "count": rays[0], "fov_deg": rays[1], "max_distance": 30,
                                       "layers": ["environment"]},
                             "behaviors": [{"kind": "avoid_obstacles_ahead", "factor": 2.0,
                                            "faithful": faithful}]}]},
            {"name": "lion", "count": len(lions), "spawn": {"center": [0, 0, 50], "size": [1, 0, 1]},
             "mover": {"kind": "yaw"}},
        ],
    }
    far = {"kind": "box", "center": [0, 0, -95], "half_extents": [1, 1, 1], "layer": "environment"}
    data["environment"] = {"shapes": list(shapes) or [far]}
    sim = Simulation(validate_scenario(data), record_debug=False)
    for name, points in (("zebra", zebras), ("lion", lions)):
        pop = sim.world.population(name)
        pop.position[: pop.n] = np.asarray(points, np.float32)
        pop.velocity[: pop.n] = 0.0
        pop.forward[: pop.n] = (0.0, 0.0, 1.0)
    if zebra_velocities is not None:
        sim.world.population("zebra").velocity[:] = np.asarray(zebra_velocities, np.float32)
    pipe = sim.pipelines[0]
    pipe.compute(sim.world, 0.0, 0.02)
    names = [slot.params.kind for slot in pipe.slots]
    r = pipe.results
    return {k: (r.direction[names.index(k), :len(zebras)].copy(), r.direction_desire[names.index(k), :len(zebras)].copy())
            for k in names}


def test_separation_cohesion_and_velocity_matching_as_the_seed_computes_them():
    got = _scene([[0, 0, 0], [4, 0, 0]], [[0, 0, 90]], zebra_velocities=[[0, 0, 0], [3, 0, 0]])
    d, w = got["herd_separation"]
    assert d[0] == pytest.approx([-1, 0, 0]) and w[0] == pytest.approx(0.7 * 20 / 16)       # 20/4², factor 0.7
    d, w = got["herd_cohesion"]
    assert d[0] == pytest.approx([1, 0, 0]) and w[0] == pytest.approx(0.1 * 0.1 * 4)        # 0.1 · 4 m, factor 0.1
    d, w = got["herd_velocity_matching"]
    assert d[0] == pytest.approx([1, 0, 0]) and w[0] == pytest.approx(0.2 * 5.0)           # (3 − 0)/0.1 capped at 5
    assert d[1] == pytest.approx([-1, 0, 0]) and w[1] == pytest.approx(0.2 * 5.0)
    assert got["flee_centroid"][1][0] == 0.0                                                  # the lion is 90 m away


def test_velocity_differences_under_one_metre_per_second_are_ignored():
    got = _scene([[0, 0, 0], [4, 0, 0]], [[0, 0, 90]], zebra_velocities=[[0, 0, 0], [0.9, 0, 0]])
    assert got["herd_velocity_matching"][1][0] == 0.0


def test_zebras_flee_the_centroid_of_the_lions_they_see():
    got = _scene([[0, 0, 0]], [[0, 0, 20], [0, 0, 40]])      # centroid 30 m north
    d, w = got["flee_centroid"]
    assert d[0] == pytest.approx([0, 0, -1]) and w[0] == pytest.approx(1000 / 900)


def test_obstacle_avoidance_seeks_twenty_metres_off_the_first_hit_of_the_forward_ray():
    box = {"kind": "box", "center": [0, 0, 10], "half_extents": [2, 2, 1], "layer": "environment"}
    got = _scene([[0, 0, 0]], [[0, 0, -90]], shapes=[box])
    d, w = got["avoid_obstacles_ahead"]
    # forward ray hits z = 9 with normal −z: target (0, 0, −11), 11 m away (beyond 10 m): full 5 m/s² × 2
    assert d[0] == pytest.approx([0, 0, -1], abs=1e-5) and w[0] == pytest.approx(10.0)


def test_the_nearest_hit_of_five_rays_decides_by_default_the_first_of_the_seeds_three_when_faithful():
    ahead = {"kind": "box", "center": [0, 0, 10], "half_extents": [2, 2, 1], "layer": "environment"}    # 9 m
    beside = {"kind": "box", "center": [6, 0, 0], "half_extents": [1, 2, 3], "layer": "environment"}   # 5 m, at 90°
    got = _scene([[0, 0, 0]], [[0, 0, -90]], shapes=[ahead, beside], rays=(5, 180))
    d, w = got["avoid_obstacles_ahead"]
    # the side ray hits x = 5 first: target (5, 0, 0) + 20 · (−1, 0, 0), 15 m away: full 5 m/s² × 2
    assert d[0] == pytest.approx([-1, 0, 0], abs=1e-5) and w[0] == pytest.approx(10.0)
    got = _scene([[0, 0, 0]], [[0, 0, -90]], shapes=[ahead, beside], rays=(5, 180), faithful=True)
    d, w = got["avoid_obstacles_ahead"]
    # the seed sees no ray beyond 45°: the forward ray's hit (z = 9) decides, target (0, 0, −11)
    assert d[0] == pytest.approx([0, 0, -1], abs=1e-5) and w[0] == pytest.approx(10.0)
    got = _scene([[0, 0, 0]], [[0, 0, -90]], shapes=[beside], rays=(5, 180), faithful=True)
    assert got["avoid_obstacles_ahead"][1][0] == 0.0                     # faithful: blind to its side


def test_a_zebra_far_from_its_herds_centre_regroups_and_a_compact_herd_feels_nothing():
    regroup = {"query": {"targets": ["zebra"], "max_distance": 150, "k": 8},
               "behaviors": [{"kind": "regroup", "factor": 1.0}]}
    # three zebras at x = 0, 2 and 100; each is pulled toward its herd mates' centroid
    zebras = [[0, 0, 0], [2, 0, 0], [100, 0, 0]]
    got = _scene(zebras, [[0, 0, -90]], extra_groups=[regroup])
    d, w = got["regroup"]
    assert d[2] == pytest.approx([-1, 0, 0], abs=1e-6) and w[2] == pytest.approx(5.0)      # 0.1 · (100 − 1) capped at 5
    assert d[1] == pytest.approx([1, 0, 0], abs=1e-6) and w[1] == pytest.approx(0.1 * 48)    # mates at 0 and 100: 48 m
    got = _scene([[0, 0, 0], [10, 0, 0], [0, 0, 12]], [[0, 0, -90]], extra_groups=[regroup])
    assert (got["regroup"][1] == 0.0).all()                              # within 30 m of the centre: nothing
    faithful = {**regroup, "behaviors": [{"kind": "regroup", "factor": 1.0, "faithful": True}]}
    got = _scene(zebras, [[0, 0, -90]], extra_groups=[faithful])
    assert (got["regroup"][1] == 0.0).all()                              # the seed never regroups


def test_a_drawn_top_speed_moves_each_animal_as_its_own_number_would():
    from starling.motion.yaw import YawMover, YawMoverParams

    rng = np.random.default_rng(3)
    n = 12
    mover = YawMover(YawMoverParams(max_speed={"uniform": [3.0, 7.0]}))
    speeds = rng.uniform(3.0, 7.0, n)
    state = [np.zeros((n, 3), np.float32), rng.normal(0, 3, (n, 3)).astype(np.float32),
             np.tile(np.float32([0, 0, 1]), (n, 1)), np.tile(np.float32([0, 1, 0]), (n, 1)),
             rng.normal(0, 9, (n, 3)).astype(np.float32)]
    state[1][:, 1] = 0.0
    together = [a.copy() for a in state]
    mover.move(*together, 0.1, drawn={"max_speed": speeds})
    for i in range(n):
        alone = [a[i:i + 1].copy() for a in state]
        YawMover(YawMoverParams(max_speed=float(speeds[i]))).move(*alone, 0.1)
        for a, b in zip(together, alone):
            assert a[i] == pytest.approx(b[0], abs=1e-5)
        assert np.hypot(together[1][i, 0], together[1][i, 2]) <= speeds[i] + 1e-5
