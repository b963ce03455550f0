"""Ray queries (seed 000, 9.5.5): 2D cones, 3D cones, single rays, frames, layout, masks."""

import math

import numpy as np
import pytest
from pydantic import ValidationError

from starling.environment import Environment, UnknownLayerError, cast_rays
from starling.world.layers import LayerRegistry
from starling.steering.queries.rays import (
    RayQuerySpec,
    Rays,
    cone_2d_pattern,
    cone_3d_pattern,
    generate_rays,
)


def _angle_deg(a, b):
    a = a / np.linalg.norm(a, axis=-1, keepdims=True)
    b = b / np.linalg.norm(b, axis=-1, keepdims=True)
    return np.degrees(np.arccos(np.clip(np.sum(a * b, axis=-1), -1, 1)))


def test_cone2d_spreads_rays_evenly_over_the_fov_in_the_ground_plane():
    spec = RayQuerySpec(shape="cone2d", count=7, fov_deg=120, max_distance=6)
    fwd = np.array([[1.0, 0.0, 1.0], [0.0, 0.3, -1.0]])
    rays = generate_rays(spec, np.array([[1, 2, 3], [-4, 0, 5]]), fwd)
    assert rays.origins.shape == (14, 3) and rays.directions.shape == (14, 3) and rays.count == 7
    assert rays.max_distance == 6
    d = rays.directions.reshape(2, 7, 3).astype(np.float64)
    assert np.allclose(d[..., 1], 0.0) and np.allclose(np.linalg.norm(d, axis=-1), 1.0, atol=1e-6)
    for i in range(2):
        heading = fwd[i] * [1, 0, 1]
        angles = _angle_deg(d[i], heading[None])
        assert np.allclose(angles, [60, 40, 20, 0, 20, 40, 60], atol=1e-4)
        # consecutive rays 20 degrees apart, turning one way
        assert np.allclose(_angle_deg(d[i, 1:], d[i, :-1]), 20.0, atol=1e-4)
        turn = np.cross(d[i, :-1], d[i, 1:])[:, 1]
        assert np.all(turn < 0) or np.all(turn > 0)
    assert np.allclose(rays.origins.reshape(2, 7, 3), [[[1, 2, 3]], [[-4, 0, 5]]])


def test_cone2d_stays_horizontal_when_the_animal_banks_or_pitches():
    spec = RayQuerySpec(shape="cone2d", count=5, fov_deg=90)
    fwd = np.array([[0.0, -0.5, 1.0]])
    up = np.array([[0.7, 0.7, 0.2]])
    d = generate_rays(spec, np.zeros((1, 3)), fwd, up).directions
    assert np.allclose(d[:, 1], 0.0)
    assert np.allclose(d[2], [0, 0, 1], atol=1e-6)


def test_full_circle_cone2d_does_not_repeat_a_ray():
    d = cone_2d_pattern(8, 360)
    assert np.allclose(_angle_deg(d, np.roll(d, 1, axis=0)), 45.0)


def test_cone3d_rays_fill_the_cone_evenly_from_axis_to_rim():
    pat = cone_3d_pattern(64, 90)
    theta = np.degrees(np.arccos(pat[:, 2]))
    assert np.isclose(theta[0], 0.0) and np.isclose(theta[-1], 45.0) and np.all(theta <= 45 + 1e-9)
    # equal solid angle per ray: 1 - cos(theta) grows linearly
    assert np.allclose(np.diff(1 - np.cos(np.radians(theta))), (1 - np.cos(np.radians(45))) / 63)
    # no two rays crowd each other
    gaps = _angle_deg(pat[:, None], pat[None]) + np.eye(64) * 1e9
    assert gaps.min() > 3.0


def test_cone3d_in_the_local_frame_turns_with_the_animal():
    spec = RayQuerySpec(shape="cone3d", count=20, fov_deg=60)
    fwd = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    up = np.array([[0.0, 1.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, -1.0]])
    d = generate_rays(spec, np.zeros((3, 3)), fwd, up).directions.reshape(3, 20, 3)
    for i in range(3):
        assert np.all(_angle_deg(d[i], fwd[i][None]) <= 30 + 1e-3)
        assert np.allclose(d[i, 0], fwd[i], atol=1e-6)
    # the same pattern, rotated: the yaw of +90 degrees maps animal 0's rays onto animal 1's
    yaw = np.array([[0, 0, 1], [0, 1, 0], [-1, 0, 0]], float)
    assert np.allclose(d[0] @ yaw.T, d[1], atol=1e-6)


def test_cone3d_straight_down_in_world_space_ignores_the_orientation():
    spec = RayQuerySpec(shape="cone3d", count=9, fov_deg=40, direction=(0, -1, 0), world_space=True, max_distance=30)
    rng = np.random.default_rng(0)
    fwd = rng.normal(size=(4, 3))
    d = generate_rays(spec, rng.normal(size=(4, 3)), fwd).directions.reshape(4, 9, 3)
    assert np.allclose(d, d[:1])
    assert np.all(_angle_deg(d[0], np.array([[0, -1, 0]])) <= 20 + 1e-4)
    assert np.allclose(d[0, 0], [0, -1, 0], atol=1e-6)


def test_single_ray_in_local_and_world_frames_and_the_origin_offset():
    # local +x is up x forward: for an animal facing +x with y up that is -z
    spec = RayQuerySpec(shape="single", direction=(1, 0, 0), origin_offset=(0, 0.5, 1.0))
    rays = generate_rays(spec, np.array([[10.0, 0.0, 0.0]]), np.array([[1.0, 0.0, 0.0]]))
    assert rays.count == 1
    assert np.allclose(rays.directions[0], [0, 0, -1], atol=1e-6)
    assert np.allclose(rays.origins[0], [11.0, 0.5, 0.0], atol=1e-6)
    world = RayQuerySpec(shape="single", direction=(0, 0, 2), world_space=True)
    rays = generate_rays(world, np.zeros((2, 3)), np.array([[1.0, 0, 0], [0, 1.0, 0]]))
    assert np.allclose(rays.directions, [[0, 0, 1], [0, 0, 1]])
    with pytest.raises(ValidationError, match="exactly one ray"):
        RayQuerySpec(shape="single", count=3)


def test_a_vertical_forward_falls_back_to_a_defined_heading():
    spec = RayQuerySpec(shape="cone2d", count=3, fov_deg=90)
    d = generate_rays(spec, np.zeros((2, 3)), np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 0.0]])).directions
    assert np.all(np.isfinite(d)) and np.allclose(np.linalg.norm(d, axis=1), 1.0, atol=1e-6)
    assert np.allclose(d[1], [0, 0, 1], atol=1e-6) and np.allclose(d[4], [0, 0, 1], atol=1e-6)
    spec3 = RayQuerySpec(shape="cone3d", count=4, fov_deg=30)
    d3 = generate_rays(spec3, np.zeros((1, 3)), np.array([[0.0, 1.0, 0.0]])).directions  # up == forward
    assert np.all(np.isfinite(d3)) and np.allclose(d3[0], [0, 1, 0], atol=1e-6)


def test_layer_names_resolve_to_a_mask_and_unknown_ones_are_named():
    spec = RayQuerySpec(layers=["terrain", "rocks"])
    assert spec.mask(LayerRegistry(["rocks"])) == 0b1 | (1 << 6)
    with pytest.raises(UnknownLayerError, match="'rocks'"):
        spec.mask()
    with pytest.raises(ValidationError, match="fov_deg"):
        RayQuerySpec(fov_deg=0)
    with pytest.raises(ValidationError, match="non-zero"):
        RayQuerySpec(direction=(0, 0, 0))


def test_outputs_can_be_preallocated_and_reused():
    spec = RayQuerySpec(count=4, fov_deg=60, max_distance=3.0)
    n = 5000  # the parallel kernel
    rng = np.random.default_rng(2)
    pos = rng.normal(size=(n, 3))
    fwd = rng.normal(size=(n, 3))
    first = generate_rays(spec, pos, fwd)
    buf = Rays(np.empty((n * 4, 3), np.float32), np.empty((n * 4, 3), np.float32), 0.0, 0)
    again = generate_rays(spec, pos, fwd, out=buf, pattern=spec.pattern())
    assert again.origins is buf.origins and again.max_distance == 3.0 and again.count == 4
    assert np.array_equal(first.directions, again.directions)
    small = generate_rays(spec, pos[:10], fwd[:10])
    assert np.array_equal(small.directions, first.directions[:40])  # serial and parallel agree


def test_a_2d_cone_sees_a_wall_ahead_through_the_environment():
    env = Environment.from_config({"shapes": [{"kind": "box", "min_corner": (-10, -1, 5), "max_corner": (10, 3, 6)}]})
    spec = RayQuerySpec(count=5, fov_deg=90, max_distance=10.0, layers=["environment"])
    rays = generate_rays(spec, np.array([[0.0, 1.0, 0.0]]), np.array([[0.0, 0.0, 1.0]]))
    hits = cast_rays(env, rays.origins, rays.directions, rays.max_distance, spec.mask(env.layers))
    angles = np.radians([-45, -22.5, 0, 22.5, 45])
    assert hits.hit.all()
    assert np.allclose(hits.distance, 5.0 / np.cos(angles), atol=1e-5)
    assert np.allclose(hits.normal, [0, 0, -1])
    assert math.isclose(float(hits.distance.reshape(1, 5)[0, 2]), 5.0, abs_tol=1e-6)
