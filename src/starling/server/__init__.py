"""The browser viewer: a FastAPI server streaming a running simulation over WebSockets.

``serve(scenario)`` is what ``starling serve`` calls; ``create_app`` builds the
same application for tests and embedding. The wire format is in
``docs/protocol.md`` and :mod:`starling.server.protocol`.
"""
from .app import BackgroundServer, create_app, serve
from .protocol import FrameEncoder, decode_frame, parse_client_message
from .runner import SimulationRunner

__all__ = ["BackgroundServer", "create_app", "serve", "FrameEncoder", "decode_frame", "parse_client_message", "SimulationRunner"]
