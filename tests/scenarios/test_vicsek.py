"""The vicsek scene (Vicsek et al. 1995): order at low noise, disorder at high noise, the paper's
update rule checked step by step against an independent NumPy implementation, reproducibility,
thread-count independence and its named parameters."""
import math
import subprocess
import sys

import numba
import numpy as np
import pytest

import starling
from starling.config import ConfigError, load_scenario_config
from starling.metrics import polarization
from starling.steering.random import stream_key, uniform

STEPS = 400


def _phi(overrides=(), steps=STEPS, last=100, seed=None):
    """The mean order parameter φ over the last ``last`` of ``steps`` steps."""
    sim = starling.load_scenario("vicsek", seed=seed, overrides=list(overrides), record_debug=False)
    pop = sim.world.population("particle")
    sim.step(steps - last)
    values = []
    for _ in range(last):
        sim.step()
        values.append(polarization(pop.velocity[:pop.n]))
    return float(np.mean(values))


def test_low_noise_orders_and_high_noise_does_not():
    # Vicsek 1995 Fig. 2 (ρ = 4, N = 400): φ → 1 as η → 0; φ ≈ 0 (order 1/√N) at η = 5.
    # Starting from random headings (φ ≈ 0.05), alignment must order the particles at η = 0.1,
    # and a noise that did not act would leave them ordered at η = 5.
    assert _phi(["eta=0.1"]) > 0.95
    assert _phi(["eta=5"]) < 0.25
    assert 0.4 < _phi(["eta=2"]) < 0.95  # the default: ordered but noisy


def test_without_neighbours_low_noise_does_not_order():
    # alignment is what orders: with a radius too small to see anybody, headings stay random
    assert _phi(["eta=0.1", "radius=0.001"]) < 0.25


def _state(sim):
    pop = sim.world.population("particle")
    n = pop.n
    order = np.argsort(pop.uid[:n])
    return (pop.uid[:n][order].copy(), pop.position[:n][order][:, [0, 2]].astype(np.float64),
            pop.velocity[:n][order][:, [0, 2]].astype(np.float64))


def _numpy_vicsek_step(pos, vel, uid, step, *, L, r, v0, eta, key):
    """One step of Vicsek 1995, independent of Starling's kernels: minimum-image distances, the plain
    mean of the unit headings within r (self included), a uniform turn of width η, x += v Δt mod L."""
    d = pos[None, :, :] - pos[:, None, :]
    d -= L * np.rint(d / L)
    near = np.hypot(d[..., 0], d[..., 1]) < r           # includes i itself (distance 0)
    h = vel / np.linalg.norm(vel, axis=1, keepdims=True)
    s = near.astype(np.float64) @ h
    theta = np.arctan2(s[:, 1], s[:, 0])
    noise = np.array([uniform(key, int(u), step, 0) for u in uid]) - 0.5
    theta = theta + eta * noise
    new_vel = v0 * np.stack([np.cos(theta), np.sin(theta)], axis=1)
    return np.mod(pos + new_vel, L), new_vel


@pytest.mark.parametrize("eta", [0.0, 2.0])
def test_each_step_matches_an_independent_numpy_vicsek_with_the_same_noise(eta):
    # the scene's first (and only) behaviour row of its first species draws from stream_key(seed, 0, 0)
    scenario = load_scenario_config("vicsek", [f"eta={eta}", "n=200"])
    sim = starling.load_scenario("vicsek", overrides=[f"eta={eta}", "n=200"], record_debug=False)
    key = stream_key(scenario.seed, 0, 0)
    L, v0 = 10.0, 0.03
    sim.step(20)  # let bands start to form so the seam and dense neighbourhoods are exercised
    for _ in range(5):
        step = int(round(sim.world.clock.time / scenario.dt))
        uid, pos, vel = _state(sim)
        want_pos, want_vel = _numpy_vicsek_step(pos, vel, uid, step, L=L, r=1.0, v0=v0, eta=eta, key=key)
        sim.step()
        uid2, got_pos, got_vel = _state(sim)
        np.testing.assert_array_equal(uid, uid2)
        np.testing.assert_allclose(got_vel, want_vel, atol=2e-6)  # v0 = 0.03: 1e-4 rad of heading
        gap = got_pos - want_pos
        gap -= L * np.rint(gap / L)
        np.testing.assert_allclose(gap, 0.0, atol=1e-5)
    # the seam was exercised: some pairs are neighbours only through the periodic boundary
    d = pos[None, :, :] - pos[:, None, :]
    across = (np.hypot(d[..., 0], d[..., 1]) >= 1.0) & (np.hypot(*np.moveaxis(d - L * np.rint(d / L), -1, 0)) < 1.0)
    assert across.sum() > 0
    assert pos.min() >= 0.0 and pos.max() <= L


def _trajectory(seed=None, steps=30, overrides=("eta=2",)):
    sim = starling.load_scenario("vicsek", seed=seed, overrides=list(overrides), record_debug=False)
    sim.step(steps)
    return _state(sim)


def test_the_same_seed_repeats_and_another_seed_differs():
    a = _trajectory()
    b = _trajectory()
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    c = _trajectory(seed=7)
    assert not np.allclose(a[1], c[1])


def test_the_trajectory_does_not_depend_on_the_thread_count(monkeypatch):
    # force the threaded kernels on a small scene, then compare 1 thread with 2
    import starling.parallel as parallel_module
    monkeypatch.setattr(parallel_module, "_threads_from", 0)  # every kernel threaded (starling.parallel)
    threads = numba.get_num_threads()
    results = {}
    try:
        for t in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
            numba.set_num_threads(t)
            results[t] = _trajectory(steps=20, overrides=("eta=2", "n=300"))
    finally:
        numba.set_num_threads(threads)
    reference = results[1]
    for t, result in results.items():
        for x, y in zip(result, reference):
            np.testing.assert_array_equal(x, y, err_msg=f"threads={t}")


def test_every_parameter_sets_its_paths():
    s = load_scenario_config("vicsek", ["n=100", "box=5", "eta=3.5", "speed=0.05", "radius=0.7"])
    assert set(s.parameters) == {"n", "box", "eta", "speed", "radius"}
    sp = s.species[0]
    assert sp.count == 100
    assert s.world.bounds_min == (0.0, 0.0, 0.0) and s.world.bounds_max == (5.0, 1.0, 5.0) and s.world.wrap
    assert sp.spawn.size == (5.0, 0.0, 5.0)
    assert sp.groups[0].behaviors[0].eta == 3.5
    assert sp.mover.max_speed == 0.05 and sp.spawn.speed == (0.05, 0.05)
    assert sp.groups[0].query.max_distance == 0.7
    with pytest.raises(ConfigError, match=r"etta: unknown parameter"):
        load_scenario_config("vicsek", ["etta=1"])
    with pytest.raises(ConfigError, match=r"eta: "):
        load_scenario_config("vicsek", ["eta=7"])  # beyond 2π


def test_a_smaller_box_fills_uniformly_at_the_same_density():
    sim = starling.load_scenario("vicsek", overrides=["box=5", "n=100"], record_debug=False)
    pop = sim.world.population("particle")
    xz = pop.position[:pop.n][:, [0, 2]]
    assert xz.min() >= 0.0 and xz.max() < 5.0
    assert np.histogram2d(xz[:, 0], xz[:, 1], bins=2, range=[[0, 5], [0, 5]])[0].min() > 10


def test_the_cli_lists_vicsek_and_runs_it_with_every_parameter():
    run = lambda *a: subprocess.run([sys.executable, "-m", "starling", *a], capture_output=True, text=True)
    listed = run("scenarios")
    assert listed.returncode == 0 and "vicsek" in listed.stdout, listed.stderr
    shown = run("scenarios", "vicsek")
    assert shown.returncode == 0 and all(p in shown.stdout for p in ("n", "box", "eta", "speed", "radius"))
    ok = run("run", "vicsek", "--steps", "3", "--json", "--set", "n=50", "--set", "box=5", "--set", "eta=1",
             "--set", "speed=0.02", "--set", "radius=0.5")
    assert ok.returncode == 0, ok.stderr
    assert '"alive": 50' in ok.stdout
    bad = run("run", "vicsek", "--steps", "1", "--set", "noise=1")
    assert bad.returncode == 2 and "noise: unknown parameter" in bad.stderr and "Traceback" not in bad.stderr
