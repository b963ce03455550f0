"""The command line: JSON output, validation exit codes, errors without tracebacks."""
import json

import pytest
from typer.testing import CliRunner

from starling.cli import app

runner = CliRunner()


def test_run_json_prints_the_documented_object():
    result = runner.invoke(app, ["run", "flock", "--steps", "20", "--json", "--seed", "3"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout.strip().splitlines()[-1])
    assert set(data) == {"scenario", "steps", "seed", "wall_s", "step_ms", "species", "health", "backend"}
    assert data["backend"] == "cpu"
    assert data["scenario"] == "flock" and data["steps"] == 20 and data["seed"] == 3
    assert set(data["step_ms"]) == {"median", "p95"}
    assert set(data["species"]["bird"]) == {"alive", "mean_speed", "polarization", "milling", "groups",
                                            "largest_group_fraction"}
    assert data["health"]["nan"] == 0


def test_run_json_reports_the_collective_metrics_and_their_average_over_the_last_steps():
    import numpy as np

    import starling

    result = runner.invoke(app, ["run", "flock", "--steps", "12", "--average", "5", "--json", "--seed", "2",
                                 "--set", "n=300"])
    assert result.exit_code == 0, result.output
    bird = json.loads(result.stdout.strip().splitlines()[-1])["species"]["bird"]
    # the same run in process: the metrics after each of the last 5 steps, averaged here
    sim = starling.load_scenario("flock", seed=2, overrides=["n=300"], record_debug=False)
    seen = []
    for i in range(12):
        sim.step()
        if i >= 7:
            seen.append(sim.metrics()["bird"])
    last = seen[-1]
    assert bird["polarization"] == pytest.approx(last["polarization"], abs=1e-4)
    assert bird["milling"] == pytest.approx(last["milling"], abs=1e-4)
    assert bird["groups"] == last["groups"] and bird["largest_group_fraction"] == pytest.approx(last["largest_group"], abs=1e-4)
    average = bird["average"]
    assert average["steps"] == 5
    for key, name in (("polarization", "polarization"), ("milling", "milling"), ("groups", "groups"),
                      ("largest_group_fraction", "largest_group")):
        assert average[key] == pytest.approx(np.mean([m[name] for m in seen]), abs=1e-4), key


def test_groups_are_linked_within_the_scenarios_group_distance():
    import starling

    sim = starling.load_scenario("flock", overrides=["n=200", "group_distance=0.5"], record_debug=False)
    apart = sim.metrics()["bird"]  # spawned at least 2 m apart: nobody within 0.5 m of anybody
    assert apart["groups"] == 200 and apart["largest_group"] == pytest.approx(1 / 200)
    sim.set("group_distance=1000")
    assert sim.metrics()["bird"]["groups"] == 1


def test_average_longer_than_the_run_is_refused():
    result = runner.invoke(app, ["run", "flock", "--steps", "3", "--average", "10"])
    assert result.exit_code == 2 and "--average: 10 steps is more than the 3 steps run" in result.output


def test_run_accepts_overrides():
    result = runner.invoke(app, ["run", "flock", "--steps", "2", "--json", "--set", "species.bird.count=50"])
    assert result.exit_code == 0
    assert json.loads(result.stdout.strip().splitlines()[-1])["species"]["bird"]["alive"] == 50


@pytest.mark.parametrize("args, message", [
    (["run", "flock", "--set", "species.bird.count=-1"], "species.bird.count: Input should be greater than or equal to 0"),
    (["run", "flock", "--set", "species.0.groups.0.query.max_distance=-5"], "species.bird.groups.0.query.max_distance: Input should be greater than 0"),
    (["run", "flock", "--set", "species.0.behaviors.0.kind=teleport"], "species.bird.behaviors.0.kind: unknown kind 'teleport'"),
    (["run", "no-such-scenario"], "no scenario file or built-in named 'no-such-scenario'"),
    (["run", "flock", "--set", "oops"], "is not path=value"),
])
def test_bad_input_is_one_clear_line_and_exit_2(args, message):
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


def test_validate_exit_codes(tmp_path):
    good = runner.invoke(app, ["validate", "flock"])
    assert good.exit_code == 0 and "valid" in good.output
    bad = tmp_path / "bad.toml"
    bad.write_text('[[species]]\nname = "x"\ncount = "lots"\n[[species.behaviors]]\nkind = "nope"\n')
    result = runner.invoke(app, ["validate", str(bad)])
    assert result.exit_code == 2
    lines = [l for l in result.output.splitlines() if l.strip().startswith("species")]
    assert lines == [
        "species.x.count: Input should be a valid integer, unable to parse string as an integer",
        "species.x.behaviors.0.kind: unknown kind 'nope'; expected one of 'align_up', 'follow_path', 'go_forward', 'homing', 'keep_height', 'multi_homing', 'wandering'",
    ] or len(lines) == 2


def test_validate_warns_when_a_step_cannot_keep_real_time(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a short path: the report wraps at 80 columns wherever the path ends
    heavy = tmp_path / "heavy.toml"
    heavy.write_text('dt = 0.02\n[[species]]\nname = "gnu"\ncount = 100000\n'
                     '[[species.groups]]\nquery = { max_distance = 4.0, k = 8 }\n'
                     '[[species.groups.behaviors]]\nkind = "cohesion"\n')
    result = runner.invoke(app, ["validate", heavy.name])
    assert result.exit_code == 0 and "heavy.toml: valid (1 species, 100000 animals)" in " ".join(result.output.split())
    warning = [line for line in result.output.splitlines() if "warning" in line]
    assert len(warning) == 1 and "× its dt of 20.0 ms" in warning[0] and "(mostly gnu" in warning[0]
    light = tmp_path / "light.toml"
    light.write_text(heavy.read_text().replace("count = 100000", "count = 500"))
    result = runner.invoke(app, ["validate", light.name])
    assert result.exit_code == 0 and "valid" in result.output and "warning" not in result.output


def test_schema_and_scenarios_list():
    schema = runner.invoke(app, ["schema"])
    assert schema.exit_code == 0 and json.loads(schema.stdout)["title"] == "ScenarioConfig"
    listing = runner.invoke(app, ["scenarios"])
    assert listing.exit_code == 0 and "flock" in listing.output


def test_bad_option_values_are_usage_errors_not_tracebacks():
    result = runner.invoke(app, ["run", "flock", "--steps", "many"])
    assert result.exit_code == 2 and "Traceback" not in result.output


def test_bench_scenario_reports_the_step_its_kernel_share_phases_and_a_live_edit():
    result = runner.invoke(app, ["bench", "--scenario", "lagoon", "--steps", "5", "--json"])
    assert result.exit_code == 0, result.output
    r = json.loads(result.stdout.strip().splitlines()[-1])
    assert r["scenario"] == "lagoon" and r["steps"] == 5 and r["step_ms"]["samples"] == 5
    assert 0.0 < r["kernel_share"] < 1.0
    # the steering and each ecology system (one per job since the ecology split) are timed apart
    assert "steering" in r["phase_ms"] and "feeding.after_move" in r["phase_ms"] and "brains.before_behaviors" in r["phase_ms"]
    assert r["reconfigure_ms"]["species"] == "fish" and r["reconfigure_ms"]["median"] > 0


def test_kernel_clock_counts_only_outermost_kernel_calls():
    from numba import njit

    from starling.bench_scenario import kernel_clock

    @njit
    def inner(x):
        return x + 1

    @njit
    def outer(x):
        return inner(x) * 2

    outer(1)
    with kernel_clock() as clock:
        assert outer(3) == 8 and inner(1) == 2
    assert clock.calls == 2 and clock.total > 0
    with kernel_clock() as clock:
        pass
    assert clock.calls == 0


def test_kernel_clock_times_a_call_sites_compiled_call_once_and_not_the_site_around_it():
    import time

    from numba import njit

    from starling import kernel_calls
    from starling.bench_scenario import kernel_clock

    @njit
    def twice(x):
        return x * 2

    site = kernel_calls.CallSite()
    assert site(twice, 2, 1) == 2  # typed through the dispatcher, then called at its entry point
    seen = []
    with kernel_clock() as clock:
        assert site(twice, 2, 4) == 8 and twice(5) == 10
        # the site's own Python is outside the clock: a slow observer around the clock's shows it
        inner = kernel_calls._observer

        def slow(entry, args):
            time.sleep(0.05)
            seen.append(entry)
            return inner(entry, args)

        with kernel_calls.observing(slow):
            assert site(twice, 2, 3) == 6
    assert clock.calls == 3 and clock.dispatched == 1
    assert len(seen) == 1 and clock.total < 0.05


def test_the_bench_takes_the_clocks_own_cost_off_the_step_it_divides_by(monkeypatch):
    from starling import bench_scenario

    # costs of some microseconds: taken off the pass, they move the share by more than the report's
    # rounding to 4 decimals even when the pass is slow (0.1 µs a call did not, on a loaded machine),
    # and leave a fast pass (about 6 calls in 0.3 ms a step) positive
    monkeypatch.setattr(bench_scenario, "_clock_costs", lambda: (5e-6, 1e-5, 0.0))
    r = bench_scenario.bench_named_scenario("vicsek", steps=4, warmup=2)
    # the timed pass less 5 µs a site call and 10 µs a dispatched call is shorter than the pass
    assert r["kernel_share"] > r["kernel_share_of_profiled"]
    assert r["clock_cost_us"] == {"site_call": 5.0, "dispatched_call": 10.0, "clock_read": 0.0}


def test_the_fish_tank_is_listed():
    listing = runner.invoke(app, ["scenarios"])
    assert listing.exit_code == 0 and "fish_tank" in listing.output


@pytest.mark.parametrize("query", ["brute", "grid", "all_pairs"])
def test_bench_scenario_sizes_times_each_size_with_the_chosen_query(query):
    result = runner.invoke(app, ["bench", "--scenario", "fish_tank", "--query", query, "--sizes", "40,80",
                                 "--budget", "0.1", "--steps", "8", "--json"])
    assert result.exit_code == 0, result.output
    r = json.loads(result.stdout.strip().splitlines()[-1])
    assert r["scenario"] == "fish_tank" and r["species"] == "fish" and r["query"] == query
    assert [x["n"] for x in r["results"]] == [40, 80]
    for x in r["results"]:
        assert x["animals"] == {"fish": x["n"]} and x["pairs"] == x["n"] ** 2
        assert 5 <= x["step_ms"]["samples"] <= 8 and x["step_ms"]["median"] > 0
        assert x["overflow"] == 0
    table = runner.invoke(app, ["bench", "--scenario", "fish_tank", "--query", query, "--sizes", "40",
                                "--budget", "0.1", "--steps", "5"])
    assert table.exit_code == 0, table.output
    assert "step median ms" in table.output and f"query {query}" in table.output


@pytest.mark.parametrize("args,named", [
    (["--query", "quadtree", "--sizes", "40"], "--query"),
    (["--sizes", "forty"], "--sizes"),
    (["--sizes", "0,40"], "--sizes"),
])
def test_bench_scenario_rejects_a_bad_argument_by_name(args, named):
    result = runner.invoke(app, ["bench", "--scenario", "fish_tank", *args])
    assert result.exit_code == 2
    assert named in result.output and "Traceback" not in result.output


def test_bench_scenario_with_a_query_but_no_sizes_profiles_the_scenario_with_that_query():
    result = runner.invoke(app, ["bench", "--scenario", "fish_tank", "--query", "brute", "--steps", "3",
                                 "--set", "species.fish.count=60", "--json"])
    assert result.exit_code == 0, result.output
    r = json.loads(result.stdout.strip().splitlines()[-1])
    assert r["scenario"] == "fish_tank" and r["animals"] == {"fish": 60} and r["step_ms"]["samples"] == 3


def test_dt_is_bounded_by_the_scenarios_own_max_dt():
    result = runner.invoke(app, ["run", "flock", "--steps", "1", "--dt", "0.6"])
    assert result.exit_code == 2 and "dt: dt = 0.6 s exceeds this scenario's max_dt = 0.5 s" in result.output
    result = runner.invoke(app, ["run", "vicsek", "--steps", "2", "--dt", "1", "--json"])  # max_dt = 1
    assert result.exit_code == 0, result.output


def test_the_stress_test_keeps_the_big_herds_density_on_the_ground():
    from starling.cli.bench import herd_spawn

    assert herd_spawn(10) == ("species.zebra.spawn.size.0=30", "species.zebra.spawn.size.2=30")    # never smaller
    assert herd_spawn(120) == ("species.zebra.spawn.size.0=60", "species.zebra.spawn.size.2=60")   # 30 · √4
    assert herd_spawn(10_000)[0] == "species.zebra.spawn.size.0=380"                               # the ground's limit


def test_bench_zebras_is_the_savannah_stress_test_beside_the_thesis_table():
    result = runner.invoke(app, ["bench", "--scenario", "savannah", "--zebras", "10,60,100", "--budget", "0.1",
                                 "--steps", "5", "--json"])
    assert result.exit_code == 0, result.output
    r = json.loads(result.stdout.strip().splitlines()[-1])
    assert [x["n"] for x in r["results"]] == [10, 60, 100]
    for x in r["results"]:
        assert x["animals"]["zebra"] == x["n"] and x["animals"]["lion"] == 0  # the zebras alone
        assert x["steps_per_s"] == pytest.approx(1e3 / x["step_ms"]["median"])
    assert [x["thesis_fps"] for x in r["results"]] == [185, 17, None]
    for args in (["--zebras", "10"], ["--scenario", "flock", "--zebras", "10"],
                 ["--scenario", "savannah", "--zebras", "10", "--sizes", "10"]):
        refused = runner.invoke(app, ["bench", *args])
        assert refused.exit_code == 2 and "--zebras" in refused.output and "Traceback" not in refused.output


def test_bench_splits_the_step_into_phases_and_writes_a_readable_profile(tmp_path):
    path = tmp_path / "profile.md"
    result = runner.invoke(app, ["bench", "--sizes", "300,600", "--budget", "0.2", "--json", "--profile", str(path)])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["threads"] >= 1
    for r in report["results"]:
        phases = r["phases_ms"]
        assert list(phases) == ["query", "pair_geometry", "behaviours", "merger", "mover", "bookkeeping"]
        # each kernel's phase is timed on its own: a positive time, never a difference of two
        assert all(phases[name] > 0 for name in ("query", "pair_geometry", "behaviours", "merger", "mover")), phases
        kernels = r["profile_ms"]
        # the flocking trio runs as one fused kernel (starling.steering.registry.fused), timed as one
        assert phases["behaviours"] == pytest.approx(kernels["cohesion+alignment+separation"], abs=2e-4)
        # the phases add up to the step: bookkeeping is what the kernels leave
        assert sum(phases.values()) == pytest.approx(r["step_ms"]["median"], abs=5e-4)
        assert r["ns_per_animal"] == pytest.approx(r["step_ms"]["median"] * 1e6 / r["n"], rel=1e-3)
        assert r["threads"] == 1  # below starling.parallel's threshold every kernel runs serially
    text = path.read_text()
    assert "## 300 animals" in text and "## 600 animals" in text
    assert "| bookkeeping |" in text and "ns / animal" in text
    bad = runner.invoke(app, ["bench", "--sizes", "300", "--budget", "0.1", "--profile", str(tmp_path / "no" / "x.md")])
    assert bad.exit_code == 2 and "--profile: cannot write" in bad.output


def test_bench_times_the_pair_geometry_on_its_own_not_as_a_difference(monkeypatch):
    """A slow query must not push the pair geometry's figure below zero: it is the geometry
    kernel's own time (it used to be the step's query-and-geometry less the query's time)."""
    import time

    from starling import bench
    from starling.steering.queries import neighbors
    from starling.steering.queries.neighbors import find_neighbors

    def slow_query(*args, **kwargs):
        time.sleep(0.002)
        return find_neighbors(*args, **kwargs)

    monkeypatch.setattr(bench, "find_neighbors", slow_query)
    monkeypatch.setattr(neighbors, "NEIGHBOR_LISTS", False)  # the query timed on its own, through find_neighbors
    r = bench.bench_size(300, repeats=6)
    assert r["phases_ms"]["query"] >= 2.0
    assert 0 < r["phases_ms"]["pair_geometry"] < 1.0, r["phases_ms"]


def test_bench_times_a_query_answered_from_neighbour_lists_in_the_steps_themselves(monkeypatch):
    """Lists kept over steps are checked against the state each step leaves, so timing the query
    again on that state would never rebuild them: the bench times the step's own calls, and says
    how often the lists answered and were rebuilt."""
    from starling import bench
    from starling.steering.queries import verlet

    monkeypatch.setattr(verlet, "FIRST_GRID_CALLS", 0)
    r = bench.bench_size(1000, repeats=40)
    lists = r["neighbor_lists"]
    assert lists["answered_by_lists"] == 1.0
    assert lists["steps_per_rebuild"] is None or lists["steps_per_rebuild"] >= 2
    assert r["phases_ms"]["query"] == lists["query_median_ms"] > 0
    assert lists["query_mean_ms"] >= lists["query_median_ms"] * 0.5
    assert r["step_ms"]["mean"] > 0 and r["step_ms"]["p95"] >= r["step_ms"]["median"]


def test_bench_times_every_move_from_the_state_the_run_left(monkeypatch):
    """The mover changes what it reads: timed again and again on its own output toward one fixed
    desire, the birds would soon fly straight and its turns cost less than in a step. Each timed
    move starts from the state the run left."""
    import numpy as np

    from starling import bench
    from starling.motion.movers import Mover

    seen = []
    move = Mover.move

    def recording(self, position, velocity, forward, up, *args, **kwargs):
        seen.append(np.concatenate([position, velocity, forward, up], axis=1).copy())
        return move(self, position, velocity, forward, up, *args, **kwargs)

    monkeypatch.setattr(Mover, "move", recording)
    bench.bench_size(300, repeats=6)
    timed = seen[-3:]  # the stage's timed moves (at least three); the steps' moves come before
    assert len(seen) > 3 and not np.array_equal(seen[0], timed[0])
    for state in timed[1:]:
        np.testing.assert_array_equal(state, timed[0])


def test_threads_from_starts_the_threads_sooner_and_changes_no_result(monkeypatch):
    """``--threads-from`` lets a run that has the machine to itself use threads at a few hundred
    animals; every kernel gives the same numbers threaded, so the run's summary is the same."""
    import numba

    from starling import parallel

    monkeypatch.setattr(parallel, "_threads_from", parallel.threads_from())  # restored after the test

    def summary(*extra):
        result = runner.invoke(app, ["run", "flock", "--steps", "30", "--json", "--seed", "4",
                                     "--set", "species.bird.count=300", *extra])
        assert result.exit_code == 0, result.output
        data = json.loads(result.stdout.strip().splitlines()[-1])
        return data["species"], data["health"]

    serial = summary()
    assert parallel.threads_from() == parallel.PARALLEL_MIN_ANIMALS
    threaded = summary("--threads-from", "0")
    assert parallel.threads_from() == 0
    assert threaded == serial

    bench = runner.invoke(app, ["bench", "--sizes", "400", "--budget", "0.2", "--json", "--threads-from", "100"])
    assert bench.exit_code == 0, bench.output
    report = json.loads(bench.stdout)
    assert report["threads_from"] == 100
    assert report["results"][0]["threads"] == numba.get_num_threads()

    bad = runner.invoke(app, ["bench", "--sizes", "400", "--threads-from", "-1"])
    assert bad.exit_code == 2 and "--threads-from" in bad.output and "Traceback" not in bad.output


@pytest.mark.parametrize("value", [-1, 2.5, True, "100"])
def test_set_threads_from_refuses_what_is_not_a_count_of_animals(value):
    from starling import parallel

    with pytest.raises(ValueError, match="threads_from must be a whole number"):
        parallel.set_threads_from(value)
    assert parallel.threads_from() == parallel.PARALLEL_MIN_ANIMALS
