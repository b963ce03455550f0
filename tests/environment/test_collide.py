"""Collide and slide (seed 000, 7.2.2): sliding, creases, corners, tunnelling, depenetration."""

import numpy as np
import pytest

from starling.environment import Environment, Heightfield
from starling.environment.builders import pasture_config
from starling.environment.collide import BACKOFF, DEFAULT_SKIN_WIDTH, SlideResult, collide_and_slide

R = 0.5
SKIN = DEFAULT_SKIN_WIDTH
REST = R + SKIN * (1 + BACKOFF)  # distance of a resting centre from the surface


def _run(env, p0, v, dt, steps, radius=R, **kw):
    """Positions (steps + 1, 3), velocities (steps, 3) and contacts of one sphere pushed by a constant ``v``."""
    p = np.array([p0], np.float32)
    vel = np.array([v], np.float32)
    traj, vels, contacts = [p[0].astype(np.float64)], [], []
    for _ in range(steps):
        res = collide_and_slide(env, p, vel, dt, radius, **kw)
        p = res.positions.copy()
        traj.append(p[0].astype(np.float64))
        vels.append(res.velocities[0].astype(np.float64))
        contacts.append(int(res.contacts[0]))
    return np.array(traj), np.array(vels), contacts


def _walls_corner():
    # two walls meeting at a right angle: the face x = 1 and the face z = 1
    return Environment.from_config({"shapes": [
        {"kind": "box", "min_corner": (1, -5, -10), "max_corner": (1.5, 5, 10)},
        {"kind": "box", "min_corner": (-10, -5, 1), "max_corner": (10, 5, 1.5)},
    ]})


def test_sphere_driven_into_a_corner_slides_along_the_crease_without_entering_or_jitter():
    env = _walls_corner()
    v = (1.0, 0.5, 0.8)  # into both walls and up along their crease
    dt = 0.05
    traj, vels, _ = _run(env, (0.0, 0.0, 0.0), v, dt, 60)
    assert not env.is_inside_solid(traj, radius=R).any()
    # monotonic in every coordinate: no bouncing between the walls
    steps = np.diff(traj, axis=0)
    assert np.all(steps >= -1e-6)
    # pinned in the corner, a skin width from both walls ...
    assert np.allclose(traj[-1, [0, 2]], 1 - REST, atol=1e-5)
    # ... while still sliding up the crease at the velocity's crease component
    assert np.allclose(steps[-20:, 1], v[1] * dt, atol=1e-5)
    assert np.allclose(steps[-20:, [0, 2]], 0.0, atol=1e-6)
    assert np.allclose(vels[-1], [0.0, v[1], 0.0], atol=1e-6)


def test_sphere_in_an_acute_v_corner_ends_at_the_apex_and_stays_there():
    # two walls at +-30 degrees from +z meeting at the apex (0, 0, 10); the sphere comes from -z, slightly off axis
    half = (0.25, 5.0, 8.0)
    walls = []
    for sign in (-1, 1):
        yaw = sign * 30.0
        direction = np.array([np.sin(np.radians(yaw)), 0.0, np.cos(np.radians(yaw))])
        outward = np.array([np.cos(np.radians(yaw)), 0.0, -np.sin(np.radians(yaw))]) * -sign
        center = np.array([0.0, 0.0, 10.0]) - direction * half[2] + outward * half[0]
        walls.append({"kind": "box", "center": tuple(center), "half_extents": half, "yaw_pitch_roll_deg": (yaw, 0, 0)})
    env = Environment.from_config({"shapes": walls})
    traj, vels, _ = _run(env, (0.3, 0.0, 3.0), (0.2, 0.0, 2.0), 0.1, 80)
    assert not env.is_inside_solid(traj, radius=R).any()
    assert np.all(np.diff(traj[:, 2]) >= -1e-6)  # never pushed back along the corridor
    final = traj[-1]
    # at the apex: on the axis (up to the backoff) and about a skin width from both walls
    assert abs(final[0]) < SKIN
    gap = (10 - final[2]) * np.sin(np.radians(30))  # distance from the walls were it exactly on the axis
    assert R + SKIN - 1e-3 <= gap <= REST + 1e-3
    assert not env.is_inside_solid(final[None], radius=R + SKIN / 2)[0]
    assert np.allclose(traj[-10:], final, atol=1e-6)  # at rest, no jitter
    assert np.allclose(vels[-1], 0.0, atol=1e-6)


def test_sliding_along_a_wall_keeps_the_tangential_motion():
    env = Environment.from_config({"shapes": [{"kind": "box", "min_corner": (1, -5, -50), "max_corner": (2, 5, 50)}]})
    v = (2.0, 0.0, 3.0)
    traj, vels, contacts = _run(env, (0.0, 0.0, 0.0), v, 0.1, 12)
    touching = np.isclose(traj[:, 0], 1 - REST, atol=1e-5)
    assert touching[-8:].all()
    assert np.allclose(np.diff(traj[-8:, 2]), 0.3, atol=1e-5)
    assert np.allclose(vels[-1], [0.0, 0.0, 3.0], atol=1e-6)
    assert contacts[-1] == 1


@pytest.mark.parametrize("direction", [(0.0, 0.0, 1.0), (0.3, 0.2, 1.0), (0.99, 0.0, 0.14)])
def test_a_fast_sphere_does_not_tunnel_through_a_thin_box(direction):
    env = Environment.from_config({"shapes": [
        {"kind": "box", "center": (0, 0, 5), "half_extents": (5000, 5000, 0.005), "yaw_pitch_roll_deg": (0, 0, 0)},
    ]})
    d = np.array(direction) / np.linalg.norm(direction)
    radius = 0.1
    traj, _, _ = _run(env, (0.0, 0.0, 0.0), tuple(d * 400.0), 0.05, 5, radius=radius)  # 20 m per step
    assert np.all(traj[:, 2] <= 5 - 0.005 - radius + 1e-5)
    assert not env.is_inside_solid(traj, radius=radius).any()


def test_a_fast_sphere_does_not_tunnel_through_a_single_mesh_triangle_or_the_terrain():
    quad = np.array([[[-50, -50, 3], [50, -50, 3], [0, 60, 3]]], dtype=np.float64)
    terrain = Heightfield.from_heights(np.zeros((11, 11)), -50, -50, 50, 50)
    env = Environment.from_parts(triangles=quad, terrain=terrain)
    radius = 0.2
    traj, _, _ = _run(env, (0.0, 1.0, 0.0), (5.0, 0.0, 300.0), 0.1, 3, radius=radius)
    assert np.all(traj[:, 2] <= 3 - radius + 1e-5)
    traj, _, _ = _run(env, (0.0, 1.0, -10.0), (30.0, -500.0, 0.0), 0.1, 3, radius=radius)
    assert np.all(traj[:, 1] >= radius + SKIN - 1e-5)


def test_a_sphere_starting_inside_a_box_is_pushed_out_through_the_nearest_face():
    env = Environment.from_config({"shapes": [{"kind": "box", "min_corner": (-5, -5, -5), "max_corner": (5, 0, 5)}]})
    res = collide_and_slide(env, np.array([[1.0, -0.3, 2.0]]), np.zeros((1, 3)), 0.1, R)
    assert np.allclose(res.positions[0], [1.0, REST, 2.0], atol=1e-5)
    # a sphere merely overlapping a plane is pushed out along its normal
    env = Environment.from_config({"shapes": [{"kind": "plane", "point": (0, 0, 0), "normal": (0, 1, 1)}]})
    res = collide_and_slide(env, np.array([[0.0, 0.1, 0.0]]), np.zeros((1, 3)), 0.1, R)
    n = np.array([0, 1, 1]) / np.sqrt(2)
    assert np.isclose(res.positions[0] @ n, REST, atol=1e-5)


def test_sliding_over_flat_triangulated_ground_never_catches_on_internal_edges():
    terrain = Heightfield.from_heights(np.zeros((41, 41)), -20, -20, 20, 20)
    env = Environment.from_parts(terrain=terrain)
    v = (3.0, -0.5, 2.0)  # pressing into the ground while moving across many cell edges and diagonals
    dt = 0.05
    traj, vels, _ = _run(env, (-10.0, REST, -10.0), v, dt, 100)
    steps = np.diff(traj, axis=0)
    assert np.allclose(steps[:, 0], v[0] * dt, atol=1e-5)
    assert np.allclose(steps[:, 2], v[2] * dt, atol=1e-5)
    assert np.allclose(traj[:, 1], REST, atol=1e-5)
    assert np.allclose(vels[-1], [3.0, 0.0, 2.0], atol=1e-6)


def test_walking_over_hilly_terrain_never_sinks_below_the_surface():
    cfg = {"terrain": {"size": (60, 60), "resolution": (61, 61),
                       "hills": [{"center": (5, 5), "radius": 15, "height": 4}, {"center": (-10, 8), "radius": 8,
                                                                                "height": -2}]}}
    env = Environment.from_config(cfg)
    p0 = (-20.0, float(env.height_at(-20.0, -15.0)) + 1.0, -15.0)
    traj, _, _ = _run(env, p0, (2.0, -3.0, 1.5), 0.05, 300)
    assert not env.is_inside_solid(traj, radius=R).any()
    gap = traj[:, 1] - env.height_at(traj[:, 0], traj[:, 2])
    assert gap.min() >= R - 1e-4  # never closer vertically than the radius (the slope makes it larger)
    assert traj[-1, 0] - traj[0, 0] > 20  # it kept going over the hills, not stuck


def test_batched_kernels_agree_and_no_sphere_ever_enters_a_solid_in_a_busy_pasture():
    env = Environment.from_config(pasture_config(size=96, resolution=97, obstacles=150, seed=2))
    rng = np.random.default_rng(0)
    n = 3000
    xz = rng.uniform(-35, 35, (n, 2))
    y = env.height_at(xz[:, 0], xz[:, 1]) + rng.uniform(0.3, 3.0, n)
    pos = np.column_stack([xz[:, 0], y, xz[:, 1]]).astype(np.float32)
    vel = rng.normal(scale=4.0, size=(n, 3)).astype(np.float32)
    radius = rng.uniform(0.2, 0.6, n)
    start_inside = env.is_inside_solid(pos, radius=radius)
    a = collide_and_slide(env, pos, vel, 0.1, radius, parallel=False)
    b = collide_and_slide(env, pos, vel, 0.1, radius, parallel=True)
    assert np.array_equal(a.positions, b.positions) and np.array_equal(a.velocities, b.velocities)
    assert np.array_equal(a.contacts, b.contacts)
    clear = ~env.is_inside_solid(pos, radius=radius + SKIN)  # not even within the skin of a surface
    moved_freely = (a.contacts == 0) & clear
    assert np.allclose(a.positions[moved_freely], pos[moved_freely] + vel[moved_freely] * 0.1, atol=1e-4)
    # random spawns overlap obstacles; depenetration frees nearly all of them in one step (a sphere wedged
    # between two surfaces closer than its diameter cannot be freed by pushing along their normals)
    end_inside = env.is_inside_solid(a.positions, radius=radius)
    assert start_inside.sum() > 100 and end_inside.sum() <= 0.02 * start_inside.sum()
    assert not (end_inside & ~start_inside).any()
    # then, under random pushes, nobody outside ever gets in
    p = a.positions.copy()
    for _ in range(15):
        res = collide_and_slide(env, p, rng.normal(scale=6.0, size=(n, 3)).astype(np.float32), 0.1, radius)
        was_inside = env.is_inside_solid(p, radius=radius)
        assert not (env.is_inside_solid(res.positions, radius=radius) & ~was_inside).any()
        p = res.positions.copy()


def test_inactive_rows_pass_through_and_outputs_can_be_reused_in_place():
    env = Environment.from_config({"shapes": [{"kind": "plane"}]})
    pos = np.array([[0, 1, 0], [0, 1, 0]], np.float32)
    vel = np.array([[0, -100, 0], [0, -100, 0]], np.float32)
    res = collide_and_slide(env, pos, vel, 0.1, R, active=np.array([True, False]))
    assert np.allclose(res.positions[0], [0, REST, 0], atol=1e-6)
    assert np.allclose(res.positions[1], [0, 1, 0]) and np.allclose(res.velocities[1], [0, -100, 0])
    out = SlideResult(pos, vel, np.zeros(2, np.int8))
    collide_and_slide(env, pos, vel, 0.1, R, out=out)
    assert np.allclose(pos[:, 1], REST, atol=1e-6) and np.allclose(vel, 0.0)
    with pytest.raises(ValueError, match="radius"):
        collide_and_slide(env, pos, vel, 0.1, np.ones(3))


def test_no_nan_ever_leaves_collide_and_slide():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    env = Environment.from_config(pasture_config(size=64, resolution=33, obstacles=40, seed=4))
    coord = st.floats(-30, 30, allow_nan=False, width=32)
    vel = st.floats(-100, 100, allow_nan=False, width=32)

    @settings(max_examples=50, deadline=None)
    @given(st.lists(st.tuples(coord, st.floats(-5, 20, allow_nan=False, width=32), coord, vel, vel, vel),
                    min_size=1, max_size=12), st.floats(0, 0.5), st.floats(0.05, 1.0))
    def check(rows, dt, radius):
        a = np.array(rows, np.float32)
        res = collide_and_slide(env, a[:, :3], a[:, 3:], dt, radius)
        assert np.isfinite(res.positions).all() and np.isfinite(res.velocities).all()
        assert np.all(res.contacts >= 0) and np.all(res.contacts <= 3)

    check()


def test_spheres_far_from_every_solid_move_exactly_as_collide_one_moves_them():
    # the batched kernel skips collide_one for a sphere whose swept box misses every masked solid's
    # bounds (a bird high in the air); collide_one itself, called sphere by sphere, is the oracle
    from numba import njit

    from starling.environment.casting import solids, stack_size
    from starling.environment.collide import collide_one

    @njit
    def one_by_one(g, pos, vel, dt, radius, skin, mask):
        geo = solids(g)
        st_n = np.empty(2 * stack_size(g), np.int32)
        st_t = np.empty(2 * stack_size(g))
        out = np.empty((pos.shape[0], 7))
        for k in range(pos.shape[0]):
            px, py, pz, vx, vy, vz, c = collide_one(
                geo, np.float64(pos[k, 0]), np.float64(pos[k, 1]), np.float64(pos[k, 2]), np.float64(vel[k, 0]),
                np.float64(vel[k, 1]), np.float64(vel[k, 2]), dt, radius, skin, mask, st_n, st_t)
            out[k, 0], out[k, 1], out[k, 2], out[k, 3], out[k, 4], out[k, 5], out[k, 6] = px, py, pz, vx, vy, vz, c
        return out

    env = Environment.from_config(pasture_config(size=64, resolution=33, obstacles=40, seed=4))
    top = float(env.arrays.ter_f[6])
    rng = np.random.default_rng(3)
    n = 4000
    pos = np.column_stack([rng.uniform(-40, 40, n), rng.uniform(top - 6, top + 12, n),
                           rng.uniform(-40, 40, n)]).astype(np.float32)
    vel = rng.normal(scale=5.0, size=(n, 3)).astype(np.float32)
    vel[:50] = 0.0  # standing still
    vel[50:100] = np.float32(1e-14)  # a move too short for collide_one to make
    # right above the terrain's highest vertex, closer than radius + skin (collide_one pushes them
    # out), or just beyond (free), or moving down onto it
    a = env.arrays
    j, i = np.unravel_index(np.argmax(a.ter_h), a.ter_h.shape)
    pos[100:400, 0] = np.float32(a.ter_f[1] + i * a.ter_f[3])
    pos[100:400, 2] = np.float32(a.ter_f[2] + j * a.ter_f[4])
    pos[100:400, 1] = np.float32(top) + np.linspace(0.3, 0.33, 300, dtype=np.float32)
    vel[100:200] = 0.0
    vel[200:300] = np.float32([0.0, -0.05, 0.0])
    for mask in (0xFFFFFFFF, 0, 1 << int(env.arrays.ter_f[7])):
        for dt in (0.1, 0.0):
            got = collide_and_slide(env, pos, vel, dt, 0.3, mask, SKIN, parallel=False)
            want = one_by_one(env.arrays, pos, vel, dt, 0.3, SKIN, np.int64(mask))
            np.testing.assert_array_equal(got.positions, want[:, :3].astype(np.float32))
            np.testing.assert_array_equal(got.velocities, want[:, 3:6].astype(np.float32))
            np.testing.assert_array_equal(got.contacts, want[:, 6].astype(np.int8))
    assert (got.contacts == 0).sum() > n // 4  # many of them free, so the shortcut was taken


@pytest.mark.parametrize("wrap", [False, True])
def test_the_body_step_in_one_kernel_is_the_numpy_passes_around_collide_and_slide_bit_for_bit(wrap):
    """``slide_moves`` (the environment system's serial step) against what it replaced: the move
    as ``pos - start`` (its minimum image on a wrapping box), over dt, swept by ``collide_and_slide``,
    then the positions and the velocities of the spheres that touched written back."""
    from starling.environment.collide import slide_moves
    from starling.world.layers import ALL_LAYERS

    env = Environment.from_config(pasture_config(size=96, resolution=97, obstacles=150, seed=5))
    rng = np.random.default_rng(7)
    n, dt, radius = 2000, 0.1, 0.4
    xz = rng.uniform(-35, 35, (n, 2))
    y = env.height_at(xz[:, 0], xz[:, 1]) + rng.uniform(0.2, 2.0, n)
    start = np.column_stack([xz[:, 0], y, xz[:, 1]]).astype(np.float32)
    size = np.float32([80.0, 60.0, 80.0])
    # where the world wraps, a few animals crossed a seam during the move (their plain offset is a period off)
    step = rng.normal(scale=0.8, size=(n, 3)).astype(np.float32)
    crossed = rng.random(n) < 0.1
    pos = start + step + (np.where(crossed[:, None], size * rng.choice([-1, 1], (n, 3)), 0).astype(np.float32)
                          if wrap else 0)
    vel = rng.normal(scale=3.0, size=(n, 3)).astype(np.float32)
    move = pos - start
    if wrap:
        move -= size * np.round(move / size)
    want = collide_and_slide(env, start, move / np.float32(dt), dt, radius, ALL_LAYERS, SKIN, parallel=False)
    want_pos = want.positions.copy()
    want_vel = vel.copy()
    touched = want.contacts > 0
    want_vel[touched] = want.velocities[touched]
    got_pos, got_vel = pos.copy(), vel.copy()
    out = SlideResult(np.zeros((n, 3), np.float32), np.zeros((n, 3), np.float32), np.zeros(n, np.int8))
    slide_moves(env.arrays, got_pos, got_vel, start, float(dt), np.float32(dt), wrap,
                size if wrap else np.zeros(3, np.float32), np.full(1, radius), SKIN, np.int64(ALL_LAYERS),
                np.ones(1, np.bool_), np.zeros((n, 3), np.float32), out.positions, out.velocities, out.contacts)
    assert touched.sum() > 50 and (~touched).sum() > 50  # both kinds of rows are in the comparison
    np.testing.assert_array_equal(got_pos, want_pos)
    np.testing.assert_array_equal(got_vel, want_vel)
    np.testing.assert_array_equal(out.contacts, want.contacts)
