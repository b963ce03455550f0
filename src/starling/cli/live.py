"""The browser app: ``serve`` (live, optionally recorded), ``demo`` and ``replay``."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from ..config import ConfigError, scenario_names, validate_scenario
from .common import PLUGIN_HELP, LoadingDisplay, _config_fail, _fail, _load_plugins, app, err

# The meadow opens the app: from its own opening view it shows the whole food chain at once
# (the herd grazing, the pond's school and sharks, wolves, both flocks in the sky), steps in
# about 5 ms and draws at 30 fps even on a CPU rasteriser. The lagoon, the default until the
# meadow had that view (framed on its most numerous species, it showed one flock from below
# and hid the rest behind the charts; docs/scenarios.md), comes next.
DEFAULT_SCENE_ORDER = ("meadow", "lagoon", "pasture", "pond", "flock")


def default_scene() -> str:
    """The richest built-in scene available (the app's default)."""
    names = scenario_names()
    return next((n for n in DEFAULT_SCENE_ORDER if n in names), names[0])


@app.command()
def serve(
    scenario: Optional[str] = typer.Argument(None, help="Scenario name or path (default: the richest built-in)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind (127.0.0.1 keeps it on this machine)."),
    port: int = typer.Option(8000, "--port", min=1, max=65535, help="TCP port."),
    no_browser: bool = typer.Option(False, "--no-browser", help="Do not open a browser."),
    realtime: bool = typer.Option(True, "--realtime/--fast", help="Pace to real time, or run as fast as possible."),
    set_: List[str] = typer.Option([], "--set", help="Override a field (path=value) or a named parameter (NAME=value); repeatable."),
    record_to: Optional[Path] = typer.Option(None, "--record", help=(
        "Record the live session into this Zarr directory, edits and player actions included; "
        "another scenario loaded in the app goes to NAME-2.zarr, NAME-3.zarr, …")),
    every: int = typer.Option(1, "--every", min=1, help="With --record: keep every K-th step."),
    precision: str = typer.Option("float32", "--precision", help="With --record: float32 or float16 arrays."),
    workspace: Path = typer.Option(Path("starling-workspace"), "--workspace", help=(
        "Folder the editor saves and loads scenario files in.")),
    backend: Optional[str] = typer.Option(None, "--backend", help=(
        "cpu or cuda (an NVIDIA GPU, docs/gpu.md); default: the scenario's.")),
    plugin: List[str] = typer.Option([], "--plugin", help=PLUGIN_HELP),
) -> None:
    """Run the live app: the simulation streamed to a 3D view in the browser."""
    from ..config import load_scenario_config
    from ..server import serve as run_server

    _load_plugins(plugin)
    if backend is not None:
        if backend not in ("cpu", "cuda"):
            _fail(f"--backend: expected cpu or cuda, got {backend!r}")
        set_ = [*set_, f"backend={backend}"]
    name = scenario or default_scene()
    try:
        load_scenario_config(name, set_)  # fail fast, with the field named, before binding a port
    except ConfigError as e:
        _config_fail(e)
    recorder = None
    if record_to is not None:
        if precision not in ("float32", "float16"):
            _fail(f"--precision: {precision!r} is not float32 or float16")
        if record_to.exists():
            _fail(f"--record: {record_to} already exists; choose a new path (a recording is never overwritten)")
        recorder = _session_recorder(record_to, every, precision)
    try:
        run_server(name, host=host, port=port, open_browser=not no_browser, realtime=realtime, overrides=set_,
                   recorder=recorder, workspace=workspace, on_loading=LoadingDisplay(err))
    except OSError as e:
        _fail(f"cannot listen on {host}:{port}: {e.strerror or e}")


def _session_recorder(path: Path, every: int, precision: str):
    """What the live server calls for each scenario it loads: a recorder to the next free path."""
    from ..recording import Recorder

    taken = [0]

    def start(sim, name: str):
        while True:
            taken[0] += 1
            target = path if taken[0] == 1 else path.with_name(f"{path.stem}-{taken[0]}{path.suffix}")
            if not target.exists():
                break
        recorder = Recorder(sim, target, every=every, precision=precision, scenario_name=name, flush_seconds=2.0)
        err.print(f"recording '{name}' into {target}", highlight=False)
        return recorder

    return start


@app.command()
def demo(
    scenario: Optional[str] = typer.Argument(None, help="Scenario (default: the richest built-in)."),
    port: int = typer.Option(8000, "--port", min=1, max=65535),
    no_browser: bool = typer.Option(False, "--no-browser"),
    plugin: List[str] = typer.Option([], "--plugin", help=PLUGIN_HELP),
) -> None:
    """The main job: the live app on the default scene (what `make demo` runs)."""
    serve(scenario, host="127.0.0.1", port=port, no_browser=no_browser, realtime=True, set_=[], record_to=None, every=1,
          precision="float32", workspace=Path("starling-workspace"), plugin=plugin)


@app.command()
def replay(
    file: str = typer.Argument(..., help="A recording written by `starling run --record FILE`."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind (127.0.0.1 keeps it on this machine)."),
    port: int = typer.Option(8000, "--port", min=1, max=65535, help="TCP port."),
    no_browser: bool = typer.Option(False, "--no-browser", help="Do not open a browser."),
    plugin: List[str] = typer.Option([], "--plugin", help=PLUGIN_HELP),
) -> None:
    """Replay a recording in the app: scrub, play, change speed, jump between events."""
    from ..recording import RecordingError, open_recording
    from ..server import serve_replay

    _load_plugins(plugin)
    try:
        rec = open_recording(file)
        rec.frame(0), rec.frame(len(rec) - 1)  # a damaged first or last block is refused now, not mid-replay
    except RecordingError as e:
        _fail(str(e))
    try:  # the scene is rebuilt from the recorded config: check it before binding a port
        validate_scenario(dict(rec.config), str(rec.scenario))
    except ConfigError as e:
        _config_fail(e)
    try:
        serve_replay(rec, Path(file).name, host=host, port=port, open_browser=not no_browser)
    except OSError as e:
        _fail(f"cannot listen on {host}:{port}: {e.strerror or e}")
