"""When the live simulation steps, and how well it keeps up.

The runner's thread asks a :class:`Pacer` how many steps to take now and how long it may
sleep; the pacer holds everything that decides it — the mode (``realtime`` or ``fast``),
the speed multiplier, pause and single steps — and measures the realtime factor the
status reports. It reads no clock and touches no simulation: every call is given the
wall time and the simulated time, so the pacing rules are tested without waiting.

Realtime mode keeps simulated time equal to wall time × ``speed`` from an *anchor*
(a wall time and the simulated time then). When a step is slower than the clock, the
debt is dropped (the anchor moves to now) instead of bursting to catch up: a viewer
sees a slower flock, never a jerky one. Small steps are batched so that one call of
``sim.step(n)`` lasts a few milliseconds and commands are still picked up promptly.
"""
from __future__ import annotations

from typing import Optional

#: a realtime run is "behind" when its realtime factor stays under this for BEHIND_AFTER_S
BEHIND_BELOW = 0.9
BEHIND_AFTER_S = 2.0
#: a batch of steps lasts about this long (ms), and holds at most BATCH_MAX steps
BATCH_MS = 4.0
BATCH_MAX = 64
#: the debt, in wall seconds × speed, beyond which a slow run re-anchors instead of catching up
DEBT_DROPPED_S = 0.25


class Pacer:
    """The live run's clock: how many steps are due, how long to wait, the realtime factor."""

    def __init__(self, realtime: bool = True, now: float = 0.0) -> None:
        self.mode = "realtime" if realtime else "fast"
        self.speed = 1.0
        self.paused = False
        #: single steps asked for (``step`` while paused) and not yet taken
        self.pending = 0
        #: the last step's duration in ms; 0 until the scenario has stepped once
        self.step_ms = 0.0
        self._anchor_wall = now
        self._anchor_sim = 0.0
        # the realtime factor's window: measured from this wall time and simulated time
        self._rt_wall = now
        self._rt_sim = 0.0
        #: simulated seconds per wall second over ``speed``; None while it is not measured
        self.realtime_factor: Optional[float] = None
        self._behind_since: Optional[float] = None

    # ---- what the thread asks ---------------------------------------------------------

    @property
    def shows_paused(self) -> bool:
        """Whether viewers see a paused run (single steps being taken are not a pause yet)."""
        return self.paused and not self.pending

    def batch(self) -> int:
        """Steps per call: one at a time until the step time is known, then a few ms' worth."""
        if self.step_ms <= 0.0:
            return 1
        return int(max(1, min(BATCH_MAX, BATCH_MS / self.step_ms)))

    def steps_due(self, now: float, sim_time: float, dt: float) -> int:
        """How many steps to take now (0: wait). A run behind the clock forgets its debt."""
        if self.pending:
            return min(self.pending, self.batch())
        if self.paused:
            return 0
        if self.mode == "fast":
            return self.batch()
        due = self._anchor_sim + (now - self._anchor_wall) * self.speed
        behind = due - sim_time
        if behind > DEBT_DROPPED_S * self.speed + dt:
            self._anchor_sim = sim_time
            self._anchor_wall = now
            return 1
        n = int(behind / dt + 1e-6) if behind > 0.0 else 0
        return min(n, self.batch())

    def next_step_at(self, sim_time: float, dt: float) -> Optional[float]:
        """The wall time the next realtime step is due; None when no step is scheduled by the clock."""
        if self.paused or self.mode != "realtime":
            return None
        return self._anchor_wall + (sim_time + dt - self._anchor_sim) / self.speed

    def stepped(self, n: int, step_ms: float) -> bool:
        """``n`` steps were taken, the last lasting ``step_ms``; True when single steps were used up."""
        self.step_ms = step_ms
        if not self.pending:
            return False
        self.pending = max(0, self.pending - n)
        return True

    # ---- what changes it ---------------------------------------------------------------

    def anchor(self, now: float, sim_time: float) -> None:
        """Pace from here: the clock restarts at ``sim_time`` now, and so does the realtime window."""
        self._anchor_wall = now
        self._anchor_sim = sim_time
        self.restart_window(now, sim_time)

    def restart_window(self, now: float, sim_time: float) -> None:
        """Pacing changed (pause, resume, speed, mode, another scenario): measure afresh from now."""
        self._rt_wall = now
        self._rt_sim = sim_time
        self.realtime_factor = None
        self._behind_since = None

    def pause(self, now: float, sim_time: float) -> None:
        self.paused = True
        self.restart_window(now, sim_time)

    def resume(self, now: float, sim_time: float) -> None:
        self.paused = False
        self.pending = 0
        self.anchor(now, sim_time)

    def single_steps(self, n: int, now: float, sim_time: float) -> None:
        """Pause and take ``n`` more steps (added to those still owed)."""
        self.paused = True
        self.pending += n
        self.restart_window(now, sim_time)

    def set_speed(self, multiplier: float, now: float, sim_time: float) -> None:
        self.speed = float(multiplier)
        self.anchor(now, sim_time)

    def set_mode(self, mode: str, now: float, sim_time: float) -> None:
        self.mode = mode
        self.anchor(now, sim_time)

    def start(self, paused: bool, now: float, sim_time: float) -> None:
        """A scenario starts (or replaces another): nothing owed, its step time unknown."""
        self.paused = paused
        self.pending = 0
        self.step_ms = 0.0
        self.anchor(now, sim_time)

    def halt(self) -> None:
        """The run failed: stay paused, owe nothing."""
        self.paused = True
        self.pending = 0

    # ---- how well it keeps up ----------------------------------------------------------

    def measure(self, now: float, sim_time: float, dt: float, *, running: bool) -> None:
        """Close the realtime window if it is long enough.

        ``running`` is false while no scenario is loaded or one is loading; then, and while
        paused, single-stepping or in fast mode, the factor is None. A window spans at least
        three steps' worth of time, so a scenario with a long ``dt`` (vicsek: 1 s) is not
        judged on one step more or less.
        """
        if not running or self.paused or self.pending or self.mode != "realtime":
            self.restart_window(now, sim_time)
            return
        span = now - self._rt_wall
        if span < max(0.5, 3.0 * dt / max(self.speed, 1e-9)):
            return  # keep the last value until the window is long enough
        factor = (sim_time - self._rt_sim) / span / max(self.speed, 1e-9)
        if factor < BEHIND_BELOW:
            if self._behind_since is None:
                self._behind_since = self._rt_wall  # the whole window was behind
        else:
            self._behind_since = None
        self.realtime_factor = factor
        self._rt_wall, self._rt_sim = now, sim_time

    def behind(self, now: float) -> bool:
        """Whether the run has stayed behind the clock for BEHIND_AFTER_S."""
        return self._behind_since is not None and now - self._behind_since >= BEHIND_AFTER_S
