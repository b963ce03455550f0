"""The wire format: frames survive encoding within their documented precision, and
control messages are refused with an error that names the field at fault."""
from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from starling import frames as F
from starling.server import protocol as P

FIXTURES = Path(__file__).resolve().parents[2] / "web" / "test" / "fixtures"


def _random_species(rng: np.random.Generator, n: int, spread: float = 250.0) -> F.SpeciesState:
    forward = rng.normal(size=(n, 3))
    forward /= np.linalg.norm(forward, axis=1, keepdims=True)
    raw_up = rng.normal(size=(n, 3))
    up = raw_up - np.sum(raw_up * forward, axis=1, keepdims=True) * forward
    up /= np.linalg.norm(up, axis=1, keepdims=True)
    return F.SpeciesState(
        position=rng.uniform(-spread, spread, size=(n, 3)).astype(np.float32),
        velocity=(forward * rng.uniform(0, 25, size=(n, 1))).astype(np.float32),
        forward=forward.astype(np.float32),
        up=up.astype(np.float32),
        uid=rng.permutation(10 * n)[:n].astype(np.int64),
    )


def _angle_deg(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    cos = np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return np.degrees(np.arccos(np.clip(cos, -1.0, 1.0)))


def _axes(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = q.shape[0]
    return F.rotate(q, np.tile([0.0, 0.0, 1.0], (n, 1))), F.rotate(q, np.tile([0.0, 1.0, 0.0], (n, 1)))


def test_frame_round_trip_keeps_positions_within_half_a_quantisation_step():
    rng = np.random.default_rng(3)
    species = [_random_species(rng, 5000), _random_species(rng, 0), _random_species(rng, 777, spread=3.0)]
    data = F.FrameEncoder().encode(species, step=123456, time=4115.2, dt=1 / 30, sequence=99, paused=True)
    assert len(data) == F.frame_size([5000, 0, 777])
    frame = F.decode_frame(data)
    assert (frame.step, frame.sequence, frame.paused) == (123456, 99, True)
    assert frame.time == pytest.approx(4115.2)
    assert frame.dt == pytest.approx(1 / 30)
    assert [s.index for s in frame.species] == [0, 1, 2]
    for original, decoded in zip(species, frame.species):
        np.testing.assert_array_equal(decoded.uid, original.uid.astype(np.uint32))
        if not len(original.uid):
            continue
        step = (decoded.bounds_max - decoded.bounds_min) / 65535.0
        error = np.abs(decoded.position - original.position)
        assert np.all(error <= step / 2 + 1e-4 * np.maximum(1.0, np.abs(original.position)))
        speed = np.linalg.norm(original.velocity.astype(np.float64), axis=1)
        assert np.max(np.abs(decoded.speed - speed)) <= 0.005 + 1e-6


def test_orientation_survives_packing_within_a_fifth_of_a_degree():
    rng = np.random.default_rng(11)
    state = _random_species(rng, 20000)
    frame = F.decode_frame(F.FrameEncoder().encode([state], step=0, time=0.0, dt=0.1, sequence=0))
    q = frame.species[0].quaternion
    np.testing.assert_allclose(np.linalg.norm(q, axis=1), 1.0, atol=1e-6)
    forward, up = _axes(q)
    assert _angle_deg(forward, state.forward.astype(np.float64)).max() < 0.25
    assert _angle_deg(up, state.up.astype(np.float64)).max() < 0.25


def test_degenerate_orientations_still_encode_a_unit_quaternion_facing_forward():
    forward = np.array([[0, 1, 0], [0, 0, 0], [1, 0, 0], [0, -1, 0]], dtype=np.float32)
    up = np.array([[0, 1, 0], [0, 1, 0], [0, 0, 0], [0, 1, 0]], dtype=np.float32)
    position = np.array([[0, 0, 0], [1, 1, 1], [np.nan, 2, 2], [np.inf, 3, 3]], dtype=np.float32)
    state = F.SpeciesState(position, np.zeros((4, 3), np.float32), forward, up, np.arange(4))
    decoded = F.decode_frame(F.FrameEncoder().encode([state], step=1, time=0.0, dt=0.1, sequence=1)).species[0]
    assert np.all(np.isfinite(decoded.position))
    np.testing.assert_allclose(np.linalg.norm(decoded.quaternion, axis=1), 1.0, atol=1e-6)
    fwd, _ = _axes(decoded.quaternion)
    assert _angle_deg(fwd[[0, 2, 3]], forward[[0, 2, 3]].astype(np.float64)).max() < 0.25
    assert _angle_deg(fwd[[1]], np.array([[0.0, 0.0, 1.0]])).max() < 0.25  # no heading: default +z


def test_the_parallel_packer_writes_the_same_bytes_as_the_serial_one(monkeypatch):
    state = _random_species(np.random.default_rng(8), 3000)
    serial = F.FrameEncoder().encode([state], step=1, time=0.5, dt=0.1, sequence=1)
    monkeypatch.setattr(F, "PARALLEL_FROM", 1)
    parallel = F.FrameEncoder().encode([state], step=1, time=0.5, dt=0.1, sequence=1)
    assert parallel == serial


def test_uids_beyond_32_bits_keep_their_low_bits_and_speeds_saturate():
    state = F.SpeciesState(
        np.zeros((2, 3), np.float32), np.array([[1000, 0, 0], [0, 0, 1]], np.float32),
        np.tile(np.float32([0, 0, 1]), (2, 1)), np.tile(np.float32([0, 1, 0]), (2, 1)),
        np.array([2**40 + 5, 7], np.int64),
    )
    decoded = F.decode_frame(F.FrameEncoder().encode([state], step=0, time=0, dt=1, sequence=0)).species[0]
    assert decoded.uid.tolist() == [5, 7]
    assert decoded.speed.tolist() == pytest.approx([655.35, 1.0])


def test_the_encoder_reuses_its_buffer_and_returns_independent_bytes():
    rng = np.random.default_rng(5)
    encoder = F.FrameEncoder()
    first = encoder.encode([_random_species(rng, 100)], step=1, time=0, dt=1, sequence=1)
    keep = bytes(first)
    encoder.encode([_random_species(rng, 50)], step=2, time=0, dt=1, sequence=2)
    assert first == keep


def test_decoder_rejects_foreign_or_truncated_bytes():
    with pytest.raises(F.FrameFormatError):
        F.decode_frame(b"NOPE" + bytes(40))
    good = F.FrameEncoder().encode([_random_species(np.random.default_rng(0), 10)], step=0, time=0, dt=1, sequence=0)
    with pytest.raises(F.FrameFormatError):
        F.decode_frame(good[:-5])
    bumped = bytearray(good)
    bumped[4] = 9
    with pytest.raises(F.FrameFormatError, match="version"):
        F.decode_frame(bytes(bumped))


def _fixture_frame() -> tuple[bytes, dict]:
    """A small deterministic frame shared with the TypeScript decoder's tests."""
    rng = np.random.default_rng(2024)
    a = _random_species(rng, 9, spread=120.0)
    a.forward[0] = (0, 1, 0)  # straight up: the encoder must pick its own side axis
    a.up[0] = (0, 1, 0)
    a.velocity[1] = (900, 0, 0)  # saturates the speed field
    empty = _random_species(rng, 0)
    c = _random_species(rng, 4, spread=0.5)
    species = [a, empty, c]
    data = F.FrameEncoder().encode(species, step=4242, time=141.4, dt=1 / 60, sequence=77, paused=False)
    frame = F.decode_frame(data)
    expected = {
        "step": 4242, "time": 141.4, "dt": 1 / 60, "sequence": 77, "paused": False,
        "species": [
            {
                "index": d.index,
                "uids": d.uid.tolist(),
                "positions": d.position.ravel().tolist(),
                "quaternions": d.quaternion.ravel().tolist(),
                "speeds": d.speed.tolist(),
                "input_positions": s.position.astype(float).ravel().tolist(),
                "input_forward": s.forward.astype(float).ravel().tolist(),
                "input_up": s.up.astype(float).ravel().tolist(),
            }
            for s, d in zip(species, frame.species)
        ],
    }
    return data, expected


def test_the_checked_in_fixture_is_what_the_encoder_writes_today():
    """web/test/frame.test.ts decodes this fixture; if the format changes both must change."""
    data, expected = _fixture_frame()
    bin_path, json_path = FIXTURES / "frame_v1.bin", FIXTURES / "frame_v1.json"
    if os.environ.get("STARLING_UPDATE_FIXTURES") == "1":
        FIXTURES.mkdir(parents=True, exist_ok=True)
        bin_path.write_bytes(data)
        json_path.write_text(json.dumps(expected, indent=1) + "\n")
    assert bin_path.is_file(), "run with STARLING_UPDATE_FIXTURES=1 to create the fixture"
    assert bin_path.read_bytes() == data, "frame format changed: regenerate with STARLING_UPDATE_FIXTURES=1"
    stored = json.loads(json_path.read_text())
    assert stored["species"][0]["uids"] == expected["species"][0]["uids"]


# ---- control messages ---------------------------------------------------------------


@pytest.mark.parametrize(
    "text, kind",
    [
        ('{"type": "pause"}', P.Pause),
        ('{"type": "resume"}', P.Resume),
        ('{"type": "step"}', P.Step),
        ('{"type": "step", "n": 10}', P.Step),
        ('{"type": "speed", "multiplier": 2.5}', P.Speed),
        ('{"type": "mode", "mode": "fast"}', P.Mode),
        ('{"type": "select", "species": "bird", "uid": 17}', P.Select),
        ('{"type": "deselect"}', P.Deselect),
        ('{"type": "scenario", "name": "flock", "seed": 3}', P.SwitchScenario),
        ('{"type": "fire", "origin": [0, 1, 2], "direction": [0, 0, -1]}', P.Fire),
        ('{"type": "throw_apple", "origin": [0, 1, 2], "velocity": [0, 0, 0]}', P.ThrowApple),
        ('{"type": "move_player", "position": [1, 0, 1]}', P.MovePlayer),
        ('{"type": "ping", "id": 4}', P.Ping),
    ],
)
def test_every_documented_message_is_accepted(text, kind):
    assert isinstance(P.parse_client_message(text), kind)


@pytest.mark.parametrize(
    "text, field, words",
    [
        ('{"type": "step", "n": 0}', "n", "greater than or equal to 1"),
        ('{"type": "step", "n": "many"}', "n", "integer"),
        ('{"type": "speed", "multiplier": -1}', "multiplier", "greater than 0"),
        ('{"type": "speed"}', "multiplier", "required"),
        ('{"type": "mode", "mode": "warp"}', "mode", "realtime"),
        ('{"type": "select", "species": "bird"}', "uid", "required"),
        ('{"type": "select", "species": "", "uid": 1}', "species", "at least 1"),
        ('{"type": "pause", "now": true}', "now", "unknown field"),
        ('{"type": "fire", "origin": [0, 1], "direction": [0, 0, 1]}', "origin.2", "required"),
        ('{"type": "fire", "origin": [0, NaN, 0], "direction": [0, 0, 1]}', "origin.1", "finite"),
        ('{"type": "warp"}', "type", "unknown message type"),
        ('{"kind": "pause"}', "type", "unknown message type"),
        ("[1, 2]", "type", "JSON object"),
    ],
)
def test_invalid_messages_name_the_field_and_the_reason(text, field, words):
    with pytest.raises(P.MessageError) as caught:
        P.parse_client_message(text)
    error = caught.value.to_json()
    assert error["type"] == "error"
    assert error["field"] == field
    assert words.lower() in error["message"].lower()
    assert field in error["message"]


@pytest.mark.parametrize(
    "payload, words",
    [("{not json", "not valid JSON"), (b"\x00\x01", "binary"), ('{"type": "ping", "pad": "' + "x" * 5000 + '"}', "too large")],
)
def test_garbage_is_refused_without_a_field(payload, words):
    with pytest.raises(P.MessageError, match=words):
        P.parse_client_message(payload)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=200), st.binary(max_size=64), st.recursive(
    st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(["type", "n", "uid", "species", "origin"]) | st.text(max_size=5), inner, max_size=4),
    max_leaves=12,
).map(lambda v: json.dumps(v, allow_nan=True))))
def test_no_input_escapes_as_anything_but_a_message_error(payload):
    try:
        P.parse_client_message(payload)
    except P.MessageError as exc:
        json.dumps(exc.to_json(), allow_nan=False)


def test_server_json_never_contains_nan_tokens():
    text = P.dumps({"a": float("nan"), "b": np.float32(1.5), "c": np.array([1.0, np.inf]), "d": (np.int64(3),)})
    assert json.loads(text) == {"a": None, "b": 1.5, "c": [1.0, None], "d": [3]}


def test_environment_model_accepts_the_documented_shape():
    env = P.Environment.model_validate({
        "terrain": {"origin": [0, 0], "size": [10, 10], "resolution": [2, 2], "heights": [0, 1, 2, 3]},
        "water": {"level": 1.0, "bounds_min": [0, 0], "bounds_max": [5, 5]},
        "obstacles": [{"shape": "sphere", "center": [1, 2, 3], "radius": 1.5}],
    })
    assert env.obstacles[0].radius == 1.5 and math.isclose(env.water.level, 1.0)


def test_a_load_that_ends_before_a_client_is_served_still_reaches_it_in_order():
    # statuses are latest-wins per client; a loading status is not: the page must see that a load happened
    import asyncio

    from starling.server import protocol as P
    from starling.server.app import Hub

    loop = asyncio.new_event_loop()
    try:
        hub = Hub(loop)
        client = hub.add(websocket=None)
        client.events.clear()
        loading = P.dumps({"type": "status", "loading": True, "loading_stage": "building lagoon"})
        later = P.dumps({"type": "status", "loading": True, "loading_stage": "compiling"})
        done = P.dumps({"type": "status", "loading": False, "step": 0})
        scene = P.dumps({"type": "scene", "scenario": "lagoon"})
        hub._on_status(loading)
        hub._on_status(later)  # one loading status replaces another
        hub._on_scene(scene)
        hub._on_status(done)
        assert list(client.events) == [later, scene] and client.status == done
        hub._on_status(P.dumps({"type": "status", "loading": False, "step": 1}))
        assert list(client.events) == [later, scene]  # ordinary statuses still replace each other
    finally:
        loop.close()
