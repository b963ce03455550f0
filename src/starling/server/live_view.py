"""What a viewer reads from a simulation: the frame's blocks and the live readouts.

A frame carries one block per species, then one per entity block: the populations the
simulation's systems made (the ecology's apples, carcasses, sounds, the player), see
:func:`entity_blocks`. :func:`frame_states` gathers them all at the current step. The
readouts are the metrics, the per-species summaries and the inspector
(:func:`read_readouts`); the status message counts each species, its animals per brain
state and the labels over a small group's heads (:func:`species_readouts`). The live server (:mod:`.runner`), replay and ``starling warm``
read a simulation through these, so the warm-up compiles exactly what the app runs.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from . import protocol as P
from .. import frames as F

log = logging.getLogger("starling.server")


@dataclass(frozen=True)
class EntityBlock:
    """Where one entity block of the frames comes from (see :func:`entity_blocks`).

    ``tag``: only rows carrying this tag; ``exclude``: only rows carrying none of these
    tags; ``radius``: the speed column carries this component (a sound's radius).
    """

    info: dict
    population: str
    tag: Optional[str] = None
    exclude: tuple[str, ...] = ()
    radius: Optional[str] = None


def entity_blocks(sim: Any) -> list[EntityBlock]:
    """The frame blocks that follow the species: every other population of the world.

    Those are the populations the simulation's systems made (the ecology's ``apple``,
    ``carcass``, ``sound`` and ``player``). Carcasses are split by the species they came
    from (the ecology names the tag each species' carcasses carry) so that a viewer can
    draw each with its species' body; a last carcass block takes any other.
    """
    world = getattr(sim, "world", None)
    populations = getattr(world, "populations", None)
    if not populations:
        return []
    species = list(sim.species)
    extra = [name for name in populations if name not in species]
    if not extra:
        return []
    ecology: dict = {}
    scene = getattr(sim, "scene", None)
    if callable(scene):
        try:
            ecology = dict(scene().get("ecology") or {})
        except Exception as exc:  # a viewer without carcass details beats no viewer
            log.warning("scene() failed while listing entities: %s", exc)
    config = getattr(sim, "scenario", None)
    looks = {sp.name: sp.appearance for sp in getattr(config, "species", ())}
    blocks: list[EntityBlock] = []

    def info(name: str, kind: str, **fields: Any) -> dict:
        index = len(species) + len(blocks)
        return P.EntityInfo(index=index, name=name, kind=kind, **fields).model_dump()

    for name in extra:
        kind = name if name in P.ENTITY_KINDS else "other"
        if kind == "carcass":
            tags = {str(t): str(s) for t, s in (ecology.get("carcass_tags") or {}).items() if s in looks}
            for tag, source in tags.items():
                look = looks[source]
                blocks.append(EntityBlock(info(name, kind, model=str(look.model), color=str(look.color),
                                               scale=float(look.scale), tag=tag), name, tag=tag))
            blocks.append(EntityBlock(info(name, kind), name, exclude=tuple(tags)))
        elif kind == "sound":
            lifetime = (ecology.get("sounds") or {}).get("lifetime")
            blocks.append(EntityBlock(info(name, kind, lifetime=None if lifetime is None else float(lifetime)),
                                      name, radius="sound_radius"))
        else:
            blocks.append(EntityBlock(info(name, kind), name))
    return blocks


def entity_states(sim: Any, blocks: list[EntityBlock]) -> list["F.SpeciesState"]:
    """The arrays of every entity block at the current step (small populations: copies are cheap)."""
    world = sim.world
    tags = world.tags if any(b.tag or b.exclude for b in blocks) else {}
    out = []
    for block in blocks:
        pop = world.populations.get(block.population)
        if pop is None or pop.n == 0:
            empty = np.zeros((0, 3), np.float32)
            out.append(F.SpeciesState(empty, empty, empty, empty, np.zeros(0, np.int64)))
            continue
        rows: Any = slice(None)
        if block.tag is not None:
            bit = tags.get(block.tag, 0)
            rows = (pop.tags & np.uint32(bit)) != 0 if bit else np.zeros(pop.n, bool)
        elif block.exclude:
            bits = 0
            for name in block.exclude:
                bits |= tags.get(name, 0)
            rows = (pop.tags & np.uint32(bits)) == 0
        velocity = pop.velocity[rows]
        if block.radius is not None and pop.has_component(block.radius):
            velocity = np.zeros_like(velocity)
            velocity[:, 0] = pop.component(block.radius)[rows]
        out.append(F.SpeciesState(pop.position[rows], velocity, pop.forward[rows], pop.up[rows], pop.uid[rows]))
    return out


def frame_states(sim: Any, blocks: list[EntityBlock]) -> list["F.SpeciesState"]:
    """Every block of a frame at the current step: the species' arrays (not copied), then the entities'."""
    states = [F.SpeciesState(p.position, p.velocity, p.forward, p.up, p.uid)
              for p in (sim.population(name) for name in sim.species)]
    if blocks:
        states += entity_states(sim, blocks)
    return states


def read_readouts(sim: Any) -> None:
    """Read what the app shows besides frames once: the metrics, each species' summary, and the
    inspector on each species' first animal."""
    sim.metrics()
    for name in sim.species:
        sim.species_summary(name)
        pop = sim.population(name)
        if pop.n:
            sim.inspect(name, int(pop.uid[0]))


def species_readouts(sim: Any, labelled_at_most: int) -> tuple[dict, dict, dict]:
    """The status message's per-species part: ``counts`` (animals), ``states`` (animals per
    brain state, where a species has a brain) and ``labels`` (``[uid, words]`` over each
    animal's head, for species of at most ``labelled_at_most`` animals). Empty without a
    simulation; a species whose summary fails is logged and left out of ``states``."""
    counts: dict[str, int] = {}
    states: dict[str, dict[str, int]] = {}
    labels: dict[str, list] = {}
    if sim is None:
        return counts, states, labels
    for name in sim.species:
        pop = sim.population(name)
        counts[name] = int(pop.n)
        try:
            per_state = sim.species_summary(name).get("states")
        except Exception as exc:
            log.warning("state counts failed: %s", exc)
            per_state = None
        if per_state:
            states[name] = {str(k): int(v) for k, v in per_state.items()}
        if 0 < pop.n <= labelled_at_most and (words := sim.animal_labels(name)) is not None:
            labels[name] = [[int(u), w] for u, w in zip(pop.uid[: pop.n].tolist(), words)]
    return counts, states, labels
