"""Helpers for the ecology tests: small scenes and direct kernel calls."""
import copy
from collections import namedtuple

import numpy as np
import pytest

import starling
from starling.config import validate_scenario
from starling.ecology import ecology_of
from starling.steering import registry
from starling.steering.pipeline import NeighborView
from starling.steering.results import VelocityResults
from starling.world.population import agent_tuple_type


@pytest.fixture(autouse=True, scope="module")
def one_numba_thread():
    """These scenes have at most a few hundred animals: one thread, like a sweep worker.

    Waking a thread pool costs more than such small kernels save, and far more on a
    busy shared machine; results do not depend on the thread count.
    """
    import numba

    before = numba.get_num_threads()
    numba.set_num_threads(1)
    yield
    numba.set_num_threads(before)


@pytest.fixture
def build():
    """``build(scene_dict, **kw) -> (sim, eco)`` for a scenario given as data."""

    def _build(data, **kw):
        sim = starling.Simulation(validate_scenario(copy.deepcopy(data)), **kw)
        return sim, ecology_of(sim)

    return _build


def _agents(n, comps, position=None, velocity=None, forward=None):
    t = agent_tuple_type(comps)
    pos = np.zeros((n, 3), np.float32) if position is None else np.asarray(position, np.float32).reshape(n, 3)
    vel = np.zeros((n, 3), np.float32) if velocity is None else np.asarray(velocity, np.float32).reshape(n, 3)
    fwd = np.tile(np.float32([0, 0, 1]), (n, 1)) if forward is None else np.asarray(forward, np.float32).reshape(n, 3)
    up = np.tile(np.float32([0, 1, 0]), (n, 1))
    values = {"position": pos, "velocity": vel, "forward": fwd, "up": up, "uid": np.arange(n, dtype=np.int64)}
    for name, v in comps.items():
        values[name] = np.broadcast_to(np.asarray(v, np.float32), (n,)).copy()
    return t(*(values[f] for f in t._fields))


def _neighbors(agents, others, k):
    """All-pairs neighbour table (nearest first) with the pipeline's shared pair geometry."""
    n = agents.position.shape[0]
    m = others.position.shape[0]
    index = np.full((n, max(k, 1)), -1, np.int32)
    count = np.zeros(n, np.int32)
    distance = np.full((n, max(k, 1)), np.inf, np.float32)
    angle = np.zeros((n, max(k, 1)), np.float32)
    direction = np.zeros((n, max(k, 1), 3), np.float32)
    for i in range(n):
        off = others.position.astype(np.float64) - agents.position[i]
        d = np.linalg.norm(off, axis=1)
        order = np.argsort(d, kind="stable")[:k]
        count[i] = len(order)
        f = agents.forward[i] / max(np.linalg.norm(agents.forward[i]), 1e-12)
        for q, j in enumerate(order):
            index[i, q] = j
            distance[i, q] = d[j]
            if d[j] > 1e-9:
                u = off[j] / d[j]
                direction[i, q] = u
                angle[i, q] = np.arccos(np.clip(u @ f, -1, 1))
    return NeighborView(index, count, distance, angle, direction)


Result = namedtuple("Result", ["direction", "direction_desire", "speed", "speed_desire"])


@pytest.fixture
def kernel():
    """``kernel(name, params, agents=dict, others=dict) -> Result`` runs one registered behaviour directly.

    ``agents``/``others``: ``{"position": ..., "velocity": ..., "forward": ..., "comps": {name: value}}``.
    """

    def run(name, params, agents, others=None, time=0.0, dt=1 / 30):
        spec = registry.get_behavior(name)
        p = spec.params.model_validate({"kind": name, **params})
        n = np.asarray(agents["position"], np.float32).reshape(-1, 3).shape[0]
        a = _agents(n, agents.get("comps", {}), agents["position"], agents.get("velocity"), agents.get("forward"))
        res = VelocityResults(1, n)
        out = res.view(0, n)
        if spec.kind == "neighbor":
            m = np.asarray(others["position"], np.float32).reshape(-1, 3).shape[0]
            o = _agents(m, others.get("comps", {}), others["position"], others.get("velocity"), others.get("forward"))
            nb = _neighbors(a, o, others.get("k", max(m, 1)))
            spec.compiled(False)(a, o, nb, p.kernel_params(), time, dt, out)
        else:
            spec.compiled(False)(a, p.kernel_params(), time, dt, out)
        return Result(out.direction.copy(), out.direction_desire.copy(), out.speed.copy(), out.speed_desire.copy())

    return run


def problems(data):
    from starling.config import ConfigError

    with pytest.raises(ConfigError) as info:
        validate_scenario(copy.deepcopy(data))
    return [str(p) for p in info.value.problems]


@pytest.fixture
def config_problems():
    return problems
