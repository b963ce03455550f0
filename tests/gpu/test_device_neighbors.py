"""The GPU's neighbour query finds exactly the CPU's neighbours (the brute-force oracle, the CPU grid)."""
import numpy as np
import pytest
from numba import cuda, njit

from starling.cuda import neighbors as dn
from starling.cuda.stepper import kernel_for
from starling.steering.queries import brute
from starling.steering.queries.candidates import query_thresholds
from starling.steering.queries.neighbors import NeighborQuerySpec, find_neighbors

knn_cpu = njit(cache=False)(dn.knn_range)


def _case(rng, n, wrap):
    side = np.array([20.0, rng.choice([1.0, 20.0]), 15.0])
    pos = (rng.uniform(0, 1, (n, 3)) * side).astype(np.float32)
    if not wrap:  # some animals outside the bounds: they share the edge cells
        pos = (pos * 1.3 - 0.15 * side).astype(np.float32)
    fwd = rng.normal(size=(n, 3)).astype(np.float32)
    fwd /= np.linalg.norm(fwd, axis=1)[:, None]
    fwd[::17] = 0.0  # a zero forward sees all around
    box = side.astype(np.float32) if wrap else np.zeros(3, np.float32)
    return side, pos, fwd, box


def _brute(pos, fwd, r, fov, k, box, wrap):
    n = pos.shape[0]
    out = (np.zeros((n, k), np.int32), np.zeros((n, k), np.float32), np.zeros(n, np.int32), np.zeros(n, np.int32))
    brute.query(pos, fwd, pos, r, fov, k, box if wrap else None, True, *out)
    return out


def _host_grid(pos, r, side, box):
    origin, inverse, dims = dn.grid_shape(r, [0, 0, 0], side, box, pos.shape[0])
    cells = np.zeros(pos.shape[0], np.int64)
    for i, p in enumerate(pos):
        c = [min(max(int(np.floor((p[a] - origin[a]) * inverse[a])), 0), dims[a] - 1) for a in range(3)]
        cells[i] = (c[2] * dims[1] + c[1]) * dims[0] + c[0]
    order = np.argsort(cells, kind="stable").astype(np.int32)
    start = np.concatenate([[0], np.cumsum(np.bincount(cells, minlength=int(np.prod(dims))))]).astype(np.int32)
    return origin, inverse, dims, order, start


@pytest.mark.parametrize("seed", range(12))
def test_the_query_kernel_equals_the_brute_force_oracle(seed):
    # the kernel's own source compiled for the CPU: quick, and the same source the GPU runs
    rng = np.random.default_rng(seed)
    wrap = seed % 2 == 0
    n = int(rng.integers(1, 300))
    side, pos, fwd, box = _case(rng, n, wrap)
    r = float(rng.uniform(0.5, 4.0))
    k = int(rng.integers(1, 12))
    fov = float(rng.choice([360.0, 270.0, 120.0]))
    origin, inverse, dims, order, start = _host_grid(pos, r, side, box)
    r2, cos_limit, sees_all = query_thresholds(r, fov)
    got = (np.zeros((n, k), np.int32), np.zeros((n, k), np.float32), np.zeros(n, np.int32), np.zeros(n, np.int32))
    knn_cpu(0, n, pos, fwd, pos[order].copy(), order, start, origin, inverse, dims, box, r2, cos_limit, sees_all,
            True, k, *got)
    for a, b in zip(got, _brute(pos, fwd, r, fov, k, box, wrap)):
        np.testing.assert_array_equal(a, b)


def test_a_pair_exactly_one_radius_apart_is_found_across_a_cell_boundary():
    pos = np.array([[0.5, 0.5, 0.5], [1.5, 0.5, 0.5], [2.5, 0.5, 0.5]], np.float32)  # exactly 1 m apart
    fwd = np.zeros_like(pos)
    side = np.array([9.0, 1.0, 1.0])
    box = np.zeros(3, np.float32)
    origin, inverse, dims, order, start = _host_grid(pos, 1.0, side, box)
    r2, cos_limit, sees_all = query_thresholds(1.0, 360.0)
    got = (np.zeros((3, 2), np.int32), np.zeros((3, 2), np.float32), np.zeros(3, np.int32), np.zeros(3, np.int32))
    knn_cpu(0, 3, pos, fwd, pos[order].copy(), order, start, origin, inverse, dims, box, r2, cos_limit, sees_all,
            True, 2, *got)
    for a, b in zip(got, _brute(pos, fwd, 1.0, 360.0, 2, box, False)):
        np.testing.assert_array_equal(a, b)
    assert got[2].tolist() == [1, 2, 1]


@pytest.mark.parametrize("serial_scan", [True, False])
def test_the_device_grid_sorts_by_cell_and_its_query_equals_the_cpu_grid(serial_scan, monkeypatch):
    if not serial_scan:  # the three-kernel block scan, as grids of over SERIAL_SCAN_CELLS cells use it
        monkeypatch.setattr(dn, "SERIAL_SCAN_CELLS", 0)
    rng = np.random.default_rng(5)
    n = 150
    side, pos, fwd, box = _case(rng, n, wrap=True)
    r, k, fov = 2.5, 6, 270.0
    d_box = cuda.to_device(box)
    grid = dn.DeviceGrid(d_box)
    d_pos = cuda.to_device(pos)
    grid.build(d_pos, r, [0, 0, 0], side, box)
    origin, inverse, dims, order, start = _host_grid(pos, r, side, box)
    assert grid.cells == int(np.prod(dims)) > 64 or serial_scan
    np.testing.assert_array_equal(grid.start.copy_to_host(), start)  # the scan
    got_order = grid.order.copy_to_host()[:n]
    for c in range(grid.cells):  # the scatter: each cell's animals, in any order
        assert sorted(got_order[start[c]:start[c + 1]]) == sorted(order[start[c]:start[c + 1]])
    np.testing.assert_array_equal(grid.positions.copy_to_host()[:n], pos[got_order])
    out = [cuda.device_array((n, k), np.int32), cuda.device_array((n, k), np.float32),
           cuda.device_array(n, np.int32), cuda.device_array(n, np.int32)]
    kernel_for(dn.knn_range)[(n + 31) // 32, 32](0, n, d_pos, cuda.to_device(fwd), *grid.query_args(),
                                                   *query_thresholds(r, fov), True, k, *out)
    spec = NeighborQuerySpec(max_distance=r, k=k, fov_deg=fov)
    expected = find_neighbors(pos, fwd, pos, spec, exclude_self=True, box=box)
    np.testing.assert_array_equal(out[0].copy_to_host(), expected.index)
    np.testing.assert_array_equal(out[1].copy_to_host(), expected.distance)
    np.testing.assert_array_equal(out[2].copy_to_host(), expected.count)
    np.testing.assert_array_equal(out[3].copy_to_host(), expected.overflow)


def test_the_grid_keeps_its_cells_within_a_few_per_target():
    origin, inverse, dims = dn.grid_shape(0.5, [0, 0, 0], [1000.0, 1000.0, 1000.0], np.zeros(3, np.float32), 100)
    assert int(np.prod(dims)) <= max(64, dn.CELLS_PER_TARGET * 100)
    assert np.all(1.0 / inverse >= 0.5)  # cells at least one radius wide
    origin, inverse, dims = dn.grid_shape(5.0, [0, 0, 0], [100.0, 10.0, 100.0], np.array([100, 10, 100], np.float32),
                                          10_000)
    assert dims.tolist() == [19, 1, 19]  # a wrapping axis is divided evenly, cells a hair over one radius
