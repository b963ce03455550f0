"""Deciding a run by the scenario's ``[[stop]]`` conditions (see :mod:`starling.config.stop`).

A :class:`StopWatch` reads the deaths a run's journal logs as they come, counts them per
species and per species and cause, and after each step tells the simulation whether the first
condition that holds (deaths, time, or every animal of a species in given brain states) has
decided the run. The counts are part of a snapshot, so a restored or reconfigured run goes on
counting where the original stopped.
"""
from __future__ import annotations

from typing import Optional


class StopWatch:
    """Death counts since the run began and the journal position they were read up to."""

    def __init__(self, journal, deaths: Optional[dict] = None):
        self.deaths: dict[str, int] = dict(deaths or {})  # "species\t" and "species\tcause" -> count
        self.seq = journal.next_seq  # the journal entries read so far

    def state(self) -> dict[str, int]:
        """The counts as plain data (a snapshot's ``stop.deaths``)."""
        return dict(self.deaths)

    def outcome(self, sim) -> Optional[dict]:
        """``{"outcome", "step", "time"}`` of the first of ``sim.scenario.stop`` that holds, else None."""
        entries, self.seq, _ = sim.world.journal.since(self.seq)
        for e in entries:
            if e["kind"] == "death":
                for key in (f"{e['species']}\t", f"{e['species']}\t{e['detail'].get('cause')}"):
                    self.deaths[key] = self.deaths.get(key, 0) + 1
        summaries: dict = {}
        for stop in sim.scenario.stop:
            if stop.when == "deaths":
                held = self.deaths.get(f"{stop.species}\t{stop.cause or ''}", 0) >= stop.count
            elif stop.when == "time":
                held = sim.time >= stop.at - 1e-9
            else:
                if stop.species not in summaries:
                    summaries[stop.species] = sim.species_summary(stop.species).get("states") or {}
                counts = summaries[stop.species]
                total = sum(counts.values())
                held = total > 0 and sum(counts.get(s, 0) for s in stop.states) == total
            if held:
                return {"outcome": stop.outcome, "step": int(sim.step_count), "time": float(sim.time)}
        return None
