"""Stop conditions: when a run is decided, and what the outcome is called.

An experiment asks "did the lions catch a zebra, or give up?" — a run should end the
moment that is decided and say which. ``[[stop]]`` entries are checked after every
step, in order; the first that holds ends the run with its ``outcome``::

    [[stop]]
    outcome = "caught"
    when = "deaths"          # deaths of `species` (only those of `cause` when given) reach `count`
    species = "zebra"
    cause = "caught"

    [[stop]]
    outcome = "retreated"
    when = "all_in_state"    # every animal of `species` is in one of `states` (and there is one)
    species = "lion"
    states = ["retreating"]

    [[stop]]
    outcome = "timeout"
    when = "time"            # the simulation time reaches `at` seconds
    at = 120.0

``starling run`` and sweep workers stop there; a live simulation carries on and only
reports it (``Simulation.outcome``).
"""
from __future__ import annotations

from typing import Annotated, Literal, Optional, Union

from pydantic import Field

from ..steering.params import StrictModel


class _Stop(StrictModel):
    outcome: str = Field(..., min_length=1, description="The name this ending is reported under.")


class DeathsStop(_Stop):
    """``count`` deaths of ``species`` (only by ``cause`` when given) since the run began."""

    when: Literal["deaths"] = "deaths"
    species: str
    cause: Optional[str] = Field(None, description="Count only deaths of this cause (caught, shot, starvation, …).")
    count: int = Field(1, ge=1)


class StateStop(_Stop):
    """Every animal of ``species`` is in one of ``states`` (a species with none alive does not count)."""

    when: Literal["all_in_state"] = "all_in_state"
    species: str
    states: list[str] = Field(..., min_length=1)


class TimeStop(_Stop):
    """The simulation time reaches ``at`` seconds."""

    when: Literal["time"] = "time"
    at: float = Field(..., gt=0)


StopCondition = Annotated[Union[DeathsStop, StateStop, TimeStop], Field(discriminator="when")]
