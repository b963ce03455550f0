"""A sweep's output folder: rows as runs finish, Parquet, a summary with 95 % intervals, plots.

::

    OUT/
      sweep.json        the sweep (its file's fields, a fingerprint, the metric columns)
      runs.jsonl        one line per finished run, appended and flushed as it finishes
      runs.parquet      the same rows as a table (rewritten atomically every few seconds and at the end)
      summary.parquet   per parameter set: runs, failed, and each metric's mean and 95 % interval
      summary.csv       the same, for a spreadsheet
      plots/METRIC--PARAMETER.png

``runs.jsonl`` is the record that survives anything: an interrupted sweep loses at most
the runs that were in flight, and ``--resume`` reads it to run only what is missing.
"""
from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import Optional

import numpy as np

from ..config import ConfigError, Problem
from .sweep_file import Sweep, describe

PARQUET_EVERY_S = 5.0


def _read_rows(path: Path) -> list[dict]:
    rows = []
    if path.is_file():
        for line in path.read_text().splitlines():
            try:
                rows.append(json.loads(line))
            except ValueError:
                continue  # a line cut short when the sweep was killed: that run runs again
    return rows


class SweepOutput:
    """Writes one sweep's results into ``out_dir`` (see the module)."""

    def __init__(self, out_dir: Path, sweep: Sweep, resume: bool = False):
        self.dir = Path(out_dir)
        self.sweep = sweep
        self.params = list(sweep.spec.parameters)
        self.columns = sweep.columns()
        self.log_path = self.dir / "runs.jsonl"
        meta = self.dir / "sweep.json"
        self.rows: list[dict] = []
        if meta.is_file():
            previous = json.loads(meta.read_text())
            if not resume:
                raise ConfigError([Problem("--out", f"{self.dir} already holds a sweep's results; "
                                                    "add --resume to finish it, or choose another --out")])
            if previous.get("fingerprint") != sweep.fingerprint():
                raise ConfigError([Problem("--resume", f"{self.dir} holds the results of a different sweep "
                                                       f"({previous.get('source')}); choose another --out")])
            self.rows = _read_rows(self.log_path)
        elif self.dir.exists() and any(self.dir.iterdir()):
            raise ConfigError([Problem("--out", f"{self.dir} is not empty and holds no sweep; choose another --out")])
        self.dir.mkdir(parents=True, exist_ok=True)
        meta.write_text(json.dumps(describe(sweep), indent=1))
        self._log = open(self.log_path, "a")
        self._last_parquet = time.monotonic()

    @property
    def done(self) -> set[str]:
        return {r["run"] for r in self.rows}

    def add(self, row: dict) -> None:
        """Keep one finished run: appended to the log and made durable before anything else."""
        row = {k: v for k, v in row.items() if k != "traceback"}
        self.rows.append(row)
        self._log.write(json.dumps(row) + "\n")
        self._log.flush()
        os.fsync(self._log.fileno())
        if time.monotonic() - self._last_parquet >= PARQUET_EVERY_S:
            self.write_table()

    def table(self):
        import polars as pl

        decided = ["outcome", "stopped_at_s"] if self.has_outcomes else []
        ordered = ["run", "index", "seed", *self.params, *decided, *self.columns, "status", "error", "wall_s",
                   "worker", "threads"]
        data = {c: [r.get(c) for r in self.rows] for c in ordered}
        text = {"run", "status", "error", "worker", "outcome"}
        schema = {c: (pl.Float64 if c in self.columns or c in ("wall_s", "stopped_at_s") else pl.Utf8 if c in text
                      else pl.Int64 if c in ("index", "seed", "threads") else None) for c in ordered}
        return pl.DataFrame({c: pl.Series(c, v, dtype=schema[c], strict=False) for c, v in data.items()})

    def write_table(self) -> None:
        _atomic_parquet(self.table(), self.dir / "runs.parquet")
        self._last_parquet = time.monotonic()

    @property
    def has_outcomes(self) -> bool:
        """Whether the runs report how they were decided (the scenario has ``[[stop]]`` conditions)."""
        return any("outcome" in r for r in self.rows)

    def summary(self) -> list[dict]:
        """Per parameter set (in run order): runs, failed, each metric's mean with a 95 % t-interval,
        and with stop conditions each outcome's rate with a 95 % Wilson interval."""
        groups: dict[str, list[dict]] = {}
        for r in sorted(self.rows, key=lambda r: r["index"]):
            groups.setdefault(json.dumps([r.get(p) for p in self.params]), []).append(r)
        out = []
        for key, rows in groups.items():
            item = dict(zip(self.params, json.loads(key)))
            ok = [r for r in rows if r["status"] == "ok"]
            item.update(runs=len(rows), failed=len(rows) - len(ok))
            if self.has_outcomes:
                for name in sorted({r.get("outcome") or "undecided" for r in self.rows if r["status"] == "ok"}):
                    k = sum(1 for r in ok if (r.get("outcome") or "undecided") == name)
                    low, high = wilson_interval(k, len(ok))
                    item[f"outcome.{name}.rate"] = k / len(ok) if ok else None
                    item[f"outcome.{name}.ci_low"], item[f"outcome.{name}.ci_high"] = low, high
            for c in self.columns:
                v = np.array([r[c] for r in ok if r.get(c) is not None and math.isfinite(r[c])], np.float64)
                mean = float(v.mean()) if v.size else None
                half = _half_interval(v.tolist()) if v.size > 1 else None
                item[f"{c}.mean"] = mean
                item[f"{c}.ci_low"] = None if half is None else mean - half
                item[f"{c}.ci_high"] = None if half is None else mean + half
            out.append(item)
        return out

    def finish(self, plots: bool = False) -> list[dict]:
        """Write the table and the summary (and with ``plots`` the plots); returns the summary.

        Plots cost about a second (matplotlib and one PNG per metric and parameter), so they
        are made on demand: ``starling sweep --plots``, or afterwards ``starling sweep-plots OUT``
        (:func:`plot_folder`)."""
        import polars as pl

        self._log.close()
        self.write_table()
        summary = self.summary()
        if summary:
            frame = pl.DataFrame(summary, infer_schema_length=None)
            _atomic_parquet(frame, self.dir / "summary.parquet")
            frame.write_csv(self.dir / "summary.csv")
        if plots:
            plot_summary(self, summary)
        return summary


def wilson_interval(k: int, n: int, z: float = 1.959963984540054) -> tuple[Optional[float], Optional[float]]:
    """95 % Wilson score interval of a rate ``k / n`` (sensible at 0 and n, unlike the normal one)."""
    if n == 0:
        return None, None
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _atomic_parquet(frame, path: Path) -> None:
    tmp = path.with_suffix(".parquet.partial")
    frame.write_parquet(tmp)
    os.replace(tmp, path)


def plot_summary(output: SweepOutput, summary: Optional[list[dict]] = None) -> list[Path]:
    """One PNG per metric and parameter: each run as a dot, the means with their 95 % intervals."""
    return plot_runs(output.dir, output.rows, output.columns, output.params, output.sweep.spec.design,
                     output.sweep.spec.scenario)


def plot_folder(out_dir: Path) -> list[Path]:
    """The plots of a sweep's output folder (``sweep.json`` and ``runs.jsonl``), made after the sweep."""
    out_dir = Path(out_dir)
    meta_path = out_dir / "sweep.json"
    if not meta_path.is_file():
        raise ConfigError([Problem("OUT", f"{out_dir} holds no sweep (no sweep.json)")])
    meta = json.loads(meta_path.read_text())
    spec = meta["spec"]
    return plot_runs(out_dir, _read_rows(out_dir / "runs.jsonl"), meta["columns"], list(spec.get("parameters") or {}),
                     spec.get("design", "grid"), spec.get("scenario", ""))


def plot_runs(out_dir: Path, rows: list[dict], columns: list[str], params: list[str], design: str,
              scenario: str) -> list[Path]:
    """Write ``out_dir/plots/METRIC--PARAMETER.png`` for every metric and parameter; the paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder = Path(out_dir) / "plots"
    folder.mkdir(exist_ok=True)
    written = []
    ok = [r for r in rows if r["status"] == "ok"]
    for c in columns:
        for p in params:
            xs = [r[p] for r in ok if _number(r.get(p)) and _number(r.get(c))]
            ys = [r[c] for r in ok if _number(r.get(p)) and _number(r.get(c))]
            if not xs:
                continue
            fig, ax = plt.subplots(figsize=(6.0, 4.0), dpi=110)
            ax.plot(xs, ys, "o", color="0.65", markersize=3, label="runs")
            if design == "grid":
                by_value: dict = {}
                for x, y in zip(xs, ys):
                    by_value.setdefault(x, []).append(y)
                values = sorted(by_value)
                means = [float(np.mean(by_value[v])) for v in values]
                halves = [_half_interval(by_value[v]) for v in values]
                ax.errorbar(values, means, yerr=halves, fmt="-o", capsize=3, color="C0",
                            label="mean, 95 % interval" + (" (over the other parameters too)"
                                                           if len(params) > 1 else ""))
            ax.set_xlabel(p)
            ax.set_ylabel(c)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
            ax.set_title(f"{scenario}: {c} against {p}", fontsize=10)
            fig.tight_layout()
            path = folder / f"{c}--{p}.png"
            fig.savefig(path)
            plt.close(fig)
            written.append(path)
    return written


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _half_interval(values: list[float]) -> float:
    """Half-width of the 95 % Student-t interval of the mean (``stdtrit`` is ``scipy.stats.t.ppf``
    without importing ``scipy.stats``, a third of a second of the driver's start)."""
    from scipy.special import stdtrit

    if len(values) < 2:
        return 0.0
    v = np.asarray(values, np.float64)
    return float(stdtrit(v.size - 1, 0.975) * v.std(ddof=1) / math.sqrt(v.size))


def read_runs(out_dir: Path) -> Optional[list[dict]]:
    """The finished runs recorded in a sweep's output (None when there is none)."""
    path = Path(out_dir) / "runs.jsonl"
    return _read_rows(path) if path.is_file() else None
