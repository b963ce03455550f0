"""The live run's pacing rules, with hand-set clocks (no thread, no waiting)."""
from __future__ import annotations

import pytest

from starling.server.pacing import BATCH_MAX, BEHIND_AFTER_S, Pacer


def test_realtime_takes_the_steps_whose_time_has_come():
    p = Pacer(realtime=True, now=100.0)
    p.anchor(100.0, 5.0)
    assert p.steps_due(100.0, 5.0, 0.1) == 0  # nothing due yet
    assert p.next_step_at(5.0, 0.1) == pytest.approx(100.1)
    # 0.35 s later at 1×: sim time 5.35 is due, 3 whole steps of 0.1 (one at a time: step time unknown)
    assert p.steps_due(100.35, 5.0, 0.1) == 1
    p.stepped(1, step_ms=1.0)  # now a batch may last 4 ms: 4 steps
    assert p.batch() == 4
    assert p.steps_due(100.35, 5.1, 0.1) == 2  # 5.35 - 5.1 = 0.25: two steps
    # at 2× the same wall time makes twice the simulated time due
    p.set_speed(2.0, 200.0, 7.0)
    assert p.steps_due(200.1, 7.0, 0.05) == 4
    assert p.next_step_at(7.0, 0.05) == pytest.approx(200.025)


def test_a_run_behind_the_clock_drops_its_debt_instead_of_bursting():
    p = Pacer(realtime=True, now=0.0)
    p.anchor(0.0, 0.0)
    p.stepped(1, step_ms=0.5)
    # 2 s of wall time passed while the simulation stood at 0.1: far more than 0.25 s + dt behind
    assert p.steps_due(2.0, 0.1, 0.01) == 1
    # the clock now runs from (2.0, 0.1): 0.03 s later three steps are due, not 190
    assert p.steps_due(2.03, 0.1, 0.01) == 3


def test_batches_grow_with_fast_steps_and_stay_bounded():
    p = Pacer(realtime=False)
    assert p.batch() == 1  # unknown step time: one at a time
    assert p.steps_due(0.0, 0.0, 0.1) == 1
    p.stepped(1, step_ms=0.5)
    assert p.steps_due(0.0, 0.0, 0.1) == 8  # 4 ms / 0.5 ms, in fast mode whatever the clock says
    p.stepped(8, step_ms=0.001)
    assert p.batch() == BATCH_MAX
    p.stepped(1, step_ms=50.0)
    assert p.batch() == 1
    assert p.next_step_at(0.0, 0.1) is None  # fast mode waits for no clock


def test_pause_single_steps_and_resume():
    p = Pacer(realtime=True, now=0.0)
    p.stepped(1, step_ms=1.0)
    p.pause(1.0, 1.0)
    assert p.shows_paused and p.steps_due(50.0, 1.0, 0.1) == 0 and p.next_step_at(1.0, 0.1) is None
    p.single_steps(5, 2.0, 1.0)
    p.single_steps(3, 2.0, 1.0)  # added to those still owed
    assert p.pending == 8 and not p.shows_paused
    assert p.steps_due(2.0, 1.0, 0.1) == 4  # a batch at a time, clock or not
    assert p.stepped(4, 1.0) and p.pending == 4
    assert p.steps_due(2.0, 1.4, 0.1) == 4
    p.stepped(4, 1.0)
    assert p.pending == 0 and p.shows_paused and p.steps_due(3.0, 1.8, 0.1) == 0
    assert not p.stepped(1, 1.0)  # steps that were not owed change nothing
    p.resume(10.0, 1.8)
    assert not p.paused and p.steps_due(10.0, 1.8, 0.1) == 0 and p.steps_due(10.1, 1.8, 0.1) == 1


def test_a_new_scenario_starts_with_nothing_owed_and_its_step_time_unknown():
    p = Pacer(realtime=True)
    p.single_steps(7, 0.0, 0.0)
    p.stepped(1, step_ms=2.0)
    p.start(False, 5.0, 0.0)
    assert not p.paused and p.pending == 0 and p.step_ms == 0.0 and p.batch() == 1
    p.halt()
    assert p.paused and p.pending == 0


def test_the_realtime_factor_and_behind():
    p = Pacer(realtime=True, now=0.0)
    p.measure(0.2, 0.2, 0.01, running=True)
    assert p.realtime_factor is None  # a window shorter than half a second keeps no value
    p.measure(1.0, 0.5, 0.01, running=True)  # half the pace over one second
    assert p.realtime_factor == pytest.approx(0.5)
    assert not p.behind(1.0)
    p.measure(2.0, 1.0, 0.01, running=True)
    assert p.behind(BEHIND_AFTER_S) and not p.behind(BEHIND_AFTER_S - 0.01)  # behind since the first window began
    p.measure(3.0, 2.0, 0.01, running=True)  # caught up
    assert p.realtime_factor == pytest.approx(1.0) and not p.behind(10.0)
    # at 2× the factor is measured against the asked pace
    p.set_speed(2.0, 3.0, 2.0)
    p.measure(4.0, 4.0, 0.01, running=True)
    assert p.realtime_factor == pytest.approx(1.0)


def test_a_long_dt_is_judged_over_three_steps_and_pauses_reset_the_factor():
    p = Pacer(realtime=True, now=0.0)
    p.measure(2.0, 2.0, 1.0, running=True)  # vicsek's dt = 1: a window needs 3 s
    assert p.realtime_factor is None
    p.measure(3.0, 3.0, 1.0, running=True)
    assert p.realtime_factor == pytest.approx(1.0)
    for stop in ("pause", "fast", "loading"):
        q = Pacer(realtime=True, now=0.0)
        q.measure(1.0, 1.0, 0.01, running=True)
        assert q.realtime_factor == pytest.approx(1.0)
        if stop == "pause":
            q.pause(1.5, 1.5)
        elif stop == "fast":
            q.set_mode("fast", 1.5, 1.5)
        q.measure(3.0, 3.0, 0.01, running=stop != "loading")
        assert q.realtime_factor is None and not q.behind(100.0)
