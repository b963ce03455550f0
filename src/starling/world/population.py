"""A population: every animal of one species, stored as struct-of-arrays.

Arrays are allocated with spare capacity and grown geometrically, so spawning during a
run does not reallocate every step. The public array attributes are views of the
first ``n`` (live) rows; they stay valid until the population next changes size.
Animals keep a stable ``uid`` across removals — indices shift when animals die,
uids never do.
"""
from __future__ import annotations

from typing import Callable, Iterable, Mapping, Optional

import numpy as np

from ..kernel_types import field_encoded_namedtuple, module_getattr
from ..systems import ComponentSpec

CORE_FIELDS = ("position", "velocity", "forward", "up", "uid")
#: the arrays every population has, read as attributes (``pop.position``)
CORE_ARRAYS = CORE_FIELDS + ("alive", "tags")
_AGENT_TUPLES: dict[tuple[str, ...], type] = {}


def agent_tuple_type(component_names: Iterable[str]) -> type:
    """The named tuple type kernels receive: core arrays then the components, sorted."""
    fields = CORE_FIELDS + tuple(sorted(component_names))
    t = _AGENT_TUPLES.get(fields)
    if t is None:
        t = field_encoded_namedtuple(__name__, "Agents", fields[len(CORE_FIELDS):], leading=CORE_FIELDS)
        _AGENT_TUPLES[fields] = t
    return t


class _LiveRows:
    """A core array as a class attribute: the hot path's ``pop.position`` without ``__getattr__``'s miss.

    The first read under a layout keeps the live-row view in the population's own
    ``__dict__``, where Python looks before this (non-data) descriptor, so every later read
    is a plain attribute lookup with no Python call (a step reads a core array a hundred
    times or more). The population drops those entries whenever its count changes or a
    buffer is replaced (``Population._set_count``, ``_storage_changed``).
    """

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, pop, owner=None):
        if pop is None:
            return self
        view = pop._buffers[self.name][: pop.n]
        pop.__dict__[self.name] = view
        return view


class Population:
    """Struct-of-arrays state of one species.

    Core arrays: ``position``, ``velocity``, ``forward``, ``up`` (n,3) float32;
    ``uid`` (n,) int64; ``alive`` (n,) bool (false only between a kill and the end of
    the step); ``tags`` (n,) uint32 bit set (bits named by the world's tag table).
    Components: named arrays of ``(n,) + shape`` of their dtype, float32 numbers unless
    declared otherwise by a :class:`~starling.systems.ComponentSpec`.
    """

    position = _LiveRows()
    velocity = _LiveRows()
    forward = _LiveRows()
    up = _LiveRows()
    uid = _LiveRows()
    alive = _LiveRows()
    tags = _LiveRows()

    def __init__(self, name: str, capacity: int = 64, components: Optional[Mapping[str, float]] = None):
        self.name = name
        self.n = 0
        self.capacity = 0
        self._component_defaults: dict[str, float] = dict(components or {})
        # dtype and per-animal shape of the components declared by a spec that is not a float32 number
        self._component_types: dict[str, tuple[tuple[int, ...], np.dtype]] = {}
        # components each newcomer draws for itself (individual variation): name -> draw(k)
        self._draws: dict[str, Callable[[int], np.ndarray]] = {}
        self._buffers: dict[str, np.ndarray] = {}
        # kernel views (by tuple type) and array views (by name) of the live rows, each kept with
        # the count it was made for and dropped when a buffer is replaced (see :attr:`layout`)
        self._version = 0
        #: ``(count, buffer version)``: changes exactly when the live-row views change (the count, or a
        #: buffer replaced). Arrays are only ever rewritten in place otherwise, so a view (or anything
        #: built from views, such as a kernel's argument tuple) taken under one layout stays valid for
        #: as long as the layout is the same: callers may keep it instead of slicing every step. A
        #: plain attribute, set where it changes: the step compares it a few dozen times.
        self.layout = (0, 0)
        #: advances whenever animals arrive (appended, or loaded from a state): rows not seen before
        self.arrivals = 0
        self._views: dict = {}
        self._allocate(max(int(capacity), 16))
        self._agent_type = agent_tuple_type(self._component_defaults)

    # ------------------------------------------------------------------ storage
    def _allocate(self, capacity: int) -> None:
        specs = {
            "position": ((3,), np.float32, 0.0),
            "velocity": ((3,), np.float32, 0.0),
            "forward": ((3,), np.float32, 0.0),
            "up": ((3,), np.float32, 0.0),
            "uid": ((), np.int64, -1),
            "alive": ((), np.bool_, False),
            "tags": ((), np.uint32, 0),
        }
        for name, default in self._component_defaults.items():
            shape, dtype = self._component_types.get(name, ((), np.float32))
            specs[name] = (shape, dtype, default)
        new = {}
        for name, (shape, dtype, fill) in specs.items():
            buf = np.full((capacity,) + shape, fill, dtype=dtype)
            old = self._buffers.get(name)
            if old is not None and self.n:
                buf[: self.n] = old[: self.n]
            new[name] = buf
        self._buffers = new
        self.capacity = capacity
        self._storage_changed()

    def _storage_changed(self) -> None:
        """A buffer was replaced: every view handed out so far looks at old memory."""
        self._version += 1
        self.layout = (self.n, self._version)
        self._views.clear()
        self._drop_core_views()

    def _set_count(self, n: int) -> None:
        """The number of live animals changed: the core arrays' cached views are too short or too long."""
        self.n = n
        self.layout = (n, self._version)
        self._drop_core_views()

    def _drop_core_views(self) -> None:
        d = self.__dict__
        for name in CORE_ARRAYS:
            d.pop(name, None)

    def __getstate__(self) -> dict:
        # cached views would unpickle as copies, no longer looking at the buffers
        state = self.__dict__.copy()
        state["_views"] = {}
        for name in CORE_ARRAYS:
            state.pop(name, None)
        return state

    def _ensure(self, n: int) -> None:
        if n > self.capacity:
            self._allocate(max(n, int(self.capacity * 1.5) + 1))

    def live_rows(self, name: str) -> np.ndarray:
        """The live rows of array ``name``: one view per layout, kept until the count or buffer changes."""
        n = self.n
        cached = self._views.get(name)
        if cached is not None and cached[0] == n:
            return cached[1]
        view = self._buffers[name][:n]
        self._views[name] = (n, view)
        return view

    def __getattr__(self, name: str) -> np.ndarray:
        buffers = self.__dict__.get("_buffers")
        if buffers is not None and name in buffers:
            return self.live_rows(name)
        raise AttributeError(f"population {self.__dict__.get('name')!r} has no array {name!r}")

    @property
    def component_names(self) -> tuple[str, ...]:
        return tuple(sorted(self._component_defaults))

    def has_component(self, name: str) -> bool:
        return name in self._component_defaults

    def component(self, name: str) -> np.ndarray:
        if name not in self._component_defaults:
            raise KeyError(
                f"species {self.name!r} has no component {name!r}; it has: "
                f"{', '.join(self.component_names) or 'none'}"
            )
        return self.live_rows(name)

    def add_component(self, name, default: float = 0.0) -> None:
        """Declare a per-animal component (existing animals get its default).

        ``name`` is a component name (a float32 number per animal, default ``default``) or a
        :class:`~starling.systems.ComponentSpec` giving the dtype, shape and default.
        Declaring an existing component again changes nothing; a spec whose type differs
        from the existing component's is an error.
        """
        if isinstance(name, ComponentSpec):
            spec = name
            name, default = spec.name, spec.default
            shape, dtype = spec.shape, np.dtype(spec.dtype)
        else:
            shape, dtype = (), np.dtype(np.float32)
        if name in self._component_defaults or name in self._buffers:
            buf = self._buffers.get(name)
            if buf is not None and (buf.dtype != dtype or buf.shape[1:] != shape):
                raise ValueError(f"component {name!r} of {self.name!r} is {buf.dtype}{list(buf.shape[1:])}, "
                                 f"not {dtype}{list(shape)}")
            return
        self._component_defaults[name] = float(default)
        if shape != () or dtype != np.float32:
            self._component_types[name] = (shape, dtype)
        self._buffers[name] = np.full((self.capacity,) + shape, default, dtype=dtype)
        self._agent_type = agent_tuple_type(self._component_defaults)
        self._storage_changed()

    def component_spec(self, name: str) -> ComponentSpec:
        """The type of component ``name`` as a spec."""
        self.component(name)
        shape, dtype = self._component_types.get(name, ((), np.dtype(np.float32)))
        return ComponentSpec(name, dtype.name, shape, self._component_defaults[name])

    def add_drawn_component(self, name: str, draw: Callable[[int], np.ndarray], default: float = 0.0) -> None:
        """Declare a component every animal draws once, when it enters: ``draw(k)`` gives ``k`` values.

        Animals already present draw now; later spawns draw in the order they arrive, so
        a seeded ``draw`` makes the whole run reproducible. Redeclaring replaces the draw
        and redraws everyone (a parameter whose distribution changed during the run).
        """
        self.add_component(name, default)
        self._draws[name] = draw
        if self.n:
            self._buffers[name][: self.n] = draw(self.n)

    def set_draw(self, name: str, draw: Callable[[int], np.ndarray], default: float = 0.0) -> None:
        """Like :meth:`add_drawn_component` but keeps the values animals already drew (a restored run)."""
        self.add_component(name, default)
        self._draws[name] = draw

    def drop_draw(self, name: str) -> None:
        """Stop drawing ``name`` for newcomers (the component itself stays)."""
        self._draws.pop(name, None)

    def view(self, tuple_type):
        """The live rows of the fields of ``tuple_type`` (an :func:`agent_tuple_type`): what a kernel
        that declared those components receives."""
        n = self.n
        cached = self._views.get(tuple_type)
        if cached is not None and cached[0] == n:
            return cached[1]
        b = self._buffers
        view = tuple_type(*(b[f][:n] for f in tuple_type._fields))
        self._views[tuple_type] = (n, view)
        return view

    def agents(self):
        """The kernel view: a named tuple of the live rows of every array."""
        n = self.n
        b = self._buffers
        return self._agent_type(*(b[f][:n] for f in self._agent_type._fields))

    # ------------------------------------------------------------------ state
    def state(self) -> dict:
        """The live rows of every array and the component defaults, as plain data (copies)."""
        return {
            "n": int(self.n),
            "defaults": dict(self._component_defaults),
            "types": {name: [dtype.name, list(shape)] for name, (shape, dtype) in self._component_types.items()},
            "arrays": {name: buf[: self.n].copy() for name, buf in self._buffers.items()},
        }

    def load_state(self, state: dict) -> None:
        """Replace every animal by the saved ones; components this population lacks are added.

        Components declared here but absent from ``state`` keep their default (a component a
        reconfiguration introduced); newcomers' draw functions stay as they are.
        """
        types = state.get("types", {})
        for name, default in state["defaults"].items():
            if name in types:
                dtype, shape = types[name]
                self.add_component(ComponentSpec(name, dtype, tuple(shape), default))
            else:
                self.add_component(name, default)
            self._component_defaults[name] = float(default)
        n = int(state["n"])
        self._set_count(0)
        self._ensure(n)
        arrays = state["arrays"]
        for name, buf in self._buffers.items():
            saved = arrays.get(name)
            if saved is not None:
                buf[:n] = saved
            elif name in self._component_defaults:
                buf[:n] = self._component_defaults[name]
        self._buffers["uid"][n:] = -1
        self._buffers["alive"][n:] = False
        self.arrivals += 1
        self._set_count(n)

    def remove_rows(self, rows: np.ndarray) -> None:
        """Drop the animals at ``rows`` now (a reconfiguration lowering the count), keeping the others' order."""
        if len(rows) == 0:
            return
        self._buffers["alive"][rows] = False
        self.compact()

    # ------------------------------------------------------------------ changes
    def append(self, uids: np.ndarray, position: np.ndarray, velocity: np.ndarray,
               forward: Optional[np.ndarray] = None, up: Optional[np.ndarray] = None,
               components: Optional[Mapping[str, np.ndarray]] = None, tags: int = 0) -> None:
        """Add animals at the end (used at start-up and by the command buffer)."""
        k = len(uids)
        if k == 0:
            return
        start = self.n
        self._ensure(start + k)
        b = self._buffers
        sl = slice(start, start + k)
        b["uid"][sl] = uids
        b["position"][sl] = position
        b["velocity"][sl] = velocity
        if forward is None:
            forward = _headings(np.asarray(velocity, np.float32))
        b["forward"][sl] = forward
        b["up"][sl] = up if up is not None else _up_for(np.asarray(forward, np.float32))
        b["alive"][sl] = True
        b["tags"][sl] = tags
        for name, default in self._component_defaults.items():
            values = (components or {}).get(name)
            if values is None and name in self._draws:
                values = self._draws[name](k)
            b[name][sl] = default if values is None else values
        self.arrivals += 1
        self._set_count(start + k)

    def compact(self) -> int:
        """Drop every animal whose ``alive`` is false, keeping the others' order."""
        n = self.n
        keep = self._buffers["alive"][:n]
        removed = int(n - np.count_nonzero(keep))
        if removed == 0:
            return 0
        idx = np.flatnonzero(keep)
        for buf in self._buffers.values():
            buf[: idx.size] = buf[idx]
        self._set_count(idx.size)
        self._buffers["alive"][self.n : n] = False
        self._buffers["uid"][self.n : n] = -1
        return removed

    def index_of(self, uid: int) -> int:
        """Row of the animal with ``uid``, or -1 if it is not alive."""
        hits = np.flatnonzero(self._buffers["uid"][: self.n] == uid)
        return int(hits[0]) if hits.size else -1

    def permute(self, order: np.ndarray) -> None:
        """Reorder the rows (e.g. into grid-cell order for memory coherence)."""
        for buf in self._buffers.values():
            buf[: self.n] = buf[order]


def _headings(velocity: np.ndarray) -> np.ndarray:
    speed = np.linalg.norm(velocity, axis=1, keepdims=True)
    out = np.zeros_like(velocity)
    out[:, 2] = 1.0
    moving = speed[:, 0] > 1e-6
    out[moving] = velocity[moving] / speed[moving]
    return out


def _up_for(forward: np.ndarray) -> np.ndarray:
    """World up made perpendicular to each forward vector."""
    up = np.zeros_like(forward)
    up[:, 1] = 1.0
    up -= forward * (forward @ np.array([0, 1, 0], np.float32))[:, None]
    length = np.linalg.norm(up, axis=1, keepdims=True)
    bad = length[:, 0] < 1e-4
    up[bad] = np.array([1, 0, 0], np.float32)
    length[bad] = 1.0
    return (up / length).astype(np.float32)


# pickle (Numba's cache index) may ask for the view type of a species this process never built
__getattr__ = module_getattr(__name__, "Agents", leading=CORE_FIELDS)
