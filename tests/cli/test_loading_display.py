"""The terminal's view of a scenario loading (``starling serve``, and ``starling run`` when
its first step compiles for more than a second)."""
from __future__ import annotations

import io
import time

from rich.console import Console

from starling.cli.common import LoadingDisplay


def _console() -> tuple[Console, io.StringIO]:
    text = io.StringIO()
    return Console(file=text, force_terminal=False, width=200), text


def test_without_a_terminal_each_stage_is_one_plain_line():
    console, text = _console()
    show = LoadingDisplay(console)
    for stage, fraction in [("building flock", 0.0), ("bird steering (3/8)", 0.25),
                            ("compiling kernels: bird steering — wandering (3/8)", 0.25),
                            ("compiling kernels: bird steering — equalise (3/8)", 0.25),
                            ("encoding frames (7/8)", 0.75), ("ready", 1.0)]:
        show(stage, fraction)
    assert text.getvalue().splitlines() == [
        "loading: building flock", "loading: bird steering (3/8)",
        "loading: compiling kernels: bird steering (3/8)", "loading: encoding frames (7/8)", "loading: ready"]


def test_a_quick_load_shows_nothing_when_there_is_a_delay():
    console, text = _console()
    show = LoadingDisplay(console, delay=1.0)
    show("bird steering (1/4)", 0.0)
    show("ready", 1.0)
    assert text.getvalue() == ""
    show("bird steering (1/4)", 0.0)  # a new load: the delay counts from its first stage
    time.sleep(1.05)
    show("compiling kernels: bird movement — impl (2/4)", 0.25)
    show("ready", 1.0)
    assert text.getvalue().splitlines() == ["loading: compiling kernels: bird movement (2/4)", "loading: ready"]


def test_on_a_terminal_it_is_a_progress_bar_that_goes_away():
    text = io.StringIO()
    console = Console(file=text, force_terminal=True, width=120)
    show = LoadingDisplay(console)
    show("bird steering (1/4)", 0.0)
    assert show._progress is not None
    show("ready", 1.0)
    assert show._progress is None and "loading" in text.getvalue()
