"""Config errors: one clear line per problem, naming the field (shared by every layer that validates)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence, Union

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

    def format(self) -> str:
        head = f"{self.source}: " if self.source else ""
        if len(self.problems) == 1:
            return head + str(self.problems[0])
        return head + f"{len(self.problems)} problems\n" + "\n".join(f"  {p}" for p in self.problems)


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
