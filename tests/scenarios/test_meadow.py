"""The meadow (seed 000, ch. 11): the thesis' whole sample scene, its tables, its health and its food chain.

One simulation of 2,000 steps (67 simulated seconds) is shared by the character tests: every
step is checked for wolves in the pond, every 50th for health and the birds' distance to their
homes, and the counters at the end for the catches of the food chain.
"""
import numpy as np
import pytest

import starling
from starling.ecology import ecology_of

STEPS = 2000

# ------------------------------------------------------------------ the thesis' tables (seed 000, 11.3)
# (behaviour kind, priority P, direction weight WD, speed weight WS, distance D); D None: not given.
# Thesis names: Flee/Fleeing = flee, Avoid Vertical Walls = avoid_verticals, Multi Homing = multi_homing.
NEIGHBOUR = {
    "fish": [  # Table 11.2 (Chase Food, Avoid Player, Avoid Sound: P 2)
        ("cohesion", 0, 0.8, 0.3, 20), ("multi_homing", 0, 0.2, 0.0, 20), ("alignment", 1, 0.6, 0.2, 5),
        ("chase_food", 2, 0.8, 0.65, 20), ("avoid_player", 2, 0.4, 0.2, 10), ("avoid_sound", 2, 0.65, 0.65, 10),
        ("flee", 3, 0.8, 0.7, 6.5), ("separation", 4, 0.6, 0.0, 1.5), ("avoid_when_eating", 5, 0.3, 0.3, 3),
    ],
    "shark": [  # Table 11.6
        ("multi_homing", 1, 0.3, 0.0, 20), ("avoid_player", 2, 0.25, 0.25, 10), ("avoid_sound", 2, 0.35, 0.35, 15),
        ("chase_food", 2, 0.9, 0.9, 15), ("separation", 4, 0.5, 0.0, 3), ("avoid_when_eating", 5, 0.85, 0.85, 12),
    ],
    "bird_west": [  # Table 11.10
        ("cohesion", 0, 0.8, 0.1, 5), ("alignment", 1, 0.8, 0.3, 5), ("multi_homing", 5, 0.8, 0.0, 1000),
        ("separation", 4, 0.6, 0.0, 2), ("avoid_sound", 4, 0.7, 0.7, 15),
    ],
    "sheep": [  # Table 11.14 (Chase Food's Grass is Find Grass, Table 11.15)
        ("cohesion", 0, 0.5, 0.5, 18), ("alignment", 1, 0.4, 0.5, 5), ("get_pushed", 2, 0.3, 0.3, 2.5),
        ("avoid_player", 2, 0.25, 0.25, 15), ("avoid_sound", 3, 0.7, 0.6, 15), ("avoid_when_eating", 3, 0.7, 0.3, 5),
        ("chase_food", 3, 0.75, 0.3, 20), ("flee", 5, 0.8, 0.7, 20), ("separation", 6, 0.8, 0.0, 2),
    ],
    "wolf": [  # Table 11.18
        ("cohesion", 0, 0.16, 0.1, 20), ("alignment", 1, 0.4, 0.3, 9.5), ("multi_homing", 2, 0.3, 0.0, 80),
        ("avoid_player", 3, 0.7, 0.7, 20), ("chase_food", 3, 0.9, 0.6, 35), ("separation", 4, 0.23, 0.0, 7),
        ("avoid_when_eating", 6, 0.6, 0.6, 15),
    ],
}
NEIGHBOUR["bird_east"] = NEIGHBOUR["bird_west"]
RAY = {  # (kind, P, WD, WS, D, layers)
    "fish": [("avoid_ground", 5, 0.2, 0.0, 2, {"environment", "ground", "terrain", "fake_walls"}),   # Table 11.3
             ("avoid_verticals", 6, 0.7, 0.0, 2, {"ground", "terrain"})],
    "shark": [("avoid_ground", 1, 0.5, 0.0, 3, {"ground", "terrain"}),                                # Table 11.7
              ("avoid_verticals", 3, 0.7, 0.0, 3, {"environment", "ground", "terrain", "fake_walls"}),
              ("environment_avoidance", 6, 0.7, 0.0, 2, {"environment", "ground", "terrain", "fake_walls"})],
    "bird_west": [("avoid_ground", 3, 0.8, 0.0, 30, {"water", "ground", "terrain"})],                 # Table 11.11
    "sheep": [("find_grass", 4, 0.7, 0.7, 5, {"grass"}),                                              # Table 11.15
              ("environment_avoidance", 7, 0.95, 0.0, 3, {"environment"})],
    "wolf": [("environment_avoidance", 7, 0.95, 0.0, 5, {"environment", "fake_walls"})],             # Table 11.19
}
RAY["bird_east"] = RAY["bird_west"]
SIMPLE = {  # (kind, P, WD, WS)
    "fish": [("wandering", 0, 0.03, 0.01), ("align_up", 0, 0.2, 0.0), ("keep_height", 6, 0.35, 0.0)],       # Table 11.4
    "shark": [("wandering", 0, 0.01, 0.02), ("align_up", 0, 0.2, 0.0), ("keep_height", 1, 0.45, 0.0)],      # Table 11.8
    "bird_west": [("align_up", 0, 0.2, 0.0), ("wandering", 0, 0.045, 0.1), ("keep_height", 4, 0.75, 0.0)],  # Table 11.12
    "sheep": [("wandering", 0, 0.05, 0.1)],                                                                  # Table 11.16
    "wolf": [("wandering", 0, 0.03, 0.1)],                                                                   # Table 11.20
}
SIMPLE["bird_east"] = SIMPLE["bird_west"]
MOVEMENT = {  # max speed, parallel acceleration, lateral acceleration: Tables 11.1, 11.5, 11.9, 11.13, 11.17
    "fish": (5.5, 3, 8), "shark": (8, 7, 5), "bird_west": (7.5, 8, 8), "bird_east": (7.5, 8, 8),
    "sheep": (7, 3, 3), "wolf": (10, 10, 6.5),
}
COUNTS = {"fish": 200, "shark": 3, "bird_west": 600, "bird_east": 600, "sheep": 160, "wolf": 8}  # 11.1.3–11.1.7
BIRD_HOMES = {"bird_west": (-45.0, 40.0, 35.0), "bird_east": (45.0, 45.0, -35.0)}
POND_OUTER_RADIUS = 36.0  # where the pond's banks meet the meadow


def _species(cfg, name):
    return next(s for s in cfg.species if s.name == name)


def _rows(sp):
    """Every behaviour of a species as the thesis' tables list it."""
    neighbour, ray, simple = [], [], []
    for g in sp.groups:
        for b in g.behaviors:
            d = b.max_distance if getattr(b, "max_distance", None) is not None else g.query.max_distance
            neighbour.append((b.kind, b.priority, b.weight_direction, b.weight_speed, d))
    for g in sp.ray_groups:
        for b in g.behaviors:
            ray.append((b.kind, b.priority, b.weight_direction, b.weight_speed, g.query.max_distance, set(g.query.layers)))
    for b in sp.behaviors:
        if b.kind == "multi_homing":  # a neighbour behaviour in the thesis (it targets the home tags)
            d = {h.max_radius for h in b.homes}
            assert len(d) == 1
            neighbour.append((b.kind, b.priority, b.weight_direction, b.weight_speed, d.pop()))
        else:
            simple.append((b.kind, b.priority, b.weight_direction, b.weight_speed))
    return neighbour, ray, simple


def test_it_is_listed_and_its_populations_are_the_thesis():
    assert "meadow" in starling.scenario_names()
    cfg = starling.load_scenario_config("meadow")
    assert {s.name: s.count for s in cfg.species} == COUNTS
    assert cfg.ecology.player is not None


@pytest.mark.parametrize("name", sorted(COUNTS))
def test_every_behaviour_has_its_tables_tag_distance_priority_and_weights(name):
    sp = _species(starling.load_scenario_config("meadow"), name)
    neighbour, ray, simple = _rows(sp)
    assert sorted(neighbour) == sorted(NEIGHBOUR[name])
    assert sorted(ray, key=str) == sorted(RAY[name], key=str)
    assert sorted(simple) == sorted(SIMPLE[name])
    m = sp.mover
    assert (m.max_speed, m.speed_up_acceleration, m.lateral_acceleration) == MOVEMENT[name]
    assert m.slow_down_acceleration == m.speed_up_acceleration  # the thesis has one parallel acceleration


def test_the_tables_targets_and_the_food_chain():
    cfg = starling.load_scenario_config("meadow")
    targets = {(s.name, b.kind): set(g.query.targets) for s in cfg.species for g in s.groups for b in g.behaviors}
    assert targets[("fish", "flee")] == {"shark"}                                   # Table 11.2
    assert targets[("sheep", "flee")] == {"wolf", "fish", "shark"}                  # Table 11.14
    assert targets[("fish", "chase_food")] == {"apple", "carcass", "sheep"}         # apples, sheep, dead birds and sharks
    assert targets[("shark", "chase_food")] == {"fish", "sheep", "apple", "carcass"}  # Table 11.6
    assert targets[("wolf", "chase_food")] == {"sheep", "carcass"}                  # sheep and dead birds (11.1.7)
    assert targets[("bird_west", "cohesion")] == {"bird_west", "bird_east"}         # the Bird tag
    assert not any(s.name == "wolf" for s in cfg.species if any(
        b.kind == "avoid_sound" for g in s.groups for b in g.behaviors))           # wolves ignore sounds (11.1.7)
    eat = {s.name: s.ecology.eating for s in cfg.species if s.ecology is not None and s.ecology.eating is not None}
    assert set(eat["shark"].prey) == {"fish", "sheep"} and set(eat["wolf"].prey) == {"sheep"}
    assert "sheep" in eat["fish"].food and "apple" in eat["fish"].food and "apple" in eat["sheep"].food
    assert _species(cfg, "sheep").ecology.graze is not None                        # sheep graze (11.2.7)
    # the fake walls: seen and felt by the wolves only
    walls = {s.name for s in cfg.species if "fake_walls" in (s.body.collide_with if s.body else [])}
    assert walls == {"wolf"}


# ------------------------------------------------------------------ one shared run
@pytest.fixture(scope="module")
def run():
    sim = starling.load_scenario("meadow", record_debug=False)
    env = sim.environment
    wolf = sim.population("wolf")
    homes = {k: np.asarray(v) for k, v in BIRD_HOMES.items()}
    out = {"health": [], "bird_far": {k: [] for k in homes}, "bird_median": {k: [] for k in homes},
           "wolf_min_radius": np.inf, "wolf_in_water": 0}
    for step in range(1, STEPS + 1):
        sim.step()
        w = wolf.position[:wolf.n]
        out["wolf_min_radius"] = min(out["wolf_min_radius"], float(np.hypot(w[:, 0], w[:, 2]).min()))
        out["wolf_in_water"] += int(env.in_water(w).sum())
        if step % 50 == 0:
            out["health"].append((step, sim.health()))
            for name, home in homes.items():
                pop = sim.population(name)
                d = np.linalg.norm(pop.position[:pop.n] - home, axis=1)
                out["bird_far"][name].append(float(d.max()))
                out["bird_median"][name].append(float(np.median(d)))
    eco = ecology_of(sim)
    out["counters"] = {k: dict(v) for k, v in eco.counters.items()}
    out["causes"] = {k: dict(v) for k, v in eco.causes.items()}
    out["sim"] = sim
    return out


def test_two_thousand_steps_with_every_health_count_zero(run):
    assert len(run["health"]) == STEPS // 50
    for step, health in run["health"]:
        assert health and all(v == 0 for v in health.values()), (step, health)
    assert run["sim"].step_count == STEPS


def test_sharks_catch_fish_and_wolves_catch_sheep(run):
    # within 2,000 steps (67 simulated seconds), deaths by cause and the hunters' catches
    counters, causes = run["counters"], run["causes"]
    assert counters["shark"]["caught"] > 0 and causes["fish"].get("caught", 0) >= counters["shark"]["caught"]
    assert counters["wolf"]["caught"] > 0 and causes["sheep"].get("caught", 0) >= counters["wolf"]["caught"]
    # and the prey is not wiped out in that time
    assert run["sim"].population("fish").n > 100 and run["sim"].population("sheep").n > 80


def test_birds_stay_near_their_homes(run):
    for name in BIRD_HOMES:
        # the flock stays around its home: half the birds within 30 m, none beyond 80 m (the
        # homes are 130 m apart), even after the shots at t = 20 and 45 s scatter the western flock
        assert max(run["bird_median"][name]) < 30.0, (name, run["bird_median"][name])
        assert max(run["bird_far"][name]) < 80.0, (name, run["bird_far"][name])
        assert run["sim"].population(name).n >= 590


def test_no_wolf_enters_the_pond(run):
    assert run["wolf_in_water"] == 0
    assert run["wolf_min_radius"] > POND_OUTER_RADIUS
