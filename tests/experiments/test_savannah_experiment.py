"""The savannah experiment: the thesis' tables from sweep rows, and the command end to end."""
import json

import pytest
from typer.testing import CliRunner

from starling.cli import app
from starling.experiments.savannah import PUBLISHED, SETUPS, sweep_spec, tabulate
from starling.experiments.sweep_file import check_sweep


def _rows(outcomes: dict) -> list[dict]:
    """Rows as the sweep writes them: per (lions, zebras), a list of outcomes."""
    rows = []
    for (lions, zebras), names in outcomes.items():
        for k, name in enumerate(names):
            rows.append({"lions": lions, "zebras": zebras, "seed": k + 1, "status": "ok", "outcome": name})
    return rows


def test_the_tables_count_catches_per_setup_lions_strategy_and_herd():
    outcomes = {(3, 30): ["caught", "caught", "retreated", "timeout"], (2, 30): ["caught", "retreated"],
                (1, 30): ["retreated", "retreated"], (3, 10): ["caught"], (2, 10): ["caught", "caught"],
                (1, 10): ["caught", "retreated"]}
    rows = _rows(outcomes) + [{"lions": 1, "zebras": 10, "seed": 9, "status": "failed", "error": "boom"}]
    t = tabulate(rows)
    first = t["setups"][0]
    assert (first["lions"], first["zebras"], first["runs"], first["successes"], first["rate"]) == (3, 30, 4, 2, 0.5)
    assert first["published_rate"] == 0.42 and first["published_successes"] == 21
    # Wilson interval of 2/4: centre (0.5 + 1.92/8) / (1 + 3.84/4), hand-computed with z = 1.96
    assert first["ci_low"] == pytest.approx(0.1500, abs=1e-3) and first["ci_high"] == pytest.approx(0.8500, abs=1e-3)
    three = t["by_lions"][0]
    assert (three["runs"], three["successes"], three["published_rate"]) == (5, 3, 0.49)
    assert t["pack_rate"] == pytest.approx(6 / 9)          # 2 + 1 + 1 + 2 of 4 + 2 + 1 + 2
    assert t["alone_rate"] == pytest.approx(1 / 4)
    assert t["total_rate"] == pytest.approx(7 / 13)
    assert [h["published_rate"] for h in t["by_herd"]] == [round(37 / 150, 4), 0.38]
    assert t["outcomes"] == {"caught": 7, "retreated": 5, "timeout": 1} and t["failed_runs"] == 1


def test_the_protocol_is_a_sweep_of_the_scenarios_named_parameters():
    plan = check_sweep(sweep_spec(3), "savannah experiment")
    runs = plan.runs()
    assert len(runs) == 18
    assert {(r.params["lions"], r.params["zebras"]) for r in runs} == set(SETUPS) == set(PUBLISHED)
    assert sorted({r.seed for r in runs}) == [1, 2, 3]       # the same seeds for every setup


def test_the_command_prints_every_field_as_json(tmp_path):
    # a 36 s time limit (the scenario's is 300 s) keeps the 12 runs short: a lone lion tires and
    # retreats (or catches) after about 33 s, a pride is still preparing and times out
    result = CliRunner().invoke(app, ["experiment", "savannah", "--runs-per-setup", "2", "--workers", "2",
                                      "--set", "stop.2.at=36.0", "--out", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout.strip().splitlines()[-1])
    assert data["experiment"] == "savannah" and data["runs_per_setup"] == 2
    assert data["overrides"] == ["stop.2.at=36.0"]
    assert [(s["lions"], s["zebras"]) for s in data["setups"]] == list(SETUPS)
    for s in data["setups"]:
        assert s["runs"] == 2 and 0 <= s["successes"] <= 2 and s["rate"] == s["successes"] / 2
        assert s["ci_low"] <= s["rate"] <= s["ci_high"]
    for key in ("pack_rate", "alone_rate", "total_rate"):
        assert 0.0 <= data[key] <= 1.0
    assert sum(data["outcomes"].values()) == 12
    assert data["outcomes"]["timeout"] >= 6       # the prides: the --set reached every run
    assert data["outcomes"].get("retreated", 0) + data["outcomes"].get("caught", 0) >= 2   # the lone lions
    for name in ("csv", "parquet", "json", "png"):
        assert (tmp_path / f"savannah.{name}").stat().st_size > 0
    assert (tmp_path / "runs" / "runs.parquet").exists()


def test_overrides_reach_every_run_of_the_protocol():
    plan = check_sweep(sweep_spec(2, overrides=("faithful=true",)), "savannah experiment")
    assert all("faithful=true" in plan.task(r)["overrides"] for r in plan.runs())


def test_the_savannah_refuses_options_of_the_parameter_sweeps_instead_of_ignoring_them(tmp_path):
    result = CliRunner().invoke(app, ["experiment", "savannah", "--values", "1,2", "--seeds", "3",
                                      "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "--values, --seeds do not apply" in result.output
    assert not (tmp_path / "runs").exists()
