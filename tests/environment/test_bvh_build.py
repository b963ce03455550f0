"""The BVH builder's Python and its compilation build the same tree; small scenes never compile it."""
import numpy as np
import pytest

from starling.environment import mesh


def _boxes(kind: str, k: int, rng):
    if kind == "random":
        c = rng.uniform(-50.0, 50.0, (k, 3))
        h = rng.uniform(0.1, 3.0, (k, 3))
    elif kind == "grid":  # equal sizes on a lattice: ties in every bin and every split
        side = int(np.ceil(k ** (1 / 3)))
        c = np.stack(np.meshgrid(*[np.arange(side)] * 3, indexing="ij"), -1).reshape(-1, 3)[:k] * 2.0
        h = np.full((k, 3), 0.5)
    else:  # one box over and over: no extent to split along
        c = np.zeros((k, 3))
        h = np.ones((k, 3))
    return c - h, c + h


@pytest.mark.parametrize("kind", ["random", "grid", "same"])
@pytest.mark.parametrize("k", [0, 1, 2, 7, 100, 257, 600])
@pytest.mark.parametrize("leaf", [(2, 4), (4, 8)])
def test_the_builders_python_and_its_compilation_build_the_same_tree(kind, k, leaf):
    rng = np.random.default_rng(k)
    lo, hi = _boxes(kind, k, rng)
    layer = rng.integers(0, 5, k).astype(np.int64)
    interpreted = mesh._build_bvh_kernel.py_func(lo, hi, *leaf)
    compiled = mesh._build_bvh_kernel(lo, hi, *leaf)
    for a, b in zip(interpreted[:5], compiled[:5]):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    assert interpreted[5] == compiled[5]
    masks = mesh._node_masks.py_func(*interpreted[2:5], layer)
    assert np.array_equal(masks, mesh._node_masks(*compiled[2:5], layer))


class _Refused:
    """Stands in for a compiled kernel that must not be called (its Python still can be)."""

    def __init__(self, kernel):
        self.py_func = kernel.py_func

    def __call__(self, *args):
        raise AssertionError("the compiled builder ran")


def test_a_scenes_primitives_are_built_without_compiling_and_a_big_mesh_with_it(monkeypatch):
    monkeypatch.setattr(mesh, "_build_bvh_kernel", _Refused(mesh._build_bvh_kernel))
    monkeypatch.setattr(mesh, "_node_masks", _Refused(mesh._node_masks))
    rng = np.random.default_rng(0)
    lo, hi = _boxes("random", mesh.INTERPRETED_MAX_ITEMS, rng)
    bvh = mesh.build_bvh(lo, hi, np.zeros(len(lo), np.int64))
    assert bvh.n_nodes > 1
    lo, hi = _boxes("random", mesh.INTERPRETED_MAX_ITEMS + 1, rng)
    with pytest.raises(AssertionError, match="compiled builder"):
        mesh.build_bvh(lo, hi, np.zeros(len(lo), np.int64))
