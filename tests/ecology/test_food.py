"""Food: a hungry fish reaches an apple and bites it; sharks catch fish; carcasses and apples fall or float."""
import numpy as np
import pytest

DT = 1 / 30

POND = {
    "name": "bite",
    "dt": DT,
    "world": {"bounds_min": [-50, -10, -50], "bounds_max": [50, 10, 50]},
    "ecology": {"ground_height": -2.0},
    "species": [{
        "name": "fish", "count": 1,
        "spawn": {"center": [0, -2, 0], "size": [0, 0, 0], "speed": [0.5, 0.5]},
        "mover": {"kind": "free", "max_speed": 3.0, "banking": 0.0},
        "ecology": {
            "hunger": {"start": 1.0, "rate": 0.0, "satiation": 1.0},
            "mouth": {"offset": [0, 0, 0.2], "reach": 0.3},
            "eating": {"food": ["apple"], "bite": 0.25, "chew_time": 1.5},
        },
        "groups": [{"label": "food", "query": {"targets": ["apple"], "max_distance": 20.0, "k": 2, "fov_deg": 360},
                    "behaviors": [{"kind": "chase_food", "weight_direction": 1.0, "weight_speed": 1.0,
                                   "min_speed": 1.0, "max_speed": 1.0}]}],
    }],
}


def test_a_hungry_fish_reaches_the_apple_bites_it_and_the_apple_shrinks(build):
    sim, eco = build(POND)
    eco.throw_apple((4.0, -2.0, 3.0), (0.0, 0.0, 0.0))  # dropped on the bottom, 5 m away
    fish = sim.population("fish")
    apples = sim.population("apple")
    for _ in range(600):
        sim.step()
        if eco.counters["fish"]["eaten"]:
            break
    assert eco.counters["fish"]["eaten"] == 1, "the fish must reach the apple within 20 s"
    mouth = np.array([fish.component(c)[0] for c in ("mouth_x", "mouth_y", "mouth_z")])
    assert np.linalg.norm(mouth - apples.position[0]) <= 0.3 + 0.05  # it bit with its mouth
    # one bite of 0.25 from an apple of 1.0 (nutrition 1, satiation 1, no hunger growth)
    assert apples.component("food")[0] == pytest.approx(0.75)
    assert fish.component("hunger")[0] == pytest.approx(0.75)
    assert fish.component("chew")[0] == pytest.approx(1.5)
    assert fish.component("event_bit")[0] == 1.0
    # chewing: no new bite for 1.5 s, then bite after bite until the apple is gone
    sim.step(44)
    assert eco.counters["fish"]["eaten"] == 1
    for _ in range(400):
        sim.step()
        if apples.n == 0:
            break
    assert apples.n == 0, "an eaten-up apple disappears"
    assert eco.counters["fish"]["eaten"] == 4
    assert fish.component("hunger")[0] == pytest.approx(0.0)
    assert eco.counters["fish"]["deaths"] == 0  # an eaten apple is not a death


def test_a_fed_fish_does_not_chase(build, kernel):
    r = kernel("chase_food", {"max_distance": 10.0, "fov_deg": 360.0, "max_speed": 2.0},
               agents={"position": [[0, 0, 0]] * 3,
                       "comps": {"hunger": [1.0, 0.5, 0.0], "chew": [0, 0, 0], "mouth_x": 0, "mouth_y": 0,
                                 "mouth_z": 0}},
               others={"position": [[0, 0, 5]], "comps": {"food": 1.0, "nutrition": 1.0}})
    assert r.direction_desire[1] == pytest.approx(0.5 * r.direction_desire[0])  # hunger-weighted
    assert r.direction_desire[2] == 0.0


SHARKS = {
    "name": "catch",
    "dt": DT,
    "world": {"bounds_min": [-50, -10, -50], "bounds_max": [50, 10, 50]},
    "ecology": {"water_level": 0.0, "ground_height": -10.0},
    "species": [
        {"name": "fish", "count": 1, "spawn": {"center": [0, -5, 4], "size": [0, 0, 0], "speed": [0, 0]},
         "mover": {"kind": "free", "max_speed": 0.1},
         "ecology": {"food": {"amount": 1.0, "nutrition": 2.0},
                     "carcass": {"tag": "dead_fish", "buoyancy": "float"}}},
        {"name": "shark", "count": 1, "spawn": {"center": [0, -5, 0], "size": [0, 0, 0], "speed": [0, 0]},
         "mover": {"kind": "free", "max_speed": 4.0, "banking": 0.0},
         "ecology": {"hunger": {"start": 0.9, "rate": 0.0, "satiation": 0.25},
                     "mouth": {"offset": [0, 0, 1.0], "reach": 0.5},
                     "eating": {"prey": ["fish"], "bite": 0.4, "chew_time": 3.0}},
         "groups": [{"query": {"targets": ["fish"], "max_distance": 15.0, "k": 1, "fov_deg": 360},
                     "behaviors": [{"kind": "chase_food", "weight_direction": 1.0, "weight_speed": 1.0,
                                    "min_speed": 2.0, "max_speed": 2.0}]}]},
    ],
}


def test_a_shark_catches_a_fish_whose_leftovers_float_up_as_a_carcass(build):
    sim, eco = build(SHARKS)
    for _ in range(120):
        sim.step()
        if eco.counters["shark"]["caught"]:
            break
    assert eco.counters["shark"] == {"deaths": 0, "eaten": 1, "caught": 1}
    assert eco.counters["fish"]["deaths"] == 1
    assert sim.population("fish").n == 0
    shark = sim.population("shark")
    # a bite of 0.4 of a fish worth 2 per unit at satiation 0.25: hunger 0.9 - 0.4 * 2 * 0.25
    assert shark.component("hunger")[0] == pytest.approx(0.7)
    assert shark.component("event_caught")[0] == 1.0
    carcass = sim.population("carcass")
    assert carcass.n == 1
    assert carcass.component("food")[0] == pytest.approx(0.6)
    assert carcass.component("nutrition")[0] == pytest.approx(2.0)
    assert carcass.tags[0] & sim.world.tag_bit("dead_fish")
    sim.step(150)  # it rises from -5 m to the surface and stays there
    assert carcass.position[0, 1] == pytest.approx(0.0, abs=1e-5)
    assert sim.species_summary("shark") == {"deaths": 0, "eaten": 1, "caught": 1}


def test_thrown_apples_fly_fall_and_float_or_rest(build):
    data = {**POND, "ecology": {"water_level": 0.0, "ground_height": -8.0,
                                "apples": {"food": {"uniform": [0.5, 1.5]}, "lifetime": 2.0}}}
    sim, eco = build(data)
    eco.throw_apple((0.0, 2.0, 0.0), (3.0, 2.0, 0.0))
    eco.throw_apple((5.0, -1.5, 0.0), (0.0, 0.0, 0.0))  # dropped under water: floats up
    sim.step(1)
    apples = sim.population("apple")
    assert apples.n == 2
    assert 0.5 <= apples.component("food")[0] <= 1.5
    sim.step(45)
    assert apples.position[:, 1] == pytest.approx([0.0, 0.0], abs=1e-5)
    assert apples.position[0, 0] > 2.0  # it flew before landing
    sim.step(20)  # apples rot away after their lifetime
    assert apples.n == 0


MEADOW = {
    "name": "meadow", "dt": DT,
    "world": {"bounds_min": [-50, -5, -50], "bounds_max": [50, 10, 50]},
    "environment": {"shapes": [{"kind": "box", "center": [8, 0, 0], "half_extents": [3, 0.05, 3], "layer": "grass"}]},
    "species": [{
        "name": "sheep", "count": 1, "spawn": {"center": [0, 0.5, 0], "size": [0, 0, 0], "speed": [0, 0]},
        "mover": {"kind": "planar", "max_speed": 3.0, "speed_up_acceleration": 2.0, "slow_down_acceleration": 3.0},
        "ecology": {"hunger": {"start": 1.0, "rate": 0.0},
                    "eating": {"bite": 0.2, "chew_time": 1.0},
                    "graze": {"reach": 1.5, "max_speed": 0.3, "nutrition": 0.5}},
        "ray_groups": [{"label": "grass",
                        "query": {"shape": "cone3d", "count": 16, "fov_deg": 100, "max_distance": 15,
                                  "direction": [0, -0.3, 1], "layers": ["grass"]},
                        "behaviors": [{"kind": "find_grass", "priority": 2, "weight_direction": 0.9,
                                       "weight_speed": 0.9, "eat_radius": 1.0}]}],
        "behaviors": [{"kind": "go_forward", "speed": 2.0, "weight_direction": 0.1, "weight_speed": 0.1}],
    }],
}


def test_a_hungry_sheep_walks_onto_the_grass_slows_down_and_grazes(build):
    pytest.importorskip("starling.environment.system")
    sim, eco = build(MEADOW)
    sheep = sim.population("sheep")
    sheep.forward[0] = np.float32([1, 0, 0])
    sheep.velocity[0] = np.float32([1, 0, 0])
    for _ in range(600):
        sim.step()
        if eco.counters["sheep"]["eaten"]:
            break
    assert eco.counters["sheep"]["eaten"] == 1
    assert 5.0 <= sheep.position[0, 0] <= 11.0  # on the meadow
    assert float(np.linalg.norm(sheep.velocity[0])) <= 0.3
    assert sheep.component("hunger")[0] == pytest.approx(1.0 - 0.2 * 0.5)
    sim.step(60)
    assert eco.counters["sheep"]["eaten"] >= 2  # it stays and keeps grazing
    assert 5.0 <= sheep.position[0, 0] <= 11.0


def test_grazing_needs_an_environment(config_problems):
    data = {**MEADOW}
    data.pop("environment")
    data["species"] = [{**MEADOW["species"][0], "ray_groups": []}]
    assert config_problems(data) == ["species.sheep.ecology.graze: grazing needs an [environment] with shapes on a grass layer"]


def test_the_feeding_kernels_pick_the_rows_numpy_picks():
    """The feeding system's one-pass helpers against the NumPy they replaced: the items carrying
    a tag (rows and positions, in order), and the eligible animals still enough to graze (their
    float32 speed as NumPy sums it, against the float32 limit)."""
    from starling.ecology.feeding import _still_rows, tagged_points

    rng = np.random.default_rng(3)
    n = 500
    tags = rng.integers(0, 8, n).astype(np.uint32)
    pos = rng.normal(size=(n, 3)).astype(np.float32)
    rows, points = np.zeros(n, np.int64), np.zeros((n, 3), np.float32)
    for bits in (1, 6, 8):
        k = tagged_points(tags, np.uint32(bits), pos, rows, points)
        want = np.flatnonzero((tags & np.uint32(bits)) != 0)
        np.testing.assert_array_equal(rows[:k], want)
        np.testing.assert_array_equal(points[:k], pos[want])
    use = rng.random(n) < 0.7
    vel = (rng.normal(size=(n, 3)) * rng.random((n, 1))).astype(np.float32)
    speed = np.sqrt(np.einsum("ij,ij->i", vel, vel))
    limit = float(np.median(speed))
    vel[:5] = vel[:5] / speed[:5, None] * np.float32(limit)  # rows at the limit itself, give or take a rounding
    speed = np.sqrt(np.einsum("ij,ij->i", vel, vel))
    k = _still_rows(use, vel, pos, np.float32(limit), rows, points)
    candidates = np.flatnonzero(use)
    want = candidates[speed[candidates] <= limit]
    assert 100 < want.size < 400
    np.testing.assert_array_equal(rows[:k], want)
    np.testing.assert_array_equal(points[:k], pos[want])
    # a velocity whose speed summed the other way round is one float32 step more: at that limit only
    # NumPy's order ((x² + y²) + z²) keeps it still
    v = rng.normal(size=(20000, 3)).astype(np.float32)
    seq = np.sqrt((v[:, 0] * v[:, 0] + v[:, 1] * v[:, 1]) + v[:, 2] * v[:, 2])
    alt = np.sqrt(v[:, 0] * v[:, 0] + (v[:, 1] * v[:, 1] + v[:, 2] * v[:, 2]))
    i = int(np.flatnonzero(alt > seq)[0])
    assert np.sqrt(np.einsum("ij,ij->i", v[i:i + 1], v[i:i + 1]))[0] == seq[i]
    assert _still_rows(np.ones(1, np.bool_), v[i:i + 1], pos[:1], seq[i], rows, points) == 1


def test_item_steps_keep_their_arguments_and_step_as_step_items(build):
    """The feeding system moves items through ``ItemSteps``, whose kernel arguments are kept while the
    items' layout and dt hold: step after step, across items arriving and a new dt, it moves them and
    reports the expired ones exactly as ``step_items`` does on a copy."""
    import copy

    from starling.ecology import items as I
    data = {**POND, "ecology": {"water_level": 0.0, "ground_height": -8.0, "apples": {"lifetime": 0.5}}}
    sim, eco = build(data)
    eco.throw_apple((0.0, 2.0, 0.0), (3.0, 2.0, 0.0))
    eco.throw_apple((5.0, -1.5, 0.0), (0.0, 0.0, 0.0))
    sim.step(1)
    pop = sim.population("apple")
    ref = copy.deepcopy(pop)
    cfg = sim.scenario.ecology
    lo, hi = sim.world.bounds_min, sim.world.bounds_max
    steps = I.ItemSteps()
    rng = np.random.default_rng(3)
    for step in range(24):
        if step == 8:  # more items: a new layout
            for p in (pop, ref):
                p.append(np.int64([900 + step, 901 + step]), np.float32([[1, 1, 1], [2, -3, 2]]),
                         np.float32([[0, 1, 0], [1, 0, 0]]),
                         components={"item_lifetime": np.float32([0.4, -1.0])})
        dt = DT if step < 16 else DT / 2  # a new dt
        ground = np.float32(rng.uniform(-8.0, -6.0, pop.n)) if step % 2 else -7.0  # per item, or one for all
        kept = steps.step(pop, ground, cfg.water_level, cfg.physics, lo, hi, dt)
        fresh = I.step_items(ref, ground, cfg.water_level, cfg.physics, lo, hi, dt)
        assert kept.tolist() == fresh.tolist(), step
        for name in ("position", "velocity"):
            assert getattr(pop, name).tobytes() == getattr(ref, name).tobytes(), (step, name)
        assert pop.component("item_age").tobytes() == ref.component("item_age").tobytes(), step
    assert steps._kept[1] == DT / 2
