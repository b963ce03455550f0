"""Config errors: one clear line per problem, naming the field (shared by every layer that validates)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Optional, Sequence, Union

from pydantic import ValidationError


@dataclass(frozen=True)
class Problem:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class ConfigError(ValueError):
    """A scenario or setting that cannot be used; ``problems`` lists every reason."""

    def __init__(self, problems: Sequence[Problem], source: str = ""):
        self.problems = list(problems)
        self.source = source
        super().__init__(self.format())

    def __reduce__(self):
        # an exception pickles as its class called with its ``args`` (here the formatted message, which
        # would be read back as problems, one character each): a worker process's error must reach the
        # command that started it whole (``starling warm``'s workers, a sweep's)
        return type(self), (self.problems, self.source)

    def format(self) -> str:
        head = f"{self.source}: " if self.source else ""
        if len(self.problems) == 1:
            return head + str(self.problems[0])
        return head + f"{len(self.problems)} problems\n" + "\n".join(f"  {p}" for p in self.problems)


_SPECIES_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")  # the rule of a species name (config.models)
_SPECIES_INDEX = re.compile(r"^species\.(\d+)(?=\.|$)")


def species_names(entries: Any) -> list[Optional[str]]:
    """For each entry of a scenario's ``species`` list (raw dicts or models), the name that can
    stand for its index in a config path, or None where the entry has no valid name or shares
    it with another entry (the index is then the only unambiguous way to point at it)."""
    if not isinstance(entries, (list, tuple)):
        return []
    raw = [(e.get("name") if isinstance(e, dict) else getattr(e, "name", None)) for e in entries]
    valid = [n if isinstance(n, str) and _SPECIES_NAME.match(n) else None for n in raw]
    return [n if n is not None and valid.count(n) == 1 else None for n in valid]


def species_path(path: str, names: Sequence[Optional[str]]) -> str:
    """``species.0.groups.1…`` → ``species.fish.groups.1…`` where species 0 is named ``fish``."""
    m = _SPECIES_INDEX.match(path)
    if m is None:
        return path
    i = int(m.group(1))
    name = names[i] if i < len(names) else None
    return path if name is None else f"species.{name}" + path[m.end():]


def name_species(problems: Iterable[Problem], names: Sequence[Optional[str]]) -> list[Problem]:
    """``problems`` with each species named by its name in their paths (see :func:`species_path`)."""
    return [Problem(species_path(p.path, names), p.message) for p in problems]


def _path(loc: Iterable[Union[str, int]], names: dict) -> str:
    parts: list[str] = []
    for item in loc:
        parts.append(str(item))
    return ".".join(parts)


def problems_from_validation(err: ValidationError, prefix: str = "") -> list[Problem]:
    """Turn pydantic errors into problems with dotted field paths.

    Discriminated unions insert the chosen ``kind`` into the location
    (``behaviors.0.wandering.min_speed``); that segment is kept because it tells the
    user which parameter model was applied.
    """
    out = []
    for e in err.errors(include_url=False):
        loc = [str(x) for x in e["loc"]]
        msg = e["msg"]
        if e["type"] == "union_tag_invalid":
            ctx = e.get("ctx", {})
            msg = f"unknown {ctx.get('discriminator', 'kind').strip(chr(39))} {ctx.get('tag')!r}; expected one of {ctx.get('expected_tags')} (load your own with --plugin MODULE)"
            loc = loc + ["kind"]
        elif e["type"] == "union_tag_not_found":
            msg = "missing 'kind' (which behaviour or mover this is)"
            loc = loc + ["kind"]
        elif e["type"] == "extra_forbidden":
            msg = "unknown field"
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        path = ".".join(([prefix] if prefix else []) + loc)
        out.append(Problem(path, msg))
    return out
