"""Fused kernels: one pass that runs several behaviours of a group writes what their own kernels
write, bit for bit, and the pipeline runs one exactly where it may."""
import numpy as np
import pytest

from starling.config import validate_scenario
from starling.simulation import Simulation
from starling.steering import groups
from starling.steering.groups import FusedRun, NeighborView, plan_runs
from starling.steering.queries.pairs import PairGeometry
from starling.steering.registry import RegistryError, fused, fused_kernels, get_behavior
from starling.steering.results import VelocityResults
from starling.steering.targets import CoreAgents

TRIO = ("cohesion", "alignment", "separation")


def _trio():
    return next(spec for spec in fused_kernels() if spec.names == TRIO)


def _animals(rng, n, *, resting=0):
    position = rng.uniform(0.0, 8.0, (n, 3)).astype(np.float32)
    velocity = rng.normal(0.0, 2.0, (n, 3)).astype(np.float32)
    velocity[:resting] = 0.0  # at rest: alignment's heading falls back to forward
    forward = rng.normal(size=(n, 3))
    forward /= np.linalg.norm(forward, axis=1, keepdims=True)
    up = np.tile(np.array([0, 1, 0], np.float32), (n, 1))
    return CoreAgents(position, velocity, forward.astype(np.float32), up, np.arange(n, dtype=np.int64))


def _neighbours(rng, n, m, k):
    """Random rows of up to k targets (some empty, some past the radius), with their pair geometry."""
    me, them = _animals(rng, n, resting=3), _animals(rng, m, resting=2)
    them.velocity[-1] = 0.0
    index = np.full((n, k), -1, np.int32)
    count = rng.integers(0, k + 1, n).astype(np.int32)
    count[:2] = 0
    for i in range(n):
        index[i, : count[i]] = rng.choice(m, count[i], replace=False)
    direction, distance, angle = PairGeometry().compute(me.position, me.forward, them.position, index, count,
                                                        np.zeros(3, np.float32))
    return me, them, NeighborView(index, count, distance, angle, direction)


def _params(rng, n, *, alike: bool, drawn: bool):
    """Each behaviour's kernel parameters: the same vision or each its own, numbers or per-animal draws."""
    out = []
    for kind in TRIO:
        spec = get_behavior(kind)
        vision = dict(max_distance=6.0, fov_deg=270.0) if alike else dict(
            max_distance=float(rng.uniform(3.0, 9.0)), fov_deg=float(rng.uniform(90.0, 360.0)),
            distance_power=float(rng.choice([0.5, 1.0, 2.0, 3.0])), angle_power=float(rng.choice([1.0, 2.0, 1.5])))
        extra = dict(max_speed=5.0) if kind == "alignment" else {}
        p = spec.params(kind=kind, **vision, **extra).kernel_params()
        if drawn:  # every number a float64 array, as drawn parameters reach the kernels
            fields = {f: rng.uniform(0.8, 1.2, n) * getattr(p, f) for f in p._fields
                      if isinstance(getattr(p, f), float)}
            if alike:  # the same draws of vision for all three
                for f in ("max_distance", "fov_deg", "distance_power", "angle_power"):
                    fields[f] = np.full(n, getattr(p, f))
            p = p._replace(**fields)
        out.append(p)
    return out


@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("alike", [True, False])
@pytest.mark.parametrize("drawn", [False, True])
def test_the_flocking_trio_in_one_pass_writes_each_behaviours_own_rows(parallel, alike, drawn):
    rng = np.random.default_rng(7 + 2 * alike + drawn)
    n = 300
    me, them, view = _neighbours(rng, n, 120, 6)
    params = _params(rng, n, alike=alike, drawn=drawn)
    alone = VelocityResults(3, n)
    for row, (kind, p) in enumerate(zip(TRIO, params)):
        get_behavior(kind).compiled(parallel)(me, them, view, p, 1.0, 0.05, alone.view(row, n))
    together = VelocityResults(3, n)
    together.direction[:] = np.nan  # anything the fused kernel left unwritten would show
    _trio().compiled(parallel)(me, them, view, *params, 1.0, 0.05, *[together.view(row, n) for row in range(3)])
    for field in ("direction", "direction_desire", "speed", "speed_desire"):
        a, b = getattr(alone, field)[:, :n], getattr(together, field)[:, :n]
        assert np.array_equal(a, b), field
    assert np.count_nonzero(alone.direction_desire[:, :n]) > n  # the cases are not all "no opinion"


def _scenario(behaviours, count=60, **query):
    return validate_scenario({
        "name": "fused", "seed": 3, "dt": 0.05,
        "world": {"bounds_min": [0, 0, 0], "bounds_max": [20, 20, 20], "wrap": True},
        "species": [{"name": "boid", "count": count,
                     "spawn": {"shape": "box", "center": [10, 10, 10], "size": [20, 20, 20], "speed": [1, 3]},
                     "mover": {"kind": "free", "max_speed": 5.0},
                     "groups": [{"query": {"max_distance": 5.0, "k": 6, **query}, "behaviors": behaviours}]}],
    })


def _plan(behaviours):
    sim = Simulation(_scenario(behaviours), record_debug=False)
    return sim.pipelines[0].groups[0].runs


def test_a_group_runs_the_fused_kernel_in_place_of_the_behaviours_it_covers():
    runs = _plan([{"kind": "flee"}, {"kind": "separation"}, {"kind": "cohesion"}, {"kind": "alignment"}])
    assert [type(r).__name__ for r in runs] == ["BehaviorSlot", "FusedRun"]
    assert runs[1].spec.names == TRIO and [s.spec.name for s in runs[1].slots] == list(TRIO)
    assert runs[1].name == "cohesion+alignment+separation"


@pytest.mark.parametrize("behaviours", [
    [{"kind": "cohesion"}, {"kind": "alignment"}],  # one is missing
    [{"kind": "cohesion"}, {"kind": "alignment"}, {"kind": "separation", "enabled": False}],  # one is off
    [{"kind": "cohesion"}, {"kind": "alignment"}, {"kind": "separation"}, {"kind": "cohesion", "label": "again"}],
])
def test_no_fused_kernel_where_one_of_its_behaviours_is_missing_off_or_twice(behaviours):
    assert not any(isinstance(r, FusedRun) for r in _plan(behaviours))


def test_without_fusing_every_behaviour_is_its_own_run(monkeypatch):
    monkeypatch.setattr(groups, "FUSE", False)
    slots = _plan([{"kind": k} for k in TRIO])
    assert plan_runs(slots) == slots and len(slots) == 3


def _stepped(monkeypatch, fuse: bool, behaviours, steps=40, **query):
    monkeypatch.setattr(groups, "FUSE", fuse)
    sim = Simulation(_scenario(behaviours, **query), record_debug=False)
    assert any(isinstance(r, FusedRun) for r in sim.pipelines[0].groups[0].runs) is fuse
    sim.step(steps)
    pop = sim.world.population("boid")
    res = sim.pipelines[0].results
    return [pop.position.copy(), pop.velocity.copy(), res.direction[:, : pop.n].copy(),
            res.direction_desire[:, : pop.n].copy(), res.speed_desire[:, : pop.n].copy()]


@pytest.mark.parametrize("query", [{}, {"fov_deg": 200.0}])
def test_a_run_with_the_fused_kernel_steps_as_one_without_it(monkeypatch, query):
    behaviours = [{"kind": "cohesion", "weight_direction": {"uniform": [0.2, 0.8]}},
                  {"kind": "alignment", "max_distance": 4.0},
                  {"kind": "separation"}, {"kind": "flee", "max_distance": 3.0}]
    with_it = _stepped(monkeypatch, True, behaviours, **query)
    without = _stepped(monkeypatch, False, behaviours, **query)
    for a, b in zip(with_it, without):
        assert np.array_equal(a, b)


def test_a_group_that_found_nobody_clears_the_fused_behaviours_rows(monkeypatch):
    # a radius below every spacing: nobody is found, and the three rows are "no opinion"
    sim = Simulation(_scenario([{"kind": k} for k in TRIO], count=8, max_distance=0.01), record_debug=False)
    res = sim.pipelines[0].results
    res.direction_desire[:] = 1.0
    sim.step(1)
    assert sim.pipelines[0].groups[0].nobody
    assert not res.direction_desire[:, :8].any()


def test_a_fused_kernel_is_refused_for_fewer_than_two_or_unknown_behaviours():
    with pytest.raises(RegistryError, match="two or more"):
        fused("cohesion")
    with pytest.raises(RegistryError, match="two or more"):
        fused("cohesion", "cohesion")
    with pytest.raises(RegistryError, match="'no_such_behaviour' is not a registered neighbour behaviour"):
        fused("cohesion", "no_such_behaviour")
    with pytest.raises(RegistryError, match="'wandering' is not a registered neighbour behaviour"):
        fused("cohesion", "wandering")


def test_threaded_kernels_read_every_parameter_drawn_per_animal():
    # with a dozen parameters drawn per animal, Numba's parfor pass used to refuse the threaded
    # compilations ("Overwrite of parallel loop index", from the inlined reads): now each read is a call
    rng = np.random.default_rng(11)
    n = 200
    me, them, view = _neighbours(rng, n, 80, 5)
    params = _params(rng, n, alike=False, drawn=True)
    for row, (kind, p) in enumerate(zip(TRIO, params)):
        serial, threaded = VelocityResults(1, n), VelocityResults(1, n)
        get_behavior(kind).compiled(False)(me, them, view, p, 0.0, 0.05, serial.view(0, n))
        get_behavior(kind).compiled(True)(me, them, view, p, 0.0, 0.05, threaded.view(0, n))
        assert np.array_equal(serial.direction, threaded.direction)
        assert np.array_equal(serial.direction_desire, threaded.direction_desire)
