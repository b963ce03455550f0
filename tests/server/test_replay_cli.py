"""`starling replay` on bad input, and the replay app through its WebSocket.

Bad input must end in one `error:` line and exit status 2 before any server starts;
the app must route the replay's messages to the replay and refuse them on a live server.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from starling import frames as F
from starling.cli import app as cli
from starling.server import create_app, create_replay_app
from starling.server.scenes import scenario_loader

from .helpers import SCENARIO, SMALL, wait_for
from .test_replay import make_recording

runner = CliRunner()


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("replay_cli") / "good.zarr"
    make_recording(path, birds=20)
    return path


def _refused(args: list[str]) -> str:
    result = runner.invoke(cli, ["replay", *args, "--no-browser"])
    output = result.output.strip()
    assert result.exit_code == 2, output
    assert output.startswith("error:") and "Traceback" not in output, output
    assert len(output.splitlines()) == 1, output
    return output


def test_a_missing_path_is_refused(tmp_path):
    assert "no such file or directory" in _refused([str(tmp_path / "nothing.zarr")])


def test_an_empty_directory_and_an_empty_file_are_refused(tmp_path):
    (tmp_path / "empty").mkdir()
    assert "an empty directory" in _refused([str(tmp_path / "empty")])
    (tmp_path / "empty.zarr").write_bytes(b"")
    assert "an empty file" in _refused([str(tmp_path / "empty.zarr")])


def test_an_hdf5_file_and_a_foreign_zarr_store_are_refused(tmp_path):
    (tmp_path / "data.h5").write_bytes(b"\x89HDF\r\n\x1a\n" + bytes(64))
    assert "an HDF5 file" in _refused([str(tmp_path / "data.h5")])
    import zarr

    zarr.create_group(zarr.storage.LocalStore(str(tmp_path / "other.zarr")), zarr_format=3).attrs["x"] = 1
    assert "not a Starling recording" in _refused([str(tmp_path / "other.zarr")])


def test_a_truncated_recording_is_refused(tmp_path, good):
    missing = tmp_path / "missing.zarr"
    shutil.copytree(good, missing)
    shutil.rmtree(missing / "pop" / "bird" / "uid")
    assert "truncated or damaged" in _refused([str(missing)])
    cut = tmp_path / "cut.zarr"
    shutil.copytree(good, cut)
    chunk = next(p for p in (cut / "pop" / "bird" / "position").rglob("*") if p.is_file() and p.name != "zarr.json")
    chunk.write_bytes(chunk.read_bytes()[: chunk.stat().st_size // 2])
    assert "damaged" in _refused([str(cut)])


def _receive(ws, predicate, limit: int = 400):
    for _ in range(limit):
        message = ws.receive()
        item = F.decode_frame(message["bytes"]) if message.get("bytes") is not None else json.loads(message["text"])
        if predicate(item):
            return item
    raise AssertionError("expected message never arrived")


def test_the_replay_app_streams_the_recording_and_obeys_seek(tmp_path, good):
    from starling.recording import open_recording

    rec = open_recording(good)
    app = create_replay_app(rec, label="good.zarr", static_dir=tmp_path)
    with TestClient(app) as client:
        wait_for(lambda: app.state.runner.frames_published, timeout=60, what="the first replayed frame")
        assert client.get("/api/scenarios").json() == {"current": "flock", "scenarios": ["flock"]}
        with client.websocket_connect("/ws") as ws:
            scene = _receive(ws, lambda m: isinstance(m, dict) and m.get("type") == "scene")
            assert scene["replay"]["file"] == "good.zarr" and scene["replay"]["n_frames"] == len(rec)
            ws.send_text(json.dumps({"type": "seek", "frame": 9}))
            frame = _receive(ws, lambda m: isinstance(m, F.DecodedFrame) and m.step == int(rec.steps[9]))
            assert frame.paused and frame.species[0].uid.size == 20
            ws.send_text(json.dumps({"type": "seek", "frame": -2}))
            error = _receive(ws, lambda m: isinstance(m, dict) and m.get("type") == "error")
            assert error["field"] == "frame"
        status = client.get("/api/status").json()
        assert status["replay"]["frame"] == 9 and status["step"] == int(rec.steps[9])


def test_a_live_server_refuses_the_replay_messages(tmp_path):
    app = create_app(SCENARIO, seed=1, loader=scenario_loader(SMALL, SCENARIO), static_dir=tmp_path)
    with TestClient(app) as client:
        wait_for(lambda: app.state.runner.sim is not None, timeout=60, what="the scenario to load")
        with client.websocket_connect("/ws") as ws:
            for message in ({"type": "seek", "frame": 3}, {"type": "next_event"}):
                ws.send_text(json.dumps(message))
                error = _receive(ws, lambda m: isinstance(m, dict) and m.get("type") == "error")
                assert error["field"] == "type" and "live simulation" in error["message"]
        assert app.state.runner.sim.step_count >= 0 and app.state.runner.alive
