"""Starling: realtime, realistic and interactive simulation of animal flocking and ecosystems.

The public API::

    import starling
    sim = starling.load_scenario("flock", seed=1)
    sim.step(100)
    birds = sim.population("bird")      # birds.position, birds.velocity, ...

Extending: :func:`starling.behavior` registers a new behaviour (see docs/extending.md).
"""
import gc as _gc

__version__ = "0.1.0"

__all__ = [
    "Simulation", "load_scenario", "load_scenario_config", "validate_scenario", "scenario_names",
    "json_schema", "ConfigError", "behavior", "fused", "merger", "mover", "brain_action", "BehaviorParams",
    "NeighborBehaviorParams", "RayBehaviorParams", "MergerParams", "BrainActionParams", "load_plugin", "Observer",
    "StepView",
]

# Importing Starling creates several hundred thousand objects (its kernels, NumPy, Numba,
# pydantic models) that live as long as the process: the cyclic collector would run about
# 300 times meanwhile, an eighth of the import's time, to free nothing, and every later
# full collection would walk them all again. So the collector is paused for the import,
# what exists then is frozen (gc.freeze: kept out of all later collections), and the
# collector resumes (only if it was running: a caller may have paused it already).
_gc_was_enabled = _gc.isenabled()
_gc.disable()
try:
    from .kernel_cache import install as _install_kernel_cache

    _install_kernel_cache()  # before any kernel is defined: the cache folder, and healing damaged cache files
    from .compiler_speed import install as _install_compiler_speed

    _install_compiler_speed()  # less of Numba's bookkeeping while kernels compile

    from .config import ConfigError, json_schema, load_scenario_config, scenario_names, validate_scenario
    from .simulation import Observer, Simulation, StepView, load_scenario
    from .steering.params import (BehaviorParams, BrainActionParams, MergerParams, NeighborBehaviorParams,
                                  RayBehaviorParams)
    from .steering.registry import behavior, brain_action, fused, merger, mover
    from .plugins import load_installed as _load_installed, load_plugin

    _load_installed()  # the built-ins and installed packages' starling.plugins entry points
finally:
    _gc.freeze()
    if _gc_was_enabled:
        _gc.enable()
