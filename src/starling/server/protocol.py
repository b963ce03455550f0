"""The wire protocol between the simulation server and the browser.

Two kinds of WebSocket message travel:

* **Frames** (server → client, binary): every species' positions, orientations,
  speeds and uids at one step, written by :mod:`starling.frames` (the codec the
  recorder and replay share; byte layout in ``docs/protocol.md``).
* **Control and status messages** (both ways, JSON text). What a client may ask
  is a closed set of pydantic models joined by a discriminated union on
  ``type`` (:data:`ClientMessage`); anything else is refused with an ``error``
  message that names the offending field (:func:`parse_client_message`).
"""
from __future__ import annotations

import json
import math
from typing import Annotated, Any, Literal, Optional, Union

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

# --------------------------------------------------------------------------------------
# JSON control messages (client → server)
# --------------------------------------------------------------------------------------

MAX_MESSAGE_BYTES = 4096
"""Largest control message accepted; every legitimate message is far below this."""

_Finite = Annotated[float, Field(allow_inf_nan=False)]
Vec3 = tuple[_Finite, _Finite, _Finite]
_Name = Annotated[str, Field(min_length=1, max_length=64)]


class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Pause(_Message):
    """Stop advancing the simulation (frames keep flowing so the view stays live)."""

    type: Literal["pause"]


class Resume(_Message):
    """Advance again, paced from now on (no burst to catch up the paused time)."""

    type: Literal["resume"]


class Step(_Message):
    """Advance exactly ``n`` steps, then stay paused."""

    type: Literal["step"]
    n: int = Field(1, ge=1, le=10_000)


class Speed(_Message):
    """Simulated seconds per wall-clock second in real-time mode."""

    type: Literal["speed"]
    multiplier: float = Field(gt=0.0, le=64.0, allow_inf_nan=False)


class Mode(_Message):
    """``realtime``: paced to the wall clock × speed; ``fast``: as fast as the CPU allows."""

    type: Literal["mode"]
    mode: Literal["realtime", "fast"]


class Select(_Message):
    """Follow one animal: the server answers with an ``inspect`` message every frame."""

    type: Literal["select"]
    species: _Name
    uid: int = Field(ge=0, le=2**63 - 1)


class Deselect(_Message):
    type: Literal["deselect"]


class SwitchScenario(_Message):
    """Replace the running simulation by a built-in scenario (everyone sees the switch).

    ``paused`` loads it without taking a step, to look at (or step through) its start.
    """

    type: Literal["scenario"]
    name: _Name
    seed: Optional[int] = Field(None, ge=0, le=2**63 - 1)
    paused: bool = False


class Restart(_Message):
    """Start the running scenario over from its first step, with the same seed.

    ``keep_edits`` (the Restart button) keeps the editor's changes; without it (the Reset
    button) the scenario is loaded again as shipped, every edit discarded.
    """

    type: Literal["restart"]
    keep_edits: bool = True


class Fire(_Message):
    """The player shoots from ``origin`` along ``direction`` (need not be unit length)."""

    type: Literal["fire"]
    origin: Vec3
    direction: Vec3


class ThrowApple(_Message):
    """The player throws (or, with zero velocity, drops) an apple."""

    type: Literal["throw_apple"]
    origin: Vec3
    velocity: Vec3


class MovePlayer(_Message):
    """Place the player (and where it looks) in the world."""

    type: Literal["move_player"]
    position: Vec3
    direction: Optional[Vec3] = None


class Ping(_Message):
    """Round-trip probe; answered with ``pong`` carrying the same ``id``."""

    type: Literal["ping"]
    id: int = Field(0, ge=0, le=2**53)


class Seek(_Message):
    """Replay only: show recorded frame ``frame`` (0-based) and stay paused or playing as before."""

    type: Literal["seek"]
    frame: int = Field(ge=0, le=2**31 - 1)


class NextEvent(_Message):
    """Replay only: jump to the frame of the first recorded event after the current frame
    (of one ``kind``, e.g. ``death``, when given)."""

    type: Literal["next_event"]
    kind: Optional[_Name] = None


class PrevEvent(_Message):
    """Replay only: jump to the frame of the last recorded event before the current frame."""

    type: Literal["prev_event"]
    kind: Optional[_Name] = None


ClientMessage = Annotated[
    Union[Pause, Resume, Step, Speed, Mode, Select, Deselect, SwitchScenario, Restart, Fire, ThrowApple, MovePlayer, Ping,
          Seek, NextEvent, PrevEvent],
    Field(discriminator="type"),
]
_CLIENT_ADAPTER: TypeAdapter = TypeAdapter(ClientMessage)
MESSAGE_TYPES: tuple[str, ...] = (
    "pause", "resume", "step", "speed", "mode", "select", "deselect", "scenario", "restart",
    "fire", "throw_apple", "move_player", "ping", "seek", "next_event", "prev_event",
)
REPLAY_ONLY: frozenset[str] = frozenset({"seek", "next_event", "prev_event"})
"""Messages that only a replay answers (a live simulation has no recorded frames to move among)."""
LIVE_ONLY: frozenset[str] = frozenset({"scenario", "restart", "mode", "fire", "throw_apple", "move_player"})
"""Messages that change a running simulation, which a replay cannot do (it shows what was recorded)."""
PLAYER_ACTIONS: dict[str, str] = {"fire": "fire", "throw_apple": "throw_apple", "move_player": "move_player"}
"""Message type → the ``Simulation`` method that performs it (present only in scenarios with a player)."""


class MessageError(ValueError):
    """A client message was refused; ``field`` names what was wrong when one thing was."""

    def __init__(self, message: str, field: Optional[str] = None, errors: Optional[list[dict]] = None):
        super().__init__(message)
        self.message = message
        self.field = field
        self.errors = errors or []

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "error", "message": self.message}
        if self.field is not None:
            out["field"] = self.field
        if self.errors:
            out["errors"] = self.errors
        return out


def parse_client_message(text: Union[str, bytes]) -> Any:
    """Validate one control message, or raise :class:`MessageError` with a readable reason.

    The reason names the field the way a user wrote it (``step.n``), not pydantic's
    internal location, and says what was expected.
    """
    if isinstance(text, (bytes, bytearray)):
        raise MessageError("binary messages are not accepted; send JSON text")
    if len(text.encode("utf-8", "surrogatepass")) > MAX_MESSAGE_BYTES:
        raise MessageError(f"message too large (limit {MAX_MESSAGE_BYTES} bytes)")
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise MessageError(f"message is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise MessageError("a message must be a JSON object with a 'type' field", field="type")
    kind = data.get("type")
    if not isinstance(kind, str) or kind not in MESSAGE_TYPES:
        shown = json.dumps(kind)[:40] if kind is not None else "missing"
        raise MessageError(
            f"type: unknown message type {shown}; expected one of {', '.join(MESSAGE_TYPES)}",
            field="type",
        )
    try:
        return _CLIENT_ADAPTER.validate_python(data)
    except ValidationError as exc:
        errors = []
        for err in exc.errors(include_url=False, include_input=False):
            loc = [str(p) for p in err.get("loc", ())]
            if loc and loc[0] == kind:  # the union's tag is not part of the user's field path
                loc = loc[1:]
            field = ".".join(loc) or "type"
            reason = err.get("msg", "invalid")
            if err.get("type") == "extra_forbidden":
                reason = f"unknown field for a '{kind}' message"
            errors.append({"field": field, "reason": reason})
        first = errors[0]
        summary = "; ".join(f"{e['field']}: {e['reason']}" for e in errors[:4])
        raise MessageError(f"invalid '{kind}' message: {summary}", field=first["field"], errors=errors) from None


# --------------------------------------------------------------------------------------
# Server → client JSON
# --------------------------------------------------------------------------------------


class SpeciesInfo(BaseModel):
    """How the viewer draws one species (index = position in every frame)."""

    index: int
    name: str
    model: str
    color: str
    scale: float


ENTITY_KINDS = ("apple", "carcass", "sound", "player")
"""The system-made populations the viewer knows how to draw; any other is sent as ``other``."""


class EntityInfo(BaseModel):
    """One frame block that is not a species: a population the simulation's systems made
    (the ecology's apples, carcasses, sounds and player).

    ``index`` is the block's position in every frame; entity blocks follow the species
    blocks, so the first one has ``index == len(species)``. A population may be split over
    several blocks: carcasses get one block per species they came from (``tag`` names the
    tag a carcass must carry; ``model``, ``color`` and ``scale`` are that species' looks)
    and one last block, with ``tag`` and ``model`` null, for carcasses of none of them.
    For ``sound`` blocks the speed column carries each sound's current radius instead of a
    speed (same unit: centimetres); ``lifetime`` is how long a sound lasts, in seconds.
    """

    model_config = ConfigDict(extra="forbid")
    index: int
    name: str
    kind: Literal["apple", "carcass", "sound", "player", "other"]
    model: Optional[str] = None
    color: Optional[str] = None
    scale: float = 1.0
    tag: Optional[str] = None
    lifetime: Optional[float] = None


class Heightfield(BaseModel):
    """Terrain heights on a regular grid: ``heights[j * resolution[0] + i]`` at
    ``x = origin[0] + i * size[0] / (resolution[0]-1)``, ``z = origin[1] + j * size[1] / (resolution[1]-1)``.

    Without a ``color`` the viewer shades the terrain itself (grass, rock on steep
    slopes, lighter heights); obstacles and meshes likewise get colours from their shape
    (trunks, canopies, rocks) unless the scene gives one, which always wins."""

    model_config = ConfigDict(extra="forbid")
    origin: tuple[float, float]
    size: tuple[float, float]
    resolution: tuple[int, int]
    heights: list[float]
    color: Optional[str] = None


class Wave(BaseModel):
    """One exp-sine plane wave of the water surface (seed 004, §3.1)."""

    model_config = ConfigDict(extra="forbid")
    amplitude: float
    wavelength: float
    speed: float
    direction: tuple[float, float]


class Water(BaseModel):
    """A water surface at ``level`` over a rectangle (x–z)."""

    model_config = ConfigDict(extra="forbid")
    level: float
    bounds_min: tuple[float, float]
    bounds_max: tuple[float, float]
    color: str = "#1d5d7a"
    waves: Optional[list[Wave]] = None


class Obstacle(BaseModel):
    """A solid primitive: box (``size`` full extents), sphere or vertical cylinder (``radius``, ``height``)."""

    model_config = ConfigDict(extra="forbid")
    shape: Literal["box", "sphere", "cylinder"]
    center: tuple[float, float, float]
    size: Optional[tuple[float, float, float]] = None
    radius: Optional[float] = None
    height: Optional[float] = None
    rotation_deg: tuple[float, float, float] = (0.0, 0.0, 0.0)
    color: Optional[str] = None


class TriangleMesh(BaseModel):
    """Triangles in world coordinates: ``positions`` holds 9 numbers (three corners) per triangle."""

    model_config = ConfigDict(extra="forbid")
    positions: list[float]
    color: Optional[str] = None


class Environment(BaseModel):
    """Static geometry the viewer renders; every part is optional."""

    model_config = ConfigDict(extra="forbid")
    terrain: Optional[Heightfield] = None
    water: Optional[Water] = None
    obstacles: list[Obstacle] = Field(default_factory=list)
    meshes: list[TriangleMesh] = Field(default_factory=list)


def jsonable(value: Any) -> Any:
    """Plain JSON values from simulation output: NumPy → Python, NaN/∞ → ``None``.

    JSON has no NaN and a browser's ``JSON.parse`` rejects the token Python would
    write, so a single NaN metric must not poison a whole status message.
    """
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, BaseModel):
        return jsonable(value.model_dump())
    return value


def dumps(message: dict[str, Any]) -> str:
    """Serialise a server message compactly (no NaN tokens, ever)."""
    return json.dumps(jsonable(message), separators=(",", ":"), allow_nan=False)
