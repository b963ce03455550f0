"""Scenario configuration: validation errors name the field, TOML round trips, overrides."""
import json

import pytest

from starling.config import (
    ConfigError, apply_override, json_schema, load_scenario_config, read_scenario_data,
    scenario_names, scenario_to_toml, validate_scenario,
)

BASE = {
    "name": "t",
    "species": [{
        "name": "bird",
        "count": 10,
        "groups": [{"query": {"max_distance": 5.0}, "behaviors": [{"kind": "cohesion"}]}],
        "behaviors": [{"kind": "wandering"}],
    }],
}


def problems(data):
    with pytest.raises(ConfigError) as info:
        validate_scenario(data)
    return [str(p) for p in info.value.problems]


def test_every_builtin_scenario_is_valid():
    for name in scenario_names():
        data, label = read_scenario_data(name)
        validate_scenario(data, label)


def test_a_wrong_type_names_the_field():
    data = json.loads(json.dumps(BASE))
    data["species"][0]["count"] = "many"
    assert problems(data) == ["species.bird.count: Input should be a valid integer, unable to parse string as an integer"]


def test_a_negative_radius_names_the_field():
    data = json.loads(json.dumps(BASE))
    data["species"][0]["groups"][0]["query"]["max_distance"] = -1
    assert problems(data) == ["species.bird.groups.0.query.max_distance: Input should be greater than 0"]


def test_an_unknown_behaviour_names_the_field_and_the_known_ones():
    data = json.loads(json.dumps(BASE))
    data["species"][0]["behaviors"][0]["kind"] = "teleport"
    (line,) = problems(data)
    assert line.startswith("species.bird.behaviors.0.kind: unknown kind 'teleport'; expected one of")
    assert "wandering" in line


def test_a_behaviour_parameter_error_names_the_behaviour_and_parameter():
    data = json.loads(json.dumps(BASE))
    data["species"][0]["behaviors"][0]["min_speed"] = -2
    assert problems(data) == ["species.bird.behaviors.0.wandering.min_speed: Input should be greater than or equal to 0"]


def test_an_unknown_field_is_rejected_not_ignored():
    data = json.loads(json.dumps(BASE))
    data["species"][0]["behaviors"][0]["min_sped"] = 2
    assert problems(data) == ["species.bird.behaviors.0.wandering.min_sped: unknown field"]


def test_a_neighbour_behaviour_in_the_simple_list_is_rejected():
    data = json.loads(json.dumps(BASE))
    data["species"][0]["behaviors"].append({"kind": "separation"})
    (line,) = problems(data)
    assert line.startswith("species.bird.behaviors.1.kind: unknown kind 'separation'")


def test_query_targets_must_be_species():
    data = json.loads(json.dumps(BASE))
    data["species"][0]["groups"][0]["query"]["targets"] = ["wolf"]
    assert problems(data) == ["species.bird.groups.0.query.targets.0: unknown species 'wolf'; known: bird"]


def test_all_problems_are_reported_at_once():
    data = json.loads(json.dumps(BASE))
    data["dt"] = 0
    data["species"][0]["count"] = -5
    assert len(problems(data)) == 2


def test_toml_round_trips_to_an_equal_scenario():
    original = load_scenario_config("flock")
    again = validate_scenario(__import__("tomllib").loads(scenario_to_toml(original)))
    # every field compares equal (the private source folder, used to resolve relative
    # mesh paths, is where a config came from, not part of it)
    assert type(again) is type(original)
    assert again.model_dump() == original.model_dump()


def test_overrides_address_list_items_by_name_or_index():
    data = json.loads(json.dumps(BASE))
    apply_override(data, "species.bird.count=250")
    apply_override(data, "species.0.behaviors.wandering.max_speed=9.5")
    apply_override(data, "world.bounds_min=[-5, 0, -5]")
    apply_override(data, "name=renamed")
    s = validate_scenario(data)
    assert s.species[0].count == 250 and s.species[0].behaviors[0].max_speed == 9.5
    assert s.world.bounds_min == (-5, 0, -5) and s.name == "renamed"


def test_a_species_is_named_by_index_only_where_its_name_cannot_stand_for_it():
    data = json.loads(json.dumps(BASE))
    data["species"].append(json.loads(json.dumps(BASE["species"][0])) | {"name": "9 lives", "count": -1})
    data["species"][0]["count"] = -1
    assert problems(data) == [
        "species.bird.count: Input should be greater than or equal to 0",
        "species.1.name: must start with a letter or '_' and contain only letters, digits, '_' or '-'",
        "species.1.count: Input should be greater than or equal to 0",
    ]
    twins = json.loads(json.dumps(BASE))
    twins["species"].append(json.loads(json.dumps(BASE["species"][0])))
    assert problems(twins) == ["species.1.name: duplicate species name 'bird'"]


def test_a_bad_override_is_one_clear_error():
    data = json.loads(json.dumps(BASE))
    with pytest.raises(ConfigError, match="no item named 'wolf'"):
        apply_override(data, "species.wolf.count=3")
    with pytest.raises(ConfigError, match="is not path=value"):
        apply_override(data, "species.0.count")


def test_the_json_schema_lists_every_registered_behaviour():
    text = json.dumps(json_schema())
    for kind in ("wandering", "homing", "cohesion", "alignment", "separation", "flee", "seek", "multi_homing"):
        assert f'"{kind}"' in text


def test_a_missing_file_and_broken_toml_are_clear_errors(tmp_path):
    with pytest.raises(ConfigError, match="no scenario file or built-in named"):
        load_scenario_config(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("name = [unclosed")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_scenario_config(bad)


def test_a_config_error_pickles_whole():
    """It crosses processes (a warming worker, a sweep's) with its problems and its message intact."""
    import pickle

    from starling.errors import ConfigError, Problem

    error = ConfigError([Problem("species.x.count", "must be >= 0"), Problem("dt", "must be > 0")], "f.toml")
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is ConfigError
    assert copy.problems == error.problems and copy.source == "f.toml"
    assert str(copy) == str(error) == error.format()
