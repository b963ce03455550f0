"""What a simulation tells its readers about the animals: one animal in detail (the inspector)
and the order parameters of every species (the live charts, ``starling run --json``, sweeps).

Functions of a synchronised :class:`~starling.simulation.Simulation` (its methods
``inspect`` and ``metrics`` call them), kept apart from the stepping and the life cycle.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .metrics import density, groups, local_polarization, milling, nearest_neighbor_stats, polarization, speed_stats


def inspect_animal(sim, species: str, uid: int) -> Optional[dict]:
    """Everything the viewer shows about one animal; None if it is not alive."""
    pop = sim.world.population(species)
    row = pop.index_of(uid)
    if row < 0:
        return None
    index = sim.species.index(species)
    pipeline = sim.pipelines[index]
    cfg = sim.scenario.species[index]
    vel = pop.velocity[row]
    info = {
        "species": species,
        "uid": int(uid),
        "position": [float(x) for x in pop.position[row]],
        "velocity": [float(x) for x in vel],
        "speed": float(np.linalg.norm(vel)),
        "state": None,
        "components": {name: float(pop.component(name)[row]) for name in pop.component_names},
        "neighbors": [],
        "rays": [],
        "behaviors": [],
        # a pipeline rebuilt by reconfigure has no desired velocities until its first step
        "desired_velocity": ([float(x) for x in pipeline.desired[row]] if row < len(pipeline.desired)
                             else [0.0, 0.0, 0.0]),
        "fov_deg": float(cfg.groups[0].query.fov_deg) if cfg.groups else 360.0,
        "view_distance": float(cfg.groups[0].query.max_distance) if cfg.groups else 0.0,
    }
    for system in sim.systems:
        info.update(system.inspect(sim, species, row))
    detail = pipeline.inspect_row(sim.world, uid)
    if detail:
        info["behaviors"] = detail["behaviors"]
        info["neighbors"] = detail["neighbors"]
        info["rays"] = detail["rays"]
        info["desired_velocity"] = detail["desired_velocity"]
    return info


def species_metrics(sim, nn_sample: int = 2000, group_radius: Optional[float] = None,
                    groups_max: int = 20_000) -> dict:
    """Order parameters per species (cheap enough for a live chart), periodic in a wrapping world.

    ``groups`` / ``largest_group``: animals closer than ``group_radius`` are linked;
    by default the scenario's ``group_distance``, else the reach of the species'
    neighbour queries of its own kind (what an animal can see of its fellows), None
    for populations without one. The count is
    exact and costs with the number of linked pairs, so populations above
    ``groups_max`` report None rather than stall a live view (0.3 s at 20,000 birds).
    ``density`` is the mean number of others within that same radius per m² for
    species on a plane or the ground (planar and ground movers), per m³ otherwise.
    ``nn_*`` summarise the nearest-neighbour distances (``nn_distance`` is their
    mean), ``speed_*`` the speeds; a statistic with too few animals is None.
    """
    box = sim.world.box
    reach, flat = {}, {}
    for pipe in sim.pipelines:
        own = [g.query.max_distance for g in pipe.groups if pipe.name in g.targets]
        reach[pipe.name] = max(own) if own else None
    for sp, mover in zip(sim.scenario.species, sim.movers):
        flat[sp.name] = bool(getattr(mover, "planar", False)) or sp.mover.kind == "ground"

    def known(x: float) -> Optional[float]:
        return None if np.isnan(x) else float(x)

    out = {}
    for name, pop in sim.world.populations.items():
        radius = group_radius if group_radius is not None else (
            sim.scenario.group_distance if sim.scenario.group_distance is not None else reach.get(name))
        count, largest = (groups(pop.position, radius, box) if radius is not None and pop.n <= groups_max
                          else (None, None))
        nn = nearest_neighbor_stats(pop.position, box=box, sample=nn_sample)
        speed = speed_stats(pop.velocity)
        out[name] = {
            "count": int(pop.n),
            "polarization": polarization(pop.velocity),
            "milling": milling(pop.position, pop.velocity, box=box),
            "local_polarization": local_polarization(pop.position, pop.velocity, sample=nn_sample, box=box),
            "nn_distance": nn["mean"] if pop.n >= 2 else 0.0,
            "groups": count,
            "largest_group": largest,
            "mean_speed": speed["mean"] if pop.n else 0.0,
            **{f"nn_{k}": known(nn[k]) for k in ("median", "sd", "min", "p5", "p95")},
            **{f"speed_{k}": known(speed[k]) for k in ("sd", "min", "max")},
            "density": (known(density(pop.position, radius, box=box, flat=flat.get(name, False),
                                      sample=nn_sample)) if radius is not None and radius > 0 else None),
        }
    return out
