"""Neighbour queries: who does each animal perceive? (thesis chapter 5, 9.5.3)

A neighbour query turns positions into a fixed-shape neighbourhood table that
every behaviour of a group then reads (thesis Algorithm 6: search first, then
run the behaviours on the stored neighbourhood).  Perception is limited three
ways, all combinable (thesis 5.1):

* a maximum distance (5.1.1): ``distance <= max_distance``, inclusive;
* a field of view (5.1.2): the angle between the animal's forward and the
  direction to the neighbour is at most ``fov_deg / 2``; 360 degrees, or a zero
  forward, sees all around; a coincident neighbour (distance 0) is always seen;
* a topological cap (5.1.3): at most ``k`` neighbours, the nearest ones, chosen
  *after* the distance and field of view filters.

The result is a :class:`Neighbors` table of ``k`` columns per animal, sorted by
distance with ties broken by target index, padded with ``-1`` / ``+inf``, and
with an explicit per-row ``overflow`` count of the candidates that passed both
filters but did not fit, so a truncation is never silent (the jax-md lesson).
Fixed capacity keeps memory at O(n k) (thesis 5.3.1) and the frame time stable
however dense the flock gets (5.2.2).

Three methods compute the same table bit for bit:

* ``"grid"`` (default): uniform grid with a counting sort, rebuilt per call,
  cell-ordered memory layout, row runs, serial or parallel Numba kernels;
  see ``grid.py``. Small queries (at most ``small.SMALL_MAX_PAIRS`` pairs) test
  every pair instead (``small.py``): same table, no grid to build. A population
  that queries itself through a table it keeps answers from neighbour lists kept
  over steps while they pay (``verlet.py``): same table again.  The thesis
  measured the grid faster than the k-d tree in
  every configuration it tried (9.6.1), and it scales linearly.
* ``"kdtree"``: ``scipy.spatial.cKDTree`` candidates, then the same compiled
  selection; the alternative method of thesis 5.3.3 and a second oracle.
* ``"brute"``: O(n m) NumPy restatement of the contract; the test oracle.
* ``"all_pairs"``: O(n m) too, compiled: the grid's small-query kernel (``small.py``)
  at any size, serial, every animal against every target like seed 002's loops. It
  shows what an all-pairs search costs as a school grows (``starling bench --scenario
  fish_tank --query all_pairs``), in a wrapping world too (minimum image).

Example::

    spec = NeighborQuerySpec(max_distance=5.0, k=7, fov_deg=270.0)
    nbrs = Neighbors()
    for step in range(steps):
        find_neighbors(pos, fwd, pos, spec, exclude_self=True, box=box, out=nbrs)
        for s in range(spec.k):               # column s of every row
            j = nbrs.index[:, s]              # -1 where a row has fewer than s+1
            ...
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from .. import registry
from . import brute, kdtree
from .candidates import NO_WRAP, minimum_image, query_thresholds, wrap_offset
from .grid import GridIndex
from .small import SMALL_MAX_PAIRS, SmallScratch, query_small
from .verlet import VerletLists

__all__ = [
    "METHODS",
    "MODES",
    "NeighborQuerySpec",
    "Neighbors",
    "find_neighbors",
    "search_into",
    "minimum_image",
    "normalize_box",
    "wrap_offset",
]

METHODS = ("grid", "kdtree", "brute", "all_pairs")
MODES = ("knn", "all_in_radius")


@dataclass(frozen=True)
class NeighborQuerySpec:
    """What an animal perceives: the thesis' ``NeighborhoodSettings`` (5.1, 9.5.3).

    ``max_distance``: radius in metres, finite and > 0 (5.1.1).
    ``k``: most neighbours kept per animal, >= 1 (5.1.3); the table's width.
    ``fov_deg``: full field of view in degrees centred on forward, in (0, 360]
    (5.1.2); 360 disables the test.
    ``mode``: ``"knn"`` keeps the k nearest within radius and field of view
    (topological perception, Ballerini et al.); ``"all_in_radius"`` means the
    behaviour wants every animal within radius and field of view and ``k`` is
    only a capacity: rows are filled the same way (nearest first, so a cut keeps
    the most relevant), and ``overflow > 0`` then signals that the cap was too
    small.  Both modes report ``overflow`` and compute identical tables; the mode
    records intent for the behaviours and tools that read the table.
    ``method``: ``"grid"`` | ``"kdtree"`` | ``"brute"`` | ``"all_pairs"``; same results, different
    cost (see the module docstring).
    ``early_stop``: in ``knn`` mode the caller needs the k nearest, not how many more were
    in reach, so a method may stop searching once the k nearest are certain (the grid tries
    last call's k-th distance first, which a ``Neighbors`` table reused between calls holds).
    ``index``, ``distance`` and ``count`` are unchanged; ``overflow`` then counts only the
    animals the search met (a lower bound). A simulation's knn groups set it; the default
    keeps ``overflow`` exact, and so does ``all_in_radius`` mode, whose ``overflow`` says the
    cap was too small (the spec clears the flag there, so no method has to check the mode).
    ``any_order``: the caller only sums over each row, so a row that holds every candidate
    (no overflow) need not be sorted: a method may leave it in its own deterministic order
    (the all-pairs kernel: target index order) and skip the ranking. The set of neighbours
    is the same; a row that overflows still keeps the k nearest, nearest first. A simulation
    sets it for a group whose every behaviour declares ``order_free``.
    """

    max_distance: float
    k: int
    fov_deg: float = 360.0
    mode: str = "knn"
    method: str = "grid"
    early_stop: bool = False
    any_order: bool = False

    def __post_init__(self) -> None:
        try:
            r = float(self.max_distance)
        except (TypeError, ValueError):
            raise ValueError(f"max_distance must be a number, got {self.max_distance!r}") from None
        if not (math.isfinite(r) and r > 0.0):
            raise ValueError(f"max_distance must be finite and > 0, got {self.max_distance!r}")
        if isinstance(self.k, bool) or not isinstance(self.k, (int, np.integer)) or self.k < 1:
            raise ValueError(f"k must be an integer >= 1, got {self.k!r}")
        try:
            fov = float(self.fov_deg)
        except (TypeError, ValueError):
            raise ValueError(f"fov_deg must be a number, got {self.fov_deg!r}") from None
        if not (0.0 < fov <= 360.0):
            raise ValueError(f"fov_deg must be in (0, 360], got {self.fov_deg!r}")
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if self.method not in METHODS and self.method not in {q.name for q in registry.queries()}:
            raise ValueError(f"method must be a registered neighbour query ({', '.join(sorted(_methods()))}), "
                             f"got {self.method!r}")
        object.__setattr__(self, "max_distance", r)
        object.__setattr__(self, "k", int(self.k))
        object.__setattr__(self, "fov_deg", fov)
        object.__setattr__(self, "early_stop", bool(self.early_stop) and self.mode == "knn")
        object.__setattr__(self, "any_order", bool(self.any_order))


class Neighbors:
    """Reusable neighbourhood table, the output of :func:`find_neighbors`.

    Attributes (views of buffers owned by this object; valid until the next
    call that reuses it):

    * ``index``: (n, k) int32, indices into the *target* arrays, sorted by
      distance then index (unless the spec's ``any_order`` let a row that holds
      every candidate stay in the method's order), ``-1`` after the last neighbour;
    * ``distance``: (n, k) float32, the matching distances, ``+inf`` padded;
    * ``count``: (n,) int32, valid entries per row;
    * ``overflow``: (n,) int32, how many more animals passed the radius and
      field of view tests than fitted in ``k`` (at least that many where the
      query's ``early_stop`` let the search end early).

    Buffers grow by capacity (1.5x) and are never reallocated while ``n`` stays
    within capacity and ``k`` is unchanged, so a simulation that passes the
    same ``out`` every step allocates nothing here.  The object also keeps the
    method's workspace (the grid's sorted buffers), for the same reason.
    """

    __slots__ = (
        "index",
        "distance",
        "count",
        "overflow",
        "_index_buf",
        "_distance_buf",
        "_count_buf",
        "_overflow_buf",
        "_grid",
        "_small",
        "_lists",
    )

    def __init__(self, capacity: int = 0, k: int = 1) -> None:
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        cap = max(int(capacity), 0)
        self._index_buf = np.full((cap, k), -1, dtype=np.int32)
        self._distance_buf = np.full((cap, k), np.inf, dtype=np.float32)
        self._count_buf = np.zeros(cap, dtype=np.int32)
        self._overflow_buf = np.zeros(cap, dtype=np.int32)
        self._grid: GridIndex | None = None
        self._small: SmallScratch | None = None
        self._lists: VerletLists | None = None
        self._view(0)

    def _view(self, n: int) -> None:
        self.index = self._index_buf[:n]
        self.distance = self._distance_buf[:n]
        self.count = self._count_buf[:n]
        self.overflow = self._overflow_buf[:n]

    @property
    def n(self) -> int:
        """Number of rows (querying animals)."""
        return self.count.shape[0]

    @property
    def k(self) -> int:
        """Number of columns (the neighbour cap)."""
        return self._index_buf.shape[1]

    @property
    def capacity(self) -> int:
        """Rows the buffers can hold before they must grow."""
        return self._count_buf.shape[0]

    def reserve(self, n: int, k: int) -> None:
        """Make the table ``n`` rows by ``k`` columns, growing buffers only if needed."""
        if k != self._index_buf.shape[1] or n > self._count_buf.shape[0]:
            cap = self._count_buf.shape[0]
            if n > cap:
                cap = max(n, int(cap * 1.5))
            self._index_buf = np.full((cap, k), -1, dtype=np.int32)
            self._distance_buf = np.full((cap, k), np.inf, dtype=np.float32)
            self._count_buf = np.zeros(cap, dtype=np.int32)
            self._overflow_buf = np.zeros(cap, dtype=np.int32)
            self._view(n)
        elif n != self.count.shape[0]:
            self._view(n)

    @property
    def lists(self) -> VerletLists | None:
        """The neighbour lists this table keeps between calls for a population that queries itself
        (``verlet.py``: their counters say how often they answered and were rebuilt), or None."""
        return self._lists

    def rows_permuted(self, order: np.ndarray) -> None:
        """The animals that query through this table had their rows reordered (new row ``a`` is old
        row ``order[a]``): neighbour lists kept between calls follow them instead of being rebuilt."""
        if self._lists is not None:
            self._lists.permute(order)

    def clear(self) -> None:
        """Mark every row empty (no neighbours, no overflow)."""
        self.index.fill(-1)
        self.distance.fill(np.inf)
        self.count.fill(0)
        self.overflow.fill(0)

    def __len__(self) -> int:
        return self.n

    def __repr__(self) -> str:
        return f"Neighbors(n={self.n}, k={self.k}, capacity={self.capacity})"


def normalize_box(box) -> np.ndarray | None:
    """Periodic box as the kernels want it: (3,) float32, 0 on axes that do not wrap.

    ``box`` is None (no wrap-around) or three side lengths of a wrap-around box
    over ``[0, L)``; an axis given as ``inf`` or 0 does not wrap (a world that
    wraps in x and z but has a floor and a sky, say).  Returns None when no axis
    wraps.  Raises ValueError for a wrong shape or a negative or NaN side.  The
    returned array is shared between calls with the same box and read-only.
    """
    if box is None:
        return None
    try:
        sides = tuple(float(x) for x in box)
    except (TypeError, ValueError):
        raise ValueError(f"box must be three side lengths, got {box!r}") from None
    return _normalized_box(sides)


@functools.lru_cache(maxsize=64)
def _normalized_box(sides: tuple) -> np.ndarray | None:
    if len(sides) != 3:
        raise ValueError(f"box must have shape (3,), got {len(sides)} sides")
    if any(math.isnan(x) or x < 0 for x in sides):
        raise ValueError(
            f"box sides must be > 0 (inf or 0 for an axis that does not wrap), got {sides}"
        )
    b = np.array([x if math.isfinite(x) else 0.0 for x in sides], dtype=np.float32)
    if not b.any():
        return None
    b.flags.writeable = False
    return b


def _points(a, name: str) -> np.ndarray:
    """``a`` as an (n, 3) float32 C-ordered array, without copying when it already is one."""
    if (
        type(a) is np.ndarray
        and a.dtype == np.float32
        and a.ndim == 2
        and a.shape[1] == 3
        and a.flags.c_contiguous
    ):
        return a
    arr = np.ascontiguousarray(a, dtype=np.float32)
    if arr.ndim == 1 and arr.size == 0:
        arr = arr.reshape(0, 3)
    if arr.ndim != 2 or arr.shape[1] != 3:
        raise ValueError(f"{name} must have shape (n, 3), got {arr.shape}")
    return arr


def _same_memory(a: np.ndarray, b: np.ndarray) -> bool:
    return (
        a.shape == b.shape
        and a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
        and a.strides == b.strides
    )


def one_population(spos: np.ndarray, tpos: np.ndarray) -> np.ndarray:
    """``spos`` when ``tpos`` is another view of the same points (the queriers are their own targets,
    so the grid can reuse its sort for the queries), else ``tpos``."""
    return spos if tpos is not spos and _same_memory(spos, tpos) else tpos


def find_neighbors(
    self_position,
    self_forward,
    target_position,
    spec: NeighborQuerySpec,
    *,
    exclude_self: bool = False,
    box=None,
    out: Neighbors | None = None,
) -> Neighbors:
    """Neighbours of every animal among the targets, within radius and field of view.

    Parameters
    ----------
    self_position : (n, 3) float32
        Positions of the querying animals.  A 2D simulation passes its x-z
        positions with a constant y.
    self_forward : (n, 3) float32
        Their forward directions, unit length or zero (zero sees all around).
    target_position : (m, 3) float32
        Positions of the animals that can be perceived (another species, or the
        same array as ``self_position``).  n or m may be 0.
    spec : NeighborQuerySpec
        Radius, k, field of view, mode and method.
    exclude_self : bool
        Self and target are the same population (n == m); row i skips j == i.
    box : None or (3,) float
        Side lengths of a wrap-around box over ``[0, L)``; distances and field
        of view directions then use the minimum image (``minimum_image``).
        ``inf`` (or 0) on an axis means that axis does not wrap.
    out : Neighbors, optional
        A table to reuse; its buffers (and the grid's) are kept between calls.

    Returns
    -------
    Neighbors
        ``out`` (or a new table): ``index`` (n, k) int32 into the targets,
        ``distance`` (n, k) float32, ``count`` (n,), ``overflow`` (n,); rows
        sorted by distance ascending, ties by target index ascending, padded with
        -1 / +inf.  The result is the same for every method and thread count.
    """
    if not isinstance(spec, NeighborQuerySpec):
        raise TypeError(f"spec must be a NeighborQuerySpec, got {type(spec).__name__}")
    same = self_position is target_position
    spos = _points(self_position, "self_position")
    sfwd = _points(self_forward, "self_forward")
    tpos = spos if same else _points(target_position, "target_position")
    n = spos.shape[0]
    m = tpos.shape[0]
    if sfwd.shape[0] != n:
        raise ValueError(f"self_forward has {sfwd.shape[0]} rows, self_position has {n}")
    if exclude_self and m != n:
        raise ValueError(f"exclude_self needs one population (n == m), got n={n}, m={m}")
    if not same:
        tpos = one_population(spos, tpos)
    return search_into(spos, sfwd, tpos, spec, normalize_box(box), exclude_self, out)


def search_into(spos, sfwd, tpos, spec: NeighborQuerySpec, box32, exclude_self: bool, out: Neighbors | None) -> Neighbors:
    """:func:`find_neighbors` without its checks and conversions, for a caller whose arguments already are
    what they would become: ``(n, 3)`` C-ordered float32 points (``tpos is spos`` when the two are one
    population), ``box32`` from :func:`normalize_box`, ``exclude_self`` only with ``tpos is spos``.

    A step queries a few neighbour groups per species; the checks cost as much Python as the call they guard.
    """
    n = spos.shape[0]
    k = spec.k
    if out is None:
        out = Neighbors(n, k)
    out.reserve(n, k)
    if n == 0:
        return out
    if tpos.shape[0] == 0:
        out.clear()
        return out
    registry.get_query(spec.method).search(spos, sfwd, tpos, spec, box32, exclude_self, out)
    return out


def _methods() -> set[str]:
    return set(METHODS) | {q.name for q in registry.queries()}


#: a population that queries itself through a table kept between calls reuses its neighbour
#: lists over steps (``verlet.py``); tests turn it off to compare with the grid alone
NEIGHBOR_LISTS = True
#: ... unless the query lets rows stay unsorted and keeps more than this many: rows answered by
#: lists are always ranked, and ranking rows of up to 64 that never fill (Vicsek's) costs more
#: than the lists save
LISTS_MAX_UNORDERED_K = 16


def _may_keep_lists(spos, tpos, spec, exclude_self: bool) -> bool:
    """Whether a grid query may answer from neighbour lists kept over calls: a population that
    queries itself, with rows that must be ranked or are few. Only the configuration decides it,
    never the lists' history, so the rows (always ranked when lists are allowed) never depend on
    which of the two answered."""
    return (NEIGHBOR_LISTS and exclude_self and tpos is spos
            and (not spec.any_order or spec.k <= LISTS_MAX_UNORDERED_K))


@registry.neighbor_query("grid")
def _grid_search(spos, sfwd, tpos, spec, box32, exclude_self, out) -> None:
    """A uniform grid with a counting sort, rebuilt each call (the default; thesis ch. 5).

    Small queries (at most ``SMALL_MAX_PAIRS`` pairs) test every pair instead: the same
    table, without a grid to build. A population that queries itself keeps neighbour lists
    in ``out`` between calls (``verlet.py``) and answers from them while they pay; its rows
    are then always ranked (``any_order`` ignored), so which of the two answers a call
    changes nothing in the table.
    """
    if spos.shape[0] * tpos.shape[0] <= SMALL_MAX_PAIRS:
        _all_pairs_search(spos, sfwd, tpos, spec, box32, exclude_self, out)
    elif _may_keep_lists(spos, tpos, spec, exclude_self):
        if out._lists is None:
            out._lists = VerletLists()
        out._lists.search(spos, sfwd, spec, box32, out, _grid_alone)
    else:
        _grid_alone(spos, sfwd, tpos, spec, box32, exclude_self, out)


def _grid_alone(spos, sfwd, tpos, spec, box32, exclude_self, out, any_order=None) -> None:
    """The grid query itself, for more pairs than the all-pairs kernel takes (``any_order``: the
    spec's unless given; the lists ask for ranked rows when the grid answers for them)."""
    grid = out._grid
    if grid is None:
        grid = out._grid = GridIndex()
    forwards = sfwd if tpos is spos else None
    grid.build(tpos, spec.max_distance, box32, self_position=spos, target_forward=forwards)
    grid.query(spos, sfwd, spec.max_distance, spec.fov_deg, spec.k, out.index, out.distance, out.count,
               out.overflow, exclude_self=exclude_self, early_stop=spec.early_stop,
               any_order=spec.any_order if any_order is None else any_order)


@registry.neighbor_query("kdtree")
def _kdtree_search(spos, sfwd, tpos, spec, box32, exclude_self, out) -> None:
    """scipy's cKDTree (thesis 5.3.3): the alternative method and a second oracle."""
    kdtree.query(spos, sfwd, tpos, spec.max_distance, spec.fov_deg, spec.k, box32, exclude_self,
                 out.index, out.distance, out.count, out.overflow)


@registry.neighbor_query("brute")
def _brute_search(spos, sfwd, tpos, spec, box32, exclude_self, out) -> None:
    """Every pair: the reference the others are tested against."""
    brute.query(spos, sfwd, tpos, spec.max_distance, spec.fov_deg, spec.k, box32, exclude_self,
                out.index, out.distance, out.count, out.overflow)


@registry.neighbor_query("all_pairs")
def _all_pairs_search(spos, sfwd, tpos, spec, box32, exclude_self, out) -> None:
    """Every pair, compiled and serial (seed 002's all-pairs loop): the grid's table at O(n m).

    The grid's small-query kernel without its size limit, in a wrapping world too.
    """
    small = out._small
    if small is None:
        small = out._small = SmallScratch()
    # a group asks the same query of the same arrays step after step: their tuple is kept while it is
    kept = small.kept
    if (kept is not None and kept[0] is spos and kept[1] is sfwd and kept[2] is tpos and kept[3] is box32
            and kept[4] is spec and kept[5] is out.index and kept[6] is out.overflow and kept[7] == exclude_self):
        small.kernel_calls(query_small, spos.shape[0], *kept[8])
        return
    small.reserve(tpos.shape[0])
    r2, cos_limit, sees_all = query_thresholds(spec.max_distance, spec.fov_deg)
    args = (spos, sfwd, tpos, NO_WRAP if box32 is None else box32, r2, cos_limit, sees_all, bool(exclude_self),
            int(spec.k), bool(spec.any_order), out.index, out.distance, out.count, out.overflow, *small.arrays())
    small.kept = (spos, sfwd, tpos, box32, spec, out.index, out.overflow, exclude_self, args)
    small.kernel_calls(query_small, spos.shape[0], *args)
