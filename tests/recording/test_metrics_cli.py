"""`starling metrics` and `starling report` through the command line, on good and bad input."""
import json
import shutil
from pathlib import Path

import pytest
import zarr
from typer.testing import CliRunner

from starling.cli import app
from starling.recording import open_recording
from starling.recording.report import VIEWS
from starling.recording.summary import summarize

runner = CliRunner()


@pytest.fixture(scope="module")
def recording(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "lagoon.zarr"
    result = runner.invoke(app, ["run", "lagoon", "--steps", "300", "--record", str(path), "--every", "5",
                                 "--metrics-every", "10", "--json"])
    assert result.exit_code == 0, result.output
    return path


def test_metrics_prints_the_summary_tables(recording):
    result = runner.invoke(app, ["metrics", str(recording)])
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert f"{recording}: lagoon, seed 3, 300 steps" in text
    assert "61 frames every 5 steps (float32)" in text
    summary = summarize(open_recording(recording))
    shark = summary["species"]["shark"]["predation"]
    assert f"{shark['time_to_first_catch']:.4g} s" in text  # the first catch
    assert "fish states at the end: normal" in text and "shark states at the end: chill" in text
    for metric in ("polarization", "milling", "nn_median", "nn_p95", "speed_sd", "density", "largest_group"):
        assert f"\n {metric} " in text
    assert f"caught {summary['species']['fish']['deaths_by_cause']['caught']}" in text


def test_metrics_json_is_the_summary(recording):
    result = runner.invoke(app, ["metrics", str(recording), "--json"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert printed == json.loads(json.dumps(summarize(open_recording(recording))))
    assert printed["species"]["shark"]["predation"]["catches"] >= 1
    assert set(printed["species"]) == {"fish", "shark"}


def test_report_writes_the_page_and_every_plot(recording, tmp_path):
    out = tmp_path / "report"
    result = runner.invoke(app, ["report", str(recording), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert f"wrote {out / 'index.html'} with {len(VIEWS)} plots" in result.stdout
    for stem, _, _ in VIEWS:
        assert (out / f"{stem}.png").stat().st_size > 10_000
    assert "Starling report: lagoon" in (out / "index.html").read_text()


def _truncated_chunk(recording: Path, tmp: Path) -> Path:
    """A copy whose fish uid chunk was cut in half (a disk that filled up, a copy stopped midway)."""
    copy = tmp / "cut.zarr"
    shutil.copytree(recording, copy)
    chunk = next(p for p in (copy / "pop" / "fish" / "uid").rglob("*") if p.is_file() and p.name != "zarr.json")
    data = chunk.read_bytes()
    chunk.write_bytes(data[: len(data) // 2])
    return copy


def _truncated_store(recording: Path, tmp: Path) -> Path:
    """A copy that lost its frame index (the store was copied only in part)."""
    copy = tmp / "part.zarr"
    shutil.copytree(recording, copy)
    shutil.rmtree(copy / "frames")
    return copy


def _foreign_zarr(tmp: Path) -> Path:
    root = zarr.open_group(str(tmp / "other.zarr"), mode="w", zarr_format=3)
    root.create_array("temperature", shape=(4,), dtype="f4")[:] = [1, 2, 3, 4]
    return tmp / "other.zarr"


def _hdf5(tmp: Path) -> Path:
    path = tmp / "data.h5"
    path.write_bytes(b"\x89HDF\r\n\x1a\n" + bytes(504))  # the HDF5 signature and an empty superblock
    return path


BAD = {
    "missing": (lambda rec, tmp: tmp / "nowhere.zarr", "no such file or directory"),
    "empty file": (lambda rec, tmp: (tmp / "empty.zarr").touch() or tmp / "empty.zarr", "an empty file"),
    "empty directory": (lambda rec, tmp: (tmp / "void.zarr").mkdir() or tmp / "void.zarr", "an empty directory"),
    "truncated chunk": (_truncated_chunk, "damaged"),
    "truncated store": (_truncated_store, "truncated or damaged"),
    "foreign zarr": (lambda rec, tmp: _foreign_zarr(tmp), "not a Starling recording"),
    "hdf5": (lambda rec, tmp: _hdf5(tmp), "an HDF5 file, not a Starling recording"),
}


@pytest.mark.parametrize("command", ["metrics", "report"])
@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_is_one_line_naming_the_file(recording, tmp_path, command, case):
    make, reason = BAD[case]
    path = make(recording, tmp_path)
    args = [command, str(path)] + (["--out", str(tmp_path / "out")] if command == "report" else [])
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"error: {path}") and reason in lines[0]
    assert "Traceback" not in result.output and result.stdout == ""


def test_report_out_must_be_a_folder(recording, tmp_path):
    target = tmp_path / "taken"
    target.write_text("x")
    result = runner.invoke(app, ["report", str(recording), "--out", str(target)])
    assert result.exit_code == 2
    assert result.stderr.strip() == f"error: --out: {target} is a file, not a folder"


def test_report_needs_out(recording):
    result = runner.invoke(app, ["report", str(recording)])
    assert result.exit_code == 2 and "--out" in result.output


def test_metrics_of_a_recording_without_samples_or_brains(tmp_path):
    from starling.recording import record
    from starling.simulation import load_scenario

    sim = load_scenario("flock", record_debug=False, overrides=["species.bird.count=40"])
    path = record(sim, tmp_path / "flock.zarr", 3, metrics_every=0)
    result = runner.invoke(app, ["metrics", str(path)])
    assert result.exit_code == 0, result.output
    assert "no metric samples (recorded with --metrics-every 0)" in result.stdout
    assert "states at the end" not in result.stdout and "40 → 40" in result.stdout
