"""What ``import starling`` costs: every command, sweep worker and test process pays it first.

Each test imports Starling in a fresh interpreter, the only place an import can be watched.
"""
import subprocess
import sys

# Counts every compiled function Numba builds or loads from its cache while Starling is imported.
COMPILES = """
import numba.core.dispatcher as dispatcher
compiled = []
original = dispatcher.Dispatcher.compile
def compile(self, sig):
    compiled.append(f"{self.py_func.__module__}.{self.py_func.__qualname__}{sig}")
    return original(self, sig)
dispatcher.Dispatcher.compile = compile
import starling
print("compiled", compiled)
"""

GC_STATE = """
import gc
{before}
import starling
print("enabled", gc.isenabled())
"""


def _python(code: str) -> str:
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    return res.stdout


def test_importing_starling_loads_no_compiled_kernel():
    """Kernels load when a simulation first needs them, never at import: the first load sets up
    Numba's code generator (a fifth of a second), which a command without a simulation
    (``--help``, a sweep's driver, ``validate``) should not pay."""
    out = _python(COMPILES)
    assert "compiled []" in out, out


def test_the_garbage_collector_is_running_after_the_import_as_before_it():
    assert "enabled True" in _python(GC_STATE.format(before=""))
    assert "enabled False" in _python(GC_STATE.format(before="gc.disable()"))
