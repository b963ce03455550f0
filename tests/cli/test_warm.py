"""`starling warm`: compiles a scenario's kernels into the on-disk cache; a later process finds them there."""
import os
import signal
import subprocess
import sys
import time

from typer.testing import CliRunner

from starling.cli import app

runner = CliRunner()


def test_warm_fills_the_cache_and_a_second_process_finds_it_warm():
    first = runner.invoke(app, ["warm", "flock"])
    assert first.exit_code == 0, first.output
    assert "flock" in first.output and "Traceback" not in first.output
    # a new process has no kernel in memory: every one must come from the disk cache the first call filled
    second = subprocess.run([sys.executable, "-m", "starling", "warm", "flock"], capture_output=True, text=True,
                            timeout=600, env=dict(os.environ, COLUMNS="200"))
    assert second.returncode == 0, second.stdout + second.stderr
    assert "kernel cache already warm: flock" in second.stderr, second.stderr
    assert "compiled" not in second.stderr


def test_warm_an_unknown_scenario_is_one_clear_line_and_exit_2():
    result = runner.invoke(app, ["warm", "flock", "no-such-scene"])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert lines[0].startswith("no scenario file or built-in named 'no-such-scene'"), lines[0]
    assert "Traceback" not in result.output
    assert "kernel cache" not in result.output  # the names are checked before anything is warmed


def test_a_warmed_scene_compiles_nothing_once_its_neighbour_lists_answer(tmp_path):
    """The warm-up steps far enough for a school's neighbour lists (which answer after the grid's
    first calls) to be used, so a later run does not stall compiling their kernels at its fourth
    step. An empty cache of its own, so that no other test's compilations stand in for the warm-up's."""
    env = dict(os.environ, STARLING_CACHE_DIR=str(tmp_path / "kernels"), COLUMNS="200")
    first = subprocess.run([sys.executable, "-m", "starling", "warm", "fish_tank"], capture_output=True, text=True,
                           timeout=900, env=env)
    assert first.returncode == 0, first.stdout + first.stderr
    script = (
        "from starling.kernel_cache import watching\n"
        "from starling.simulation import load_scenario\n"
        "sim = load_scenario('fish_tank')\n"
        "with watching(lambda name: print('compiled', name)):\n"
        "    sim.step(40)\n"
        "lists = sim.pipelines[0].groups[0].neighbors.lists\n"
        "print('answered by lists', lists.calls - lists.grid_calls)\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "compiled" not in run.stdout, run.stdout
    answered = int(run.stdout.split("answered by lists")[1])
    assert answered > 0


def _scene(path, name, behaviour):
    path.write_text(f'[[species]]\nname = "{name}"\ncount = 30\n[[species.behaviors]]\nkind = "{behaviour}"\n')
    return str(path)


def test_warm_side_by_side_fills_one_cache_that_a_later_process_finds_warm(tmp_path):
    """Two worker processes compile two scenarios into one empty cache at once; a new process then
    compiles nothing for either (every kernel a worker compiled reached the disk, none was lost)."""
    env = dict(os.environ, STARLING_CACHE_DIR=str(tmp_path / "kernels"), COLUMNS="200")
    scenes = [_scene(tmp_path / "drifters.toml", "drifter", "wandering"),
              _scene(tmp_path / "homers.toml", "homer", "align_up")]
    first = subprocess.run([sys.executable, "-m", "starling", "warm", "--jobs", "2", *scenes], capture_output=True,
                           text=True, timeout=900, env=env)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "Traceback" not in first.stderr
    for scene in scenes:
        assert f"{scene}: compiled" in first.stderr, first.stderr
    assert "2 processes" in first.stderr, first.stderr
    second = subprocess.run([sys.executable, "-m", "starling", "warm", "--jobs", "1", *scenes], capture_output=True,
                            text=True, timeout=600, env=env)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "kernel cache already warm" in second.stderr and "compiled" not in second.stderr, second.stderr


def test_a_scenario_that_fails_in_a_worker_is_one_clear_error_and_exit_2(tmp_path):
    """A file that reads as TOML passes the name check; its settings are only validated when a worker
    builds it, and that worker's error reaches the command as the usual one report, not a traceback."""
    good = _scene(tmp_path / "good.toml", "drifter", "wandering")
    bad = tmp_path / "bad.toml"
    bad.write_text('[[species]]\nname = "drifter"\ncount = -1\n')
    result = runner.invoke(app, ["warm", "--jobs", "2", good, str(bad)])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert "species.drifter.count" in result.output and "greater than or equal to 0" in result.output, result.output


def test_warm_rejects_a_jobs_count_below_one():
    result = runner.invoke(app, ["warm", "--jobs", "0", "flock"])
    assert result.exit_code == 2
    assert "--jobs" in result.output and "Traceback" not in result.output


def test_the_largest_scenario_starts_first_and_the_rest_follow_smallest_first():
    from starling.config import read_scenario_data, scenario_names
    from starling.warm import largest_first_then_smallest

    names = scenario_names()
    order = largest_first_then_smallest(names)
    size = {name: len(repr(read_scenario_data(name)[0])) for name in names}
    assert sorted(order) == sorted(names)
    assert size[order[0]] == max(size.values())
    assert [size[n] for n in order[1:]] == sorted(size[n] for n in order[1:])


def test_the_default_is_a_process_per_core_up_to_four(monkeypatch):
    from starling import warm

    for cores, expected in ((1, 1), (2, 2), (3, 3), (16, 4)):
        monkeypatch.setattr(warm.os, "sched_getaffinity", lambda pid, n=cores: set(range(n)))
        assert warm.default_jobs() == expected
        assert warm.processes(None, 11) == expected  # asked for nothing: the default
    assert warm.processes(8, 3) == 3 and warm.processes(1, 11) == 1  # never more than the scenarios


def test_ctrl_c_stops_the_workers_too_and_says_what_was_kept(tmp_path):
    """Ctrl-C reaches the whole process group. The workers leave it to the command, which stops
    them mid-compile (an executor would have waited for them, forever once they were interrupted
    too) and ends with one line and exit 130. The signal goes once the first kernel reached the
    cache, so the workers are compiling then."""
    cache = tmp_path / "kernels"
    env = dict(os.environ, STARLING_CACHE_DIR=str(cache), COLUMNS="200")
    scenes = [_scene(tmp_path / "drifters.toml", "drifter", "wandering"),
              _scene(tmp_path / "homers.toml", "homer", "align_up")]
    proc = subprocess.Popen([sys.executable, "-m", "starling", "warm", "--jobs", "2", *scenes], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 300
    while not any(cache.rglob("*.nbi")) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, "warmed before it could be interrupted"
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "interrupted:" in err and "Traceback" not in err, err
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # every process of the group is gone (the workers included)
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        raise AssertionError("a worker outlived the command")


def test_helper_processes_start_with_ctrl_c_already_ignored():
    """A process started while a command sets up its helper processes inherits an ignored
    SIGINT, and Python leaves it so: a Ctrl-C while a worker still imports Starling cannot
    print that worker's traceback. Outside, and afterwards, Ctrl-C is the command's again."""
    from starling.processes import ctrl_c_ignored_by_new_processes

    probe = [sys.executable, "-c", "import signal; print(signal.getsignal(signal.SIGINT) == signal.SIG_IGN)"]
    before = signal.getsignal(signal.SIGINT)
    with ctrl_c_ignored_by_new_processes():
        inside = subprocess.run(probe, capture_output=True, text=True, check=True).stdout
    outside = subprocess.run(probe, capture_output=True, text=True, check=True).stdout
    assert inside.strip() == "True"
    assert outside.strip() == "False"
    assert signal.getsignal(signal.SIGINT) is before
