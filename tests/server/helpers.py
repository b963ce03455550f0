"""Helpers for the server tests: a sink that records what the runner posts, polling,
and the small flock every test runs against (the real simulation, 200 birds)."""
from __future__ import annotations

import json
import threading
import time
from typing import Callable, Optional


SCENARIO = "flock"
SMALL = ("species.bird.count=200",)


class RecordingSink:
    """Collects everything a runner posts (from its thread) for the test to inspect."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.frames: list[bytes] = []
        self.status: list[dict] = []
        self.scenes: list[dict] = []
        self.events: list[tuple[Optional[int], dict]] = []
        self.inspects: list[tuple[int, dict]] = []

    def post_frame(self, frame: bytes) -> None:
        with self.lock:
            self.frames.append(frame)

    def post_status(self, text: str) -> None:
        with self.lock:
            self.status.append(json.loads(text))

    def post_scene(self, text: str) -> None:
        with self.lock:
            self.scenes.append(json.loads(text))

    def post_event(self, text: str, client_id: Optional[int] = None) -> None:
        with self.lock:
            self.events.append((client_id, json.loads(text)))

    def post_inspect(self, client_id: int, text: str) -> None:
        with self.lock:
            self.inspects.append((client_id, json.loads(text)))

    def errors(self) -> list[str]:
        with self.lock:
            return [e["message"] for _, e in self.events if e.get("type") == "error"]


def wait_for(condition: Callable[[], object], timeout: float = 10.0, what: str = "condition") -> object:
    """Poll until ``condition()`` is truthy; fail with ``what`` otherwise."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.01)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
