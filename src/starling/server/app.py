"""The FastAPI application: static front-end, the ``/ws`` stream and a few JSON endpoints.

The asyncio side never waits on the simulation. The runner thread posts output
into the :class:`Hub`, which keeps for every client only the *latest* frame,
status and inspection (plus a short queue of messages that must not be lost,
such as errors and scene changes). Each client has its own writer task that
sends whatever is newest when its socket is ready again, so a slow or stalled
browser just sees fewer frames (the skipped ones are counted as dropped) while
the simulation and the other clients carry on.
"""
from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import threading
import time
import webbrowser
from collections import deque
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Callable, Iterable, Optional
from urllib.parse import urlsplit

from fastapi import FastAPI, WebSocket
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.websockets import WebSocketDisconnect

from . import protocol as P
from .runner import ClientGone, SimulationRunner
from .scenes import Loader, Names, scenario_loader

_LOADING = '"loading":true'  # how a status saying a scene is loading reads (protocol.dumps is compact)

log = logging.getLogger("starling.server")

STATIC_DIR = Path(__file__).parent / "static"
WS_MAX_BYTES = 64 * 1024
"""Hard cap enforced by uvicorn (the connection is closed); the 4 KiB soft cap answers with an error."""

_MISSING_FRONTEND = """<!doctype html><meta charset="utf-8"><title>Starling</title>
<body style="font:16px system-ui;background:#101318;color:#dde3ea;padding:3em">
<h1>Starling server is running, but the browser front-end is not built.</h1>
<p>Run <code>make setup</code> in the repository (it runs <code>npm ci &amp;&amp; npm run build</code>
in <code>web/</code>), then reload this page.</p>
<p>The simulation stream is live at <code>/ws</code>; status at <a href="/api/status" style="color:#7fc4ff">/api/status</a>.</p>
</body>"""


class Client:
    """One connected browser: its mailboxes and counters (touched only on the event loop)."""

    def __init__(self, client_id: int, websocket: WebSocket) -> None:
        self.id = client_id
        self.websocket = websocket
        self.wake = asyncio.Event()
        self.events: deque[str] = deque(maxlen=256)
        self.status: Optional[str] = None
        self.inspect: Optional[str] = None
        self.frame: Optional[bytes] = None
        self.frames_sent = 0
        self.frames_dropped = 0

    def push_event(self, text: str) -> None:
        self.events.append(text)
        self.wake.set()

    def set_frame(self, frame: bytes) -> None:
        if self.frame is not None:
            self.frames_dropped += 1
        self.frame = frame
        self.wake.set()


class Hub:
    """Fans runner output out to clients; the ``post_*`` methods are safe to call from any thread."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.clients: dict[int, Client] = {}
        self.scene: Optional[str] = None
        self.status: Optional[str] = None
        self.frame: Optional[bytes] = None
        self._ids = itertools.count(1)

    # Thread-safe entry points: hop onto the event loop and return immediately.
    def post_frame(self, frame: bytes) -> None:
        self.loop.call_soon_threadsafe(self._on_frame, frame)

    def post_status(self, text: str) -> None:
        self.loop.call_soon_threadsafe(self._on_status, text)

    def post_scene(self, text: str) -> None:
        self.loop.call_soon_threadsafe(self._on_scene, text)

    def post_event(self, text: str, client_id: Optional[int] = None) -> None:
        self.loop.call_soon_threadsafe(self._on_event, text, client_id)

    def post_inspect(self, client_id: int, text: str) -> None:
        self.loop.call_soon_threadsafe(self._on_inspect, client_id, text)

    # Event-loop side.
    def add(self, websocket: WebSocket) -> Client:
        client = Client(next(self._ids), websocket)
        # A newcomer gets the current scene, status and last frame at once (even while paused).
        if self.scene is not None:
            client.push_event(self.scene)
        client.status = self.status
        client.frame = self.frame
        client.wake.set()
        self.clients[client.id] = client
        return client

    def remove(self, client: Client) -> None:
        self.clients.pop(client.id, None)

    def _on_frame(self, frame: bytes) -> None:
        self.frame = frame
        for client in self.clients.values():
            client.set_frame(frame)

    @staticmethod
    def _keep_loading(client: Client) -> None:
        """Statuses are latest-wins, but a client must see that a load happened even when the
        load ends before its sender runs: a pending loading status is queued, in order, instead."""
        if client.status is not None and _LOADING in client.status:
            client.push_event(client.status)
            client.status = None

    def _on_status(self, text: str) -> None:
        self.status = text
        loading = _LOADING in text
        for client in self.clients.values():
            if not loading:
                self._keep_loading(client)
            client.status = text
            client.wake.set()

    def _on_scene(self, text: str) -> None:
        self.scene = text
        self.frame = None
        for client in self.clients.values():
            self._keep_loading(client)
            client.frame = None  # a frame of the old scene must not follow the new scene message
            client.inspect = None
            client.push_event(text)

    def _on_event(self, text: str, client_id: Optional[int]) -> None:
        targets: Iterable[Client] = self.clients.values() if client_id is None else filter(None, [self.clients.get(client_id)])
        for client in targets:
            client.push_event(text)

    def _on_inspect(self, client_id: int, text: str) -> None:
        client = self.clients.get(client_id)
        if client is not None:
            client.inspect = text
            client.wake.set()


async def _writer(client: Client) -> None:
    """Send a client's newest output whenever its socket can take it (stale frames are skipped)."""
    ws = client.websocket
    while True:
        await client.wake.wait()
        client.wake.clear()
        while client.events:
            await ws.send_text(client.events.popleft())
        if client.status is not None:
            text, client.status = client.status, None
            await ws.send_text(text)
        if client.inspect is not None:
            text, client.inspect = client.inspect, None
            await ws.send_text(text)
        if client.frame is not None:
            frame, client.frame = client.frame, None
            await ws.send_bytes(frame)
            client.frames_sent += 1


def origin_allowed(origin: Optional[str], host: Optional[str], extra: Iterable[str] = ()) -> bool:
    """A WebSocket may come from no browser page (no Origin) or from a page served by this server.

    Browsers send ``Origin`` on every WebSocket handshake and any web page can open
    one to localhost, so without this check a random site could drive the
    simulation. Only the exact scheme-less host:port of the request is trusted.
    """
    if origin is None:
        return True
    if origin in extra:
        return True
    parts = urlsplit(origin)
    if parts.scheme not in ("http", "https") or not parts.netloc or host is None:
        return False
    return parts.netloc.lower() == host.lower()


def create_app(
    scenario: str = "flock",
    *,
    realtime: bool = True,
    seed: Optional[int] = None,
    static_dir: Optional[Path] = None,
    allowed_origins: Iterable[str] = (),
    max_fps: float = 60.0,
    overrides: Iterable[str] = (),
    loader: Optional[Loader] = None,
    scenario_names: Optional[Names] = None,
    recorder: Optional[Callable[[Any, str], Any]] = None,
    workspace: Optional[Path] = None,
    on_loading: Optional[Callable[[str, float], None]] = None,
) -> FastAPI:
    """Build the app. The simulation thread starts with the app's lifespan and stops with it.

    ``workspace`` is the folder the editor's API saves and loads TOML files in
    (default ``./starling-workspace``; see :mod:`starling.server.editor`).

    ``overrides`` are config overrides for ``scenario`` (``"species.bird.count=100000"``);
    ``allowed_origins`` adds trusted page origins (e.g. the Vite dev server);
    ``loader``/``scenario_names`` default to the public ``starling`` API;
    ``on_loading(stage, fraction)`` follows each scenario's loading (the terminal's progress bar).
    """
    runner = SimulationRunner(
        scenario, realtime=realtime, seed=seed, max_fps=max_fps,
        loader=loader or scenario_loader(tuple(overrides), scenario), scenario_names=scenario_names,
        recorder=recorder, on_loading=on_loading,
    )
    return _app_for(runner, static_dir, allowed_origins,
                    workspace=Path(workspace) if workspace is not None else Path("starling-workspace"))


def create_replay_app(
    recording: Any,
    *,
    label: Optional[str] = None,
    static_dir: Optional[Path] = None,
    allowed_origins: Iterable[str] = (),
    max_fps: float = 60.0,
) -> FastAPI:
    """The same app serving a recording (an opened ``starling.recording`` reader) instead of
    a live simulation: the stream, views and charts are the live ones, the control channel
    moves a playhead (``seek``, ``next_event``, …; see docs/replay.md)."""
    from .replay import ReplayRunner

    return _app_for(ReplayRunner(recording, label=label, max_fps=max_fps), static_dir, allowed_origins)


def _app_for(runner: Any, static_dir: Optional[Path], allowed_origins: Iterable[str],
             workspace: Optional[Path] = None) -> FastAPI:
    """The FastAPI app around a runner (live or replay: both take the same commands and sink)."""
    replaying = not isinstance(runner, SimulationRunner)
    extra_origins = frozenset(allowed_origins)
    static = Path(static_dir) if static_dir is not None else STATIC_DIR

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        hub = Hub(asyncio.get_running_loop())
        app.state.hub = hub
        runner.start(hub)
        try:
            yield
        finally:
            await asyncio.to_thread(runner.stop)

    app = FastAPI(title="Starling", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.runner = runner

    @app.get("/api/status")
    async def status() -> JSONResponse:
        """The latest status message (what the browser's overlay shows), for scripts and checks."""
        hub: Hub = app.state.hub
        return JSONResponse(content=json.loads(hub.status) if hub.status else {"type": "status", "loading": True})

    @app.get("/api/scenarios")
    async def scenarios() -> dict[str, Any]:
        return {"current": runner.scenario_name, "scenarios": runner.scenario_names()}

    @app.websocket("/ws")
    async def stream(websocket: WebSocket) -> None:
        if not origin_allowed(websocket.headers.get("origin"), websocket.headers.get("host"), extra_origins):
            log.warning("refused WebSocket from origin %s", websocket.headers.get("origin"))
            await websocket.close(code=1008, reason="origin not allowed")
            return
        await websocket.accept()
        hub: Hub = app.state.hub
        client = hub.add(websocket)
        writer = asyncio.create_task(_writer(client))
        try:
            while True:
                message = await websocket.receive()
                if message["type"] == "websocket.disconnect":
                    break
                payload = message.get("text")
                if payload is None:
                    payload = message.get("bytes") or b""
                try:
                    command = P.parse_client_message(payload)
                except P.MessageError as exc:
                    client.push_event(P.dumps(exc.to_json()))
                    continue
                if isinstance(command, P.Ping):
                    client.push_event(P.dumps({"type": "pong", "id": command.id}))
                elif command.type in P.REPLAY_ONLY and not replaying:
                    client.push_event(P.dumps({
                        "type": "error", "field": "type",
                        "message": f"type: '{command.type}' moves through a recording; this server runs a live "
                                   "simulation (replay one with `starling replay FILE`)",
                    }))
                else:
                    runner.submit(client.id, command)
                if writer.done():  # the socket failed while sending
                    break
        except (WebSocketDisconnect, RuntimeError):
            pass
        finally:
            writer.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await writer  # collect its end (a send to a closed socket) so nothing is logged twice
            hub.remove(client)
            runner.submit(client.id, ClientGone())

    if workspace is not None and not replaying:
        from .editor import editor_router

        app.include_router(editor_router(runner, workspace))

    if (static / "index.html").is_file():
        app.mount("/", StaticFiles(directory=static, html=True), name="static")
    else:
        @app.get("/", response_class=HTMLResponse, status_code=503)
        async def missing_frontend() -> str:
            return _MISSING_FRONTEND

    return app


def _uvicorn_config(app: FastAPI, host: str, port: int):
    import uvicorn

    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        ws_max_size=WS_MAX_BYTES,
        ws_per_message_deflate=False,  # compressing megabyte frames would cost more than sending them
        lifespan="on",
    )


class BackgroundServer:
    """Serve an app from a daemon thread (notebooks, scripts, the browser tests).

    ``port=0`` picks a free port; :attr:`url` is known once the constructor returns.
    """

    def __init__(self, app: FastAPI, host: str = "127.0.0.1", port: int = 0, startup_timeout: float = 60.0) -> None:
        import uvicorn

        self.app = app
        self.server = uvicorn.Server(_uvicorn_config(app, host, port))
        self.thread = threading.Thread(target=self.server.run, name="starling-http", daemon=True)
        self.thread.start()
        deadline = time.monotonic() + startup_timeout
        while not self.server.started:
            if not self.thread.is_alive():
                raise RuntimeError(f"the server could not start on {host}:{port}")
            if time.monotonic() > deadline:
                raise TimeoutError("the server did not start in time")
            time.sleep(0.02)
        self.port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://{host}:{self.port}/"

    def stop(self, timeout: float = 15.0) -> None:
        self.server.should_exit = True
        self.thread.join(timeout)

    def __enter__(self) -> "BackgroundServer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve(
    scenario: str,
    host: str = "127.0.0.1",
    port: int = 8000,
    open_browser: bool = True,
    realtime: bool = True,
    overrides: Iterable[str] = (),
    recorder: Optional[Callable[[Any, str], Any]] = None,
    workspace: Optional[Path] = None,
    on_loading: Optional[Callable[[str, float], None]] = None,
) -> None:
    """Run the viewer server until Ctrl+C: prints the address, optionally opens a browser.

    Binds to localhost by default because the control channel can change the
    simulation; ``host="0.0.0.0"`` exposes it to the network on purpose only.
    """
    app = create_app(scenario, realtime=realtime, overrides=overrides, recorder=recorder, workspace=workspace,
                     on_loading=on_loading)
    _run_until_stopped(app, host, port, open_browser, f"serving '{scenario}'")


def serve_replay(recording: Any, label: str, host: str = "127.0.0.1", port: int = 8000,
                 open_browser: bool = True) -> None:
    """Replay an opened recording in the viewer until Ctrl+C (``label`` names it to the user)."""
    app = create_replay_app(recording, label=label)
    _run_until_stopped(app, host, port, open_browser, f"replaying '{label}'")


def _run_until_stopped(app: FastAPI, host: str, port: int, open_browser: bool, what: str) -> None:
    import uvicorn

    server = uvicorn.Server(_uvicorn_config(app, host, port))

    def announce() -> None:
        while not server.started:
            if server.should_exit:
                return
            time.sleep(0.05)
        bound = port
        for srv in getattr(server, "servers", []):
            for sock in srv.sockets:
                bound = sock.getsockname()[1]
        shown = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
        url = f"http://{shown}:{bound}/"
        print(f"Starling is {what} at {url}  (Ctrl+C to stop)", flush=True)
        if host in ("0.0.0.0", "::", ""):
            print("warning: listening on all interfaces; anyone on the network can watch and control it", flush=True)
        if not (STATIC_DIR / "index.html").is_file():
            print("note: the browser front-end is not built; run `make setup`", flush=True)
        if open_browser:
            webbrowser.open(url)

    threading.Thread(target=announce, name="starling-announce", daemon=True).start()
    try:
        server.run()
    except KeyboardInterrupt:  # uvicorn has shut down cleanly and re-raised the Ctrl+C
        pass
    print("Starling stopped.", flush=True)
