"""Entity blocks: the populations a simulation's systems make (the ecology's sounds,
apples, carcasses and player) travel in every frame after the species, described by
the scene message's ``entities``; the viewer colours the scenery itself unless the
scene gives colours."""
from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from starling.ecology import items as I
from starling.ecology import sounds as S
from starling import frames as F
from starling.server import protocol as P
from starling.server.live_view import entity_blocks, entity_states
from starling.server.runner import SimulationRunner
from starling.server.scenes import scenario_loader
from starling.world import Population, World

from .helpers import RecordingSink, wait_for

FIXTURES = Path(__file__).resolve().parents[2] / "web" / "test" / "fixtures"


class FakeSim:
    """Just what the runner reads: species, world, scenario looks and the ecology's scene part."""

    def __init__(self) -> None:
        self.world = World(1 / 30, 0, (-20, -10, -20), (20, 10, 20))
        self.species = ["fish"]
        look = SimpleNamespace(model="fish", color="#e0b040", scale=0.4)
        self.scenario = SimpleNamespace(species=[SimpleNamespace(name="fish", appearance=look)])
        w = self.world
        fish = w.add_population(Population("fish", capacity=16))
        fish.append(w.new_uids(3), np.float32([[0, -2, 0], [1, -2, 0], [0, -3, 1]]), np.float32([[1, 0, 0]] * 3))
        sound = w.add_population(Population("sound", components=S.COMPONENTS))
        sound.append(w.new_uids(2), np.float32([[5, 0, 5], [-4, 1, 2]]), np.zeros((2, 3), np.float32),
                     components={"sound_radius": np.float32([12.5, 0.3]), "sound_age": np.float32([0.2, 0.0])})
        apple = w.add_population(Population("apple", components=I.COMPONENTS))
        apple.append(w.new_uids(1), np.float32([[2, 0, -3]]), np.float32([[0, -1.5, 0]]))
        carcass = w.add_population(Population("carcass", components=I.COMPONENTS))
        carcass.append(w.new_uids(2), np.float32([[3, 0, 3], [-6, 0, 1]]), np.zeros((2, 3), np.float32),
                       tags=w.tag_bit("dead_fish"))
        carcass.append(w.new_uids(1), np.float32([[7, 0, -7]]), np.zeros((1, 3), np.float32),
                       tags=w.tag_bit("something_else"))
        player = w.add_population(Population("player", components={"still_time": 0.0}))
        player.append(w.new_uids(1), np.float32([[-15, 1.5, -12]]), np.zeros((1, 3), np.float32),
                      forward=np.float32([[0.6, 0, 0.8]]))

    def scene(self) -> dict:
        return {"ecology": {"carcass_tags": {"dead_fish": "fish"},
                            "sounds": {"speed": 60.0, "range": 30.0, "lifetime": 1.5}}}


def _fixture_frame() -> tuple[bytes, dict]:
    sim = FakeSim()
    blocks = entity_blocks(sim)
    fish = sim.world.population("fish")
    states = [F.SpeciesState(fish.position, fish.velocity, fish.forward, fish.up, fish.uid)]
    states += entity_states(sim, blocks)
    data = F.FrameEncoder().encode(states, step=90, time=3.0, dt=1 / 30, sequence=5)
    frame = F.decode_frame(data)
    expected = {
        "scene": {"species": [{"index": 0, "name": "fish", "model": "fish", "color": "#e0b040", "scale": 0.4}],
                  "entities": [b.info for b in blocks]},
        "blocks": [
            {"index": d.index, "uids": d.uid.tolist(), "positions": d.position.ravel().tolist(),
             "speeds": d.speed.tolist()}
            for d in frame.species
        ],
    }
    return data, expected


def test_every_population_that_is_not_a_species_gets_an_entity_block_after_the_species():
    blocks = entity_blocks(FakeSim())
    infos = [b.info for b in blocks]
    assert [(i["index"], i["kind"], i["tag"]) for i in infos] == [
        (1, "sound", None), (2, "apple", None), (3, "carcass", "dead_fish"), (4, "carcass", None), (5, "player", None),
    ]
    for info in infos:
        P.EntityInfo.model_validate(info)
    # carcasses of a known species carry that species' looks; the rest have none
    assert (infos[2]["model"], infos[2]["color"], infos[2]["scale"]) == ("fish", "#e0b040", 0.4)
    assert infos[3]["model"] is None
    assert infos[0]["lifetime"] == 1.5


def test_a_simulation_with_only_species_has_no_entity_blocks():
    sim = FakeSim()
    for name in ("sound", "apple", "carcass", "player"):
        sim.world.populations.pop(name)
    assert entity_blocks(sim) == []


def test_entity_blocks_carry_positions_uids_and_the_sound_radius():
    data, expected = _fixture_frame()
    frame = F.decode_frame(data)
    by_index = {d.index: d for d in frame.species}
    assert sorted(by_index) == [0, 1, 2, 3, 4, 5]
    sim = FakeSim()
    sound = by_index[1]
    np.testing.assert_allclose(sound.speed, [12.5, 0.3], atol=0.006)  # radius in the speed column
    np.testing.assert_allclose(sound.position, sim.world.population("sound").position, atol=1e-3)
    apple = by_index[2]
    assert apple.speed[0] == pytest.approx(1.5, abs=0.006)  # an apple's speed is a speed
    carcass = sim.world.population("carcass")
    assert by_index[3].uid.tolist() == carcass.uid[:2].tolist()  # tagged dead_fish
    assert by_index[4].uid.tolist() == carcass.uid[2:].tolist()  # the others
    player = by_index[5]
    np.testing.assert_allclose(player.position[0], [-15, 1.5, -12], atol=1e-3)
    forward = F.rotate(player.quaternion, np.array([[0.0, 0.0, 1.0]]))[0]
    np.testing.assert_allclose(forward, [0.6, 0, 0.8], atol=0.01)


def test_the_checked_in_entity_fixture_is_what_the_runner_writes_today():
    """web/test/entities.test.ts decodes this fixture; if the layout changes both must change."""
    data, expected = _fixture_frame()
    bin_path, json_path = FIXTURES / "frame_entities_v1.bin", FIXTURES / "frame_entities_v1.json"
    if os.environ.get("STARLING_UPDATE_FIXTURES") == "1":
        bin_path.write_bytes(data)
        json_path.write_text(json.dumps(expected, indent=1) + "\n")
    assert bin_path.is_file(), "run with STARLING_UPDATE_FIXTURES=1 to create the fixture"
    assert bin_path.read_bytes() == data, "entity frames changed: regenerate with STARLING_UPDATE_FIXTURES=1"
    assert json.loads(json_path.read_text())["scene"] == json.loads(json.dumps(expected["scene"]))


def test_scene_colours_are_optional_and_left_out_when_not_given():
    env = P.Environment.model_validate({
        "terrain": {"origin": [0, 0], "size": [1, 1], "resolution": [2, 2], "heights": [0, 0, 0, 0]},
        "obstacles": [{"shape": "sphere", "center": [0, 0, 0], "radius": 1},
                      {"shape": "box", "center": [0, 0, 0], "size": [1, 1, 1], "color": "#112233"}],
        "meshes": [{"positions": [0, 0, 0, 1, 0, 0, 0, 0, 1]}],
    }).model_dump(exclude_none=True)
    assert "color" not in env["terrain"] and "color" not in env["meshes"][0]
    assert "color" not in env["obstacles"][0]
    assert env["obstacles"][1]["color"] == "#112233"


@pytest.fixture(scope="module")
def lagoon_runner():
    """The lagoon, small and paused: fish, sharks, the player, and later sounds and apples."""
    loader = scenario_loader(("species.fish.count=20",), "lagoon")
    runner = SimulationRunner("lagoon", seed=3, loader=loader, scenario_names=lambda: ["lagoon"])
    sink = RecordingSink()
    runner.start(sink)
    try:
        wait_for(lambda: runner.sim is not None and sink.frames, timeout=300, what="the lagoon's first frame")
        runner.submit(None, P.Pause(type="pause"))
        yield runner, sink
    finally:
        runner.stop()


def test_the_lagoon_scene_lists_its_entities_and_leaves_scenery_colours_to_the_viewer(lagoon_runner):
    runner, sink = lagoon_runner
    scene = sink.scenes[0]
    kinds = [(e["index"], e["kind"], e.get("model")) for e in scene["entities"]]
    assert kinds == [(2, "sound", None), (3, "apple", None), (4, "carcass", "fish"), (5, "carcass", "shark"),
                     (6, "carcass", None), (7, "player", None)]
    assert all("color" not in o for o in scene["environment"]["obstacles"])
    assert "color" not in scene["environment"]["terrain"]
    assert runner.sim.scene()["ecology"]["carcass_tags"] == {"dead_fish": "fish", "dead_shark": "shark"}


def test_a_shot_streams_its_sounds_and_the_player_stands_where_the_simulation_has_it(lagoon_runner):
    runner, sink = lagoon_runner
    start = len(sink.frames)
    runner.submit(None, P.Fire(type="fire", origin=(-34.0, 3.1, -20.0), direction=(1.0, -0.3, 0.6)))
    runner.submit(None, P.ThrowApple(type="throw_apple", origin=(-30.0, 3.0, -18.0), velocity=(2.0, 2.0, 1.0)))
    runner.submit(None, P.Step(type="step", n=6))

    def settled():
        """The newest frame, once it shows the step the simulation stopped at."""
        if len(sink.frames) <= start or runner.pacer.pending:
            return None
        frame = F.decode_frame(sink.frames[-1])
        return frame if frame.step == runner.sim.step_count and frame.species[2].uid.size else None

    last = wait_for(settled, timeout=120, what="a frame with sounds")
    assert len(last.species) == 8
    assert last.species[2].uid.size == 2  # muzzle and impact
    radius = runner.sim.world.population("sound").component("sound_radius")
    np.testing.assert_allclose(np.sort(last.species[2].speed), np.sort(radius), atol=0.006)
    assert np.all(last.species[2].speed > 0)
    assert last.species[3].uid.size == 1  # the apple
    player = last.species[7]
    np.testing.assert_allclose(player.position[0], runner.sim.world.population("player").position[0], atol=1e-3)
