"""The simulation thread: pacing, control commands, inspection and resilience,
all against the real simulation (a 200-bird flock)."""
from __future__ import annotations

import time

import pytest

from starling import frames as F
from starling.server import protocol as P
from starling.server.runner import SimulationRunner
from starling.server.scenes import scenario_loader

from .helpers import RecordingSink, wait_for


def _steps_over(runner: SimulationRunner, seconds: float) -> int:
    start = runner.sim.step_count
    time.sleep(seconds)
    return runner.sim.step_count - start


@pytest.mark.quiet_machine  # wall-clock pacing over a second
def test_realtime_mode_keeps_simulated_time_with_the_wall_clock(runner_factory):
    runner, sink = runner_factory()
    dt = runner.sim.dt
    t0, wall0 = runner.sim.time, time.perf_counter()
    time.sleep(1.0)
    elapsed_sim = runner.sim.time - t0
    elapsed_wall = time.perf_counter() - wall0
    assert elapsed_sim == pytest.approx(elapsed_wall, abs=3 * dt + 0.05)


@pytest.mark.quiet_machine  # wall-clock pacing over a second
def test_speed_multiplier_and_fast_mode_run_ahead_of_the_clock(runner_factory):
    runner, _ = runner_factory()
    runner.submit(None, P.Speed(type="speed", multiplier=4.0))
    time.sleep(0.1)
    t0 = runner.sim.time
    time.sleep(0.8)
    assert runner.sim.time - t0 == pytest.approx(3.2, rel=0.25)
    runner.submit(None, P.Mode(type="mode", mode="fast"))
    time.sleep(0.1)
    t0 = runner.sim.time
    time.sleep(0.5)
    assert runner.sim.time - t0 > 2.0 * 0.5 * 4  # far more than the 4× real-time pace


def test_pause_stops_the_clock_and_step_advances_exactly_n(runner_factory):
    runner, sink = runner_factory()
    runner.submit(None, P.Pause(type="pause"))
    wait_for(lambda: sink.status and sink.status[-1]["paused"], what="a paused status")
    frozen = runner.sim.step_count
    time.sleep(0.3)
    assert runner.sim.step_count == frozen
    runner.submit(None, P.Step(type="step", n=5))
    wait_for(lambda: runner.sim.step_count == frozen + 5, what="five single steps")
    time.sleep(0.2)
    assert runner.sim.step_count == frozen + 5
    last = F.decode_frame(sink.frames[-1])
    assert last.step == frozen + 5 and last.paused
    runner.submit(None, P.Resume(type="resume"))
    wait_for(lambda: runner.sim.step_count > frozen + 10, what="resumed stepping")


def test_frames_are_published_for_every_species_with_rising_sequence_numbers(runner_factory):
    runner, sink = runner_factory()
    wait_for(lambda: len(sink.frames) >= 10, what="ten frames")
    frames = [F.decode_frame(f) for f in sink.frames[:10]]
    assert [f.sequence for f in frames] == sorted({f.sequence for f in frames})
    assert all(len(f.species) == len(runner.sim.species) for f in frames)
    assert frames[-1].species[0].uid.size == 200
    scene = sink.scenes[0]
    assert scene["type"] == "scene" and scene["species"][0]["model"] == "bird"
    assert scene["player"] == {"fire": hasattr(runner.sim, "fire"), "throw_apple": hasattr(runner.sim, "throw_apple"),
                               "move_player": hasattr(runner.sim, "move_player")}
    # the scene picker: every switchable scenario with its one-line description
    import starling
    from starling.config import read_scenario_data

    assert scene["scenarios"] == starling.scenario_names()
    assert scene["descriptions"] == {n: read_scenario_data(n)[0]["description"] for n in scene["scenarios"]}
    assert all(scene["descriptions"].values())


def test_status_reports_rates_counts_and_metrics(runner_factory):
    runner, sink = runner_factory()
    wait_for(lambda: any(s["steps_per_s"] > 0 and s["metrics"] for s in sink.status), what="a full status")
    status = [s for s in sink.status if s["steps_per_s"] > 0 and s["metrics"]][-1]
    assert status["counts"] == {"bird": 200}
    assert {"polarization", "milling", "nn_distance"} <= set(status["metrics"]["bird"])
    assert status["steps_per_s"] == pytest.approx(1 / runner.sim.dt, rel=0.35)
    assert status["frame_bytes"] == F.frame_size([200])


def test_a_selected_animal_is_inspected_every_frame(runner_factory):
    runner, sink = runner_factory()
    uid = int(runner.sim.population("bird").uid[7])
    runner.submit(3, P.Select(type="select", species="bird", uid=uid))
    wait_for(lambda: len([m for c, m in sink.inspects if c == 3]) >= 5, what="five inspections")
    message = [m for c, m in sink.inspects if c == 3][-1]
    assert message["alive"] and message["uid"] == uid and message["species"] == "bird"
    assert {"behaviors", "neighbors", "desired_velocity", "fov_deg", "view_distance", "state"} <= set(message)
    runner.submit(3, P.Deselect(type="deselect"))
    time.sleep(0.2)
    count = len(sink.inspects)
    time.sleep(0.3)
    assert len(sink.inspects) == count


def test_selecting_what_does_not_exist_is_answered_not_fatal(runner_factory):
    runner, sink = runner_factory()
    runner.submit(4, P.Select(type="select", species="dragon", uid=1))
    wait_for(lambda: sink.errors(), what="an error")
    assert "dragon" in sink.errors()[0] and "bird" in sink.errors()[0]
    runner.submit(4, P.Select(type="select", species="bird", uid=10**9))
    wait_for(lambda: any(not m["alive"] for _, m in sink.inspects), what="a not-alive inspection")
    assert runner.alive


def test_player_actions_reach_the_simulation_or_say_they_are_unavailable(runner_factory):
    runner, sink = runner_factory()
    actions = [
        P.Fire(type="fire", origin=(0, 40, 0), direction=(0, 0, 1)),
        P.ThrowApple(type="throw_apple", origin=(0, 40, 0), velocity=(0, 0, 0)),
        P.MovePlayer(type="move_player", position=(0, 0, 0)),
    ]
    for action in actions:
        runner.submit(9, action)
    wait_for(lambda: len([e for c, e in sink.events if c == 9]) == 3, what="three answers")
    for action, (_, answer) in zip(actions, [e for e in sink.events if e[0] == 9]):
        method = P.PLAYER_ACTIONS[action.type]
        if hasattr(runner.sim, method):
            assert answer == {"type": "ack", "action": action.type, **({"result": answer["result"]} if "result" in answer else {})}
        else:
            assert answer["type"] == "error"
            assert answer["message"] == f"{method} is not available in this scenario"


def test_switching_to_an_unknown_scenario_names_the_choices_and_keeps_running(runner_factory):
    runner, sink = runner_factory()
    runner.submit(2, P.SwitchScenario(type="scenario", name="atlantis"))
    wait_for(lambda: sink.errors(), what="an error")
    assert "atlantis" in sink.errors()[0] and "flock" in sink.errors()[0]
    assert _steps_over(runner, 0.3) > 0


def test_switching_scenario_sends_a_new_scene_and_restarts_time(runner_factory):
    runner, sink = runner_factory()
    time.sleep(0.3)
    runner.submit(2, P.SwitchScenario(type="scenario", name="flock", seed=5))
    wait_for(lambda: len(sink.scenes) == 2, what="a second scene")
    assert runner.seed == 5
    wait_for(lambda: runner.sim.step_count > 0, what="the new scenario to step")
    runner.submit(2, P.SwitchScenario(type="scenario", name="flock", seed=6, paused=True))
    wait_for(lambda: len(sink.scenes) == 3, what="a third scene")
    time.sleep(0.3)
    assert runner.paused and runner.sim.step_count == 0


def test_a_failing_step_pauses_with_an_error_and_the_thread_survives(runner_factory):
    runner, sink = runner_factory()
    sim = runner.sim
    real_step = sim.step

    def broken(n: int = 1) -> None:
        raise FloatingPointError("kaboom")

    sim.step = broken
    wait_for(lambda: sink.errors(), what="the step error")
    assert "kaboom" in sink.errors()[0]
    assert runner.alive and runner.paused
    sim.step = real_step
    before = sim.step_count
    runner.submit(None, P.Resume(type="resume"))
    wait_for(lambda: sim.step_count > before, what="stepping after the failure")


def test_a_scenario_that_cannot_load_is_reported_and_the_thread_waits():
    def loader(name, seed):
        raise ValueError("no such file")

    runner = SimulationRunner("flock", loader=loader, scenario_names=lambda: ["flock"])
    sink = RecordingSink()
    runner.start(sink)
    try:
        wait_for(lambda: sink.errors(), what="the load error")
        assert "no such file" in sink.errors()[0]
        wait_for(lambda: sink.status and sink.status[-1]["error"], what="a status carrying the error")
        assert runner.alive and runner.sim is None
    finally:
        runner.stop()


def test_status_counts_animals_per_brain_state():
    # the lagoon's fish and sharks run state machines; the status feeds the "per state" chart
    runner = SimulationRunner("lagoon", loader=scenario_loader(("species.fish.count=40",), "lagoon"), seed=1)
    sink = RecordingSink()
    runner.start(sink)
    try:
        wait_for(lambda: any(s.get("states") for s in sink.status), timeout=180, what="a status with brain states")
        status = [s for s in sink.status if s.get("states")][-1]
        assert set(status["states"]) == {"fish", "shark"}
        assert sum(status["states"]["fish"].values()) == status["counts"]["fish"]
        assert set(status["states"]["shark"]) == {"chill", "hunting", "attacking"}
    finally:
        runner.stop()


def _max_speed(runner: SimulationRunner) -> float:
    return runner.call(lambda r: r.config_data()["species"][0]["mover"]["max_speed"])


def test_restart_starts_over_with_the_edits_and_reset_without_them(runner_factory):
    runner, sink = runner_factory()
    shipped = _max_speed(runner)
    edited = runner.call(lambda r: r.config_data())
    edited["species"][0]["mover"]["max_speed"] = shipped + 1.5
    runner.call(lambda r: r.apply_config(edited))
    wait_for(lambda: runner.sim.step_count > 20, what="some steps after the edit")

    runner.submit(7, P.Restart(type="restart", keep_edits=True))
    acks = lambda: [e for _, e in sink.events if e.get("type") == "ack" and e.get("action") == "restart"]  # noqa: E731
    wait_for(lambda: len(acks()) == 1, what="the restart's ack")
    assert runner.sim.step_count < 20  # from the first step again …
    assert _max_speed(runner) == shipped + 1.5  # … with the edit

    runner.submit(7, P.Restart(type="restart", keep_edits=False))
    wait_for(lambda: len(acks()) == 2, what="the reset's ack")
    assert acks()[1]["result"] == {"keep_edits": False} and not sink.errors()
    assert _max_speed(runner) == shipped  # the scenario as shipped

def test_the_status_says_how_far_loading_has_got_and_keeps_coming_while_it_loads():
    stages: list[tuple[str, float]] = []
    build = scenario_loader(("species.bird.count=200",), "flock")

    def slow_loader(name, seed):  # a long stage: the heartbeat must keep the status coming
        time.sleep(0.8)
        return build(name, seed)

    runner = SimulationRunner("flock", loader=slow_loader, seed=1, status_hz=20.0,
                              on_loading=lambda stage, fraction: stages.append((stage, fraction)))
    sink = RecordingSink()
    runner.start(sink)
    try:
        wait_for(lambda: runner.sim is not None and sink.frames, timeout=120, what="the first frame")
        loading = [s for s in sink.status if s["loading"]]
        building = [s for s in loading if s["loading_stage"] == "building flock"]
        assert len(building) >= 5, "the status keeps being posted while one stage lasts"
        assert all(s["loading_progress"] == 0.0 for s in building)
        shown = [s["loading_stage"] for s in loading]
        for part in ("copying the simulation", "bird steering", "bird movement", "encoding frames"):
            assert any(part in stage for stage in shown), (part, shown)
        progress = [s["loading_progress"] for s in loading]
        assert progress == sorted(progress) and progress[0] == 0.0 and progress[-1] == 1.0
        assert stages[-1] == ("ready", 1.0) and [f for _, f in stages] == sorted(f for _, f in stages)
        assert stages[-2][0].endswith("(8/8)")  # building, then 8 stages: copy, 4 step parts, a step, 2 extras
        # the first frame can overtake the loading heartbeat's last post: wait for the first status after it
        wait_for(lambda: not sink.status[-1]["loading"], what="a status after loading")
        done = sink.status[-1]
        assert done["loading_stage"] is None and done["loading_progress"] is None
        assert runner.sim.step_count >= 0 and runner.sim.population("bird").n == 200
    finally:
        runner.stop()


@pytest.mark.quiet_machine  # wall-clock pacing over a second
def test_the_realtime_factor_is_one_when_keeping_up_and_none_when_paused_or_fast(runner_factory):
    runner, sink = runner_factory(status_hz=10.0)
    wait_for(lambda: sink.status[-1]["realtime_factor"] is not None, what="a realtime factor")
    time.sleep(1.0)
    status = sink.status[-1]
    assert status["realtime_factor"] == pytest.approx(1.0, abs=0.1) and status["behind"] is False
    runner.submit(None, P.Pause(type="pause"))
    wait_for(lambda: sink.status[-1]["paused"], what="a paused status")
    assert sink.status[-1]["realtime_factor"] is None and sink.status[-1]["behind"] is False
    runner.submit(None, P.Resume(type="resume"))
    runner.submit(None, P.Mode(type="mode", mode="fast"))
    time.sleep(1.0)
    assert sink.status[-1]["mode"] == "fast" and sink.status[-1]["realtime_factor"] is None


@pytest.mark.quiet_machine  # wall-clock pacing over a second
def test_a_simulation_that_cannot_keep_real_time_says_so_with_its_speed(runner_factory):
    runner, sink = runner_factory(status_hz=10.0)
    sim = runner.sim
    real_step = sim.step

    def slow(n: int = 1) -> None:  # each step takes three times its dt of wall time
        for _ in range(n):
            time.sleep(3.0 * sim.dt)
            real_step()

    sim.step = slow
    wait_for(lambda: sink.status[-1]["behind"], timeout=10, what="a status saying it is behind")
    status = sink.status[-1]
    assert status["realtime_factor"] == pytest.approx(1 / 3, abs=0.08)
    slowed = [s for s in sink.status if s["realtime_factor"] is not None and s["realtime_factor"] < 0.5]
    assert not slowed[0]["behind"], "behind only after two seconds below 0.9"
    runner.submit(None, P.Speed(type="speed", multiplier=0.25))  # a quarter speed it can keep
    wait_for(lambda: not sink.status[-1]["behind"] and sink.status[-1]["realtime_factor"] is not None
             and sink.status[-1]["realtime_factor"] > 0.9, timeout=10, what="keeping up at a quarter speed")
    sim.step = real_step


def test_a_pride_is_labelled_over_its_heads_and_a_catch_is_told_to_every_viewer(runner_factory):
    runner, sink = runner_factory(loader=scenario_loader((), "savannah"), seed=3)
    runner.submit(None, P.SwitchScenario(type="scenario", name="savannah", seed=3))
    def ranked() -> bool:  # ranks are drawn in the first step after the load
        lions = sink.status[-1].get("labels", {}).get("lion") if sink.status else None
        return (sink.status[-1].get("scenario") == "savannah" and bool(lions)
                and sorted(t.split(" · ")[0] for _, t in lions) == ["#1", "#2", "#3"])
    wait_for(ranked, what="ranked labels for the lions")
    status = sink.status[-1]
    lions = status["labels"]["lion"]
    uids = sorted(u for u, _ in lions)
    assert uids == sorted(runner.call(lambda r: r.sim.population("lion").uid.tolist()))
    ranks = sorted(text.split(" · ")[0] for _, text in lions)
    assert ranks == ["#1", "#2", "#3"]  # a rank each, then the brain's state
    states = runner.call(lambda r: r.sim.config_data())["species"]
    lion_states = {s["name"] for sp in states if sp["name"] == "lion" for s in sp["brain"]["states"]}
    assert all(text.split(" · ")[1] in lion_states for _, text in lions)
    assert "zebra" not in status["labels"]  # 30 zebras: a herd is not labelled animal by animal

    # a death in the running scene reaches the viewers as an event, with its cause
    runner.call(lambda r: r.sim.world.commands.kill("zebra", r.sim.population("zebra").uid[:1], cause="test"))
    wait_for(lambda: any(e.get("type") == "events" for _, e in sink.events), what="the death event")
    told = [d for _, e in sink.events if e.get("type") == "events" for d in e["events"]]
    assert any(d["species"] == "zebra" and d["cause"] == "test" and len(d["position"]) == 3 for d in told)
