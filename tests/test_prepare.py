"""Compiling a scenario's kernels in named stages (starling.prepare): what the live app's
loading progress and ``starling run``'s first step show."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

import starling
from starling import parallel_compile
from starling.config import scenario_names
from starling.prepare import can_prepare, prepare


def _flock():
    return starling.load_scenario("flock", seed=2, overrides=("species.bird.count=120",))


def test_a_step_taken_in_named_parts_is_the_same_step():
    whole, parts = _flock(), _flock()
    whole.step(3)
    named: list[str] = []
    parts.step(3, on_part=named.append)
    assert np.array_equal(whole.population("bird").position, parts.population("bird").position)
    assert np.array_equal(whole.population("bird").velocity, parts.population("bird").velocity)
    assert parts.step_count == 3 and len(named) == 3 * parts.step_part_count()
    assert named[:parts.step_part_count()] == [
        "systems before steering", "bird steering", "bird movement", "systems after the move"]


def test_prepare_names_every_stage_reaches_one_and_leaves_the_simulation_as_it_was():
    sim = _flock()
    before = pickle.dumps(sim.snapshot())
    seen: list[tuple[str, float]] = []
    touched: list[int] = []
    done = prepare(sim, [("an extra", lambda copy: touched.append(copy.step_count))],
                   on_progress=lambda stage, fraction: seen.append((stage, fraction)))
    assert pickle.dumps(sim.snapshot()) == before and sim.step_count == 0
    assert touched == [2]  # the extra stages see the copy after its two steps
    assert done.stages == 1 + sim.step_part_count() + 1 + 1
    assert seen[-1] == ("ready", 1.0)
    fractions = [f for _, f in seen]
    assert fractions == sorted(fractions) and fractions[0] == 0.0
    stages = [s for s, _ in seen[:-1] if not s.startswith("compiling")]
    assert stages == [f"{label} ({i}/{done.stages})" for i, label in enumerate(
        ["copying the simulation", "systems before steering", "bird steering", "bird movement",
         "systems after the move", "a second step", "an extra"], start=1)]


def test_prepare_in_place_is_the_first_step_of_the_run():
    sim, twin = _flock(), _flock()
    seen: list[str] = []
    prepare(sim, on_progress=lambda stage, fraction: seen.append(stage), in_place=True)
    twin.step()
    assert sim.step_count == 1 and np.array_equal(sim.population("bird").position, twin.population("bird").position)
    assert seen[0] == "systems before steering (1/4)" and seen[-1] == "ready"


def test_only_a_real_simulation_is_prepared():
    assert can_prepare(_flock()) and not can_prepare(object())


# ---------------------------------------------------------------- the second process
# four kernels, part0 .. part3 (part i returns x + i + 1), each a cache entry of its own
KERNEL_SOURCE = "".join(f"\n\n@njit(cache=True)\ndef part{i}(x):\n    return x + {i + 1}.0\n" for i in range(4))
FAKE_PARTS = '''
import os
import time

from numba import njit
''' + KERNEL_SOURCE + '''

KERNELS = (part0, part1, part2, part3)


class FakeSim:
    """Four step parts, each calling its own kernel. Run by its first process, part 1 waits until
    another process has run part 3 (so that process takes the last parts); run elsewhere with
    ``crash``, part 3 kills its process once it has compiled."""

    def __init__(self, folder, owner, crash=False):
        self.folder, self.owner, self.crash = folder, owner, crash
        self.results = []

    def step_part_count(self):
        return 4

    def snapshot(self):
        return (self.folder, self.owner, self.crash)

    @classmethod
    def restore(cls, snapshot):
        return cls(*snapshot)

    def __reduce__(self):
        return (FakeSim, self.snapshot())

    def step(self, n=1, on_part=None):
        for label in self._step_parts():
            on_part(label)

    def _step_parts(self):
        for i, kernel in enumerate(KERNELS):
            if (yield f"part {i}"):
                continue
            here = os.getpid() == self.owner
            if i == 1 and here:
                for _ in range(12000):  # the other process's sign, or two minutes
                    if os.path.exists(os.path.join(self.folder, "part3-ran")):
                        break
                    time.sleep(0.01)
            self.results.append(kernel(float(i)))
            if i == 3 and not here:
                open(os.path.join(self.folder, "part3-ran"), "w").close()
                if self.crash:
                    os._exit(3)
'''


def _fake_sim(tmp_path, monkeypatch, crash=False):
    import os
    import uuid

    name = f"fake_parts_{uuid.uuid4().hex[:8]}"  # fresh kernels: nothing of them is cached yet
    (tmp_path / f"{name}.py").write_text(FAKE_PARTS)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = __import__(name)
    monkeypatch.setenv("STARLING_COMPILE_HELPER", "1")
    return module.FakeSim(str(tmp_path), os.getpid(), crash)


def test_a_second_process_compiles_the_last_parts_and_this_one_loads_them(tmp_path, monkeypatch):
    """Part 0 compiles here, so the second process starts before part 1 and takes parts 3
    and 2 from the end; this process waits for them and runs them with their kernels loaded
    from the cache it shares, compiling only parts 0 and 1 itself."""
    import starling.prepare as prep

    sim = _fake_sim(tmp_path, monkeypatch)
    monkeypatch.setattr(prep, "_compilations_seen", 10**9)  # as if the build compiled nothing
    monkeypatch.setattr(parallel_compile, "wanted", lambda sim: True)  # whatever this machine's cores
    seen: list[str] = []
    done = prepare(sim, on_progress=lambda stage, fraction: seen.append(stage), in_place=True)
    assert sim.results == [1.0, 3.0, 5.0, 7.0]
    assert done.parts_elsewhere == 2
    assert done.compiled == 2  # parts 0 and 1; parts 2 and 3 came from the other process's cache entries
    assert seen[-1] == "ready"


def test_a_second_process_that_dies_leaves_its_part_to_this_one(tmp_path, monkeypatch):
    import starling.prepare as prep

    sim = _fake_sim(tmp_path, monkeypatch, crash=True)
    monkeypatch.setattr(prep, "_compilations_seen", 10**9)
    monkeypatch.setattr(parallel_compile, "wanted", lambda sim: True)
    done = prepare(sim, in_place=True)
    assert sim.results == [1.0, 3.0, 5.0, 7.0]
    assert done.parts_elsewhere == 0
    assert done.compiled >= 3  # parts 0, 1 and 2 here; part 3 here too unless its cache entry was saved before the crash


def test_no_second_process_when_nothing_compiles_or_it_is_turned_off(tmp_path, monkeypatch):
    import starling.prepare as prep

    sim = _flock()
    sim.step()  # every kernel compiled or loaded in this process already
    monkeypatch.setattr(prep, "_compilations_seen", 10**9)
    started = []
    monkeypatch.setattr(parallel_compile, "SecondCompiler", lambda *args, **kwargs: started.append(args))
    assert prepare(sim, in_place=True).parts_elsewhere == 0 and not started
    monkeypatch.setenv("STARLING_COMPILE_HELPER", "0")
    assert not parallel_compile.wanted(sim)


def test_one_part_of_a_step_runs_alone_when_the_others_are_skipped():
    from starling.parallel_compile import run_part

    labels = _flock()
    names = list(labels._step_parts())
    moved, steered = _flock(), _flock()
    start = moved.population("bird").position.copy()
    run_part(moved, names.index("bird movement"))  # no steering: the birds glide on
    run_part(steered, names.index("bird steering"))
    assert moved.step_count == steered.step_count == 1
    assert not np.array_equal(moved.population("bird").position, start)
    assert np.array_equal(steered.population("bird").position, start)
    assert np.any(steered.pipelines[0].desired != 0) and not np.any(moved.pipelines[0].desired[:120] != 0)


@pytest.mark.parametrize("name", scenario_names())
def test_every_part_of_a_built_in_scene_runs_alone_as_the_second_process_runs_it(name, tmp_path):
    """The second process runs each part of a copy's step alone, from the last back, after the
    parts before it were skipped; it swallows errors (it is only an accelerator), so a part
    that failed alone would silently cost a cold start its second core. Run here, in this
    process, on a warm cache: every part ends DONE."""
    sim = starling.load_scenario(name)
    claims = parallel_compile.Claims.new(sim.step_part_count())
    try:
        parallel_compile.compile_from_the_end(pickle.dumps(sim), claims.path, ())
        assert claims.read() == bytes([parallel_compile.DONE]) * sim.step_part_count()
    finally:
        claims.remove()
