"""What a neighbour group sees when its targets are not one whole population.

A group may look at several species (food that is an apple, a carcass or a sheep) or
filter them by tag (prey that is not a dead shark). Its targets are then *gathered*: the
arrays of every target species' rows that pass the filters, concatenated in target order,
into buffers the group keeps. Species that flock together (the meadow's two bird species,
each looking at both) ask one query about the same targets, and answer it once a step
(:class:`JointQuery`). The species steer one after another from the same step-start
state, so what is gathered or queried for one of them in a step serves the others too.
"""
from __future__ import annotations

from collections import namedtuple
from typing import Optional

import numpy as np

from ..world import World
from ..world.population import agent_tuple_type
from ..world.tags import rows_with_tags
from .queries.neighbors import NeighborQuerySpec, find_neighbors

#: what travels of targets whose behaviours declare no component, or that have none in common
CoreAgents = namedtuple("CoreAgents", ["position", "velocity", "forward", "up", "uid"])


class Gathered:
    """One group's gathered targets: a buffer per field, and each gathered target's species and row.

    ``key`` names the target layouts the buffers were laid out for (each target's identity and
    :attr:`~starling.world.population.Population.layout`); while it holds, ``sources`` (each
    field's live arrays of every target) and, for unfiltered gathers, ``species`` and ``rows``
    stay valid, so a step only copies the fields.
    """

    def __init__(self, key, fields, targets):
        self.key = key
        self.fields = fields
        self.sizes = [t.n for t in targets]
        self.whole_total = sum(self.sizes)
        capacity = max(self.whole_total, 16)
        self.species = np.zeros(capacity, np.int16)
        self.rows = np.zeros(capacity, np.int64)
        self.arange = np.arange(capacity, dtype=np.int64)
        self.sources = [[getattr(t, f) for t in targets] for f in fields._fields]
        self.arrays = [np.zeros((capacity,) + like[0].shape[1:], like[0].dtype) for like in self.sources]
        self.whole = False  # species and rows hold the unfiltered order of every target's rows
        self.unfiltered = None  # what a gather of every row hands on, kept (see _unfiltered)
        self.passing = [np.zeros(max(size, 1), np.int64) for size in self.sizes]  # each target's rows a filter keeps

    def __getstate__(self) -> dict:
        # the sources are views of the populations' buffers, which a copy or a pickle would not
        # look at, and the key names objects by identity: both are made again on first use
        return {**self.__dict__, "key": None, "sources": [], "whole": False, "unfiltered": None}

    def index(self, picked) -> int:
        """Write each gathered target's species and row for ``picked`` (per target, its rows or
        None for every row); returns how many targets that gathers."""
        at = 0
        for t, rows in enumerate(picked):
            size = self.sizes[t] if rows is None else rows.size
            self.species[at:at + size] = t
            self.rows[at:at + size] = self.arange[:size] if rows is None else rows
            at += size
        self.whole = all(rows is None for rows in picked)
        return at


def gather(world: World, group, shared: Optional[dict] = None):
    """Concatenate the arrays of every target species' rows that pass the tag filters.

    ``group`` is a pipeline's :class:`~starling.steering.groups.NeighborGroup`: its targets,
    tag bits, ``target_components`` and ``gather_key`` say what to gather, and its ``gathered``
    holds the buffers. ``shared`` (see :meth:`~starling.steering.pipeline.SpeciesPipeline.compute`) holds this
    step's gathers by what they gathered; a gather found there is returned as it is (its
    arrays are read, never written, by the groups that use them).

    Only the components every target has travel (food on apples and carcasses, loudness
    on sounds, …). When the targets are one population's every row (the others empty, no
    tag filter) the arrays are that population's own, not copies; otherwise they are
    gathered into buffers the group keeps, so a step allocates nothing once warm.
    """
    if shared is None:
        return _gather_now(world, group)
    found = shared.get(group.gather_key)
    if found is None:
        found = shared[group.gather_key] = _gather_now(world, group)
    return found


def _gather_now(world: World, group):
    """:func:`gather` without the step's sharing: lay out the group's buffers for these target
    layouts if they changed, then copy this step's fields."""
    targets = [world.population(name) for name in group.targets]
    key = tuple((id(t), t.layout) for t in targets)
    buf = group.gathered
    if buf is None or buf.key != key:
        # only what the group's behaviours declare they read from their targets travels
        common = group.target_components.intersection(*(t.component_names for t in targets))
        fields = agent_tuple_type(common) if common else CoreAgents
        buf = group.gathered = Gathered(key, fields, targets)
    picked = _filter(targets, group, buf) if group.include_bits or group.exclude_bits else None
    if picked is None:  # every row of every target
        if buf.unfiltered is None or not buf.whole:  # (a filtered gather since wrote species and rows)
            buf.unfiltered = _unfiltered(buf)
        gathered, copies = buf.unfiltered
        for sources, out in copies:
            np.concatenate(sources, out=out)
        return gathered
    total = buf.index(picked)
    species_idx = buf.species[:total]
    rows_out = buf.rows[:total]
    arrays = []
    for sources, out in zip(buf.sources, buf.arrays):
        out = out[:total]
        at = 0
        for src, rows in zip(sources, picked):
            if rows is None:
                out[at:at + src.shape[0]] = src
                at += src.shape[0]
            elif rows.size:
                np.take(src, rows, axis=0, out=out[at:at + rows.size])
                at += rows.size
        arrays.append(out)
    return buf.fields(*arrays), species_idx, rows_out


def _unfiltered(buf: Gathered):
    """``((fields, species, rows), copies)`` of a gather of every row of every target: the same
    objects every step while the targets' layouts hold (so what is built from them can be kept
    too), and the ``(sources, out)`` concatenations that refresh them (none when one target has
    every row: its own arrays are handed on, not copies)."""
    total = buf.whole_total
    if not buf.whole:
        buf.index([None] * len(buf.sizes))
    filled = [t for t, size in enumerate(buf.sizes) if size]
    if len(filled) == 1:  # one population's rows: its own arrays, no copy
        return (buf.fields(*(sources[filled[0]] for sources in buf.sources)), buf.species[:total],
                buf.rows[:total]), ()
    outs = [out[:total] for out in buf.arrays]
    copies = tuple(zip(buf.sources, outs)) if total else ()
    return (buf.fields(*outs), buf.species[:total], buf.rows[:total]), copies


def _filter(targets, group, buf: Gathered):
    """Each target's rows that pass the group's tag filters (None: every row), or None when
    every row of every target passes (the usual case: a filter that drops nobody)."""
    include = np.uint32(group.include_bits)
    exclude = np.uint32(group.exclude_bits)
    picked = []
    dropped = False
    for target, rows in zip(targets, buf.passing):
        k = rows_with_tags(target.tags, include, exclude, rows)
        if k == target.n:
            picked.append(None)
        else:
            picked.append(rows[:k])
            dropped = True
    return picked if dropped else None


class JointQuery:
    """One neighbour query answered once a step for several species that each ask it.

    Species that flock together (the meadow's two bird species) each have a group whose
    targets are all of them, with the same query. Asked one species at a time, each
    builds a grid over every target and queries it with one neighbour more, to drop itself
    afterwards. Asked once, the targets are their own queriers: one grid, sorted queries,
    and each animal skips itself directly. The table is the same, row for row: the k
    nearest others by (distance, index), indices into the targets in their usual order.
    """

    def __init__(self, targets: list[str], spec: NeighborQuerySpec):
        self.targets = list(targets)
        self.spec = spec
        self.neighbors = None  # the whole table, kept between steps for its buffers

    def rows_of(self, name: str, world: World, others, box, shared: Optional[dict]) -> "_TableRows":
        """Species ``name``'s rows of this step's table (``others``: the targets, gathered in order)."""
        table = shared.get(self) if shared is not None else None  # asked already this step
        if table is None:
            self.neighbors = table = find_neighbors(others.position, others.forward, others.position, self.spec,
                                                    exclude_self=True, box=box, out=self.neighbors)
            if shared is not None:
                shared[self] = table
        start = 0
        for target in self.targets:
            if target == name:
                break
            start += world.population(target).n
        return _TableRows(table, start, world.population(name).n)


class _TableRows:
    """Rows ``start .. start + n`` of a neighbour table, read like a
    :class:`~starling.steering.queries.neighbors.Neighbors` of their own (what a group's
    ``neighbors`` is to the inspector and the bench)."""

    __slots__ = ("index", "distance", "count", "overflow", "k", "n", "capacity")

    def __init__(self, table, start: int, n: int):
        stop = start + n
        self.index = table.index[start:stop]
        self.distance = table.distance[start:stop]
        self.count = table.count[start:stop]
        self.overflow = table.overflow[start:stop]
        self.k = table.k
        self.n = self.capacity = n

    def __len__(self) -> int:
        return self.n


def link_joint_queries(pipelines) -> None:
    """Give the groups that ask one query of the same species, each of those species asking it, a
    :class:`JointQuery`: same targets (every querying species among them), same query, no tag filter."""
    asking: dict = {}
    for pipeline in pipelines:
        for group in pipeline.groups:
            group.joint = None
            if group.include_bits or group.exclude_bits or len(group.targets) < 2 or pipeline.name not in group.targets:
                continue
            asking.setdefault((tuple(group.targets), group.query), []).append((pipeline.name, group))
    for (targets, spec), members in asking.items():
        names = [name for name, _ in members]
        if len(set(names)) == len(names) and sorted(names) == sorted(targets):
            joint = JointQuery(list(targets), spec)
            for _, group in members:
                group.joint = joint
