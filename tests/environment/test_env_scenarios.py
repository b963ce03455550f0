"""Scene files with an environment: `starling validate` errors, mesh files, and the pond and pasture scenarios."""
import json

import numpy as np
import pytest
import trimesh
from typer.testing import CliRunner

import starling
from starling.cli import app
from starling.server import protocol as P

runner = CliRunner()

SPECIES = """
[[species]]
name = "fish"
count = 5
spawn = { shape = "sphere", center = [0.0, 2.0, 0.0], radius = 1.0 }
"""


def scene_file(tmp_path, environment: str, species: str = SPECIES) -> str:
    path = tmp_path / "scene.toml"
    path.write_text('name = "scene"\n' + environment + species)
    return str(path)


@pytest.mark.parametrize("environment, line", [
    ('[[environment.shapes]]\nkind = "sphere"\ncenter = [0, 0, 0]\nradius = 1\nlayer = "lava"\n',
     "environment.shapes.0.layer: unknown layer 'lava'; known layers are: terrain, ground, water"),
    ('[environment]\nlayers = ["reeds"]\n[[environment.scatter]]\nkind = "rocks"\ncount = 3\nlayer = "weed"\n',
     "environment.scatter.0.layer: unknown layer 'weed'; known layers are: terrain, ground, water, environment, "
     "grass, fake_walls, reeds"),
    ('[[environment.water]]\nsurface_height = 0\nfill_pond = true\n',
     "environment.water.0.fill_pond: needs a terrain with a pond basin"),
    ('[[environment.meshes]]\npath = "rock.obj"\n',
     "environment.meshes.0.path: cannot load mesh file '{dir}/rock.obj': no such file"),
    ('[[environment.meshes]]\npath = "broken.stl"\n',
     "environment.meshes.0.path: cannot load mesh file '{dir}/broken.stl'"),
    ('[[environment.shapes]]\nkind = "box"\ncenter = [0, 0, 0]\nhalf_extents = [1, 0, 1]\n',
     "environment.shapes.0.box.half_extents: every half extent must be > 0, but y is 0.0"),
    ('[[environment.shapes]]\nkind = "cylinder"\nbase = [0, 0, 0]\nradius = 1\nheight = 0\n',
     "environment.shapes.0.cylinder.height: Input should be greater than 0"),
    ('[environment.terrain]\nsize = [10, 10]\nimage = { path = "hills.png", vertical_scale = 5 }\n',
     "environment.terrain.image.path: cannot load height-map image file '{dir}/hills.png': no such file"),
])
def test_validate_names_the_field_of_a_bad_layer_file_or_shape(tmp_path, environment, line):
    (tmp_path / "broken.stl").write_bytes(b"solid nonsense\n  facet normal 0 0 1\n   outer loop\n endsolid\x00\xff")
    result = runner.invoke(app, ["validate", scene_file(tmp_path, environment)])
    assert result.exit_code == 2, result.output
    assert line.format(dir=tmp_path) in result.output.replace("\n", "")
    assert "Traceback" not in result.output
    assert len([x for x in result.output.splitlines() if x.strip()]) == 1  # one problem, one line


def test_a_ray_query_layer_unknown_to_the_scene_is_named_with_its_path(tmp_path):
    env = '[environment]\nlayers = ["reeds"]\n'
    species = SPECIES + ('[[species.ray_groups]]\nquery = { layers = ["reeds", "weeds"] }\n'
                         '[[species.ray_groups.behaviors]]\nkind = "environment_avoidance"\n')
    result = runner.invoke(app, ["validate", scene_file(tmp_path, env, species)])
    assert result.exit_code == 2
    assert "species.fish.ray_groups.0.query.layers.1: unknown layer 'weeds'" in result.output
    assert "reeds" in result.output  # the declared layer is known (and listed)


def test_a_mesh_next_to_the_scene_file_loads_collides_and_is_drawn(tmp_path):
    trimesh.creation.box(extents=(2.0, 2.0, 2.0)).export(tmp_path / "crate.obj")
    env = '[[environment.meshes]]\npath = "crate.obj"\ntranslation = [0.0, 1.0, 3.0]\n'
    path = scene_file(tmp_path, env, SPECIES.replace("count = 5", "count = 20"))
    assert runner.invoke(app, ["validate", path]).exit_code == 0
    result = runner.invoke(app, ["run", path, "--steps", "30", "--json"])
    assert result.exit_code == 0, result.output
    health = json.loads(result.stdout.strip().splitlines()[-1])["health"]
    assert health == {"nan": 0, "inside_solid": 0, "out_of_medium": 0}
    sim = starling.load_scenario(path)
    scene = P.Environment.model_validate(sim.describe_environment())
    corners = np.asarray(scene.meshes[0].positions).reshape(-1, 3)
    assert corners.shape == (36, 3)  # 12 triangles
    np.testing.assert_allclose(corners.min(axis=0), (-1.0, 0.0, 2.0), atol=1e-3)


@pytest.mark.parametrize("name, species, count", [("pond", "fish", 120), ("pasture", "sheep", 80)])
def test_the_built_in_environment_scenarios_run_healthy(name, species, count):
    # the short version of `starling run pond --steps 5000 --json` (and pasture)
    result = runner.invoke(app, ["run", name, "--steps", "240", "--json", "--set", f"species.{species}.count={count}"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["health"] == {"nan": 0, "inside_solid": 0, "out_of_medium": 0}
    assert summary["species"][species]["alive"] == count
    assert 0.2 < summary["species"][species]["mean_speed"] < 6.0  # moving at animal speeds


@pytest.mark.parametrize("name", ["pond", "pasture"])
def test_the_built_in_environment_scenarios_start_valid_and_describe_their_scene(name):
    sim = starling.load_scenario(name, record_debug=False)
    assert sim.health() == {"nan": 0, "inside_solid": 0, "out_of_medium": 0}
    scene = P.Environment.model_validate(sim.describe_environment())
    assert scene.terrain is not None and scene.water is not None and len(scene.obstacles) > 20


def test_bench_rays_reports_ray_throughput_as_json():
    result = runner.invoke(app, ["bench", "--rays", "--animals", "500", "--obstacles", "50", "--repeats", "2",
                                 "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["rays"] == 500 * 8 and report["obstacles"] == 50
    assert report["rays_per_s"] > 0 and report["step_ms"]["median"] > 0
    assert 0.0 < report["hit_fraction"] < 1.0
    assert set(report["hits_by_layer"]) <= {"terrain", "environment", "water"}
