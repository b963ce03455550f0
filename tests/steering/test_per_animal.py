"""Behaviour parameters drawn per animal (individual variation, seed 003 and thesis 12.2).

The oracle: a kernel handed one value per animal must give every animal exactly the
row the same kernel gives when every animal shares that animal's value.
"""
import copy

import numba
import numpy as np
import pytest
from scipy import stats

import starling
from starling.config import ConfigError, validate_scenario
from starling.steering import groups, pipeline, registry
from starling.steering.behaviors.neighbor.flocking import CohesionParams, SeparationParams
from starling.steering.behaviors.simple.homing import HomingParams
from starling.steering.behaviors.simple.wandering import WanderingParams
from starling.steering.per_animal import at


@pytest.fixture(autouse=True, scope="module")
def one_numba_thread():
    before = numba.get_num_threads()
    numba.set_num_threads(1)
    yield
    numba.set_num_threads(before)


# ---------------------------------------------------------------------------- the accessor

def test_at_reads_a_shared_number_or_the_animals_own_value():
    assert at(0.25, 7) == 0.25
    assert at(np.float32([1, 2, 3]), 1) == 2.0

    @numba.njit
    def both(shared, own, i):
        return at(shared, i) + at(own, i)

    assert both(0.5, np.float32([1, 2, 3]), 2) == 3.5
    assert both(0.5, 0.25, 2) == 0.75


# ---------------------------------------------------------------------------- parameter models

def test_any_float_parameter_accepts_a_distribution_and_keeps_its_mean():
    p = CohesionParams(weight_direction={"uniform": [0.2, 0.4]}, max_distance={"normal": [4.0, 0.5], "min": 2.0})
    assert p.weight_direction == pytest.approx(0.3)
    assert p.max_distance == pytest.approx(4.0)
    assert set(p.varied) == {"weight_direction", "max_distance"}
    assert p.kernel_params().weight_direction == pytest.approx(0.3)
    # a round trip through data keeps the distributions (TOML files, `set` events, the browser)
    data = p.model_dump()
    assert data["weight_direction"] == {"uniform": (0.2, 0.4)}
    assert data["activation_power"] == 2.0
    again = CohesionParams.model_validate(data)
    assert again == p and again.varied == p.varied
    assert CohesionParams().varied == {}
    assert "priority" not in CohesionParams.variable_fields()  # integers and names are not drawn


def test_every_draw_must_respect_the_parameters_bounds():
    with pytest.raises(Exception) as err:
        SeparationParams(weight_direction={"uniform": [0.5, 1.2]})
    assert "every draw must be <= 1; lower the high end or set 'max'" in str(err.value)
    with pytest.raises(Exception) as err:
        SeparationParams(max_distance={"normal": [2.0, 0.5]})
    assert "every draw must be > 0; raise the low end or set 'min'" in str(err.value)
    assert SeparationParams(max_distance={"normal": [2.0, 0.5], "min": 0.5}).varied
    with pytest.raises(Exception) as err:
        SeparationParams(sep_k={"uniform": [0.01]})
    assert "uniform" in str(err.value)


def test_ordered_pairs_must_hold_for_every_pair_of_draws():
    assert WanderingParams(min_speed={"uniform": [1.0, 2.0]}, max_speed={"uniform": [2.0, 4.0]}).varied
    with pytest.raises(Exception) as err:
        WanderingParams(min_speed={"uniform": [1.0, 3.0]}, max_speed=2.5)
    assert "every draw of max_speed must be at least every draw of min_speed" in str(err.value)
    with pytest.raises(Exception) as err:
        HomingParams(min_radius=20.0, max_radius=10.0)
    assert "max_radius must be greater than min_radius" in str(err.value)


def test_the_schema_offers_a_number_or_a_distribution():
    prop = CohesionParams.model_json_schema()["properties"]["weight_direction"]
    kinds = prop["anyOf"]
    assert kinds[0]["type"] == "number" and kinds[0]["maximum"] == 1
    assert set(kinds[1]["properties"]) == {"uniform", "normal", "min", "max"}


FLOCK = {
    "name": "varied", "seed": 3,
    "world": {"bounds_min": [-40, -40, -40], "bounds_max": [40, 40, 40]},
    "species": [{
        "name": "bird", "count": 300,
        "spawn": {"center": [0, 0, 0], "radius": 20},
        "groups": [{"query": {"max_distance": 6, "k": 6},
                    "behaviors": [{"kind": "cohesion", "weight_direction": {"uniform": [0.1, 0.5]}},
                                  {"kind": "separation", "max_distance": {"uniform": [1.0, 3.0]}}]}],
        "behaviors": [{"kind": "wandering", "min_speed": {"uniform": [1.0, 2.0]}, "max_speed": 4.0}],
    }],
}


def test_configuration_errors_name_the_field():
    data = copy.deepcopy(FLOCK)
    data["species"][0]["groups"][0]["behaviors"][0]["weight_direction"] = {"uniform": [0.5, 1.5]}
    data["species"][0]["groups"][0]["query"]["max_distance"] = {"uniform": [4, 6]}
    with pytest.raises(ConfigError) as err:
        validate_scenario(data)
    problems = [str(p) for p in err.value.problems]
    assert len(problems) == 2, problems
    assert any(p.startswith("species.bird.groups.0.behaviors.0.cohesion.weight_direction: every draw must be <= 1")
               for p in problems), problems
    assert any(p.startswith("species.bird.groups.0.query.max_distance: a query is shared") for p in problems), problems


# ---------------------------------------------------------------------------- draws in a run

def test_draws_are_per_animal_reproducible_and_stay_with_the_animal():
    sim = starling.Simulation(validate_scenario(copy.deepcopy(FLOCK)))
    pop = sim.population("bird")
    pipe = sim.pipelines[0]
    cohesion, separation = pipe.groups[0].behaviors
    (field, comp), = cohesion.varied
    assert field == "weight_direction"
    w = pop.component(comp)
    assert 0.1 <= w.min() and w.max() <= 0.5 and np.unique(w).size == pop.n
    assert stats.kstest(w, stats.uniform(0.1, 0.4).cdf).pvalue > 1e-3
    # the same seed draws the same values for the same animals; another seed does not
    twin = starling.Simulation(validate_scenario(copy.deepcopy(FLOCK)))
    assert np.array_equal(twin.population("bird").component(comp), w)
    other = copy.deepcopy(FLOCK)
    other["seed"] = 4
    assert not np.array_equal(starling.Simulation(validate_scenario(other)).population("bird").component(comp), w)
    # draws travel with their animal through deaths and reordering
    by_uid = dict(zip(pop.uid.tolist(), w.tolist()))
    sim.world.commands.kill("bird", pop.uid[::3])
    sim.step(1)
    pop.permute(np.random.default_rng(0).permutation(pop.n))
    assert all(by_uid[u] == v for u, v in zip(pop.uid.tolist(), pop.component(comp).tolist()))
    # newcomers draw their own
    sim.world.commands.spawn("bird", np.zeros((50, 3), np.float32))
    sim.step(1)
    fresh = pop.component(comp)[-50:]
    assert 0.1 <= fresh.min() and fresh.max() <= 0.5 and np.unique(fresh).size == 50
    # the inspector shows an animal's own values
    info = pipe.inspect_row(sim.world, int(pop.uid[5]))
    drawn = {b["name"]: b["drawn"] for b in info["behaviors"]}
    assert drawn["cohesion"]["weight_direction"] == pytest.approx(float(pop.component(comp)[info["row"]]))
    assert drawn["alignment" if "alignment" in drawn else "separation"].keys() == {"max_distance"}
    assert drawn["wandering"].keys() == {"min_speed"}


def test_an_animals_desire_is_bounded_by_its_own_weight():
    sim = starling.Simulation(validate_scenario(copy.deepcopy(FLOCK)))
    sim.step(5)
    pipe = sim.pipelines[0]
    pop = sim.population("bird")
    slot = pipe.groups[0].behaviors[0]
    w = pop.component(slot.varied[0][1])
    desire = pipe.results.direction_desire[slot.row, :pop.n]
    assert np.all(desire <= w + 1e-6)
    assert desire.max() > 0.1


def test_a_set_event_redraws_a_changed_distribution_and_a_number_is_shared_again():
    data = copy.deepcopy(FLOCK)
    data["events"] = [
        {"kind": "set", "at": 0.1, "path": "species.0.groups.0.behaviors.0.weight_direction",
         "value": {"uniform": [0.7, 0.9]}},
        {"kind": "set", "at": 0.2, "path": "species.0.groups.0.behaviors.0.weight_direction", "value": 0.25},
    ]
    sim = starling.Simulation(validate_scenario(data))
    pop = sim.population("bird")
    slot = sim.pipelines[0].groups[0].behaviors[0]
    comp = slot.varied[0][1]
    sim.step(4)
    w = pop.component(comp)
    assert 0.7 <= w.min() and w.max() <= 0.9
    sim.step(4)
    slot = sim.pipelines[0].groups[0].behaviors[0]  # a set event rebuilds the pipeline (reconfigure)
    assert slot.varied == () and slot.params_for(pop).weight_direction == pytest.approx(0.25)


# ---------------------------------------------------------------------------- the oracle, every behaviour

EXTRA = {
    "name": "the rest", "seed": 5, "dt": 1 / 30,
    "world": {"bounds_min": [-50, -5, -50], "bounds_max": [50, 20, 50]},
    "environment": {"shapes": [{"kind": "box", "center": [6, 0, 0], "half_extents": [4, 0.05, 4], "layer": "grass"}]},
    "species": [
        {"name": "sheep", "count": 40, "spawn": {"center": [0, 0.5, 0], "size": [20, 0, 20]},
         "mover": {"kind": "planar", "max_speed": 3.0},
         "ecology": {"hunger": {"start": 0.8, "rate": 0.01}, "graze": {"reach": 1.5, "max_speed": 0.3}},
         "groups": [{"query": {"max_distance": 8, "k": 6}, "behaviors": [{"kind": "get_pushed"}]},
                    {"query": {"targets": ["wolf"], "max_distance": 20, "k": 2}, "behaviors": [{"kind": "flee"}]}],
         "ray_groups": [{"query": {"shape": "cone3d", "count": 8, "fov_deg": 100, "max_distance": 12,
                                   "direction": [0, -0.3, 1], "layers": ["grass"]},
                         "behaviors": [{"kind": "find_grass"}]}],
         "behaviors": [{"kind": "go_forward"}, {"kind": "homing", "min_radius": 5, "max_radius": 30},
                       {"kind": "follow_path", "points": [[-10, 0.5, -10], [10, 0.5, -10], [10, 0.5, 10]]}]},
        {"name": "wolf", "count": 3, "spawn": {"center": [0, 0.5, 0], "size": [20, 0, 20]},
         "mover": {"kind": "planar", "max_speed": 5.0},
         "groups": [{"query": {"targets": ["sheep"], "max_distance": 25, "k": 3}, "behaviors": [{"kind": "seek"}]},
                    {"query": {"targets": ["wolf"], "max_distance": 10, "k": 2},
                     "behaviors": [{"kind": "couzin_zones", "dr_attraction": 6.0, "horizontal": True}]}]},
    ],
}


def _recorded_calls(sim, steps: int):
    """Every kernel call of the last of ``steps`` steps: (pipeline, slot, n, args without ``out``)."""
    calls = []
    for pipe in sim.pipelines:
        original = pipe._run

        def record(slot, n, kernel, args, out, pipe=pipe, original=original):
            calls.append((pipe, slot, n, args))
            original(slot, n, kernel, args, out)

        pipe._run = record
    for _ in range(steps):
        calls.clear()
        sim.step()
    return calls


def _value_for(params, name: str, rng, n: int) -> np.ndarray:
    """Per-animal values near the configured one, inside the field's bounds."""
    from starling.steering.distributions import bounds_of

    base = float(getattr(params, name))
    b = bounds_of(type(params).model_fields[name])
    values = base * rng.uniform(0.8, 1.0, n) if base != 0 else rng.uniform(0.0, 0.2, n)
    lo = b.lo if np.isfinite(b.lo) else -np.inf
    hi = b.hi if np.isfinite(b.hi) else np.inf
    return np.clip(values, lo, hi).astype(np.float32)


def _scenes():
    for name in ("flock", "pond", "pasture", "lagoon", "fish_tank", "classroom", "vicsek", "savannah", "meadow", "reef"):
        sim = starling.load_scenario(name)
        yield name, sim
    yield "extra", starling.Simulation(validate_scenario(copy.deepcopy(EXTRA)))


def test_every_behaviour_reads_each_animals_own_parameters(monkeypatch):
    monkeypatch.setattr(pipeline, "SKIP_SILENT", False)  # run every kernel, even where its group is empty
    monkeypatch.setattr(groups, "FUSE", False)  # each behaviour's own kernel (the fused ones: test_fused.py)
    rng = np.random.default_rng(0)
    covered = set()
    for scene, sim in _scenes():
        calls = _recorded_calls(sim, 3)
        for pipe, slot, n, args in calls:
            if n == 0 or not slot.params.enabled:
                continue
            names = type(slot.params).variable_fields()
            if not names:
                continue
            kernel = slot.spec.compiled(False)
            base = slot.kernel_params
            m = min(n, 64)  # enough animals to see each one read its own value
            own = {name: _value_for(slot.params, name, rng, n) for name in names}
            varied = base._replace(**own)
            k = {"simple": 1, "ray": 2, "neighbor": 3}[slot.spec.kind]  # where the params sit
            pre, post = args[:k], args[k + 1:]
            out = pipe.results.view(slot.row, n)
            kernel(*pre, varied, *post, out)
            got = np.stack([out.direction_desire.copy(), out.speed.copy(), out.speed_desire.copy()], axis=1)
            got_dir = out.direction.copy()
            for i in rng.choice(n, size=min(m, 6), replace=False):
                shared = base._replace(**{name: np.float64(v[i]) for name, v in own.items()})
                kernel(*pre, shared, *post, out)
                want = np.array([out.direction_desire[i], out.speed[i], out.speed_desire[i]])
                assert got[i] == pytest.approx(want, rel=1e-5, abs=1e-6), (scene, slot.name, i)
                assert got_dir[i] == pytest.approx(out.direction[i], rel=1e-5, abs=1e-6), (scene, slot.name, i)
            covered.add(slot.spec.name)
    every = {b.name for b in registry.behaviors() if b.params.variable_fields()}
    every.discard("avoid_zone")  # the tutorial's, tested with its docs
    assert every <= covered, sorted(every - covered)
