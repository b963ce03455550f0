"""A recording replayed in a real Chromium: the timeline plays it, scrubbing back shows the
animals where they were, and the event buttons land on the recorded events."""
from __future__ import annotations

import numpy as np
import pytest

from .conftest import STATIC

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    """The flock (300 birds, 60 steps, every 2nd kept) with a scripted note at step 30."""
    import starling
    from starling.recording import Recorder, open_recording

    path = tmp_path_factory.mktemp("browser_replay") / "flock.zarr"
    sim = starling.load_scenario("flock", seed=5, overrides=("species.bird.count=300",))
    with Recorder(sim, path, every=2, metrics_every=10):
        sim.step(30)
        sim.world.journal.log("scripted", note="gust")
        sim.step(30)
    return open_recording(path)


@pytest.fixture(scope="module")
def replay_server(recording):
    if not (STATIC / "index.html").is_file():
        pytest.fail(f"the front-end is not built in {STATIC}: run `make setup` (npm ci && npm run build in web/)")
    import time

    from starling.server import BackgroundServer, create_replay_app

    app = create_replay_app(recording, label="flock.zarr")
    with BackgroundServer(app, startup_timeout=60) as server:
        deadline = time.monotonic() + 600
        while not app.state.runner.frames_published:  # the frame encoder compiles on the first frame
            if time.monotonic() > deadline:
                pytest.fail("the replay server published no frame within 10 minutes")
            time.sleep(0.1)
        yield server


@pytest.fixture
def page(browser, replay_server):
    context = browser.new_context(viewport={"width": 960, "height": 640})
    tab = context.new_page()
    problems: list[str] = []
    tab.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    tab.on("console", lambda msg: problems.append(f"console error: {msg.text}") if msg.type == "error" else None)
    tab.goto(replay_server.url)
    # a paused replay sends a frame only when the playhead moves: one drawn frame means ready
    tab.wait_for_function(
        "() => window.__starling && window.__starling.state().replay && window.__starling.state().framesApplied > 0",
        timeout=60_000)
    try:
        yield tab
    finally:
        context.close()
    assert not problems, problems


def _state(page) -> dict:
    return page.evaluate("() => window.__starling.state()")


def _birds(page) -> dict[int, np.ndarray]:
    drawn = page.evaluate("() => window.__starling.animals('bird')")
    return {a["uid"]: np.array(a["position"]) for a in drawn}


def test_scrubbing_back_shows_the_animals_where_they_were(page, recording):
    last = len(recording) - 1
    state = _state(page)
    assert state["replay"] == {"frame": 0, "n_frames": len(recording), "playing": False}
    assert not page.is_visible("#scenario") and not page.is_visible("#player") and page.is_visible("#timeline")
    page.click("#timeline .tl-play")
    page.wait_for_function(
        f"() => {{ const r = window.__starling.state().replay; return r.frame === {last} && !r.playing; }}",
        timeout=30_000)
    assert _state(page)["step"] == int(recording.steps[last])
    late = _birds(page)

    page.locator("#timeline .tl-slider").fill("5")  # drag the slider back to frame 5
    page.wait_for_function(f"() => window.__starling.state().step === {int(recording.steps[5])}", timeout=10_000)
    assert _state(page)["replay"]["frame"] == 5
    assert f"step {int(recording.steps[5])} " in page.inner_text("#timeline .tl-label")
    early = _birds(page)
    truth = recording.frame(5)["bird"]
    assert set(early) == set(truth.uid.tolist()) == set(late)
    span = float(np.ptp(truth.position, axis=0).max())
    for row, uid in enumerate(truth.uid.tolist()):
        # drawn where the recording has it (within the codec's quantisation) …
        assert np.abs(early[uid] - truth.position[row]).max() <= span / 65535 + 1e-3
    # … which is not where the birds were at the end: they moved back
    moved = np.array([np.linalg.norm(late[uid] - early[uid]) for uid in truth.uid.tolist()])
    assert np.median(moved) > 0.5

    uid = int(truth.uid[0])  # selecting a bird inspects it as recorded at this frame
    page.evaluate(f"() => window.__starling.select('bird', {uid})")
    page.wait_for_function("() => { const i = window.__starling.state().inspect; return i && i.alive; }",
                           timeout=10_000)
    info = _state(page)["inspect"]
    assert info["uid"] == uid and info["step"] == int(recording.steps[5])
    assert np.allclose(info["position"], truth.position[0], atol=1e-4)
    assert page.is_visible("#inspector")


def test_the_event_buttons_land_on_the_recorded_event(page, recording):
    markers = page.evaluate("""() => {
        const c = document.querySelector('#timeline .tl-markers');
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let painted = 0; for (let i = 3; i < d.length; i += 4) if (d[i] > 0) painted++;
        return painted;
    }""")
    assert markers > 0, "no event marker is drawn on the timeline"
    page.click("#timeline .tl-next")
    event_frame = int(np.searchsorted(recording.steps, 30))
    page.wait_for_function(f"() => window.__starling.state().replay.frame === {event_frame}", timeout=10_000)
    assert _state(page)["step"] == 30
    page.click("#timeline .tl-prev")  # nothing earlier: the playhead stays and the app says so
    page.wait_for_function("() => document.querySelector('#toasts').textContent.includes('No earlier event')",
                           timeout=10_000)
    assert _state(page)["replay"]["frame"] == event_frame
