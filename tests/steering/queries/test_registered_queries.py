"""Neighbour query methods register like behaviours: a user's method is used by name from a scenario."""
import numpy as np
import pytest

import starling
from starling.config import ConfigError, validate_scenario
from starling.steering import registry
from starling.steering.queries import brute

SCENE = {
    "name": "q", "seed": 3,
    "species": [{"name": "bird", "count": 300, "spawn": {"size": [20, 10, 20]},
                 "groups": [{"query": {"k": 4, "max_distance": 4.0}, "behaviors": [{"kind": "cohesion"}]}]}],
}
calls = []


@pytest.fixture
def counted_brute():
    @registry.neighbor_query("counted_brute")
    def search(spos, sfwd, tpos, spec, box, exclude_self, out):
        """Brute force, counting its calls."""
        calls.append(spos.shape[0])
        brute.query(spos, sfwd, tpos, spec.max_distance, spec.fov_deg, spec.k, box, exclude_self,
                    out.index, out.distance, out.count, out.overflow)

    yield
    registry._queries.pop("counted_brute")


def test_a_registered_method_is_used_by_name_and_gives_the_grid_s_table(counted_brute):
    data = {**SCENE, "species": [dict(SCENE["species"][0])]}
    data["species"][0]["groups"] = [{"query": {"k": 4, "max_distance": 4.0, "method": "counted_brute"},
                                     "behaviors": [{"kind": "cohesion"}]}]
    mine = starling.Simulation(validate_scenario(data))
    grid = starling.Simulation(validate_scenario(SCENE))
    mine.step(5)
    grid.step(5)
    assert calls == [300] * 5
    np.testing.assert_array_equal(mine.population("bird").position, grid.population("bird").position)


def test_an_unknown_method_names_the_field_and_lists_the_registered_ones():
    data = {**SCENE, "species": [dict(SCENE["species"][0])]}
    data["species"][0]["groups"] = [{"query": {"method": "octree"}, "behaviors": [{"kind": "cohesion"}]}]
    with pytest.raises(ConfigError) as info:
        validate_scenario(data)
    text = str(info.value)
    assert "species.bird.groups.0.query.method" in text and "'octree'" in text
    assert "brute, grid, kdtree" in text and "--plugin" in text
