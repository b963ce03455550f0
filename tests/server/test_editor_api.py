"""The editor's HTTP API against the real app and simulation thread: read, edit live, save, load."""
from __future__ import annotations

import numpy as np
import pytest
from fastapi.testclient import TestClient

from starling.server import create_app
from starling.server.scenes import scenario_loader

from .helpers import SCENARIO, SMALL, wait_for


@pytest.fixture
def api(tmp_path):
    app = create_app(SCENARIO, seed=1, loader=scenario_loader(SMALL, SCENARIO), static_dir=tmp_path / "static",
                     workspace=tmp_path / "work")
    with TestClient(app) as client:
        runner = app.state.runner
        wait_for(lambda: runner.sim is not None and runner.sim.step_count > 2, timeout=60, what="the first steps")
        yield client, runner, tmp_path / "work"


def test_schema_and_config_describe_what_runs(api):
    client, runner, _ = api
    schema = client.get("/api/schema").json()
    assert "species" in schema["properties"] and "$defs" in schema
    config = client.get("/api/config").json()
    assert config["species"][0]["name"] == "bird" and config["species"][0]["count"] == 200


def test_a_put_applies_live_and_keeps_the_animals_where_they_are(api):
    client, runner, _ = api
    config = client.get("/api/config").json()
    config["species"][0]["mover"]["max_speed"] = 3.0
    before = {}

    def positions(r):
        pop = r.sim.population("bird")
        return dict(zip(pop.uid.tolist(), pop.position.copy()))

    before = runner.call(positions)
    answer = client.put("/api/config", json=config)
    assert answer.status_code == 200 and answer.json()["applied"] is True
    after = runner.call(positions)
    assert runner.call(lambda r: r.sim.scenario.species[0].mover.max_speed) == 3.0
    same = [uid for uid in before if uid in after]
    assert len(same) == 200  # nobody was respawned; they moved at most a step or two
    assert max(float(np.linalg.norm(after[u] - before[u])) for u in same) < 5.0


def test_a_bad_config_is_422_with_every_problem_and_changes_nothing(api):
    client, runner, _ = api
    config = client.get("/api/config").json()
    config["species"][0]["count"] = -5
    config["species"][0]["mover"]["max_speed"] = "fast"
    config["dt"] = 0
    answer = client.put("/api/config", json=config)
    assert answer.status_code == 422
    paths = {e["path"] for e in answer.json()["errors"]}
    assert {"species.bird.count", "dt"} <= paths and any(p.startswith("species.bird.mover") for p in paths)
    assert runner.call(lambda r: r.sim.population("bird").n) == 200
    assert client.put("/api/config", json=[1, 2]).status_code == 422
    bad_json = client.put("/api/config", content=b"{not json", headers={"content-type": "application/json"})
    assert bad_json.status_code == 422 and "not valid JSON" in bad_json.json()["errors"][0]["message"]


def test_save_lists_and_loads_back_the_same_config(api):
    client, runner, work = api
    config = client.get("/api/config").json()
    config["species"][0]["count"] = 150
    assert client.put("/api/config", json=config).status_code == 200
    saved = client.post("/api/config/save", json={"name": "fewer_birds"})
    assert saved.status_code == 200 and (work / "fewer_birds.toml").is_file()
    assert [f["name"] for f in client.get("/api/config/files").json()["files"]] == ["fewer_birds"]
    config["species"][0]["count"] = 120
    client.put("/api/config", json=config)
    loaded = client.post("/api/config/load", json={"name": "fewer_birds"})
    assert loaded.status_code == 200
    assert client.get("/api/config").json()["species"][0]["count"] == 150
    upload = client.post("/api/config/load", json={"toml": (work / "fewer_birds.toml").read_text().replace(
        "count = 150", "count = 90")})
    assert upload.status_code == 200 and runner.call(lambda r: r.sim.population("bird").n) == 90


@pytest.mark.parametrize("name", ["../escape", "a/b", "/etc/passwd", "", ".hidden", "x" * 65, "spaces here"])
def test_a_save_name_that_could_leave_the_workspace_is_refused(api, name):
    client, _, work = api
    answer = client.post("/api/config/save", json={"name": name})
    assert answer.status_code == 422 and answer.json()["errors"][0]["path"] == "name"
    assert not work.exists() or not any(work.iterdir())


def test_a_body_over_10_mb_is_413_and_a_binary_upload_one_clear_error(api):
    client, _, _ = api
    big = client.put("/api/config", content=b" " * (10 * 1024 * 1024 + 1), headers={"content-type": "application/json"})
    assert big.status_code == 413 and "10 MB" in big.json()["errors"][0]["message"]
    binary = client.post("/api/config/load", json={"toml": "\x00\x01PNG"})
    assert binary.status_code == 422 and "binary" in binary.json()["errors"][0]["message"]
    latin = client.put("/api/config", content="{\"name\": \"caf\xe9\"}".encode("latin-1"),
                       headers={"content-type": "application/json"})
    assert latin.status_code == 422 and "UTF-8" in latin.json()["errors"][0]["message"]
    missing = client.post("/api/config/load", json={"name": "nothing_here"})
    assert missing.status_code == 422 and "no file" in missing.json()["errors"][0]["message"]


def test_validate_refuses_binary_and_non_utf8_files_with_one_line(tmp_path):
    from typer.testing import CliRunner

    from starling.cli import app

    binary = tmp_path / "scene.toml"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    latin = tmp_path / "latin.toml"
    latin.write_bytes('name = "café"\n'.encode("latin-1"))
    for path, words in ((binary, "binary file"), (latin, "not UTF-8")):
        result = CliRunner().invoke(app, ["validate", str(path)])
        assert result.exit_code == 2 and words in result.output and "Traceback" not in result.output


def test_the_catalog_says_what_fits_where_and_the_toml_is_what_runs(api, tmp_path):
    client, runner, _ = api
    catalog = client.get("/api/catalog").json()
    by_name = {b["name"]: b for b in catalog["behaviors"]}
    assert by_name["separation"]["group"] == "neighbor" and by_name["wandering"]["group"] == "simple"
    assert by_name["avoid_verticals"]["group"] == "ray"
    assert by_name["separation"]["schema"]["properties"]["kind"]["const"] == "separation"
    assert all(b["result"] in catalog["result_types"] for b in catalog["behaviors"])
    assert {"velocity"} <= {r for m in catalog["mergers"] for r in m["accepts"]}
    assert {m["name"] for m in catalog["movers"]} >= {"free", "ground"}
    assert {q["name"] for q in catalog["query_methods"]} >= {"grid", "brute", "kdtree"}
    assert set(catalog["populations"]) >= {"apple", "carcass", "sound", "player"}
    # each form carries only the definitions it refers to, so it stands alone
    brain = catalog["forms"]["BrainConfig"]
    assert set(brain["$defs"]) >= {"State", "Transition"} and "SpeciesConfig" not in brain["$defs"]

    config = client.get("/api/config").json()
    config["species"][0]["count"] = 37
    assert client.put("/api/config", json=config).status_code == 200
    text = client.get("/api/config/toml").json()["toml"]
    scene = tmp_path / "downloaded.toml"
    scene.write_text(text)
    from starling.config import load_scenario_config
    assert load_scenario_config(scene).species[0].count == 37  # the download is a scenario file as it runs
