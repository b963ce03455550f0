"""Plugins: the tutorial's behaviour runs from --plugin and from an installed package's entry point."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import starling
from starling import plugins

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
ZONE = """name = "zone"
steps = 10
[[species]]
name = "bird"
count = 40
[[species.behaviors]]
kind = "avoid_zone"
center = [0.0, 20.0, 0.0]
radius = 8.0
priority = 2
"""


def _starling(*args, cwd, env=None):
    return subprocess.run([str(BIN / "starling"), *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=600)


@pytest.fixture
def scene(tmp_path):
    (tmp_path / "zone.toml").write_text(ZONE)
    shutil.copy(ROOT / "docs" / "examples" / "avoid_center.py", tmp_path / "avoid_center.py")
    return tmp_path


def test_the_builtins_register_through_the_entry_point_group():
    ours = {value for key, value in plugins.loaded().items() if key.startswith("starling:") or key in plugins.BUILTINS.values()}
    assert set(plugins.BUILTINS.values()) <= ours | set(plugins.loaded())
    from importlib import metadata
    declared = {ep.value for ep in metadata.entry_points(group=plugins.GROUP) if ep.dist and ep.dist.name == "starling"}
    assert declared == set(plugins.BUILTINS.values())


def test_an_unknown_behaviour_lists_what_is_registered_and_mentions_plugin(scene):
    r = _starling("run", "zone.toml", "--steps", "2", cwd=scene)
    assert r.returncode == 2
    assert "unknown kind 'avoid_zone'" in r.stderr and "wandering" in r.stderr and "--plugin" in r.stderr
    assert "Traceback" not in r.stderr


def test_the_tutorial_behaviour_runs_from_plugin_by_module_and_by_file(scene):
    for spec in ("avoid_center", "./avoid_center.py"):
        r = _starling("run", "zone.toml", "--plugin", spec, "--steps", "5", "--json", cwd=scene)
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["species"]["bird"]["alive"] == 40



def test_warm_loads_the_plugin_in_every_worker_process(scene):
    """Scenarios warmed side by side are built in worker processes: each loads the --plugin modules
    before it builds one, or the behaviour would be unknown there."""
    (scene / "zone2.toml").write_text(ZONE.replace('name = "zone"', 'name = "zone2"').replace("count = 40", "count = 12"))
    r = _starling("warm", "--jobs", "2", "zone.toml", "zone2.toml", "--plugin", "./avoid_center.py", cwd=scene)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr and "unknown kind" not in r.stderr

def test_a_missing_plugin_is_one_clear_error(scene):
    r = _starling("validate", "zone.toml", "--plugin", "no_such_module", cwd=scene)
    assert r.returncode == 2
    assert "--plugin no_such_module: no module named 'no_such_module'" in r.stderr
    assert "Traceback" not in r.stderr


def test_an_installed_package_registers_through_its_entry_point(scene, tmp_path_factory):
    target = tmp_path_factory.mktemp("site")
    source = tmp_path_factory.mktemp("src") / "starling_zone"  # pip builds in place: keep tests/ clean
    shutil.copytree(ROOT / "tests" / "plugins" / "starling_zone", source)
    shutil.copy(ROOT / "docs" / "examples" / "avoid_center.py", source / "src" / "starling_zone" / "avoid_zone.py")
    build = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps",
                            "--target", str(target), str(source)],
                           capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr
    env = {"PYTHONPATH": str(target)}
    r = _starling("run", "zone.toml", "--steps", "5", "--json", cwd=scene, env=env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["species"]["bird"]["alive"] == 40
    schema = _starling("schema", cwd=scene, env=env)
    assert '"avoid_zone"' in schema.stdout


def test_load_plugin_reports_a_broken_module(tmp_path):
    bad = tmp_path / "broken_plugin.py"
    bad.write_text("raise RuntimeError('boom')\n")
    with pytest.raises(plugins.PluginError, match="broken_plugin.py: RuntimeError: boom"):
        starling.load_plugin(str(bad))
