"""The kernel cache: STARLING_CACHE_DIR moves it, and damaged cache files heal themselves.

Real processes on a private cache folder: a run fills the cache, a cached run shows
which files every run reads, some of those are truncated or overwritten with random
bytes, and the next run must succeed, say once per damaged kernel that it rebuilds it,
and leave a cache the run after reads silently.
"""
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
from numba.core import config

from starling import kernel_cache

RUN = """
import starling
from starling.config import validate_scenario
data = {"name": "tiny", "seed": 1, "species": [{"name": "bird", "count": 30, "mover": {"kind": "free", "max_speed": 5},
        "groups": [{"query": {"max_distance": 5, "k": 4}, "behaviors": [{"kind": "cohesion"}, {"kind": "separation"}]}],
        "behaviors": [{"kind": "wandering"}]}]}
sim = starling.Simulation(validate_scenario(data))
sim.step(3)
print("result", sim.population("bird").position.tobytes().hex())
"""
NOTICE = re.compile(r"^starling: kernel cache for '(\w+)' was damaged; rebuilding it$")


def _run(folder: Path, debug: bool = False):
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "NUMBA_DEBUG_CACHE")}
    env.update(STARLING_CACHE_DIR=str(folder), NUMBA_NUM_THREADS="1")
    if debug:
        env["NUMBA_DEBUG_CACHE"] = "1"  # Numba prints every cache file it loads or saves
    res = subprocess.run([sys.executable, "-c", RUN], env=env, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    result = [line for line in res.stdout.splitlines() if line.startswith("result ")]
    return result[-1], res.stdout, res.stderr


def _loaded(stdout: str, what: str) -> list[Path]:
    return sorted({Path(p) for p in re.findall(rf"\[cache\] {what} loaded from '([^']+)'", stdout)})


def _name(path: Path) -> str:
    """The kernel a cache file belongs to: ``flocking.cohesion-35.py311.1.nbc`` → ``cohesion``."""
    return path.name.rsplit("-", 1)[0].split(".", 1)[1]


def test_kernel_name_is_read_from_numbas_file_names():
    assert kernel_cache._kernel_name("/c/neighbor_ab/flocking.cohesion-35.py311.nbi") == "cohesion"
    assert kernel_cache._kernel_name("flocking.cohesion-35.py311.12.nbc") == "cohesion"
    assert kernel_cache._kernel_name("movers.FreeMover.step-140.py311.nbi") == "FreeMover.step"


def test_starling_cache_dir_sets_numbas_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("STARLING_CACHE_DIR", str(tmp_path / "k"))
    monkeypatch.setenv("NUMBA_CACHE_DIR", "/elsewhere")
    monkeypatch.setattr(config, "CACHE_DIR", config.CACHE_DIR)  # restored after the test
    assert kernel_cache.apply_cache_dir() == str(tmp_path / "k")
    assert os.environ["NUMBA_CACHE_DIR"] == str(tmp_path / "k") == config.CACHE_DIR == kernel_cache.cache_dir()
    monkeypatch.delenv("STARLING_CACHE_DIR")
    assert kernel_cache.apply_cache_dir() is None  # unset: Numba's own setting stays


def test_a_damaged_kernel_cache_is_rebuilt_once_and_then_used(tmp_path):
    folder = tmp_path / "kernels"
    first, _, err = _run(folder)
    assert "starling:" not in err
    index_files = sorted(folder.rglob("*.nbi"))
    assert any(_name(p) == "cohesion" for p in index_files)  # the cache really moved to the folder

    # a cached run: silent, compiles nothing, and tells which files every run reads
    again, out, err = _run(folder, debug=True)
    assert again == first and "starling:" not in err and "data saved" not in out
    indexes, data = _loaded(out, "index"), _loaded(out, "data")
    assert len(indexes) >= 4 and len(data) >= 4

    rng = np.random.default_rng(0)
    cohesion = next(p for p in indexes if _name(p) == "cohesion")
    others = [p for p in indexes if p != cohesion]
    picks = {
        "empty": [cohesion],
        "truncate": [others[0], *data[:2]],
        "garble": [others[1], *data[-2:]],
    }
    damaged = set()
    for how, paths in picks.items():
        for p in paths:
            size = p.stat().st_size
            if how == "empty":
                p.write_bytes(b"")
            elif how == "truncate":
                p.write_bytes(p.read_bytes()[: size // 2])
            else:
                p.write_bytes(rng.integers(0, 256, size, dtype=np.uint8).tobytes())
            damaged.add(_name(p))

    healed, _, err = _run(folder)
    assert healed == first
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("starling:")]
    names = [NOTICE.match(line).group(1) for line in lines]
    assert sorted(names) == sorted(damaged)  # one line per damaged kernel, each named
    assert "cohesion" in names

    # the healed cache is used silently: everything loads, nothing is compiled or saved
    last, out, err = _run(folder, debug=True)
    assert last == first and "starling:" not in err
    assert "data saved" not in out and "index saved" not in out
    assert sorted(map(_name, _loaded(out, "data"))) == sorted(map(_name, data))


HELPER = "from numba import njit\n\n\n@njit(cache=True)\ndef value():\n    return {}\n"
KERNEL = """from numba import njit
from .helper import value


@njit(cache=True)
def kernel():
    return value() * 10
"""
USE = """
import starling  # before the package: Starling's cache keys are installed on import
from helperpkg.kernel import kernel
print(kernel(), sum(kernel.stats.cache_hits.values()))
"""


def test_a_kernel_compiles_again_when_a_helper_in_another_file_changes(tmp_path):
    # Numba alone keys a kernel's cache by the kernel's own file: after the helper's file
    # changes, the cached kernel would still return the old helper's value (10, not 20).
    package = tmp_path / "helperpkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "helper.py").write_text(HELPER.format(1))
    (package / "kernel.py").write_text(KERNEL)
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    src = str(Path(kernel_cache.__file__).resolve().parents[1])
    env.update(STARLING_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=os.pathsep.join([str(tmp_path), src]))

    def run():
        res = subprocess.run([sys.executable, "-c", USE], env=env, capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stderr[-3000:]
        value, hits = res.stdout.split()
        return int(value), int(hits)

    assert run() == (10, 0)  # compiled and cached
    assert run() == (10, 1)  # from the cache
    (package / "helper.py").write_text(HELPER.format(2))
    assert run() == (20, 0)  # the helper changed: compiled again, not the stale entry
    assert run() == (20, 1)


def test_the_dependency_stamp_follows_helpers_through_helpers():
    from starling.motion import constant_speed

    # _constant_range -> move_along (heading.py) -> wrap_coordinate (movers.py); normalize3 (vecmath.py)
    files = [name for name, _ in kernel_cache.dependency_stamp(constant_speed._constant_range.py_func)]
    assert files == ["heading.py", "movers.py", "vecmath.py"]


TWICE = '''
from numba import njit


@njit(cache=True)
def twice(x):
    return x * 2
'''


def _python(code: str, folder: Path, cwd: Path) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "NUMBA_DEBUG_CACHE")}
    env.update(STARLING_CACHE_DIR=str(folder))
    res = subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    return res.stdout.strip()


def test_an_entry_holding_another_signatures_code_is_compiled_again(tmp_path):
    """Two saves at once could once leave a signature's index entry naming another signature's
    data file; such an entry is not loaded (int code for a float call would misread it)."""
    (tmp_path / "twice_mod.py").write_text(TWICE)
    folder = tmp_path / "kernels"
    fill = "import starling, twice_mod; print(twice_mod.twice(2), twice_mod.twice(2.5))"
    assert _python(fill, folder, tmp_path) == "4 5.0"
    data = sorted(folder.rglob("*twice*.nbc"))
    assert len(data) == 2
    first, second = (p.read_bytes() for p in data)
    data[0].write_bytes(second)  # each signature's entry now names the other's code
    data[1].write_bytes(first)
    call = "import starling, twice_mod; r = twice_mod.twice(2); print(type(r).__name__, r)"
    assert _python(call, folder, tmp_path) == "int 4"


LOCK_PROBE = """
import fcntl, sys
f = open(sys.argv[1], "a+b")
try:
    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    print("free")
except BlockingIOError:
    print("held")
"""


def test_a_kernel_is_compiled_and_saved_under_its_lock(tmp_path):
    """While a process compiles a kernel it holds ``<index>.nbi.lock``: another process that
    wants the kernel waits, then loads the entry instead of compiling it again. Seen from a
    probe run at the compilation's start (a Numba event); afterwards the lock is free."""
    (tmp_path / "twice_mod.py").write_text(TWICE)
    (tmp_path / "probe.py").write_text(LOCK_PROBE)
    folder = tmp_path / "kernels"
    code = """
import os, subprocess, sys
import starling, twice_mod
from numba.core import event

seen = []

class Probe(event.Listener):
    def on_start(self, ev):
        if ev.data["dispatcher"].py_func.__name__ == "twice":
            index = ev.data["dispatcher"]._cache._cache_file._index_path
            seen.append(subprocess.run([sys.executable, "probe.py", index + ".lock"],
                                       capture_output=True, text=True).stdout.strip())

    def on_end(self, ev):
        pass

event.register("numba:compile", Probe())
twice_mod.twice(2)
index = twice_mod.twice._cache._cache_file._index_path
after = subprocess.run([sys.executable, "probe.py", index + ".lock"], capture_output=True, text=True).stdout.strip()
print(seen, after)
"""
    assert _python(code, folder, tmp_path) == "['held'] free"
