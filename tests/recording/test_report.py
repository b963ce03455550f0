"""`summarize` and `write_report` on a real recording: sharks hunting a school of fish (lagoon).

The numbers of the summary are checked against values computed another way from the
recording (frames instead of arrays, the journal instead of the counters, the metric
functions on the recorded positions) and against the simulation that made it.
"""
from collections import Counter

import numpy as np
import pytest
from PIL import Image

from starling.metrics import nearest_neighbor_stats, occupancy_series, polarization, speed_stats
from starling.recording import open_recording, record, writer
from starling.recording.report import VIEWS, NoData, _broken_at_seams, plot_tracks, write_report
from starling.recording.summary import (alive_counts, first_catch_time, frames_seen, occupancy_over_time,
                                        series_summary, summarize)
from starling.simulation import load_scenario

STEPS = 300  # 10 s: the sharks' first catches fall at 7.7 s and 9.3 s with seed 3


@pytest.fixture(scope="module")
def lagoon(tmp_path_factory):
    sim = load_scenario("lagoon", record_debug=False)
    with pytest.MonkeyPatch.context() as mp:  # blocks of 16 frames: reading block by block is exercised
        mp.setattr(writer, "MAX_BLOCK_FRAMES", 16)
        path = record(sim, tmp_path_factory.mktemp("rec") / "lagoon.zarr", STEPS, every=5, metrics_every=10,
                      scenario_name="lagoon")
    rec = open_recording(path)
    assert rec.block == 16 and rec.n_frames % 16 != 0
    return sim, rec


@pytest.fixture(scope="module")
def summary(lagoon):
    return summarize(lagoon[1])


def test_the_run_is_described(lagoon, summary):
    sim, rec = lagoon
    assert (summary["scenario"], summary["seed"], summary["steps"], summary["frames"]) == ("lagoon", 3, STEPS, 61)
    assert summary["dt"] == pytest.approx(sim.scenario.dt)
    assert summary["duration_s"] == pytest.approx(STEPS * sim.scenario.dt)
    assert summary["complete"] is True and summary["file"] == str(rec.path)
    assert summary["events"] == dict(Counter(e["kind"] for e in rec.events))


def test_population_counts_frame_by_frame(lagoon, summary):
    sim, rec = lagoon
    for name in rec.species:
        counts = [rec.frame(i)[name].n for i in range(rec.n_frames)]
        assert summary["species"][name]["population"] == {
            "first": counts[0], "final": counts[-1], "min": min(counts), "max": max(counts)}
        assert counts[-1] == sim.population(name).n
    assert summary["species"]["fish"]["population"]["final"] < summary["species"]["fish"]["population"]["first"]
    assert summary["entities"]["player"]["final"] == 1


def test_deaths_catches_and_bites_agree_between_journal_counters_and_simulation(lagoon, summary):
    sim, rec = lagoon
    fish, shark = summary["species"]["fish"], summary["species"]["shark"]
    caught = [e for e in rec.events if e["kind"] == "death" and e["species"] == "fish"]
    assert caught and all(e["detail"]["cause"] == "caught" for e in caught)
    assert fish["deaths_by_cause"] == {"caught": len(caught)}
    assert fish["counters"]["deaths"] == len(caught) == sim.species_summary("fish")["deaths"]
    assert shark["predation"]["catches"] == len(caught) == sim.species_summary("shark")["caught"]
    assert shark["predation"]["bites"] == sim.species_summary("shark")["eaten"]
    # the first catch is the first fish death, to the step (the counters are sampled every 10 steps)
    assert shark["predation"]["time_to_first_catch"] == pytest.approx(min(e["time"] for e in caught))
    assert fish["predation"]["time_to_first_catch"] is None and fish["predation"]["catches"] == 0
    assert shark["deaths_by_cause"] == {}


def test_final_metrics_equal_the_metric_functions_on_the_last_frame(lagoon, summary):
    _, rec = lagoon
    assert rec.steps[-1] == rec.metrics["fish"]["step"][-1] == STEPS  # the last frame is the last sample
    frame = rec.frame(rec.n_frames - 1)["fish"]
    final = {k: v["final"] for k, v in summary["species"]["fish"]["metrics"].items()}
    assert final["count"] == frame.n
    assert final["polarization"] == pytest.approx(polarization(frame.velocity), rel=1e-6)
    nn = nearest_neighbor_stats(frame.position)
    assert final["nn_distance"] == pytest.approx(nn["mean"], rel=1e-5)
    assert final["nn_median"] == pytest.approx(nn["median"], rel=1e-5)
    assert final["nn_p95"] == pytest.approx(nn["p95"], rel=1e-5)
    speed = speed_stats(frame.velocity)
    assert final["speed_max"] == pytest.approx(speed["max"], rel=1e-6)
    assert final["speed_sd"] == pytest.approx(speed["sd"], rel=1e-5)
    mean = summary["species"]["fish"]["metrics"]["polarization"]["mean"]
    assert mean == pytest.approx(float(np.mean(rec.metrics["fish"]["polarization"])))


def test_state_occupancy_at_the_end_from_the_state_array(lagoon, summary):
    _, rec = lagoon
    for name in rec.species:
        names = rec.state_names(name)
        state = rec.array(name, "state")[-1][rec.array(name, "alive")[-1]]
        expected = {n: np.count_nonzero(state == i) / state.size for i, n in enumerate(names)}
        assert summary["species"][name]["occupancy"] == pytest.approx(expected)
        assert sum(expected.values()) == pytest.approx(1.0)


def test_block_by_block_reads_equal_the_whole_arrays(lagoon):
    _, rec = lagoon
    for name in rec.populations:
        np.testing.assert_array_equal(alive_counts(rec, name), rec.array(name, "alive").sum(axis=1))
    uid = rec.array("fish", "uid")
    ids, frames = np.unique(uid[uid >= 0], return_counts=True)
    got_ids, got_frames = frames_seen(rec, "fish")
    np.testing.assert_array_equal(got_ids, ids)
    np.testing.assert_array_equal(got_frames, frames)
    expected = occupancy_series(rec.array("fish", "state"), rec.array("fish", "alive"), 3)
    np.testing.assert_allclose(occupancy_over_time(rec, "fish"), expected)
    assert expected.shape == (rec.n_frames, 3)


def test_series_summary_by_hand():
    assert series_summary([1.0, np.nan, 3.0, 5.0]) == {"final": 5.0, "mean": 3.0}
    assert series_summary([2.0, np.nan]) == {"final": None, "mean": 2.0}
    assert series_summary([np.nan]) == {"final": None, "mean": None}
    assert series_summary([]) == {"final": None, "mean": None}


def test_first_catch_time_uses_the_journal_inside_the_counters_interval():
    times, caught = [1.0, 2.0, 3.0], [0, 0, 2]
    death = {"kind": "death", "detail": {"cause": "caught"}}
    events = [{**death, "time": 1.5}, {**death, "time": 2.4}, {**death, "time": 2.8},
              {"kind": "death", "detail": {"cause": "shot"}, "time": 2.1}]
    # 1.5 is before the interval (2, 3] in which the counter rose: another species' catch
    assert first_catch_time(times, caught, events) == 2.4
    assert first_catch_time(times, caught, []) == 3.0
    assert first_catch_time(times, [0, 0, 0], events) is None


@pytest.fixture(scope="module")
def report(lagoon, tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    return out, write_report(lagoon[1], out)


@pytest.mark.parametrize("stem", [v[0] for v in VIEWS])
def test_every_plot_is_a_non_empty_image(report, stem):
    out, views = report
    assert views[stem] is None
    with Image.open(out / f"{stem}.png") as image:
        assert image.format == "PNG" and image.width > 300 and image.height > 200
        # not a blank canvas: a drawn plot has many colours
        assert len(image.convert("RGB").getcolors(maxcolors=1 << 20)) > 20
    assert f"src='{stem}.png'" in (out / "index.html").read_text()


def test_the_page_lists_the_run_and_the_summary(report, summary):
    page = (report[0] / "index.html").read_text()
    for text in ("<h1>Starling report: lagoon</h1>", "<th>seed</th><td>3</td>", f"<th>steps</th><td>{STEPS}</td>",
                 "<th>dt</th><td>0.03333 s</td>", "caught", "polarization", "nn_median", "density", "afraid"):
        assert text in page
    catches = summary["species"]["shark"]["predation"]["catches"]
    first = summary["species"]["shark"]["predation"]["time_to_first_catch"]
    assert (f"<td>shark</td><td>3 → 3</td><td>3–3</td><td>none</td><td>{catches}</td><td>{catches}</td>"
            f"<td>{first:.4g} s</td><td>chill") in page


def test_views_without_data_say_so_instead_of_failing(tmp_path):
    sim = load_scenario("flock", record_debug=False, overrides=["species.bird.count=60"])
    rec = open_recording(record(sim, tmp_path / "flock.zarr", 4, every=2, metrics_every=0))
    views = write_report(rec, tmp_path / "out")
    assert views["occupancy"].startswith("no species in this recording has a brain")
    assert views["order"].startswith("no metric samples") and views["groups"].startswith("no group counts")
    assert views["population"] is None and views["tracks"] is None and views["nn_hist"] is None
    page = (tmp_path / "out" / "index.html").read_text()
    assert "Not drawn: no species in this recording has a brain" in page
    assert not (tmp_path / "out" / "occupancy.png").exists()
    bird = summarize(rec)["species"]["bird"]
    assert bird["metrics"] == {} and bird["counters"] == {} and "predation" not in bird


def test_tracks_break_at_the_seam_of_a_wrapping_world():
    x = np.array([9.0, 9.6, 0.2, 0.8])
    z = np.array([1.0, 1.0, 1.0, 1.0])
    bx, bz = _broken_at_seams(x, z, [10.0, 0.0, 10.0])
    assert np.isnan(bx[2]) and np.isnan(bz[2]) and bx.size == 5
    np.testing.assert_array_equal(_broken_at_seams(x, z, None)[0], x)


def test_a_report_of_an_empty_world_draws_no_tracks(tmp_path):
    class Empty:
        species = ["bird"]
        config = {}
        box = None

        def blocks(self, population):
            yield 0, {"uid": np.full((3, 4), -1)}

    with pytest.raises(NoData, match="no animal is alive"):
        plot_tracks(Empty(), tmp_path / "t.png")
    assert not (tmp_path / "t.png").exists()


def test_density_unit_follows_the_species_mover():
    from starling.recording.summary import density_unit, metric_unit

    config = {"species": [{"name": "p", "mover": {"kind": "constant_speed", "planar": True}},
                          {"name": "s", "mover": {"kind": "ground"}}, {"name": "q", "mover": {"kind": "planar"}},
                          {"name": "b", "mover": {"kind": "free"}}]}
    assert [density_unit(config, n) for n in "psqb"] == ["1/m²", "1/m²", "1/m²", "1/m³"]
    flat = {"species": {"p": {"density_unit": "1/m²"}, "q": {"density_unit": "1/m²"}}}
    mixed = {"species": {"p": {"density_unit": "1/m²"}, "b": {"density_unit": "1/m³"}}}
    assert (metric_unit(flat, "density"), metric_unit(mixed, "density")) == ("1/m²", "1/m² or 1/m³")
    assert (metric_unit(flat, "nn_p5"), metric_unit(flat, "speed_max"), metric_unit(flat, "groups")) == (
        "m", "m/s", "")


def test_a_read_that_fails_in_the_store_is_one_recording_error():
    from starling.recording import RecordingError
    from starling.recording.summary import checked

    class Broken:
        path = "broken.zarr"
        n_frames = 2

        def array(self, population, name):
            raise RuntimeError("error during blosc decompression: -1")

        def blocks(self, population):
            yield 0, {}
            raise OSError("chunk vanished")

    rec = checked(Broken())
    assert rec.n_frames == 2 and checked(rec) is rec
    with pytest.raises(RecordingError, match=r"^broken.zarr: damaged or truncated recording \(RuntimeError: error"):
        rec.array("fish", "uid")
    blocks = rec.blocks("fish")
    assert next(blocks) == (0, {})
    with pytest.raises(RecordingError, match=r"OSError: chunk vanished"):
        next(blocks)


def test_an_unfinished_recording_is_summarised_and_says_so(tmp_path):
    from starling.recording import Recorder

    sim = load_scenario("flock", record_debug=False, overrides=["species.bird.count=50"])
    recorder = Recorder(sim, tmp_path / "cut.zarr", every=1, metrics_every=2)
    sim.step(6)
    recorder.flush()  # what a writer killed now leaves: its blocks, no closing header
    rec = open_recording(tmp_path / "cut.zarr")
    summary = summarize(rec)
    assert summary["complete"] is False and summary["frames"] == rec.n_frames >= 6
    assert summary["species"]["bird"]["population"]["final"] == 50
    write_report(rec, tmp_path / "out")
    assert "no: the writer stopped early" in (tmp_path / "out" / "index.html").read_text()
    recorder.close()
