"""Collision layers: named bits of a 32-bit mask (seed 000, 9.5.4 footnote: "what is considered ground
depends on the LayerMask specified in the Ray Query").

Every static shape belongs to exactly one layer.  Queries carry a mask (a ``uint32`` whose bit ``i`` is set
when layer ``i`` is wanted); a shape is visible to a query when the bit of its layer is set in the mask.

The first six layers are built in and always have the same bits, so that masks stay valid across scenes:

====== ============== ===================================================================
 bit    name           meant for
====== ============== ===================================================================
 0      ``terrain``    the heightfield
 1      ``ground``     flat ground planes, floors
 2      ``water``      water surfaces (rays only; water is not solid)
 3      ``environment`` obstacles: rocks, trees, walls, meshes
 4      ``grass``      grass patches that grazers look for
 5      ``fake_walls`` invisible barriers that keep animals inside an area
====== ============== ===================================================================

User-defined layers declared in a configuration take the following bits, in declaration order.
"""

from __future__ import annotations

from collections.abc import Iterable


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



BUILTIN_LAYERS: tuple[str, ...] = ("terrain", "ground", "water", "environment", "grass", "fake_walls")
"""The built-in layer names; the index of a name is its bit."""

MAX_LAYERS = 32
"""A mask is a ``uint32``, so at most 32 layers exist."""

ALL_LAYERS = 0xFFFFFFFF
"""The mask that selects every layer."""


class LayerRegistry:
    """An ordered set of layer names, each owning one bit of a ``uint32`` mask.

    Parameters
    ----------
    extra:
        User-defined layer names appended after the built-in ones.  Names must be non-empty, unique and
        distinct from the built-in names; at most ``32 - 6`` may be declared.
    """

    def __init__(self, extra: Iterable[str] = ()):
        names = list(BUILTIN_LAYERS)
        for name in extra:
            if not isinstance(name, str) or not name.strip():
                raise ValueError(f"layer names must be non-empty strings, got {name!r}")
            if name in names:
                raise ValueError(f"layer {name!r} is declared twice (or redeclares a built-in layer)")
            names.append(name)
        if len(names) > MAX_LAYERS:
            raise LayerCapacityError(
                f"{len(names)} layers declared but a uint32 mask holds at most {MAX_LAYERS} "
                f"({len(BUILTIN_LAYERS)} of them built in)"
            )
        self._names: tuple[str, ...] = tuple(names)
        self._index = {name: i for i, name in enumerate(names)}

    @property
    def names(self) -> tuple[str, ...]:
        """All layer names in bit order."""
        return self._names

    def __contains__(self, name: object) -> bool:
        return name in self._index

    def __len__(self) -> int:
        return len(self._names)

    def __repr__(self) -> str:
        return f"LayerRegistry({list(self._names[len(BUILTIN_LAYERS):])!r})"

    def index(self, name: str) -> int:
        """The bit index of ``name``; raises :class:`UnknownLayerError` naming the known layers."""
        try:
            return self._index[name]
        except (KeyError, TypeError):
            raise UnknownLayerError(str(name), self._names) from None

    def name(self, index: int) -> str:
        """The name of the layer with bit ``index`` (``IndexError`` if out of range)."""
        if not 0 <= index < len(self._names):
            raise IndexError(f"layer index {index} out of range 0..{len(self._names) - 1}")
        return self._names[index]

    def mask(self, names: str | Iterable[str]) -> int:
        """The ``uint32`` mask (as a Python ``int``) selecting the given layer names.

        A single string is treated as one name; ``"all"`` or ``"*"`` selects every layer.
        """
        if isinstance(names, str):
            names = (names,)
        mask = 0
        for name in names:
            if name in ("all", "*"):
                return ALL_LAYERS
            mask |= 1 << self.index(name)
        return mask

    def names_in(self, mask: int) -> tuple[str, ...]:
        """The layer names whose bits are set in ``mask``."""
        return tuple(n for i, n in enumerate(self._names) if (int(mask) >> i) & 1)


DEFAULT_LAYERS = LayerRegistry()
"""The registry holding only the built-in layers."""


def layer_mask(names: str | Iterable[str], registry: LayerRegistry | None = None) -> int:
    """Return the ``uint32`` mask (a Python ``int`` in ``[0, 2**32)``) selecting ``names``.

    ``registry`` defaults to the built-in layers; pass an environment's registry
    (``Environment.layers``) to resolve user-defined names.  An unknown name raises
    :class:`~starling.environment.errors.UnknownLayerError`, whose message names it and lists the
    known layers.
    """
    return (registry or DEFAULT_LAYERS).mask(names)
