"""The ``starling`` command line: a thin layer over the Python API.

Every error a user can cause (a bad scenario, a bad ``--set``, a bad option, a bad
file) ends in one clear message and exit status 2, never a traceback. Each module
holds a family of commands; importing them registers the commands in this order.
"""
# isort: off  (the import order is the order `starling --help` lists the commands in)
from . import scenes, run, experiments, live, recordings, bench  # noqa: F401
# isort: on
from .common import app
from .live import DEFAULT_SCENE_ORDER, _session_recorder, default_scene

__all__ = ["app", "main", "default_scene", "DEFAULT_SCENE_ORDER", "_session_recorder"]


def main() -> None:
    # the console script's process runs one command and exits: a sweep may fork its workers from it
    experiments.OWN_PROCESS = True
    app()
