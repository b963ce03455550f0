"""The savannah's predation experiment (seed 001, chapter 5, tables 5.1–5.4).

Six setups — {3, 2, 1} lions × a big (30) or small (10) herd — each run ``runs_per_setup``
times (the thesis: 50, so 300 runs) from the same start layout, seeds 1..N (the seed
varies the lions' powers, the zebras' ages, the wandering and the exact spawn points
inside the layout's regions). A run is a **success** when the lions catch a zebra (the
scenario's stop condition ``caught``) and a **failure** when they all retreat or the time
limit passes first.

It is a sweep of the scenario's named parameters ``lions`` and ``zebras``
(:func:`sweep_spec`, the same protocol as ``experiments/savannah.toml``) run by the sweep
machinery on local worker processes. :func:`tabulate` turns the rows into the thesis'
tables — per setup (5.1), per number of lions (5.2), pack against alone (5.3), per herd
size (5.4) and the total — each rate with its 95 % Wilson interval beside the published
rate; :func:`write_outputs` saves them as CSV and Parquet and draws the bar chart.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Optional

from .results import wilson_interval

#: (lions, zebras) → (successes, runs) of the thesis' Table 5.1
PUBLISHED: dict[tuple[int, int], tuple[int, int]] = {
    (3, 30): (21, 50), (2, 30): (12, 50), (1, 30): (4, 50),
    (3, 10): (28, 50), (2, 10): (29, 50), (1, 10): (0, 50),
}
SETUPS: tuple[tuple[int, int], ...] = tuple(PUBLISHED)
BIG, SMALL = 30, 10
#: the longest a run may take, steps of the scenario's 0.02 s (its own time limit stops it at 300 s)
STEPS = 15_000


def sweep_spec(runs_per_setup: int = 50, steps: int = STEPS, overrides: tuple[str, ...] = ()) -> dict:
    """The experiment as a sweep file's data (for :func:`~starling.experiments.sweep_file.check_sweep`);
    ``overrides`` (``NAME=VALUE``, e.g. ``faithful=true``) apply to every run."""
    return {
        "description": "Collado 2013, Table 5.1: lions' success against pride and herd size",
        "scenario": "savannah",
        "steps": int(steps),
        "replicates": int(runs_per_setup),
        "seed": 1,
        "design": "grid",
        "parameters": {"lions": [3, 2, 1], "zebras": [BIG, SMALL]},
        **({"set": list(overrides)} if overrides else {}),
    }


def _line(label: str, rows: list[dict], published: tuple[int, int], **extra) -> dict:
    """One line of a table: counts, rate and Wilson interval, with the published counts and rate."""
    runs = len(rows)
    successes = sum(1 for r in rows if r.get("outcome") == "caught")
    low, high = wilson_interval(successes, runs)
    pk, pn = published
    return {"setup": label, **extra, "runs": runs, "successes": successes, "failures": runs - successes,
            "rate": successes / runs if runs else None, "ci_low": low, "ci_high": high,
            "published_successes": pk, "published_runs": pn, "published_rate": round(pk / pn, 4)}


def _published(keys) -> tuple[int, int]:
    return sum(PUBLISHED[k][0] for k in keys), sum(PUBLISHED[k][1] for k in keys)


def tabulate(rows: list[dict]) -> dict:
    """The thesis' tables 5.1–5.4 from sweep rows (those that ran; failed runs are left out).

    Returns ``setups`` (one line per setup, with ``lions`` and ``zebras``), ``by_lions``,
    ``strategy`` (pack, alone), ``by_herd`` (big, small), ``total``, the rates
    ``pack_rate``, ``alone_rate``, ``total_rate``, and ``outcomes`` (counts of each outcome).
    """
    ok = [r for r in rows if r.get("status") == "ok"]

    def of(keys):
        return [r for r in ok if (int(r["lions"]), int(r["zebras"])) in keys]

    setups = [_line(f"{n} lion{'s' if n > 1 else ''}, {'big' if z == BIG else 'small'} herd", of({(n, z)}),
                    PUBLISHED[(n, z)], lions=n, zebras=z) for n, z in SETUPS]
    by_lions = []
    for n in (3, 2, 1):
        keys = {k for k in SETUPS if k[0] == n}
        by_lions.append(_line(f"{n} lion{'s' if n > 1 else ''}", of(keys), _published(keys), lions=n))
    pack_keys = {k for k in SETUPS if k[0] > 1}
    alone_keys = {k for k in SETUPS if k[0] == 1}
    strategy = [_line("pack (> 1 lion)", of(pack_keys), _published(pack_keys)),
                _line("alone (1 lion)", of(alone_keys), _published(alone_keys))]
    by_herd = []
    for z, name in ((BIG, "big herd (30)"), (SMALL, "small herd (10)")):
        keys = {k for k in SETUPS if k[1] == z}
        by_herd.append(_line(name, of(keys), _published(keys), zebras=z))
    total = _line("total", of(set(SETUPS)), _published(SETUPS))
    outcomes: dict[str, int] = {}
    for r in ok:
        name = r.get("outcome") or "undecided"
        outcomes[name] = outcomes.get(name, 0) + 1
    return {"setups": setups, "by_lions": by_lions, "strategy": strategy, "by_herd": by_herd, "total": total,
            "pack_rate": strategy[0]["rate"], "alone_rate": strategy[1]["rate"], "total_rate": total["rate"],
            "outcomes": outcomes, "failed_runs": len(rows) - len(ok)}


def run(runs_per_setup: int, workers: Optional[int], out_dir: Path, *,
        on_start: Optional[Callable[[int, int], None]] = None,
        on_row: Optional[Callable[[dict], None]] = None, steps: int = STEPS,
        overrides: tuple[str, ...] = ()) -> dict:
    """Run the protocol on ``workers`` local processes (None: one per CPU); the sweep's own files go
    to ``out_dir/runs``.

    Returns :func:`tabulate`'s tables plus ``runs_per_setup`` and ``wall_s``.
    """
    from .backends import make_backend
    from .driver import run_sweep_file
    from .sweep_file import check_sweep

    plan = check_sweep(sweep_spec(runs_per_setup, steps, overrides), "savannah experiment")
    output, _ = run_sweep_file(plan, make_backend("local", workers, None), Path(out_dir) / "runs", on_start=on_start, on_row=on_row)
    result = tabulate(output.rows)
    result["runs_per_setup"] = int(runs_per_setup)
    result["overrides"] = list(overrides)
    result["timing"] = {k: round(v, 3) for k, v in output.timing.items()}
    return result


def _frame(result: dict):
    import polars as pl

    lines = []
    for table in ("setups", "by_lions", "strategy", "by_herd"):
        for line in result[table]:
            lines.append({"table": table, **line})
    lines.append({"table": "total", **result["total"]})
    columns = ["table", "setup", "lions", "zebras", "runs", "successes", "failures", "rate", "ci_low", "ci_high",
               "published_successes", "published_runs", "published_rate"]
    return pl.DataFrame([{c: line.get(c) for c in columns} for line in lines],
                        schema={c: (pl.Utf8 if c in ("table", "setup") else pl.Float64 if c in
                                    ("rate", "ci_low", "ci_high", "published_rate") else pl.Int64) for c in columns})


def write_outputs(result: dict, out_dir: Path) -> dict[str, str]:
    """``savannah.csv`` and ``savannah.parquet`` (every table's lines), ``savannah.json`` and the
    bar chart ``savannah.png`` (measured rate with its interval beside the published one, per setup)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    frame = _frame(result)
    paths = {"csv": out_dir / "savannah.csv", "parquet": out_dir / "savannah.parquet",
             "json": out_dir / "savannah.json", "png": out_dir / "savannah.png"}
    frame.write_csv(paths["csv"])
    frame.write_parquet(paths["parquet"])
    paths["json"].write_text(json.dumps(result, indent=1) + "\n")
    lines = result["setups"] + result["strategy"] + [result["total"]]
    x = np.arange(len(lines))
    measured = [line["rate"] or 0.0 for line in lines]
    err_low = [max(0.0, (line["rate"] or 0.0) - (line["ci_low"] or 0.0)) for line in lines]
    err_high = [max(0.0, (line["ci_high"] or 0.0) - (line["rate"] or 0.0)) for line in lines]
    fig, ax = plt.subplots(figsize=(8.0, 4.2), dpi=110)
    ax.bar(x - 0.2, measured, 0.4, yerr=[err_low, err_high], capsize=3, label="Starling (95 % Wilson)",
           color="#c8963c")
    ax.bar(x + 0.2, [line["published_rate"] for line in lines], 0.4, label="Collado 2013", color="#7a7a7a")
    ax.set_xticks(x, [line["setup"].replace(", ", "\n") for line in lines], fontsize=7)
    ax.set_ylabel("success rate (a zebra caught)")
    ax.set_ylim(0, 1)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(f"Lions' success, {result['runs_per_setup']} runs per setup", fontsize=10)
    fig.tight_layout()
    fig.savefig(paths["png"])
    plt.close(fig)
    return {k: str(v) for k, v in paths.items()}
