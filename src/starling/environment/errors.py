"""Errors raised while building or querying the static environment.

Every error carries enough context to be acted upon without a traceback: the layer name that is
unknown together with the known ones, or the file that could not be read together with the reason.
"""

from __future__ import annotations

from pathlib import Path


class EnvironmentError_(Exception):
    """Base class of all environment errors (named with a trailing underscore so that it does not
    shadow Python's built-in ``EnvironmentError`` alias of ``OSError``)."""


class UnknownLayerError(EnvironmentError_, ValueError):
    """A layer name that is neither built in nor declared in the configuration."""

    def __init__(self, name: str, known: tuple[str, ...]):
        self.name = name
        self.known = known
        super().__init__(
            f"unknown layer {name!r}; known layers are: {', '.join(known)} "
            "(declare new layers in the environment's `layers` list)"
        )


class LayerCapacityError(EnvironmentError_, ValueError):
    """More layers were declared than fit in a 32-bit mask."""


class EnvironmentFileError(EnvironmentError_, OSError):
    """A mesh or height-map file is missing or cannot be decoded."""

    def __init__(self, kind: str, path: str | Path, reason: str):
        self.kind = kind
        self.path = str(path)
        self.reason = reason
        super().__init__(f"cannot load {kind} file '{self.path}': {reason}")
