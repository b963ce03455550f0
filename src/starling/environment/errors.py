"""Errors raised while building or querying the static environment.

Every error carries enough context to be acted upon without a traceback: the layer name that is
unknown together with the known ones, or the file that could not be read together with the reason.
"""

from __future__ import annotations

from pathlib import Path


from ..world.layers import EnvironmentError_, LayerCapacityError, UnknownLayerError  # noqa: F401  (raised by the layer table)


class EnvironmentFileError(EnvironmentError_, OSError):
    """A mesh or height-map file is missing or cannot be decoded."""

    def __init__(self, kind: str, path: str | Path, reason: str):
        self.kind = kind
        self.path = str(path)
        self.reason = reason
        super().__init__(f"cannot load {kind} file '{self.path}': {reason}")
