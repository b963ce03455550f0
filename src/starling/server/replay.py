"""Replay: a recording streamed to the browser app as if it were running live.

A :class:`ReplayRunner` stands where the live :class:`~starling.server.runner.SimulationRunner`
stands (same :class:`~starling.server.runner.Sink`, same scene, frame, status and inspect
messages) so the app draws a recording with the same views, selection, overlays and
charts. Instead of stepping a simulation it moves a *playhead* over the recorded frames:
playing keeps recorded time equal to wall time × ``speed`` (frames that fall between two
published frames are skipped, never queued), ``seek``, ``step`` and the event jumps move it
directly. The scene is rebuilt from the recording's config by constructing the scenario
once, without stepping it, so the environment and the species' looks are exactly the
recorded run's.

Recordings carry no tags, so the carcass blocks a live ecology splits by the species they
came from arrive together in the last (untagged) carcass block.
"""
from __future__ import annotations

import logging
import math
import time
import traceback
from typing import Any, Callable, Optional

import numpy as np

from . import protocol as P
from .threaded import ThreadedRunner
from .live_view import EntityBlock, entity_blocks
from .runner import ClientGone
from .scenes import scene_message
from .. import frames as F

log = logging.getLogger("starling.server")

SceneBuilder = Callable[[Any], Any]
"""Recording → a simulation built from its config (never stepped): the scene's source."""

_EMPTY3 = np.zeros((0, 3), np.float32)


def build_scene_simulation(rec: Any) -> Any:
    """The recorded scenario, constructed from ``rec.config`` and not stepped."""
    from ..config import validate_scenario
    from ..simulation import Simulation

    base_dir = (getattr(rec, "header", None) or {}).get("base_dir")  # where its meshes and height maps live
    return Simulation(validate_scenario(dict(rec.config), str(rec.scenario), base_dir=base_dir), record_debug=False)


def event_frames(steps: np.ndarray, event_steps: np.ndarray) -> np.ndarray:
    """The frame that shows each event: the first frame at or after its step (the last frame
    for an event after the recording's end). ``steps`` must be increasing."""
    steps = np.asarray(steps, dtype=np.int64)
    if steps.size == 0:
        return np.zeros(len(event_steps), np.int64)
    index = np.searchsorted(steps, np.asarray(event_steps, dtype=np.int64), side="left")
    return np.minimum(index, steps.size - 1).astype(np.int64)


def due_frame(times: np.ndarray, anchor_time: float, elapsed: float, speed: float, current: int) -> int:
    """The frame playback shows ``elapsed`` wall seconds after it left ``anchor_time`` at
    ``speed``: the last frame whose recorded time has come, never before ``current`` (a
    playhead only moves forward while it plays) and never past the last frame."""
    due = anchor_time + elapsed * speed
    index = int(np.searchsorted(times, due + 1e-9, side="right")) - 1
    return min(max(index, current), len(times) - 1)


def metrics_at(series: dict[str, dict[str, np.ndarray]], step: int) -> tuple[dict[str, dict[str, Any]], int, float]:
    """Each population's last metric sample taken at or before ``step``.

    Returns ``(metrics, sample_step, sample_time)`` with the metrics shaped as the live
    status sends them (population → name → value, NaN → None); ``(-1, 0.0)`` and no
    population when no sample is that early.
    """
    out: dict[str, dict[str, Any]] = {}
    sample_step, sample_time = -1, 0.0
    for population, columns in series.items():
        steps = np.asarray(columns.get("step", ()), dtype=np.int64)
        j = int(np.searchsorted(steps, step, side="right")) - 1
        if j < 0:
            continue
        out[population] = P.jsonable({
            name: float(values[j]) for name, values in columns.items() if name not in ("step", "time")
        })
        if int(steps[j]) > sample_step:
            sample_step = int(steps[j])
            sample_time = float(columns["time"][j]) if "time" in columns else 0.0
    return out, sample_step, sample_time


class ReplayRunner(ThreadedRunner):
    """Streams a recording to a :class:`Sink`, answering the replay's control messages.

    ``rec`` follows :func:`starling.recording.open_recording`'s interface; ``label`` is
    what the app shows as the recording's name (the file, by default the scenario's).
    """

    thread_name = "starling-replay"

    def __init__(
        self,
        rec: Any,
        *,
        label: Optional[str] = None,
        max_fps: float = 60.0,
        status_hz: float = 4.0,
        scene_builder: Optional[SceneBuilder] = None,
    ) -> None:
        self.rec = rec
        self.label = label or str(rec.scenario)
        self.scenario_name = str(rec.scenario)
        self.mode = "realtime"
        self.speed = 1.0
        self.max_fps = max_fps
        self.status_interval = 1.0 / status_hz
        self.n_frames = int(rec.n_frames)
        self.steps = np.asarray(rec.steps, dtype=np.int64)
        self.times = np.asarray(rec.times, dtype=np.float64)
        self.species = list(rec.species)
        self.frame_index = 0
        self.playing = False
        self.error: Optional[str] = None
        self.loading = True
        self.frames_published = 0
        self._build_scene = scene_builder or build_scene_simulation
        self._events = [dict(e) for e in rec.events]
        self._event_frames = event_frames(self.steps, [int(e["step"]) for e in self._events])
        self._metrics = {name: dict(columns) for name, columns in rec.metrics.items()}
        self._state_names = {name: list(rec.state_names(name)) for name in self.species}
        self._entities: list[EntityBlock] = []
        self._scene: Optional[dict] = None
        self._init_thread()
        self._encoder = F.FrameEncoder()
        self._selections: dict[int, tuple[str, int]] = {}
        self._current: dict[str, Any] = {}
        self._current_index = -1
        self._sequence = 0
        self._anchor_wall = 0.0
        self._anchor_time = 0.0
        self._frame_dirty = True
        self._status_dirty = True
        self._last_frame_wall = -math.inf
        self._last_status_wall = -math.inf
        self._window_wall = time.perf_counter()
        self._window_frames = 0
        self._window_steps = 0
        self._window_step0 = 0
        self._frames_per_s = 0.0
        self._steps_per_s = 0.0
        self._read_ms = 0.0
        self._encode_ms = 0.0
        self.publish_ms = 0.0
        """Reading plus encoding the last published frame, in milliseconds."""

    # ---- life cycle (the same surface as the live runner) ----------------------------

    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def scenario_names(self) -> list[str]:
        return [self.scenario_name]

    def _run(self) -> None:
        try:
            self._setup()
        except Exception as exc:  # a recording whose scene cannot be rebuilt: say why, keep serving
            log.error("cannot rebuild the recorded scene\n%s", traceback.format_exc())
            self.error = f"cannot rebuild the scene of '{self.label}': {exc}"
            self.loading = False
            self._sink_call("post_event", P.dumps({"type": "error", "message": self.error}), None)
            self._post_status(time.perf_counter())
            while not self._stop.is_set():
                self._wake.wait(self.status_interval)
                self._wake.clear()
                self._drain()
            return
        while not self._stop.is_set():
            self._wake.clear()
            self._drain()
            if self._stop.is_set():
                break
            now = time.perf_counter()
            if self.playing:
                self._advance(now)
            if self._frame_dirty and now - self._last_frame_wall >= 1.0 / self.max_fps:
                self._publish_frame(now)
            if self._status_dirty or now - self._last_status_wall >= self.status_interval:
                self._post_status(now)
            self._wake.wait(self._idle_timeout(time.perf_counter()))

    def _setup(self) -> None:
        sim = self._build_scene(self.rec)
        self._entities = entity_blocks(sim)
        # The live app's scene message, made from the rebuilt (never stepped) simulation.
        scene = scene_message(sim, self.scenario_name, self.scenario_names(), self._entities)
        scene["player"] = {action: False for action in scene["player"]}
        scene["replay"] = self.timeline()
        self._scene = scene
        self.loading = False
        self._sink_call("post_scene", P.dumps(scene))
        self._publish_frame(time.perf_counter())
        self._post_status(time.perf_counter())

    def timeline(self) -> dict[str, Any]:
        """What the app's timeline draws: every frame's step and time, and the event markers."""
        events = []
        for event, frame in zip(self._events, self._event_frames):
            events.append({
                "frame": int(frame), "step": int(event["step"]), "time": float(event["time"]),
                "kind": str(event["kind"]), "species": event.get("species"), "uid": event.get("uid"),
            })
        return {
            "file": self.label, "n_frames": self.n_frames, "every": int(self.rec.every),
            "steps": self.steps.tolist(), "times": self.times.tolist(), "events": events,
        }

    def _advance(self, now: float) -> None:
        """Move the playhead to the last frame whose recorded time has come; stop at the end."""
        index = due_frame(self.times, self._anchor_time, now - self._anchor_wall, self.speed, self.frame_index)
        if index != self.frame_index:
            self.frame_index = index
            self._frame_dirty = True
        if index >= self.n_frames - 1:
            self.playing = False
            self._frame_dirty = True  # the last frame goes out flagged paused
            self._status_dirty = True

    def _idle_timeout(self, now: float) -> float:
        waits = [self.status_interval - (now - self._last_status_wall)]
        if self._frame_dirty:
            waits.append(1.0 / self.max_fps - (now - self._last_frame_wall))
        if self.playing and self.frame_index + 1 < self.n_frames:
            next_time = self.times[self.frame_index + 1]
            waits.append(self._anchor_wall + (next_time - self._anchor_time) / self.speed - now)
        return max(0.0005, min(waits))

    def _reanchor(self) -> None:
        self._anchor_wall = time.perf_counter()
        self._anchor_time = float(self.times[self.frame_index]) if self.n_frames else 0.0

    # ---- commands -------------------------------------------------------------------

    def _apply(self, client_id: Optional[int], cmd: Any) -> None:
        kind = getattr(cmd, "type", None)
        if kind in P.LIVE_ONLY:
            self._reply(client_id, {
                "type": "error", "field": "type",
                "message": f"type: '{kind}' changes a running simulation; a replay only shows what was recorded",
            })
            return
        if isinstance(cmd, P.Pause):
            self.playing = False
            self._frame_dirty = True
        elif isinstance(cmd, P.Resume):
            if self.frame_index >= self.n_frames - 1:
                self._move_to(0)  # play at the end starts again from the beginning
            self.playing = self.n_frames > 1
            self._reanchor()
        elif isinstance(cmd, P.Step):
            self.playing = False
            self._move_to(min(self.frame_index + cmd.n, self.n_frames - 1))
        elif isinstance(cmd, P.Speed):
            self.speed = float(cmd.multiplier)
            self._reanchor()
        elif isinstance(cmd, P.Seek):
            if cmd.frame >= self.n_frames:
                self._reply(client_id, {
                    "type": "error", "field": "frame",
                    "message": f"frame: {cmd.frame} is out of range; this recording has {self.n_frames} frames "
                               f"(0 to {self.n_frames - 1})",
                })
                return
            self._move_to(int(cmd.frame))
        elif isinstance(cmd, (P.NextEvent, P.PrevEvent)):
            self._jump(client_id, cmd)
        elif isinstance(cmd, P.Select):
            self._select(client_id, cmd)
        elif isinstance(cmd, (P.Deselect, ClientGone)):
            self._selections.pop(client_id, None)
        else:
            raise TypeError(f"unhandled command {type(cmd).__name__}")
        self._status_dirty = True

    def _move_to(self, index: int) -> None:
        self.frame_index = index
        self._reanchor()
        self._frame_dirty = True
        self._last_frame_wall = -math.inf  # a seek is shown at once, not at the next frame slot

    def _jump(self, client_id: Optional[int], cmd: Any) -> None:
        forward = isinstance(cmd, P.NextEvent)
        kinds = sorted({str(e["kind"]) for e in self._events})
        if cmd.kind is not None and cmd.kind not in kinds:
            self._reply(client_id, {
                "type": "error", "field": "kind",
                "message": f"kind: no '{cmd.kind}' events in this recording; it has: {', '.join(kinds) or 'none'}",
            })
            return
        order = range(len(self._events)) if forward else range(len(self._events) - 1, -1, -1)
        found = None
        for i in order:
            frame = int(self._event_frames[i])
            if (frame > self.frame_index if forward else frame < self.frame_index) and (
                    cmd.kind is None or self._events[i]["kind"] == cmd.kind):
                found = i
                break
        if found is None:
            self._reply(client_id, {"type": "ack", "action": cmd.type, "result": None})
            return
        self._move_to(int(self._event_frames[found]))
        event = {k: self._events[found].get(k) for k in ("step", "time", "kind", "species", "uid", "detail")}
        self._reply(client_id, {"type": "ack", "action": cmd.type,
                                "result": P.jsonable({"frame": self.frame_index, "event": event})})

    def _select(self, client_id: Optional[int], cmd: P.Select) -> None:
        if client_id is None:
            return
        if cmd.species not in self.species:
            self._reply(client_id, {
                "type": "error", "field": "species",
                "message": f"species: unknown species '{cmd.species}'; this recording has: {', '.join(self.species)}",
            })
            return
        self._selections[client_id] = (cmd.species, int(cmd.uid))
        self._send_inspect(client_id, cmd.species, int(cmd.uid))

    # ---- output ---------------------------------------------------------------------

    def _frame(self) -> dict[str, Any]:
        """The recorded populations at the playhead (read once per frame shown)."""
        if self._current_index != self.frame_index:
            t0 = time.perf_counter()
            self._current = dict(self.rec.frame(self.frame_index))
            self._read_ms = (time.perf_counter() - t0) * 1e3
            self._current_index = self.frame_index
        return self._current

    def _states(self, frame: dict[str, Any]) -> list[F.SpeciesState]:
        def state(population: Optional[Any]) -> F.SpeciesState:
            if population is None or len(population.uid) == 0:
                return F.SpeciesState(_EMPTY3, _EMPTY3, _EMPTY3, _EMPTY3, np.zeros(0, np.int64))
            return F.SpeciesState(population.position, population.velocity, population.forward, population.up,
                                  population.uid)

        states = [state(frame.get(name)) for name in self.species]
        for block in self._entities:
            # tagged carcass blocks stay empty: the untagged block shows every recorded carcass
            states.append(state(None if block.tag is not None else frame.get(block.population)))
        return states

    def _publish_frame(self, now: float) -> None:
        if self._scene is None or not self.n_frames:
            return
        t0 = time.perf_counter()
        frame = self._frame()
        t1 = time.perf_counter()
        self._sequence += 1
        data = self._encoder.encode(
            self._states(frame), step=int(self.steps[self.frame_index]), time=float(self.times[self.frame_index]),
            dt=float(self.rec.dt), sequence=self._sequence, paused=not self.playing,
        )
        self._encode_ms = (time.perf_counter() - t1) * 1e3
        self.publish_ms = (time.perf_counter() - t0) * 1e3
        self._sink_call("post_frame", data)
        self._last_frame_wall = now
        self._frame_dirty = False
        self._window_frames += 1
        self.frames_published += 1
        for client_id, (species, uid) in list(self._selections.items()):
            self._send_inspect(client_id, species, uid)

    def inspect(self, species: str, uid: int) -> Optional[dict[str, Any]]:
        """What the recording knows of one animal at the current frame (None: not alive then)."""
        population = self._frame().get(species)
        if population is None:
            return None
        rows = np.flatnonzero(np.asarray(population.uid) == uid)
        if rows.size == 0:
            return None
        row = int(rows[0])
        velocity = [float(v) for v in population.velocity[row]]
        state = int(population.state[row])
        names = self._state_names.get(species, [])
        return {
            "species": species, "uid": int(uid), "step": int(self.steps[self.frame_index]),
            "position": [float(v) for v in population.position[row]], "velocity": velocity,
            "speed": math.sqrt(sum(v * v for v in velocity)),
            "state": names[state] if 0 <= state < len(names) else None,
        }

    def _send_inspect(self, client_id: int, species: str, uid: int) -> None:
        info = self.inspect(species, uid)
        if info is None:
            self._selections.pop(client_id, None)
            message = {"type": "inspect", "species": species, "uid": uid, "alive": False}
        else:
            message = {"type": "inspect", "alive": True, **info}
        self._sink_call("post_inspect", client_id, P.dumps(message))

    def _post_status(self, now: float) -> None:
        span = now - self._window_wall
        if span >= 0.5:
            self._frames_per_s = self._window_frames / span
            step = int(self.steps[self.frame_index]) if self.n_frames else 0
            self._steps_per_s = max(0, step - self._window_step0) / span if self.playing else 0.0
            self._window_wall, self._window_frames, self._window_step0 = now, 0, step
        counts: dict[str, int] = {}
        states: dict[str, dict[str, int]] = {}
        step, sim_time = 0, 0.0
        metrics: dict[str, Any] = {}
        metrics_step, metrics_time = -1, 0.0
        if self._scene is not None and self.n_frames:
            frame = self._frame()
            step, sim_time = int(self.steps[self.frame_index]), float(self.times[self.frame_index])
            for name in self.species:
                population = frame.get(name)
                counts[name] = 0 if population is None else int(len(population.uid))
                names = self._state_names.get(name) or []
                if names and population is not None:
                    tally = np.bincount(np.asarray(population.state, np.int64).clip(-1) + 1, minlength=len(names) + 1)
                    states[name] = {names[i]: int(tally[i + 1]) for i in range(len(names))}
            metrics, metrics_step, metrics_time = metrics_at(self._metrics, step)
        status = {
            "type": "status", "scenario": self.scenario_name, "loading": self.loading, "error": self.error,
            "step": step, "time": sim_time, "dt": float(self.rec.dt), "paused": not self.playing,
            "mode": self.mode, "speed": self.speed, "steps_per_s": self._steps_per_s,
            "frames_per_s": self._frames_per_s, "step_ms": 0.0, "encode_ms": self._encode_ms,
            "read_ms": self._read_ms, "metrics_ms": 0.0, "frame_bytes": self._encoder.last_bytes,
            "counts": counts, "states": states, "metrics": metrics, "metrics_step": metrics_step,
            "metrics_time": metrics_time,
            "replay": {"file": self.label, "frame": self.frame_index, "n_frames": self.n_frames,
                       "playing": self.playing},
        }
        self._sink_call("post_status", P.dumps(status))
        self._last_status_wall = now
        self._status_dirty = False

