"""The browser viewer: a FastAPI server streaming a running simulation over WebSockets.

``serve(scenario)`` is what ``starling serve`` calls; ``create_app`` builds the
same application for tests and embedding; ``serve_replay``/``create_replay_app`` serve a
recording instead (``starling replay``). The wire format is in
``docs/protocol.md``, :mod:`starling.server.protocol` (control messages) and
:mod:`starling.frames` (the binary frames).
"""
from .app import BackgroundServer, create_app, create_replay_app, serve, serve_replay
from .protocol import parse_client_message
from .runner import SimulationRunner

__all__ = ["BackgroundServer", "create_app", "create_replay_app", "serve", "serve_replay", "parse_client_message", "SimulationRunner"]
