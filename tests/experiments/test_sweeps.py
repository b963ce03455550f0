"""Parameter sweeps: rows as runs end, summaries over seeds, continuation from the previous state, plots."""
import csv
import json

import numpy as np
import pytest
from typer.testing import CliRunner

import starling
from starling.cli import app
from starling.config import ConfigError
from starling.experiments.sweeps import Sweep, plot, run_sweep, write_summary

SMALL = ("n=120",)
SWEEP = Sweep(scenario="flock", parameter="separation", values=(1.5, 2.5), species="bird", steps=12, average=4,
              seeds=(1, 2), metrics=("polarization", "milling"), overrides=SMALL)


def _by_hand(seed, value, steps=12, average=4):
    sim = starling.load_scenario("flock", seed=seed, overrides=(*SMALL, f"separation={value!r}"), record_debug=False)
    got = []
    for i in range(steps):
        sim.step()
        if i >= steps - average:
            got.append(sim.metrics()["bird"]["polarization"])
    return float(np.mean(got))


def test_independent_runs_are_written_as_they_end_and_summarised_over_seeds(tmp_path):
    result = run_sweep(SWEEP, tmp_path / "rows.csv")
    with open(tmp_path / "rows.csv") as f:
        rows = list(csv.DictReader(f))
    assert [(r["branch"], float(r["value"]), int(r["seed"])) for r in rows] == [
        ("up", 1.5, 1), ("up", 2.5, 1), ("up", 1.5, 2), ("up", 2.5, 2)]
    # each row is the mean over the last 4 of 12 steps of a fresh run with that value and seed
    assert float(rows[1]["polarization"]) == pytest.approx(_by_hand(1, 2.5), abs=1e-9)
    summary = result.summary()
    assert [(s["value"], s["runs"]) for s in summary] == [(1.5, 2), (2.5, 2)]
    pols = [float(r["polarization"]) for r in rows if float(r["value"]) == 2.5]
    assert summary[1]["polarization"] == pytest.approx(np.mean(pols))
    assert summary[1]["polarization_sd"] == pytest.approx(np.std(pols))
    write_summary(result, tmp_path / "summary.csv")
    plot(result, tmp_path / "plot.png")
    assert (tmp_path / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_continuation_sweeps_up_then_down_from_the_previous_state(tmp_path):
    sweep = Sweep(scenario="flock", parameter="separation", values=(1.5, 2.0, 2.5), species="bird", steps=6,
                  average=2, seeds=(3,), continuation=True, overrides=SMALL)
    assert sweep.schedule() == [("up", 1.5), ("up", 2.0), ("up", 2.5), ("down", 2.0), ("down", 1.5)]
    result = run_sweep(sweep)
    # the second run starts where the first ended: its rows differ from a fresh run's
    continued = result.rows[1]["polarization"]
    sim = starling.load_scenario("flock", seed=3, overrides=(*SMALL, "separation=1.5"), record_debug=False)
    sim.step(6)
    sim.set("separation=2.0")
    got = []
    for i in range(6):
        sim.step()
        if i >= 4:
            got.append(sim.metrics()["bird"]["polarization"])
    assert continued == pytest.approx(np.mean(got), abs=1e-9)
    assert continued != pytest.approx(_by_hand(3, 2.0, steps=6, average=2), abs=1e-9)


def test_bad_sweeps_name_what_is_wrong():
    with pytest.raises(ConfigError, match="average: must be between 1 and steps"):
        run_sweep(Sweep(scenario="flock", parameter="separation", values=(2.0,), species="bird", steps=3, average=5))
    with pytest.raises(ConfigError, match="eta: unknown parameter"):
        run_sweep(Sweep(scenario="flock", parameter="eta", values=(2.0,), species="bird", steps=3, average=1))
    with pytest.raises(ConfigError, match="species: 'fish' is not in flock"):
        run_sweep(Sweep(scenario="flock", parameter="separation", values=(2.0,), species="fish", steps=3, average=1,
                        overrides=SMALL))


def test_the_experiment_command_refuses_what_it_does_not_know(tmp_path):
    runner = CliRunner()
    result = runner.invoke(app, ["experiment", "boids", "--out", str(tmp_path)])
    assert result.exit_code == 2 and "unknown 'boids'; known: couzin, savannah, vicsek" in result.output
    result = runner.invoke(app, ["experiment", "vicsek", "--values", "a,b", "--out", str(tmp_path)])
    assert result.exit_code == 2 and "--values: expected comma-separated numbers" in result.output
    assert "Traceback" not in result.output


def test_the_vicsek_experiment_writes_rows_summary_and_plot(tmp_path):
    runner = CliRunner()
    result = runner.invoke(app, ["experiment", "vicsek", "--values", "0.1,5", "--seeds", "2", "--steps", "300",
                                 "--average", "100", "--set", "n=200", "--set", "box=7.07", "--out", str(tmp_path),
                                 "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])["summary"]
    assert [s["value"] for s in summary] == [0.1, 5.0] and all(s["runs"] == 2 for s in summary)
    assert summary[0]["polarization"] > 0.9 > 0.3 > summary[1]["polarization"]
    with open(tmp_path / "vicsek.csv") as f:
        assert len(list(csv.DictReader(f))) == 4
    assert (tmp_path / "vicsek_summary.csv").exists()
    assert (tmp_path / "vicsek.png").read_bytes()[:4] == b"\x89PNG"
