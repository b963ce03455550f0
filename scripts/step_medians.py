"""Step medians of built-in scenes, for comparing two versions of Starling on a drifting machine.

Usage: PYTHONPATH=src .venv/bin/python scripts/step_medians.py vicsek,couzin,lagoon [STEPS]

Each scene is built (``record_debug=False``), warmed for 100 steps, then timed one step at
a time for STEPS steps (default 400); prints the median of each, in ms, as JSON. To compare
two commits, check the older one out in a worktree and run this script in each,
alternating, several rounds: the 2-core reference machine's speed drifts by tens of percent
within minutes, so only alternating runs compare (docs/performance.md).
"""
import sys, time, json
from starling.config import load_scenario_config
from starling.simulation import Simulation
out = {}
for name in sys.argv[1].split(","):
    sim = Simulation(load_scenario_config(name), record_debug=False); sim.step(100)
    ts = []
    for _ in range(int(sys.argv[2]) if len(sys.argv) > 2 else 400):
        t = time.perf_counter(); sim.step(1); ts.append(time.perf_counter() - t)
    ts.sort(); out[name] = round(ts[len(ts)//2]*1e3, 3)
print(json.dumps(out))
