"""The experiments ``starling experiment NAME`` runs: the published curves Starling reproduces.

* ``vicsek`` — Vicsek et al. 1995, Fig. 2a: the polarization φ of 400 particles at density 4
  against the noise η, falling from about 1 at small η toward 0 as η approaches 2π.
* ``couzin`` — Couzin et al. 2002, Fig. 3: polarization and milling against the width of
  the zone of orientation Δr_o, swept up and then down from the previous state, so the
  hysteresis between the torus and the parallel groups shows.

Each is a :class:`~starling.experiments.sweeps.Sweep`; the command's options replace its
values, seeds, steps and averaging window.

* ``savannah`` — Collado 2013, Table 5.1: how often {3, 2, 1} lions catch a zebra from a big or
  small herd. Not a curve but a table of success rates, so it is a protocol of its own
  (:mod:`starling.experiments.savannah`), listed in :data:`PROTOCOLS`.
"""
from __future__ import annotations

from .sweeps import Sweep

EXPERIMENTS: dict[str, Sweep] = {
    "vicsek": Sweep(
        scenario="vicsek", parameter="eta", species="particle",
        values=(0.1, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0),
        steps=1500, average=500, seeds=(1, 2, 3), metrics=("polarization",),
        description="Vicsek 1995: polarization against noise η (N = 400, ρ = 4)"),
    "couzin": Sweep(
        scenario="couzin", parameter="dr_orientation", species="fish",
        values=(0.0, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 10.0, 12.0, 15.0),
        steps=1500, average=500, seeds=(1, 2, 3), metrics=("polarization", "milling"), continuation=True,
        description="Couzin 2002: polarization and milling against Δr_o, up then down (hysteresis)"),
}

#: experiments with a protocol of their own: name → (module, one line); the module has ``run`` and ``write_outputs``
PROTOCOLS: dict[str, tuple[str, str]] = {
    "savannah": ("starling.experiments.savannah",
                 "Collado 2013, Table 5.1: lions' success against pride and herd size"),
}
