"""Running sweeps: local processes and Ray give the same numbers; dead workers, failed runs, resume."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

import starling
from starling.cli import app
from starling.experiments.backends import LocalBackend, RayBackend
from starling.experiments.driver import run_sweep_file
from starling.experiments.sweep_file import check_sweep

SRC = str(Path(starling.__file__).resolve().parents[1])
TINY = {"scenario": "vicsek", "steps": 30, "replicates": 2, "parameters": {"eta": [0.5, 4.0]},
        "set": ["species.particle.count=60"]}


def _metrics(rows):
    keys = ("particle.polarization", "particle.milling", "particle.count")
    return {(r["eta"], r["seed"]): tuple(r[k] for k in keys) for r in rows}


@pytest.fixture(scope="module")
def local_rows(tmp_path_factory):
    out = tmp_path_factory.mktemp("local") / "out"
    output, _ = run_sweep_file(check_sweep(dict(TINY)), LocalBackend(2), out)
    return output.rows


def test_the_local_backend_runs_every_run_with_one_numba_thread_per_worker(local_rows, tmp_path):
    assert len(local_rows) == 4 and all(r["status"] == "ok" for r in local_rows)
    assert all(r["threads"] == 1 for r in local_rows)
    # the same runs in this process, one by one: the workers change nothing
    sim = starling.load_scenario("vicsek", seed=2, overrides=["species.particle.count=60", "eta=4.0"],
                                 record_debug=False)
    sim.step(30)
    row = next(r for r in local_rows if r["eta"] == 4.0 and r["seed"] == 2)
    assert row["particle.polarization"] == pytest.approx(sim.metrics()["particle"]["polarization"], abs=1e-12)


def test_the_output_holds_parquet_rows_a_summary_with_intervals_and_plots(tmp_path):
    out = tmp_path / "out"
    output, summary = run_sweep_file(check_sweep({**TINY, "replicates": 3}), LocalBackend(1), out, plots=True)
    runs = pl.read_parquet(out / "runs.parquet")
    assert runs.height == 6 and set(runs["status"]) == {"ok"}
    assert {"run", "seed", "eta", "particle.polarization", "wall_s", "status", "error"} <= set(runs.columns)
    table = pl.read_parquet(out / "summary.parquet")
    assert table.height == 2
    for s in summary:
        values = [r["particle.polarization"] for r in output.rows if r["eta"] == s["eta"]]
        import numpy as np
        from scipy import stats

        mean = float(np.mean(values))
        half = stats.t.ppf(0.975, 2) * np.std(values, ddof=1) / np.sqrt(3)
        assert s["particle.polarization.mean"] == pytest.approx(mean)
        assert s["particle.polarization.ci_high"] - mean == pytest.approx(half)
    plots = sorted(p.name for p in (out / "plots").iterdir())
    assert plots == sorted(f"particle.{m}--eta.png" for m in ("count", "polarization", "milling", "largest_group"))
    assert len(json.loads((out / "sweep.json").read_text())["fingerprint"]) == 40


def test_plots_are_made_on_demand_during_the_sweep_or_afterwards_from_its_folder(tmp_path):
    out = tmp_path / "out"
    run_sweep_file(check_sweep(dict(TINY)), LocalBackend(1), out)
    assert (out / "summary.parquet").is_file() and not (out / "plots").exists()  # no plots unless asked
    result = CliRunner().invoke(app, ["sweep-plots", str(out), "--json"])
    assert result.exit_code == 0, result.output
    paths = json.loads(result.output.strip().splitlines()[-1])["plots"]
    names = sorted(Path(p).name for p in paths)
    assert names == sorted(f"particle.{m}--eta.png" for m in ("count", "polarization", "milling", "largest_group"))
    assert all(Path(p).stat().st_size > 1000 for p in paths)
    missing = CliRunner().invoke(app, ["sweep-plots", str(tmp_path / "nothing")])
    assert missing.exit_code == 2 and "no sweep" in missing.output


def test_the_cli_draws_plots_with_plots_and_takes_chunk_only_with_ray(tmp_path):
    sweep_file = tmp_path / "s.toml"
    sweep_file.write_text('scenario = "vicsek"\nsteps = 5\nset = ["species.particle.count=30"]\n'
                          '[parameters]\neta = [1.0, 2.0]\n')
    result = CliRunner().invoke(app, ["sweep", str(sweep_file), "--workers", "1", "--plots", "--out",
                                      str(tmp_path / "out"), "--json"])
    assert result.exit_code == 0, result.output
    assert len(list((tmp_path / "out" / "plots").glob("*.png"))) == 4
    refused = CliRunner().invoke(app, ["sweep", str(sweep_file), "--chunk", "4", "--out", str(tmp_path / "o2")])
    assert refused.exit_code == 2 and "--chunk" in refused.output and not (tmp_path / "o2").exists()


def test_the_fork_server_warm_up_runs_the_task_once_and_never_raises(tmp_path):
    import pickle

    from starling.experiments import preload

    task = check_sweep(dict(TINY)).task(check_sweep(dict(TINY)).runs()[0])
    path = tmp_path / "warm.pickle"
    path.write_bytes(pickle.dumps(task))
    preload.warm_up(str(path))
    assert not path.exists()  # read once, then removed
    path.write_bytes(b"not a pickle")
    preload.warm_up(str(path))  # a broken warm-up leaves the server running: the runs report their own errors
    preload.warm_up(str(tmp_path / "missing.pickle"))


_START_PATH = """
import json, os, sys
import numba
import numpy as np
from starling.experiments.backends import LocalBackend
from starling.experiments.driver import run_sweep_file
from starling.experiments.sweep_file import check_sweep

if sys.argv[1] == "omp-ran":        # a parallel kernel ran first, on GNU OpenMP: it cannot fork any more
    numba.config.THREADING_LAYER = "omp"

    @numba.njit(parallel=True)
    def total(a):
        s = 0.0
        for i in numba.prange(a.shape[0]):
            s += a[i]
        return s

    total(np.ones(1000))
LocalBackend.fork_from_driver = True      # as the sweep and experiment commands set it
backend = LocalBackend(2)
output, _ = run_sweep_file(check_sweep(json.loads(sys.argv[2])), backend, sys.argv[3])
print(json.dumps({"fork": backend._fork, "layer": numba.threading_layer() if sys.argv[1] == "omp-ran" else None,
                  "rows": len(output.rows), "ok": sum(r["status"] == "ok" for r in output.rows),
                  "workers": sorted({r["worker"] for r in output.rows})}))
"""


@pytest.mark.parametrize("before", ["fresh", "omp-ran"])
def test_workers_fork_from_the_driver_unless_openmp_already_runs_there(before, tmp_path):
    out = subprocess.run([sys.executable, "-c", _START_PATH, before, json.dumps(TINY), str(tmp_path / "out")],
                         capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": SRC})
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    if before == "fresh":
        assert got["fork"] is True           # forked from the driver: no second import of Starling
    else:
        assert got["fork"] is False and got["layer"] == "omp"    # the fork server instead
    assert got["rows"] == got["ok"] == 4 and len(got["workers"]) >= 1


def test_chunked_runs_give_the_same_rows_as_runs_one_by_one():
    from starling.experiments import worker

    sweep = check_sweep(dict(TINY))
    tasks = [sweep.task(r) for r in sweep.runs()]
    one_by_one = [worker.execute(t) for t in tasks]
    chunked = worker.execute_many(tasks[:3]) + worker.execute_many(tasks[3:])
    assert _metrics(chunked) == _metrics(one_by_one)
    assert RayBackend(chunk=3).chunk_size(40, 2) == 3
    assert RayBackend().chunk_size(40, 2) == 5 and RayBackend().chunk_size(3, 2) == 1
    assert RayBackend().chunk_size(100_000, 2) == RayBackend.MAX_CHUNK


def test_a_run_that_raises_is_recorded_and_the_sweep_goes_on(tmp_path):
    sweep = check_sweep({**TINY, "replicates": 1, "parameters": {"species.particle.count": [40, -3, 50]}, "set": []})
    output, summary = run_sweep_file(sweep, LocalBackend(2), tmp_path / "out")
    by_count = {r["species.particle.count"]: r for r in output.rows}
    assert by_count[40]["status"] == by_count[50]["status"] == "ok"
    assert by_count[-3]["status"] == "failed" and "count" in by_count[-3]["error"]
    assert [s["failed"] for s in summary] == [0, 1, 0]


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(entry.name))
    return out


def _descendants(pid: int) -> list[int]:
    found, frontier = [], [pid]
    while frontier:
        kids = _children(frontier.pop())
        found += kids
        frontier += kids
    return found


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def test_a_killed_local_worker_is_respawned_and_every_run_completes(tmp_path):
    # runs long enough (about 0.2 s each) that when the first result arrives the other four are
    # still to come: with 400 steps a quiet machine could finish every run before the kill, and
    # then no worker needed replacing
    sweep = check_sweep({**TINY, "steps": 4000, "replicates": 3})
    killed = []

    def kill_one(row):
        if not killed:  # after the first result: a worker is busy with another run
            # workers forked from this process share its command line; a fork server's have its own
            me = _cmdline(os.getpid())
            workers = [p for p in _children(os.getpid()) if _cmdline(p) == me]
            if not workers:
                workers = [p for p in _descendants(os.getpid()) if "forkserver" in _cmdline(p)]
            busy = [p for p in workers if _children(p) == []]
            victim = max(busy)
            os.kill(victim, signal.SIGKILL)
            killed.append(victim)

    output, _ = run_sweep_file(sweep, LocalBackend(2), tmp_path / "out", on_row=kill_one)
    assert killed
    assert len(output.rows) == 6 and all(r["status"] == "ok" for r in output.rows), output.rows
    assert len({r["worker"] for r in output.rows}) > 2  # the broken pool was replaced by fresh workers


def test_resume_runs_only_what_an_interrupted_sweep_lacks(tmp_path):
    sweep = check_sweep({**TINY, "replicates": 3})
    out = tmp_path / "out"
    seen = []

    def interrupt(row):
        seen.append(row)
        if len(seen) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep_file(sweep, LocalBackend(1), out, on_row=interrupt)
    kept = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    assert len(kept) == 2
    with open(out / "runs.jsonl", "a") as f:  # and a line cut short as the process died
        f.write('{"run": "abc", "ind')
    starts = []
    output, _ = run_sweep_file(check_sweep({**TINY, "replicates": 3}), LocalBackend(1), out, resume=True,
                               on_start=lambda total, done: starts.append((total, done)))
    assert starts == [(6, 2)]
    assert sorted(r["index"] for r in output.rows) == list(range(6))
    assert len({r["run"] for r in output.rows}) == 6


def test_the_cli_refuses_a_used_output_without_resume_and_a_different_sweep_with_it(tmp_path):
    first = tmp_path / "a.toml"
    first.write_text('scenario = "vicsek"\nsteps = 5\n[parameters]\neta = [1.0]\n[[metrics]]\nname = "polarization"\n')
    runner = CliRunner()
    result = runner.invoke(app, ["sweep", str(first), "--out", str(tmp_path / "o"), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout.strip().splitlines()[-1])
    assert data["ok"] == 1 and data["failed"] == 0 and data["runs"] == 1
    result = runner.invoke(app, ["sweep", str(first), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "--resume" in result.output
    second = tmp_path / "b.toml"
    second.write_text(first.read_text().replace("[1.0]", "[2.0]"))
    result = runner.invoke(app, ["sweep", str(second), "--out", str(tmp_path / "o"), "--resume"])
    assert result.exit_code == 2 and "different sweep" in result.output
    bad = tmp_path / "c.toml"
    bad.write_text('scenario = "vicsek"\nsteps = 5\nreplicates = -2\n[parameters]\neta = [1.0]\n')
    result = runner.invoke(app, ["sweep", str(bad)])
    assert result.exit_code == 2 and "replicates" in result.output and "Traceback" not in result.output
    result = runner.invoke(app, ["sweep", str(first), "--backend", "spark"])
    assert result.exit_code == 2 and "--backend" in result.output


# ---------------------------------------------------------------- Ray

@pytest.fixture(scope="module")
def ray_local():
    ray = pytest.importorskip("ray")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [SRC, os.environ.get("PYTHONPATH")]))
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield ray
    ray.shutdown()


@pytest.mark.slow
def test_ray_gives_the_same_metrics_as_local_processes_for_the_same_seeds(local_rows, ray_local, tmp_path):
    output, _ = run_sweep_file(check_sweep(dict(TINY)), RayBackend(2), tmp_path / "out")
    assert all(r["status"] == "ok" and r["threads"] == 1 for r in output.rows)
    assert _metrics(output.rows) == _metrics(local_rows)


@pytest.mark.slow
def test_ray_chunks_give_the_same_metrics_as_one_run_per_task(local_rows, ray_local, tmp_path):
    one, _ = run_sweep_file(check_sweep(dict(TINY)), RayBackend(2, chunk=1), tmp_path / "one")
    three, _ = run_sweep_file(check_sweep(dict(TINY)), RayBackend(2, chunk=3), tmp_path / "three")
    assert len(one.rows) == len(three.rows) == 4
    assert _metrics(one.rows) == _metrics(three.rows) == _metrics(local_rows)


@pytest.mark.slow
def test_ray_retries_a_run_whose_worker_was_killed(ray_local, tmp_path):
    # runs long enough (about 0.25 s of steps each) for the killer, which scans /proc every 50 ms, to find a
    # worker while it runs one: 400 steps took about 25 ms a run, and a clean-clone CI on a loaded
    # machine once finished every run between two scans (as the local backend's test above did)
    sweep = check_sweep({**TINY, "steps": 4000, "replicates": 2})
    killed = []

    def killer():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not killed:
            for pid in [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]:
                if _cmdline(pid).startswith("ray::execute"):
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
                    return
            time.sleep(0.05)

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    output, _ = run_sweep_file(sweep, RayBackend(2), tmp_path / "out")
    thread.join(5)
    assert killed
    assert len(output.rows) == 4 and all(r["status"] == "ok" for r in output.rows), output.rows


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_a_sweep_runs_on_a_ray_head_started_with_ray_start(tmp_path):
    ray_bin = shutil.which("ray", path=str(Path(sys.executable).parent))
    assert ray_bin, "the ray command is installed with the package"
    port = _free_port()
    # Token authentication, as docs/sweeps.md tells users to set it: Ray 2.59+ turns it on for a
    # `ray start` that finds a token in ~/.ray/auth_token (any earlier local ray.init() writes
    # one), and then only a client with RAY_AUTH_MODE=token gets in. Set explicitly, the test
    # does not depend on what ~/.ray holds or on an earlier test having exported the mode.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [SRC, os.environ.get("PYTHONPATH")])),
           "RAY_USAGE_STATS_ENABLED": "0", "NUMBA_NUM_THREADS": "1",
           "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": uuid.uuid4().hex}
    temp = Path("/tmp") / f"starling-ray-{os.getpid()}"  # ray's socket paths must stay short
    subprocess.run([ray_bin, "start", "--head", f"--port={port}", "--num-cpus=2", "--include-dashboard=false",
                    f"--temp-dir={temp}", "--disable-usage-stats"], env=env, check=True, capture_output=True,
                   timeout=180)
    try:
        sweep_file = tmp_path / "s.toml"
        sweep_file.write_text(
            'scenario = "vicsek"\nsteps = 30\nreplicates = 2\nset = ["species.particle.count=60"]\n'
            '[parameters]\neta = [0.5, 4.0]\n')
        result = subprocess.run([sys.executable, "-m", "starling", "sweep", str(sweep_file), "--backend", "ray",
                                 "--address", f"127.0.0.1:{port}", "--out", str(tmp_path / "out"), "--json"],
                                env=env, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr
        data = json.loads(result.stdout.strip().splitlines()[-1])
        assert data["ok"] == 4 and data["backend"] == "ray"
    finally:
        subprocess.run([ray_bin, "stop", "--force"], env=env, capture_output=True, timeout=120)
        shutil.rmtree(temp, ignore_errors=True)


def test_an_unreachable_ray_address_is_one_line_and_leaves_no_output(tmp_path):
    sweep_file = tmp_path / "s.toml"
    sweep_file.write_text('scenario = "vicsek"\nsteps = 5\n[parameters]\neta = [1.0]\n')
    port = _free_port()  # nothing listens there
    result = CliRunner().invoke(app, ["sweep", str(sweep_file), "--backend", "ray", "--address",
                                      f"127.0.0.1:{port}", "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and "--address" in result.output and "nothing answers" in result.output
    assert not (tmp_path / "out").exists()


def test_a_refused_connection_to_a_listening_cluster_suggests_token_authentication(monkeypatch):
    from starling.cli.experiments import _auth_hint

    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    assert "RAY_AUTH_MODE=token" in _auth_hint("Failed to connect to Ray cluster at 10.0.0.5:6379")
    assert _auth_hint("nothing answers at 10.0.0.5:6379 (Connection refused)") == ""  # no cluster at all
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    assert _auth_hint("Failed to connect to Ray cluster at 10.0.0.5:6379") == ""  # the mode is set: not that


def test_wilson_interval_matches_hand_computed_values():
    from starling.experiments.results import wilson_interval

    low, high = wilson_interval(3, 10)
    assert low == pytest.approx(0.1078, abs=1e-4) and high == pytest.approx(0.6032, abs=1e-4)
    assert wilson_interval(0, 5)[0] == 0.0 and wilson_interval(5, 5)[1] == 1.0
    assert wilson_interval(0, 0) == (None, None)


def test_runs_end_at_the_scenarios_stop_and_the_summary_gives_outcome_rates(tmp_path):
    import copy

    import tomli_w

    from starling.config import read_scenario_data

    data, _ = read_scenario_data("lagoon")
    data = copy.deepcopy(data)
    data["stop"] = [{"outcome": "short", "when": "time", "at": 0.2}]
    (tmp_path / "scene.toml").write_text(tomli_w.dumps(data))
    sweep_file = tmp_path / "s.toml"
    sweep_file.write_text('scenario = "scene.toml"\nsteps = 400\nreplicates = 2\n[parameters]\n'
                          '"species.fish.count" = [50]\n[[metrics]]\nname = "count"\nspecies = "fish"\n')
    from starling.experiments.sweep_file import load_sweep

    output, summary = run_sweep_file(load_sweep(sweep_file), LocalBackend(1), tmp_path / "out")
    assert [r["outcome"] for r in output.rows] == ["short", "short"]
    assert all(r["stopped_at_s"] == pytest.approx(0.2, abs=0.034) for r in output.rows)
    assert summary[0]["outcome.short.rate"] == 1.0
    assert summary[0]["outcome.short.ci_low"] == pytest.approx(0.3424, abs=1e-4)
    runs = pl.read_parquet(tmp_path / "out" / "runs.parquet")
    assert runs["outcome"].to_list() == ["short", "short"]


def test_only_the_console_scripts_own_process_forks_its_sweep_workers(monkeypatch):
    import starling.cli as cli
    from starling.cli import experiments as commands

    monkeypatch.setattr(commands, "OWN_PROCESS", False)
    monkeypatch.setattr(LocalBackend, "fork_from_driver", False)
    commands._fork_workers_here()
    assert LocalBackend.fork_from_driver is False          # CliRunner in a test: the fork server
    monkeypatch.setattr(cli, "app", lambda: commands._fork_workers_here())
    cli.main()                                              # the `starling` script
    assert commands.OWN_PROCESS is True and LocalBackend.fork_from_driver is True


def test_a_pool_that_breaks_while_a_run_is_handed_to_it_loses_no_run(tmp_path, monkeypatch):
    """The race behind a killed worker: the pool may notice it is broken just as the next run is
    submitted, and refuse it. That run must stay queued for the fresh pool, not vanish."""
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    from starling.experiments import backends

    submitted = []

    class BreaksOnThirdSubmission(ProcessPoolExecutor):
        def submit(self, fn, *args, **kwargs):
            submitted.append(args[0]["id"])
            if len(submitted) == 3:
                raise BrokenProcessPool("broken while handing out a run (simulated)")
            return super().submit(fn, *args, **kwargs)

    monkeypatch.setattr(backends, "ProcessPoolExecutor", BreaksOnThirdSubmission)
    output, _ = run_sweep_file(check_sweep(TINY), LocalBackend(2), tmp_path / "out")
    assert len(submitted) > 4  # the refused run was submitted again
    assert sorted(r["index"] for r in output.rows) == [0, 1, 2, 3]
    assert all(r["status"] == "ok" for r in output.rows)
