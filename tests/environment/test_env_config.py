"""Layers and masks; configuration errors name the field and the reason."""

import pytest
from pydantic import ValidationError

from starling.environment import (
    BUILTIN_LAYERS,
    Environment,
    EnvironmentConfig,
    LayerRegistry,
    UnknownLayerError,
    layer_mask,
)


def test_builtin_layers_have_fixed_bits_and_user_layers_follow():
    assert BUILTIN_LAYERS == ("terrain", "ground", "water", "environment", "grass", "fake_walls")
    assert layer_mask("terrain") == 0b1
    assert layer_mask(["ground", "fake_walls"]) == 0b100010
    reg = LayerRegistry(["rocks", "nests"])
    assert reg.index("rocks") == 6 and reg.index("nests") == 7
    assert layer_mask(["nests", "water"], reg) == (1 << 7) | (1 << 2)
    assert reg.names_in(reg.mask(["rocks", "terrain"])) == ("terrain", "rocks")
    assert layer_mask("all") == 0xFFFFFFFF


def test_unknown_layer_error_names_it_and_lists_the_known_ones():
    with pytest.raises(UnknownLayerError) as info:
        layer_mask(["terrain", "lava"])
    msg = str(info.value)
    assert "'lava'" in msg
    for name in BUILTIN_LAYERS:
        assert name in msg
    reg = LayerRegistry(["rocks"])
    with pytest.raises(UnknownLayerError, match="rocks"):
        reg.mask("rock")


def test_layer_declarations_are_checked():
    with pytest.raises(ValueError, match="declared twice"):
        LayerRegistry(["water"])
    with pytest.raises(ValueError, match="at most 32"):
        LayerRegistry([f"l{i}" for i in range(27)])
    assert len(LayerRegistry([f"l{i}" for i in range(26)])) == 32


def _error(cfg) -> str:
    with pytest.raises(ValidationError) as info:
        EnvironmentConfig.model_validate(cfg)
    return str(info.value)


@pytest.mark.parametrize("shape, field, reason", [
    ({"kind": "sphere", "center": (0, 0, 0), "radius": 0}, "radius", "greater than 0"),
    ({"kind": "sphere", "center": (0, 0, 0), "radius": -1}, "radius", "greater than 0"),
    ({"kind": "box", "center": (0, 0, 0), "half_extents": (1, 0, 1)}, "half_extents", "y is 0.0"),
    ({"kind": "box", "min_corner": (0, 0, 0), "max_corner": (1, -1, 1)}, "max_corner", "inverted"),
    ({"kind": "box", "center": (0, 0, 0)}, "half_extents", "needs both"),
    ({"kind": "capsule", "base": (0, 0, 0), "height": -1, "radius": 1}, "height", "greater than or equal to 0"),
    ({"kind": "cylinder", "base": (0, 0, 0), "height": 0, "radius": 1}, "height", "greater than 0"),
    ({"kind": "cylinder", "base": (0, 0, 0), "height": 1, "radius": 1, "axis": (0, 0, 0)}, "axis", "non-zero"),
    ({"kind": "plane", "normal": (0, 0, 0)}, "normal", "non-zero"),
    ({"kind": "box", "center": (0, 0, 0), "half_extents": (1, 1, 1), "quaternion": (0, 0, 0, 0)}, "quaternion",
     "zero length"),
    ({"kind": "sphere", "center": (0, 0, 0), "radius": 1, "colour": "red"}, "colour", "Extra inputs"),
    ({"kind": "sphere", "center": (0, float("nan"), 0), "radius": 1}, "center", "finite"),
])
def test_degenerate_shapes_are_rejected_naming_the_field_and_reason(shape, field, reason):
    msg = _error({"shapes": [shape]})
    assert field in msg and reason in msg


def test_a_zero_height_capsule_is_a_sphere():
    env = Environment.from_config({"shapes": [{"kind": "capsule", "base": (1, 2, 3), "height": 0, "radius": 0.5}]})
    assert len(env.arrays.sph_r) == 1 and len(env.arrays.cap_r) == 0


def test_shape_with_unknown_layer_names_the_field_and_lists_known_layers():
    msg = _error({"layers": ["rocks"], "shapes": [
        {"kind": "sphere", "center": (0, 0, 0), "radius": 1, "layer": "rocks"},
        {"kind": "sphere", "center": (0, 0, 0), "radius": 1, "layer": "rokcs"},
    ]})
    assert "shapes[1].layer" in msg and "'rokcs'" in msg and "fake_walls" in msg and "rocks" in msg


@pytest.mark.parametrize("cfg, needle", [
    ({"terrain": {"size": (0, 10)}}, "size along x must be > 0"),
    ({"terrain": {"size": (10, 10), "resolution": (1, 5)}}, "resolution along x must be >= 2"),
    ({"terrain": {"size": (10, 10), "pond": {"center": (0, 0), "bottom_radius": 0, "bank_width": 1, "depth": 1}}},
     "bottom_radius"),
    ({"water": [{"surface_height": 0}]}, "exactly one region"),
    ({"water": [{"surface_height": 0, "circle": (0, 0, 1), "rectangle": (0, 0, 1, 1)}]}, "got rectangle, circle"),
    ({"water": [{"surface_height": 0, "rectangle": (0, 0, -1, 1)}]}, "x_max > x_min"),
    ({"water": [{"surface_height": 0, "polygon": [(0, 0), (1, 1), (2, 2)]}]}, "zero area"),
    ({"water": [{"surface_height": 0, "fill_pond": True}]}, "water[0].fill_pond needs a terrain with a pond"),
    ({"meshes": [{"path": "a.obj", "scale": (1, 0, 1)}]}, "scale factors must be > 0"),
    ({"scatter": [{"kind": "trees", "count": 3, "trunk_radius_range": (0.5, 0.1)}]}, "trunk_radius_range"),
    ({"scatter": [{"kind": "rocks", "count": -1}]}, "count"),
])
def test_bad_terrain_water_mesh_and_scatter_configs_name_the_field(cfg, needle):
    assert needle in _error(cfg)


def test_a_full_environment_section_round_trips_through_toml():
    import tomllib

    text = """
layers = ["rocks"]

[terrain]
size = [120.0, 80.0]
resolution = [61, 41]
rim = { height = 12.0, width = 15.0 }
pond = { center = [10.0, -5.0], bottom_radius = 6.0, bank_width = 5.0, depth = 2.0 }
[[terrain.hills]]
center = [-30.0, 10.0]
radius = 20.0
height = 5.0

[[water]]
surface_height = -0.4
fill_pond = true

[[shapes]]
kind = "box"
center = [0.0, 1.0, 20.0]
half_extents = [4.0, 1.0, 0.5]
yaw_pitch_roll_deg = [30.0, 0.0, 0.0]
layer = "rocks"

[[shapes]]
kind = "cylinder"
base = [5.0, 0.0, 5.0]
height = 6.0
radius = 0.3

[[scatter]]
kind = "trees"
count = 10
seed = 4
"""
    cfg = EnvironmentConfig.model_validate(tomllib.loads(text))
    env = Environment.from_config(cfg)
    assert len(env.water) == 1 and env.terrain.shape == (41, 61)
    assert len(env.arrays.box_h) == 1 and int(env.arrays.box_l[0]) == 6
    assert len(env.arrays.cyl_r) == 11  # one declared + ten scattered trunks
    again = EnvironmentConfig.model_validate(cfg.model_dump())
    assert again == cfg
