"""The simulation thread behind the web server.

One :class:`SimulationRunner` owns one :class:`starling.Simulation` and is the
only code that ever touches it: every request from a browser becomes a command
on a queue that this thread drains between steps. That keeps the simulation
single-threaded from its own point of view (no locks in the core) and lets the
asyncio side stay responsive while a step is running.

Pacing (realtime or fast, pause, single steps, the realtime factor) is decided by a
:class:`~starling.server.pacing.Pacer`, which the thread asks how many steps are due
and how long it may sleep.

Output goes to a :class:`Sink` (the web hub) and never blocks: a frame is
encoded at most ``max_fps`` times a second and handed over; whether a slow
socket ever sends it is the hub's concern, so no client can slow the simulation.
"""
from __future__ import annotations

import concurrent.futures
import logging
import math
import threading
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Optional, Protocol


from . import protocol as P
from .pacing import Pacer
from .live_view import EntityBlock, entity_blocks, frame_states, read_readouts, species_readouts
from .scenes import Loader, Names, default_scenario_names, scenario_loader, scene_message
from .threaded import ThreadedRunner
from .. import frames as F
from ..config import ConfigError, Problem
from ..prepare import can_prepare, prepare

log = logging.getLogger("starling.server")


LABELLED_AT_MOST = 12
"""Species this small get a label over each animal's head (its state, its rank): a pride, not a herd or a school."""
EVENTS_AT_MOST = 50
"""Deaths told per status at most (a feeding frenzy is summed up by the rest's count)."""

class Sink(Protocol):
    """Where the runner's output goes. Every method must return at once (called from the sim thread)."""

    def post_frame(self, frame: bytes) -> None: ...

    def post_status(self, text: str) -> None: ...

    def post_scene(self, text: str) -> None: ...

    def post_event(self, text: str, client_id: Optional[int] = None) -> None: ...

    def post_inspect(self, client_id: int, text: str) -> None: ...


@dataclass(frozen=True)
class ClientGone:
    """Internal command: a client disconnected, forget its selection."""


class _Call:
    """A function to run in the simulation's thread between two steps (see :meth:`SimulationRunner.call`)."""

    def __init__(self, fn: Callable[["SimulationRunner"], Any]):
        self.fn = fn
        self.future: "concurrent.futures.Future[Any]" = concurrent.futures.Future()


class SimulationRunner(ThreadedRunner):
    """Runs a simulation in a background thread and streams it to a :class:`Sink`.

    ``loader(name, seed)`` builds a simulation and ``scenario_names()`` lists the
    scenarios a client may switch to; both default to the public ``starling`` API.
    """

    thread_name = "starling-sim"

    def __init__(
        self,
        scenario: str,
        *,
        realtime: bool = True,
        seed: Optional[int] = None,
        max_fps: float = 60.0,
        status_hz: float = 4.0,
        loader: Optional[Loader] = None,
        scenario_names: Optional[Names] = None,
        recorder: Optional[Callable[[Any, str], Any]] = None,
        on_loading: Optional[Callable[[str, float], None]] = None,
        prepare_kernels: bool = True,
    ) -> None:
        self.scenario_name = scenario
        # ``on_loading(stage, fraction)``: each loading stage as it starts (the terminal's progress bar);
        # called in the simulation's thread. ``prepare_kernels``: compile a loaded scenario's kernels
        # on a copy, in stages, before it runs (see starling.prepare).
        self._on_loading = on_loading
        self._prepare_kernels = prepare_kernels
        # ``recorder(sim, name)`` starts recording a newly loaded simulation (``serve --record``);
        # what it returns is closed when another scenario is loaded or the server stops.
        self._make_recorder = recorder
        self.recorder: Any = None
        self.seed = seed
        self.pacer = Pacer(realtime, time.perf_counter())
        self.max_fps = max_fps
        self.status_interval = 1.0 / status_hz
        self.sim: Any = None
        self.error: Optional[str] = None
        self.loading = False
        self.loading_stage: Optional[str] = None
        self.loading_progress: Optional[float] = None
        self._loading_beat: Optional[threading.Event] = None
        self._last_status_text: Optional[str] = None
        self._status_lock = threading.Lock()  # the heartbeat never posts an older status after a newer one
        self._loader = loader or scenario_loader()
        self._names = scenario_names or default_scenario_names
        self._init_thread()
        self._encoder = F.FrameEncoder()
        self._selections: dict[int, tuple[str, int]] = {}
        self._journal_seq: Optional[int] = None
        self._journal_sim: Any = None
        self._entities: list[EntityBlock] = []
        self._sequence = 0
        self._last_frame_wall = -math.inf
        self._frame_dirty = True
        self._status_dirty = True
        self._last_status_wall = -math.inf
        self._last_metrics_wall = -math.inf
        self._metrics: dict[str, Any] = {}
        self._metrics_step = -1
        self._metrics_time = 0.0
        self._metrics_ms = 0.0
        self._window_wall = time.perf_counter()
        self._window_steps = 0
        self._window_frames = 0
        self._steps_per_s = 0.0
        self._frames_per_s = 0.0
        self._encode_ms = 0.0
        self.steps_taken = 0
        self.frames_published = 0
        self._observer: Any = None

    @property
    def paused(self) -> bool:
        return self.pacer.paused

    @property
    def mode(self) -> str:
        return self.pacer.mode

    @property
    def speed(self) -> float:
        return self.pacer.speed

    @property
    def realtime_factor(self) -> Optional[float]:
        return self.pacer.realtime_factor

    def _sim_time(self) -> float:
        return float(self.sim.time) if self.sim is not None else 0.0

    # ---- life cycle (called from the event loop's thread) ---------------------------

    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def scenario_names(self) -> list[str]:
        """The scenarios a client may switch to (built-in names only, never paths)."""
        return list(self._names())

    def _run(self) -> None:
        try:
            self._loop()
        finally:
            self._stop_recording()

    def _stop_recording(self) -> None:
        if self.recorder is not None:
            recorder, self.recorder = self.recorder, None
            try:
                recorder.close()
            except Exception as exc:
                log.error("could not finish the recording: %s", exc)

    def _start_recording(self, sim: Any, name: str) -> None:
        self._stop_recording()
        if self._make_recorder is None:
            return
        try:
            self.recorder = self._make_recorder(sim, name)
        except Exception as exc:  # the live session goes on unrecorded, and says so
            message = f"cannot record '{name}': {exc}"
            log.error(message)
            self._sink_call("post_event", P.dumps({"type": "error", "message": message}), None)

    def _loop(self) -> None:
        self._load(self.scenario_name, self.seed, client_id=None)
        while not self._stop.is_set():
            self._wake.clear()
            self._drain()
            if self._stop.is_set():
                break
            now = time.perf_counter()
            sim = self.sim
            if sim is None:
                self._maybe_status(now)
                self._wake.wait(self.status_interval)
                continue
            n = self.pacer.steps_due(now, float(sim.time), float(sim.dt))
            if n:
                try:
                    t0 = time.perf_counter()
                    sim.step(n)
                    elapsed = time.perf_counter() - t0
                except Exception as exc:  # a broken scenario must not kill the server
                    self._fail(f"simulation error at step {sim.step_count}: {exc}")
                    continue
                if self.pacer.stepped(n, float(getattr(sim, "last_step_ms", elapsed * 1e3 / n))):
                    self._status_dirty = True
                self._window_steps += n
                self.steps_taken += n
                self._frame_dirty = True
            now = time.perf_counter()
            if self._frame_dirty and now - self._last_frame_wall >= 1.0 / self.max_fps:
                self._publish_frame(now)
            self._maybe_status(now)
            if not n:
                self._wake.wait(self._idle_timeout(time.perf_counter()))

    def _idle_timeout(self, now: float) -> float:
        """Sleep until the next step is due, a frame or status is owed, or a command wakes us."""
        waits = [self.status_interval - (now - self._last_status_wall)]
        if self._frame_dirty:
            waits.append(1.0 / self.max_fps - (now - self._last_frame_wall))
        if self.sim is not None:
            due = self.pacer.next_step_at(float(self.sim.time), float(self.sim.dt))
            if due is not None:
                waits.append(due - now)
        return max(0.0005, min(waits))

    # ---- commands -------------------------------------------------------------------

    def _apply(self, client_id: Optional[int], cmd: Any) -> None:
        now, sim_time = time.perf_counter(), self._sim_time()
        if isinstance(cmd, P.Pause):
            self.pacer.pause(now, sim_time)
        elif isinstance(cmd, P.Resume):
            self.pacer.resume(now, sim_time)
        elif isinstance(cmd, P.Step):
            self.pacer.single_steps(cmd.n, now, sim_time)
        elif isinstance(cmd, P.Speed):
            self.pacer.set_speed(cmd.multiplier, now, sim_time)
        elif isinstance(cmd, P.Mode):
            self.pacer.set_mode(cmd.mode, now, sim_time)
        elif isinstance(cmd, P.Select):
            self._select(client_id, cmd)
        elif isinstance(cmd, P.Deselect):
            self._selections.pop(client_id, None)
        elif isinstance(cmd, ClientGone):
            self._selections.pop(client_id, None)
        elif isinstance(cmd, P.SwitchScenario):
            names = self.scenario_names()
            if cmd.name not in names:
                self._reply(client_id, {
                    "type": "error", "field": "name",
                    "message": f"name: unknown scenario '{cmd.name}'; available: {', '.join(names)}",
                })
                return
            self._load(cmd.name, cmd.seed, client_id=client_id, paused=cmd.paused)
        elif isinstance(cmd, P.Restart):
            self._restart(client_id, cmd.keep_edits)
        elif isinstance(cmd, (P.Fire, P.ThrowApple, P.MovePlayer)):
            self._player_action(client_id, cmd)
        elif isinstance(cmd, _Call):
            try:
                cmd.future.set_result(cmd.fn(self))
            except BaseException as exc:  # handed to the caller, who answers its client
                cmd.future.set_exception(exc)
        else:
            raise TypeError(f"unhandled command {type(cmd).__name__}")
        self._status_dirty = True

    # ---- the editor (docs/editor.md) -------------------------------------------------

    def call(self, fn: Callable[["SimulationRunner"], Any], timeout: float = 60.0) -> Any:
        """Run ``fn(self)`` in the simulation's thread between two steps; its result or exception.

        Blocks the caller (an HTTP handler runs it in a worker thread); raises
        ``TimeoutError`` when the thread does not answer within ``timeout`` seconds.
        """
        cmd = _Call(fn)
        self.submit(None, cmd)
        try:
            return cmd.future.result(timeout)
        except concurrent.futures.TimeoutError:
            raise TimeoutError(f"the simulation thread did not answer within {timeout:g} s") from None

    def config_data(self) -> dict:
        """The running config as plain data (in the simulation's thread)."""
        if self.sim is None:
            raise ConfigError([Problem("", "no simulation is loaded")])
        return self.sim.config_data()

    def apply_config(self, data: dict) -> dict:
        """Validate and apply a whole config to the running simulation (in its thread).

        A bad config raises ``ConfigError`` and changes nothing; a good one keeps every
        animal where it is and tells the viewers the new scene.
        """
        if self.sim is None:
            raise ConfigError([Problem("", "no simulation is loaded")])
        self.sim.reconfigure(data, source="editor")
        self._entities = entity_blocks(self.sim)
        self._sink_call("post_scene", P.dumps(self.scene_message()))
        self._frame_dirty = True
        self._status_dirty = True
        return {"step": int(self.sim.step_count)}

    def _restart(self, client_id: Optional[int], keep_edits: bool) -> None:
        """The scenario from its first step, same seed; with the editor's changes or as shipped."""
        if self.sim is None:
            return
        edited = self.sim.config_data() if keep_edits else None
        paused = self.paused
        self._load(self.scenario_name, self.seed, client_id=client_id, paused=paused)
        if edited is not None and self.sim is not None and edited != self.sim.config_data():
            try:
                self.apply_config(edited)  # a fresh start that keeps the edits: same config, new first step
            except ConfigError as err:
                self._reply(client_id, {"type": "error", "message": f"restart: the edits no longer apply: {err}"})
        self._reply(client_id, {"type": "ack", "action": "restart", "result": {"keep_edits": keep_edits}})

    def _select(self, client_id: Optional[int], cmd: P.Select) -> None:
        if client_id is None:
            return
        if self.sim is None or cmd.species not in list(self.sim.species):
            known = ", ".join(self.sim.species) if self.sim is not None else "none loaded"
            self._reply(client_id, {
                "type": "error", "field": "species",
                "message": f"species: unknown species '{cmd.species}'; this scenario has: {known}",
            })
            return
        self._selections[client_id] = (cmd.species, int(cmd.uid))
        self._send_inspect(client_id, cmd.species, int(cmd.uid))

    def _player_action(self, client_id: Optional[int], cmd: Any) -> None:
        method = P.PLAYER_ACTIONS[cmd.type]
        fn = getattr(self.sim, method, None) if self.sim is not None else None
        if fn is None or not callable(fn):
            self._reply(client_id, {"type": "error", "message": f"{method} is not available in this scenario"})
            return
        if cmd.type == "fire":
            result = fn(cmd.origin, cmd.direction)
        elif cmd.type == "throw_apple":
            result = fn(cmd.origin, cmd.velocity)
        else:
            result = fn(cmd.position, cmd.direction) if cmd.direction is not None else fn(cmd.position)
        ack: dict[str, Any] = {"type": "ack", "action": cmd.type}
        if result is None or isinstance(result, (bool, int, float, str, list, tuple, dict)):
            ack["result"] = P.jsonable(result)
        self._reply(client_id, ack)
        self._frame_dirty = True

    def _load(self, name: str, seed: Optional[int], client_id: Optional[int], paused: bool = False) -> None:
        """Build a scenario and compile its kernels; on failure keep whatever ran before and say why.

        While it loads, the status says ``loading_stage`` and ``loading_progress`` (posted at each
        stage, and re-posted every status interval by a heartbeat while one stage lasts).
        """
        self.loading = True
        self._start_loading_heartbeat()
        try:
            self._loading(f"building {name}", 0.0)
            sim = self._loader(name, seed)
            if self._prepare_kernels and can_prepare(sim):
                prepare(sim, self._rehearsal(), self._loading)
        except Exception as exc:
            log.error("could not load scenario %r: %s", name, exc)
            self._end_loading()
            # the time spent loading is no debt of the scenario still running
            self.pacer.anchor(time.perf_counter(), self._sim_time())
            message = {"type": "error", "message": f"could not load scenario '{name}': {exc}"}
            if client_id is None:
                self.error = message["message"]
                self._sink_call("post_event", P.dumps(message), None)
            else:
                self._reply(client_id, message)
            self._post_status_now()
            return
        if self._observer is not None:
            self._observer.close()
        self._start_recording(sim, name)
        self.sim = sim
        # the frames and the live metrics watch the run through the simulation's observer seam
        self._observer = sim.observe(self._on_step) if hasattr(sim, "observe") else None
        self.scenario_name = name
        self.seed = seed
        self.error = None
        self._end_loading()
        self.pacer.start(paused, time.perf_counter(), self._sim_time())
        self._selections.clear()
        self._metrics = {}
        self._metrics_step = -1
        self._last_metrics_wall = -math.inf
        self._entities = entity_blocks(sim)
        self._sink_call("post_scene", P.dumps(self.scene_message()))
        self._frame_dirty = True
        self._last_frame_wall = -math.inf
        self._publish_frame(time.perf_counter())
        self._post_status_now()

    def _loading(self, stage: str, fraction: float) -> None:
        """A loading stage starts: tell the terminal and the viewers."""
        self.loading_stage, self.loading_progress = stage, float(fraction)
        if self._on_loading is not None:
            try:
                self._on_loading(stage, float(fraction))
            except Exception as exc:  # a broken progress display must not stop the load
                log.warning("loading progress display failed: %s", exc)
        self._post_status_now()

    def _start_loading_heartbeat(self) -> None:
        """Re-post the last status every status interval while loading (one kernel can compile for
        seconds, and the simulation's thread is busy compiling it)."""
        beat = threading.Event()
        self._loading_beat = beat

        def run() -> None:
            while not beat.wait(self.status_interval):
                with self._status_lock:
                    if self._last_status_text is not None:
                        self._sink_call("post_status", self._last_status_text)

        threading.Thread(target=run, name="starling-loading", daemon=True).start()

    def _end_loading(self) -> None:
        self.loading = False
        self.loading_stage = self.loading_progress = None
        if self._loading_beat is not None:
            self._loading_beat.set()
            self._loading_beat = None

    def _rehearsal(self) -> list[tuple[str, Callable[[Any], None]]]:
        """What the live app does with a simulation besides stepping, as stages of :func:`prepare`."""
        encoder = F.FrameEncoder()

        def frames(sim: Any) -> None:
            encoder.encode(frame_states(sim, entity_blocks(sim)), step=int(sim.step_count), time=float(sim.time),
                           dt=float(sim.dt), sequence=0)
            describe = getattr(sim, "describe_environment", None)
            if callable(describe):
                describe()

        return [("encoding frames", frames), ("live metrics and the inspector", read_readouts)]

    def _fail(self, message: str) -> None:
        log.error("%s\n%s", message, traceback.format_exc())
        self.pacer.halt()
        self.error = message
        self._sink_call("post_event", P.dumps({"type": "error", "message": message}), None)
        self._post_status_now()

    # ---- output ---------------------------------------------------------------------

    def scene_message(self) -> dict[str, Any]:
        """Everything a viewer needs to set up drawing this scenario (see docs/protocol.md)."""
        try:
            names = self.scenario_names()
        except Exception:
            names = [self.scenario_name]
        return scene_message(self.sim, self.scenario_name, names, self._entities)

    def _on_step(self, view: Any) -> None:
        """Observer: after each step, stream a frame and refresh the live metrics when they are due.

        Publishing from inside a batch of steps keeps the frame rate even when one call
        of ``sim.step(n)`` lasts longer than a frame interval.
        """
        self._frame_dirty = True
        now = time.perf_counter()
        if now - self._last_frame_wall >= 1.0 / self.max_fps:
            self._publish_frame(now)
        self._maybe_metrics(now)

    def _publish_frame(self, now: float) -> None:
        sim = self.sim
        if sim is None:
            return
        t0 = time.perf_counter()
        states = frame_states(sim, self._entities)
        self._sequence += 1
        frame = self._encoder.encode(
            states, step=int(sim.step_count), time=float(sim.time), dt=float(sim.dt),
            sequence=self._sequence, paused=self.pacer.shows_paused,
        )
        self._encode_ms = (time.perf_counter() - t0) * 1e3
        self._sink_call("post_frame", frame)
        self._last_frame_wall = now
        self._frame_dirty = False
        self._window_frames += 1
        self.frames_published += 1
        for client_id, (species, uid) in list(self._selections.items()):
            self._send_inspect(client_id, species, uid)

    def _send_inspect(self, client_id: int, species: str, uid: int) -> None:
        try:
            info = self.sim.inspect(species, uid)
        except Exception as exc:
            self._selections.pop(client_id, None)
            self._reply(client_id, {"type": "error", "message": f"cannot inspect {species} #{uid}: {exc}"})
            return
        if info is None:
            self._selections.pop(client_id, None)
            message = {"type": "inspect", "species": species, "uid": uid, "alive": False}
        else:
            message = {"type": "inspect", "alive": True, "step": int(self.sim.step_count), **dict(info)}
        self._sink_call("post_inspect", client_id, P.dumps(message))

    def _maybe_status(self, now: float) -> None:
        if self._status_dirty or now - self._last_status_wall >= self.status_interval:
            if self._frame_dirty:
                # the frame of the last step goes out before a status that may say "paused"
                self._publish_frame(now)
            self._post_status_now(now)

    def _maybe_metrics(self, now: float) -> None:
        """Live metrics, at most every status interval; they can cost as much as a step on a
        big flock, so they are kept under ~5 % of the time."""
        sim = self.sim
        metrics_interval = max(self.status_interval, 20.0 * self._metrics_ms / 1e3)
        if sim is None or self.loading or now - self._last_metrics_wall < metrics_interval:
            return
        t0 = time.perf_counter()
        try:
            self._metrics = P.jsonable(sim.metrics())
        except Exception as exc:
            log.warning("metrics failed: %s", exc)
            self._metrics = {}
        self._metrics_step = int(sim.step_count)
        self._metrics_time = float(sim.time)
        self._metrics_ms = (time.perf_counter() - t0) * 1e3
        self._last_metrics_wall = now

    def _post_events(self, sim: Any) -> None:
        """Tell every viewer what happened since the last status: deaths, with their cause."""
        journal = getattr(getattr(sim, "world", None), "journal", None)
        if journal is None:
            return
        if self._journal_seq is None or self._journal_sim is not sim:
            self._journal_seq, self._journal_sim = journal.next_seq, sim  # a new scene: from now on
            return
        entries, self._journal_seq, _ = journal.since(self._journal_seq)
        deaths = [{"kind": "death", "species": e["species"], "uid": e["uid"], "cause": e["detail"].get("cause"),
                   "position": e["position"], "time": e["time"]} for e in entries if e["kind"] == "death"]
        if deaths:
            self._sink_call("post_event", P.dumps({"type": "events", "events": deaths[-EVENTS_AT_MOST:],
                                                   "dropped": max(0, len(deaths) - EVENTS_AT_MOST)}), None)

    def _post_status_now(self, now: Optional[float] = None) -> None:
        now = time.perf_counter() if now is None else now
        span = now - self._window_wall
        sim = self.sim
        if span >= 0.5:
            self._steps_per_s = self._window_steps / span
            self._frames_per_s = self._window_frames / span
            self._window_wall, self._window_steps, self._window_frames = now, 0, 0
            dt = float(sim.dt) if sim is not None else 0.0
            self.pacer.measure(now, self._sim_time(), dt, running=sim is not None and not self.loading)
        counts, states, labels = species_readouts(sim, LABELLED_AT_MOST)
        if sim is not None:
            if self._metrics_step != int(sim.step_count):  # e.g. the last of a batch of paused steps
                self._maybe_metrics(now)
            self._post_events(sim)
        status = {
            "type": "status",
            "scenario": self.scenario_name,
            "loading": self.loading,
            "error": self.error,
            "step": int(sim.step_count) if sim is not None else 0,
            "time": float(sim.time) if sim is not None else 0.0,
            "dt": float(sim.dt) if sim is not None else 0.0,
            "paused": self.pacer.shows_paused,
            "mode": self.pacer.mode,
            "speed": self.pacer.speed,
            "steps_per_s": self._steps_per_s,
            "realtime_factor": self.pacer.realtime_factor,
            "behind": self.pacer.behind(now),
            "loading_stage": self.loading_stage if self.loading else None,
            "loading_progress": self.loading_progress if self.loading else None,
            "frames_per_s": self._frames_per_s,
            "step_ms": self.pacer.step_ms,
            "encode_ms": self._encode_ms,
            "metrics_ms": self._metrics_ms,
            "frame_bytes": self._encoder.last_bytes,
            "counts": counts,
            "states": states,
            "labels": labels,
            "metrics": self._metrics,
            "metrics_step": self._metrics_step,
            "metrics_time": self._metrics_time,
        }
        with self._status_lock:
            self._last_status_text = P.dumps(status)
            self._sink_call("post_status", self._last_status_text)
        self._last_status_wall = now
        self._status_dirty = False

