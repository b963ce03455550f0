"""A scenario's opening camera (``view``): validated with the config, sent in the scene
message, kept by live edits and by recordings, and absent where the viewer frames the animals."""
from __future__ import annotations

import pytest

import starling
from starling.config import ConfigError, read_scenario_data
from starling.server.replay import ReplayRunner
from starling.server.scenes import scene_message

from .helpers import RecordingSink, wait_for


def _view(sim) -> dict | None:
    return scene_message(sim, "x", [], [])["view"]


def test_the_meadow_opens_on_the_view_its_file_composes():
    data, _ = read_scenario_data("meadow")
    sim = starling.load_scenario("meadow", record_debug=False)
    assert _view(sim) == {"position": [42.0, 24.0, 90.0], "target": [-12.0, 13.0, 22.0]}
    assert _view(sim) == {k: [float(v) for v in data["view"][k]] for k in ("position", "target")}


def test_a_scenario_without_a_view_leaves_the_framing_to_the_viewer():
    sim = starling.load_scenario("flock", overrides=("n=20",), record_debug=False)
    assert sim.scenario.view is None and _view(sim) is None
    assert "view" not in sim.config_data()


def test_a_view_set_live_reaches_the_next_scene_message_and_none_of_the_simulation():
    sim = starling.load_scenario("flock", overrides=("n=20",), record_debug=False)
    sim.step(3)
    before = sim.population("bird").position.copy()
    sim.set("view.position=[10, 40, 60]", "view.target=[0, 20, 0]")
    assert _view(sim) == {"position": [10.0, 40.0, 60.0], "target": [0.0, 20.0, 0.0]}
    assert (sim.population("bird").position == before).all()  # only the viewer reads it


@pytest.mark.parametrize(("name", "assignments", "path", "words"), [
    ("meadow", ("view.position=[0, 5, 0]", "view.target=[0, 6, 0]"), "view", "higher than target"),
    ("meadow", ("view.position=[0, 5]",), "view.position.2", ""),  # the missing third number
    ("flock", ("view.position=[0, 50, 9]",), "view.target", "Field required"),  # a new view needs both
])
def test_a_wrong_view_is_refused_by_its_path_and_changes_nothing(name, assignments, path, words):
    sim = starling.load_scenario(name, record_debug=False, overrides=("n=20",) if name == "flock" else ())
    data, view = sim.config_data(), _view(sim)
    with pytest.raises(ConfigError) as err:
        sim.set(*assignments)
    assert [p.path for p in err.value.problems] == [path]
    assert words in str(err.value)
    assert sim.config_data() == data and _view(sim) == view


def test_a_replay_opens_on_the_recorded_scenarios_view(tmp_path):
    from starling.recording import Recorder, open_recording

    sim = starling.load_scenario("flock", seed=2, record_debug=False, overrides=(
        "n=20", "view.position=[5, 60, 90]", "view.target=[0, 25, 0]"))
    with Recorder(sim, tmp_path / "view.zarr", every=2):
        sim.step(6)
    runner = ReplayRunner(open_recording(tmp_path / "view.zarr"), label="view.zarr")
    sink = RecordingSink()
    runner.start(sink)
    try:
        wait_for(lambda: sink.scenes, timeout=120, what="the replay's scene")
        assert sink.scenes[0]["view"] == {"position": [5.0, 60.0, 90.0], "target": [0.0, 25.0, 0.0]}
    finally:
        runner.stop()


def test_the_app_opens_on_the_meadow_and_its_composed_view():
    """`make demo` and `starling serve` without a name open the meadow, which is the default
    because its own view shows the whole food chain at once (docs/scenarios.md#meadow)."""
    from starling.cli import default_scene

    assert default_scene() == "meadow"
    assert starling.load_scenario(default_scene(), record_debug=False).scenario.view is not None
