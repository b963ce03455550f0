"""Reading recordings: ``starling metrics`` and ``starling report``."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import typer
from rich.table import Table

from .common import _fail, app, out


def _open_recording(path: Path):
    """The recording at ``path``, or exit 2 with the reader's one-line reason (it names the file)."""
    from ..recording import RecordingError, open_recording

    try:
        return open_recording(path)
    except RecordingError as e:
        _fail(str(e))


@app.command()
def metrics(
    file: Path = typer.Argument(..., help="A recording (the directory `starling run --record` wrote)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
) -> None:
    """Summarise a recording: per species every metric's final value and mean over the run, population,
    deaths by cause, catches, time to first catch and brain-state shares at the end."""
    from rich.text import Text

    from ..recording import RecordingError
    from ..recording.summary import (
        metrics_table,
        run_text,
        species_table,
        states_text,
        summarize,
    )

    rec = _open_recording(file)
    try:
        summary = summarize(rec)
    except RecordingError as e:
        _fail(str(e))
    if as_json:
        sys.stdout.write(json.dumps(summary) + "\n")
        return
    out.print(run_text(summary), highlight=False, markup=False, soft_wrap=True)

    def print_table(header: list[str], rows: list[list[str]]) -> None:
        table = Table(*header, box=None)
        for row in rows:
            table.add_row(*(Text(cell) for cell in row))  # names and causes are text, never markup
        out.print(table)

    print_table(*species_table(summary))
    for name, s in summary["species"].items():
        if s["occupancy"]:
            out.print(f"{name} states at the end: {states_text(s)}", highlight=False, markup=False)
    header, rows = metrics_table(summary)
    if rows:
        print_table(header, rows)
    else:
        out.print("no metric samples (recorded with --metrics-every 0)", highlight=False)
    if summary["entities"]:
        out.print("other populations at the end: " + ", ".join(
            f"{k} {v['final']}" for k, v in summary["entities"].items()), highlight=False, markup=False)


@app.command()
def report(
    file: Path = typer.Argument(..., help="A recording (the directory `starling run --record` wrote)."),
    out_dir: Path = typer.Option(..., "--out", help="Folder for index.html and the plots (created if missing)."),
) -> None:
    """Write an HTML report of a recording: order parameters, nearest-neighbour histogram, groups,
    population and deaths, brain states and a top view of trajectories (DIR/index.html)."""
    from ..recording import RecordingError
    from ..recording.report import write_report

    rec = _open_recording(file)
    if out_dir.exists() and not out_dir.is_dir():
        _fail(f"--out: {out_dir} is a file, not a folder")
    try:
        views = write_report(rec, out_dir)
    except RecordingError as e:
        _fail(str(e))
    except OSError as e:
        _fail(f"--out: cannot write {out_dir}: {e.strerror or e}")
    drawn = [k for k, why in views.items() if why is None]
    out.print(f"wrote {out_dir / 'index.html'} with {len(drawn)} plots ({', '.join(drawn) or 'none'})",
              highlight=False, soft_wrap=True)
    for name, why in views.items():
        if why is not None:
            out.print(f"  {name}: not drawn, {why}", highlight=False, soft_wrap=True)
