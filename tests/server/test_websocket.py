"""The WebSocket endpoint through FastAPI's TestClient: what a browser sees, what a
hostile or broken client can (not) do, and that the simulation never stops for them."""
from __future__ import annotations

import json
import time

import pytest
from fastapi.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from starling.server import create_app
from starling import frames as F
from starling.server import protocol as P
from starling.server.app import origin_allowed
from starling.server.scenes import scenario_loader

from .helpers import SCENARIO, SMALL, wait_for


@pytest.fixture
def client(tmp_path):
    app = create_app(SCENARIO, seed=1, loader=scenario_loader(SMALL, SCENARIO), static_dir=tmp_path)
    with TestClient(app) as test_client:
        wait_for(lambda: app.state.runner.sim is not None, what="the scenario to load")
        yield test_client


def _runner(client: TestClient):
    return client.app.state.runner


def _receive_until(ws, predicate, limit: int = 400):
    """Read messages (JSON decoded, frames decoded) until one satisfies ``predicate``."""
    for _ in range(limit):
        message = ws.receive()
        if message.get("bytes") is not None:
            item = F.decode_frame(message["bytes"])
        elif message.get("text") is not None:
            item = json.loads(message["text"])
        else:
            raise AssertionError(f"socket closed: {message}")
        if predicate(item):
            return item
    raise AssertionError("expected message never arrived")


def _is_json(kind: str):
    return lambda m: isinstance(m, dict) and m.get("type") == kind


def _is_frame(m) -> bool:
    return isinstance(m, F.DecodedFrame)


def test_a_new_client_gets_the_scene_then_status_and_binary_frames(client):
    with client.websocket_connect("/ws") as ws:
        first = json.loads(ws.receive_text())
        assert first["type"] == "scene"
        assert first["scenario"] == "flock" and first["species"][0]["name"] == "bird"
        assert first["world"]["bounds_min"] == [-150.0, 0.0, -150.0]
        status = _receive_until(ws, lambda m: _is_json("status")(m) and not m["loading"])
        assert status["counts"] == {"bird": 200}
        frames = [_receive_until(ws, _is_frame) for _ in range(3)]
        assert frames[-1].step > frames[0].step
        assert frames[0].species[0].uid.size == 200


def test_controls_pause_step_and_resume_the_simulation(client):
    runner = _runner(client)
    with client.websocket_connect("/ws") as ws:
        ws.send_text(json.dumps({"type": "pause"}))
        _receive_until(ws, lambda m: _is_json("status")(m) and m["paused"])
        frozen = runner.sim.step_count
        ws.send_text(json.dumps({"type": "step", "n": 3}))
        frame = _receive_until(ws, lambda m: _is_frame(m) and m.step == frozen + 3)
        assert frame.paused
        ws.send_text(json.dumps({"type": "resume"}))
        _receive_until(ws, lambda m: _is_frame(m) and m.step > frozen + 6)


def test_ping_is_answered_directly(client):
    with client.websocket_connect("/ws") as ws:
        ws.send_text('{"type": "ping", "id": 42}')
        assert _receive_until(ws, _is_json("pong"))["id"] == 42


def test_garbage_gets_errors_and_the_simulation_keeps_running(client):
    runner = _runner(client)
    with client.websocket_connect("/ws") as ws:
        before = runner.sim.step_count
        ws.send_text("this is not json")
        assert "not valid JSON" in _receive_until(ws, _is_json("error"))["message"]
        ws.send_bytes(b"\x00\xff\x13\x37")
        assert "binary" in _receive_until(ws, _is_json("error"))["message"]
        ws.send_text('{"type": "step", "n": -4}')
        error = _receive_until(ws, _is_json("error"))
        assert error["field"] == "n" and "greater than or equal to 1" in error["message"]
        ws.send_text('{"type": "select", "species": "bird", "uid": 1, "extra": 1}')
        assert _receive_until(ws, _is_json("error"))["field"] == "extra"
        ws.send_text(json.dumps({"type": "pause", "pad": "x" * 6000}))
        assert "too large" in _receive_until(ws, _is_json("error"))["message"]
        ws.send_text('{"type": "self_destruct"}')
        assert _receive_until(ws, _is_json("error"))["field"] == "type"
        # Still streaming, still stepping, and still obeying valid commands.
        frame = _receive_until(ws, _is_frame)
        assert frame.step > before
        assert not runner.paused
        ws.send_text('{"type": "pause"}')
        _receive_until(ws, lambda m: _is_json("status")(m) and m["paused"])


def test_two_clients_both_stream_and_inspect_independently(client):
    runner = _runner(client)
    uid = int(runner.sim.population("bird").uid[3])
    with client.websocket_connect("/ws") as a, client.websocket_connect("/ws") as b:
        a.send_text(json.dumps({"type": "select", "species": "bird", "uid": uid}))
        inspected = _receive_until(a, _is_json("inspect"))
        assert inspected["uid"] == uid and inspected["alive"]
        frame_a = _receive_until(a, _is_frame)
        frame_b = _receive_until(b, _is_frame)
        assert frame_a.species[0].uid.size == frame_b.species[0].uid.size == 200
        # b never selected anything, so b gets frames and status but no inspections.
        seen = set()
        for _ in range(40):
            message = b.receive()
            if message.get("text"):
                seen.add(json.loads(message["text"])["type"])
        assert "inspect" not in seen


def test_a_client_leaving_mid_stream_does_not_disturb_the_other(client):
    runner = _runner(client)
    with client.websocket_connect("/ws") as stayer:
        with client.websocket_connect("/ws") as leaver:
            _receive_until(leaver, _is_frame)
            leaver.send_text(json.dumps({"type": "select", "species": "bird", "uid": 0}))
            _receive_until(leaver, _is_json("inspect"))
        # The leaver vanished while frames and inspections were flowing to it.
        wait_for(lambda: len(client.app.state.hub.clients) == 1, what="the server to drop the leaver")
        before = runner.sim.step_count
        frames = [_receive_until(stayer, _is_frame) for _ in range(5)]
        assert frames[-1].step > before
        assert runner.alive and 0 not in runner._selections


def test_origins_from_other_sites_are_refused(client):
    with pytest.raises(WebSocketDisconnect) as refused:
        with client.websocket_connect("/ws", headers={"origin": "http://evil.example"}) as ws:
            ws.receive_text()
    assert refused.value.code == 1008
    with client.websocket_connect("/ws", headers={"origin": "http://testserver"}) as ws:
        assert json.loads(ws.receive_text())["type"] == "scene"
    assert _runner(client).alive


@pytest.mark.parametrize(
    "origin, host, allowed",
    [
        (None, "127.0.0.1:8000", True),
        ("http://127.0.0.1:8000", "127.0.0.1:8000", True),
        ("http://localhost:8000", "localhost:8000", True),
        ("http://127.0.0.1:8001", "127.0.0.1:8000", False),
        ("http://localhost:8000", "127.0.0.1:8000", False),
        ("null", "127.0.0.1:8000", False),
        ("file://", "127.0.0.1:8000", False),
        ("https://attacker.test", "127.0.0.1:8000", False),
    ],
)
def test_origin_rule_is_same_host_and_port_or_none(origin, host, allowed):
    assert origin_allowed(origin, host) is allowed


def test_root_explains_how_to_build_a_missing_front_end(client):
    response = client.get("/")
    assert response.status_code == 503
    assert "make setup" in response.text


def test_root_serves_the_built_front_end(tmp_path):
    (tmp_path / "index.html").write_text("<!doctype html><title>Starling</title><canvas></canvas>")
    app = create_app(SCENARIO, loader=scenario_loader(SMALL, SCENARIO), static_dir=tmp_path)
    with TestClient(app) as test_client:
        response = test_client.get("/")
        assert response.status_code == 200 and "<canvas>" in response.text
        wait_for(lambda: test_client.get("/api/status").json().get("step", 0) > 0, what="a stepping status")
        assert test_client.get("/api/scenarios").json()["current"] == "flock"


def test_status_endpoint_reflects_the_runner(client):
    wait_for(lambda: client.get("/api/status").json().get("counts"), what="a status with counts")
    status = client.get("/api/status").json()
    assert status["type"] == "status" and status["counts"] == {"bird": 200}
    time.sleep(0.3)
    assert client.get("/api/status").json()["step"] > status["step"]
