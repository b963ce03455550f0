"""Systems plug in through registered config sections and the step hooks."""
from typing import Literal

import numpy as np
import pytest

import starling
from starling.config import ConfigError, validate_scenario
from starling.steering import registry
from starling.steering.params import StrictModel
from starling.systems import System


class SlowZoneConfig(StrictModel):
    """Animals below ``height`` move at ``factor`` of their top speed."""

    height: float = 10.0
    factor: float = 0.25


class SlowZone(System):
    name = "slow_zone"

    def __init__(self, sim):
        self.cfg = sim.scenario.slow_zone
        self.calls = []

    def before_behaviors(self, sim, dt):
        self.calls.append("before")
        for pipeline in sim.pipelines:
            pop = sim.population(pipeline.name)
            scale = np.ones(pop.capacity, np.float32)
            scale[: pop.n] = np.where(pop.position[:, 1] < self.cfg.height, self.cfg.factor, 1.0)
            pipeline.speed_scale = scale

    def after_move(self, sim, dt):
        self.calls.append("after_move")

    def after_commands(self, sim, killed):
        self.calls.append("after_commands")

    def health(self, sim):
        return {"in_zone": int(sum(np.count_nonzero(sim.population(s).position[:, 1] < self.cfg.height)
                                   for s in sim.species))}

    def species_summary(self, sim, species):
        return {"zone_steps": len(self.calls) // 3}


@pytest.fixture(scope="module")
def registered():
    registry.section("slow_zone", model=SlowZoneConfig)(SlowZone)
    yield
    registry._sections.pop(("scenario", "slow_zone"), None)
    registry._version[0] += 1


SCENE = {
    "name": "zone",
    "species": [{"name": "fish", "count": 40, "mover": {"kind": "free", "max_speed": 8.0},
                 "spawn": {"center": [0, 5, 0], "size": [10, 2, 10], "speed": [6, 8]},
                 "behaviors": [{"kind": "go_forward", "speed": 8.0, "weight_speed": 1.0, "weight_direction": 1.0}]}],
}


def test_a_registered_section_is_validated_and_builds_its_system(registered):
    sim = starling.Simulation(validate_scenario({**SCENE, "slow_zone": {"height": 100.0, "factor": 0.25}}))
    sim.step(3)
    (system,) = sim.systems
    assert system.calls == ["before", "after_move", "after_commands"] * 3
    assert sim.health() == {"nan": 0, "in_zone": 40}
    assert sim.species_summary("fish") == {"zone_steps": 3}
    speeds = np.linalg.norm(sim.population("fish").velocity, axis=1)
    assert speeds.max() <= 8.0 * 0.25 + 1e-5  # the per-animal speed scale reached the mover


def test_a_scenario_without_the_section_builds_no_system(registered):
    assert starling.Simulation(validate_scenario(SCENE)).systems == []


def test_section_fields_are_validated_like_any_other(registered):
    with pytest.raises(ConfigError, match="slow_zone.factor: Input should be a valid number"):
        validate_scenario({**SCENE, "slow_zone": {"factor": "slow"}})


def test_a_hook_left_as_the_base_class_no_op_is_not_called_and_every_other_is(monkeypatch):
    calls = []
    # every system that does not write after_commands of its own now has this one: it must never run
    monkeypatch.setattr(System, "after_commands", lambda self, sim, killed: calls.append(("base", self.name)))

    class OnlyAfterMove(System):
        name = "only_after_move"

        def after_move(self, sim, dt):
            calls.append(("after_move", self.name))

    sim = starling.load_scenario("lagoon", record_debug=False)
    sim.step()
    assert not calls
    mine = OnlyAfterMove()
    given = OnlyAfterMove()
    given.name = "given"
    # a hook given to the instance itself counts as the system's own
    given.after_commands = lambda sim, killed: calls.append(("after_commands", "given"))
    sim.systems.append(mine)
    sim.systems.append(given)
    sim.step(2)
    assert calls == [("after_move", "only_after_move"), ("after_move", "given"), ("after_commands", "given")] * 2
