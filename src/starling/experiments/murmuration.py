"""Does ``flock`` murmurate? The measured targets, seed by seed.

A murmuration is one cohesive, ordered flock that keeps wheeling and never collides.
This runs a scenario and measures exactly that, so the test, the docs' table and anyone
tuning the birds use one definition:

- ``largest_group_at_30s``: share of the birds in the largest group at 30 s (birds closer
  than ``group_radius`` linked); its minimum over the rest of the run is reported beside it;
- ``polarization_30_60s``: polarization averaged over 30–60 s, sampled each second;
- ``turning_deg``: the flock's mean heading, summed absolute change over 0–60 s (horizontal);
- ``min_distance``: the closest two birds ever came, checked after every step past the
  first second (the spawn's own spacing is a separate rule), against ``separation / 2``.

Run ``python -m starling.experiments.murmuration --seeds 1 2 3`` (``--set`` edits the
scenario, for ablations); it prints a table, or JSON with ``--json``.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict, dataclass
from typing import Iterable, Optional, Sequence

import numpy as np

from ..config import ConfigError
from ..metrics import groups, polarization
from ..simulation import load_scenario

TARGETS = {"largest_group": 0.9, "polarization": 0.7, "turning_deg": 180.0}


@dataclass
class MurmurationReport:
    seed: int
    largest_group_at_30s: float
    largest_group_min_after_30s: float
    polarization_30_60s: float
    turning_deg: float
    min_distance: float
    separation: float

    @property
    def passed(self) -> bool:
        # the target is the share at 30 s; the minimum after it is reported, not required
        return (self.largest_group_at_30s >= TARGETS["largest_group"]
                and self.polarization_30_60s >= TARGETS["polarization"]
                and self.turning_deg > TARGETS["turning_deg"]
                and self.min_distance >= self.separation / 2.0)


def separation_distance(sim, species: str) -> float:
    """The largest ``max_distance`` of the species' separation behaviours (what "too close" means)."""
    sp = next(s for s in sim.scenario.species if s.name == species)
    found = [b.max_distance if b.max_distance is not None else g.query.max_distance
             for g in sp.groups for b in g.behaviors if b.kind == "separation"]
    if not found:
        raise ValueError(f"species {species!r} has no separation behaviour")
    return float(max(found))


def measure(scenario: str = "flock", seed: int = 1, *, species: str = "bird", overrides: Iterable[str] = (),
            seconds: int = 60, group_radius: float = 5.0) -> MurmurationReport:
    """Run ``seconds`` of simulated time and measure the murmuration targets."""
    from scipy.spatial import cKDTree

    sim = load_scenario(scenario, seed=seed, overrides=tuple(overrides), record_debug=False)
    per_second = max(1, int(round(1.0 / sim.dt)))
    separation = separation_distance(sim, species)
    largest, order, heading = [], [], []
    closest = math.inf
    for second in range(seconds + 1):
        pop = sim.population(species)
        largest.append(groups(pop.position, group_radius)[1])
        order.append(polarization(pop.velocity))
        mean = pop.velocity.astype(np.float64).mean(axis=0)
        heading.append(math.atan2(mean[2], mean[0]))
        if second == seconds:
            break
        for _ in range(per_second):
            sim.step()
            if second >= 1:
                p = sim.population(species).position
                d, _ = cKDTree(p).query(p, k=2)
                closest = min(closest, float(d[:, 1].min()))
    turned = np.unwrap(np.asarray(heading))
    half = min(30, seconds)
    return MurmurationReport(
        seed=seed,
        largest_group_at_30s=float(largest[half]),
        largest_group_min_after_30s=float(min(largest[half:])),
        polarization_30_60s=float(np.mean(order[half:])),
        turning_deg=float(np.degrees(np.abs(np.diff(turned)).sum())),
        min_distance=closest,
        separation=separation,
    )


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m starling.experiments.murmuration",
                                     description="Measure the murmuration targets of a flock scenario.")
    parser.add_argument("--scenario", default="flock")
    parser.add_argument("--species", default="bird")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--group-radius", type=float, default=5.0)
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.seconds < 30:
        parser.error("--seconds: must be at least 30 (the targets are measured from 30 s on)")
    try:
        reports = [measure(args.scenario, s, species=args.species, overrides=args.overrides,
                           seconds=args.seconds, group_radius=args.group_radius) for s in args.seeds]
    except (ConfigError, ValueError) as e:
        print(f"murmuration: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([dict(asdict(r), passed=r.passed) for r in reports], indent=2))
    else:
        print("seed  largest@30s  min after 30s  polarization 30-60s  turning 0-60s  closest / separation  passed")
        for r in reports:
            print(f"{r.seed:4d}  {r.largest_group_at_30s:11.3f}  {r.largest_group_min_after_30s:13.3f}  "
                  f"{r.polarization_30_60s:19.3f}  {r.turning_deg:11.0f}°  {r.min_distance:8.2f} / {r.separation:.2f} m"
                  f"      {'yes' if r.passed else 'no'}")
    return 0 if all(r.passed for r in reports) else 1


if __name__ == "__main__":
    sys.exit(main())
