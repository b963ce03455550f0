"""The viewer in a real Chromium: it draws, it runs, it obeys the transport buttons,
and clicking an animal opens its inspector with the debug overlay."""
from __future__ import annotations

import io
import time

import pytest
from PIL import Image, ImageChops, ImageStat

pytestmark = pytest.mark.browser


def _state(page) -> dict:
    return page.evaluate("() => window.__starling.state()")


def _canvas_image(page) -> Image.Image:
    return Image.open(io.BytesIO(page.locator("#view").screenshot())).convert("RGB")


def test_the_canvas_shows_a_live_scene(page):
    first = _canvas_image(page)
    stat = ImageStat.Stat(first)
    assert max(stat.stddev) > 8, "the canvas looks blank"
    assert len(first.getcolors(maxcolors=1 << 20) or []) > 200
    time.sleep(1.0)
    second = _canvas_image(page)
    moved = ImageChops.difference(first, second).getbbox()
    assert moved is not None, "nothing moved on screen in a second of simulation"
    state = _state(page)
    assert state["connected"] and state["scenario"] == "flock" and state["counts"] == {"bird": 1000}


def test_a_software_rasteriser_gets_the_light_tier_and_the_address_can_force_either(browser, live_server):
    """Headless Chromium draws with SwiftShader, a CPU rasteriser: the view takes its
    light tier, and its HUD says when it draws below the window's resolution."""
    context = browser.new_context(viewport={"width": 960, "height": 640})
    try:
        for query, want in (("", "software"), ("?quality=high", "full"), ("?quality=low", "software")):
            tab = context.new_page()
            tab.goto(live_server.url + query)
            tab.wait_for_function("() => window.__starling && window.__starling.state().framesApplied > 2", timeout=60_000)
            assert tab.evaluate("() => window.__starling.state().quality") == want, query
            # Panels blur what is behind them only where a GPU redraws the blur each frame.
            blur = tab.evaluate("() => getComputedStyle(document.getElementById('topbar')).backdropFilter")
            assert (blur == "none") == (want == "software"), (query, blur)
            # The HUD (refreshed four times a second) names the scale whenever it is below 1.
            tab.wait_for_function("""() => {
                const s = window.__starling.state(), text = document.getElementById('hud-scale').textContent;
                return s.renderScale < 1 ? text === `at ${Math.round(s.renderScale * 100)} % resolution` : text === '';
            }""", timeout=10_000)
            if want == "full":
                _assert_scale_stays(tab, 1)
            tab.close()

        # ?scale= pins the scale: the buffer has that share of the canvas's pixels, the HUD says
        # so, and no governor moves it.
        tab = context.new_page()
        tab.goto(live_server.url + "?scale=0.6")
        tab.wait_for_function("() => window.__starling && window.__starling.state().framesApplied > 2", timeout=60_000)
        tab.wait_for_function("() => document.getElementById('hud-scale').textContent === 'at 60 % resolution'",
                              timeout=10_000)
        buffer, css = tab.evaluate("() => { const c = document.getElementById('view'); return [c.width, c.clientWidth]; }")
        assert buffer == round(0.6 * css)
        _assert_scale_stays(tab, 0.6)
        tab.close()

        # A value it cannot use is refused in a message that names it; the view draws on.
        tab = context.new_page()
        tab.goto(live_server.url + "?scale=abc")
        # (A toast stays 4.5 s: wait for it, not for the frames that may come later.)
        tab.wait_for_function(
            "() => document.getElementById('toasts')?.textContent.includes('scale=abc in the address is ignored')",
            timeout=60_000)
        tab.wait_for_function("() => window.__starling && window.__starling.state().framesApplied > 2", timeout=60_000)
        tab.close()
    finally:
        context.close()


def _assert_scale_stays(tab, scale: float) -> None:
    """45 more frames (below 30 fps, where a governor would step down, that is more than
    its one-second window) leave the scale where it is."""
    start = tab.evaluate("() => window.__starling.state().framesRendered")
    tab.wait_for_function(f"() => window.__starling.state().framesRendered >= {start + 45}", timeout=60_000)
    assert tab.evaluate("() => window.__starling.state().renderScale") == scale


def test_the_scene_picker_lists_every_scenario_with_its_description(page):
    import starling
    from starling.config import read_scenario_data

    options = page.eval_on_selector_all("#scenario option", "os => os.map(o => [o.value, o.title])")
    assert [name for name, _ in options] == starling.scenario_names()
    assert all(title == read_scenario_data(name)[0]["description"] for name, title in options)
    assert page.inner_text("#scenario-about") == read_scenario_data("flock")[0]["description"]


def _wait_for_draws(page, draws: int = 2) -> None:
    drawn = _state(page)["framesRendered"]
    page.wait_for_function(f"() => window.__starling.state().framesRendered >= {drawn + draws}", timeout=30_000)


def test_the_step_counter_advances_and_pause_stops_it(page):
    start = _state(page)["step"]
    page.wait_for_function(f"() => window.__starling.state().step > {start + 10}", timeout=10_000)
    page.click("#play")  # pause
    page.wait_for_function("() => window.__starling.state().paused === true", timeout=5_000)
    _wait_for_draws(page)  # the last frame sent before the pause is drawn at the next tick
    frozen = _state(page)["step"]
    time.sleep(1.0)
    assert _state(page)["step"] == frozen
    assert page.locator("#play").inner_text() == "Play"
    page.click("#step")
    page.wait_for_function(f"() => window.__starling.state().step === {frozen + 1}", timeout=5_000)
    time.sleep(0.5)
    assert _state(page)["step"] == frozen + 1
    page.wait_for_function(f"() => document.querySelector('#hud-step').textContent === '{frozen + 1}'", timeout=5_000)
    page.click("#play")  # resume
    page.wait_for_function(f"() => window.__starling.state().step > {frozen + 5}", timeout=5_000)


def test_clicking_an_animal_opens_its_inspector(page):
    chosen = page.evaluate("() => window.__starling.selectNearestCenter()")
    assert chosen and chosen["species"] == "bird"
    page.click("#play")  # hold the flock still so the click lands where the bird is drawn
    page.wait_for_function("() => window.__starling.state().paused === true", timeout=5_000)
    _wait_for_draws(page)
    page.evaluate("() => window.__starling.deselect()")
    spot = page.evaluate(f"() => window.__starling.project('bird', {chosen['uid']})")
    assert spot, "the chosen bird should be on screen"
    page.mouse.click(spot["x"], spot["y"])
    page.wait_for_function("() => window.__starling.state().selection !== null", timeout=5_000)
    page.wait_for_function("() => window.__starling.state().inspect && window.__starling.state().inspect.alive", timeout=10_000)
    panel = page.locator("#inspector")
    assert panel.is_visible()
    text = panel.inner_text()
    selected = _state(page)["selection"]
    assert "bird" in text and f"#{selected['uid']}" in text
    for word in ("State", "Energy", "Hunger", "Speed", "Behaviours", "cohesion", "alignment", "separation"):
        assert word in text
    inspect = _state(page)["inspect"]
    # the field of view of the bird's neighbour query, as the scene declares it
    from starling.config import load_scenario_config
    declared = load_scenario_config("flock").species[0].groups[0].query.fov_deg
    assert inspect["fov_deg"] == declared and inspect["behaviors"]
    # The follow camera needs a selection; with one it engages.
    page.click("#inspector [data-act='follow']")
    assert _state(page)["camera"] == "follow"
    page.keyboard.press("Escape")
    page.wait_for_function("() => window.__starling.state().selection === null", timeout=5_000)
    assert not panel.is_visible()
    assert _state(page)["camera"] == "orbit"
    page.click("#play")


def test_player_actions_reach_the_server(page):
    scene_has_fire = page.evaluate("() => !document.querySelector('#act-fire').disabled")
    box = page.locator("#view").bounding_box()
    page.keyboard.down("Shift")
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.keyboard.up("Shift")
    if scene_has_fire:
        page.wait_for_selector(".toast.info", timeout=5_000)
    else:
        toast = page.wait_for_selector(".toast", timeout=5_000)
        assert "fire is not available in this scenario" in toast.inner_text()
    assert _state(page)["connected"]


def test_garbage_from_a_page_is_answered_and_the_stream_goes_on(page):
    page.evaluate("() => window.__starling.send({type: 'step', n: 0})")
    page.wait_for_function("() => window.__starling.state().errors.some(e => e.includes('n:'))", timeout=5_000)
    start = _state(page)["step"]
    page.wait_for_function(f"() => window.__starling.state().step > {start + 5}", timeout=5_000)


def _run_lagoon_to(page, seed: int, first: int, then: int, fire: bool) -> dict:
    """Restart the lagoon with ``seed``, advance exactly ``first`` steps, optionally fire at
    the fish school from the view, advance ``then`` more, and return the fish metrics."""
    page.evaluate(f"() => window.__starling.send({{type: 'scenario', name: 'lagoon', seed: {seed}, paused: true}})")
    page.wait_for_function(
        "() => { const s = window.__starling.state(); return s.scenario === 'lagoon' && s.paused === true && s.step === 0; }",
        timeout=60_000)
    page.evaluate(f"() => window.__starling.send({{type: 'step', n: {first}}})")
    page.wait_for_function(f"() => window.__starling.state().step === {first}", timeout=120_000)
    if fire:
        # Aim from a fixed spot a few metres above the school rather than from wherever the
        # self-framing camera has drifted to: a shallow shot stops in the water far from the fish.
        fish = [a["position"] for a in page.evaluate("() => window.__starling.animals('fish')")]
        centre = [sum(p[i] for p in fish) / len(fish) for i in range(3)]
        eye = [centre[0] + 4.0, max(centre[1], 0.0) + 14.0, centre[2] + 4.0]
        page.evaluate(f"() => window.__starling.look({eye}, {centre})")
        page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
        spot = page.evaluate("() => window.__starling.centroid('fish')")
        assert spot, "the fish school should be in view"
        acks = len(_state(page)["acks"])
        page.keyboard.down("Shift")
        page.mouse.click(spot["x"], spot["y"])
        page.keyboard.up("Shift")
        page.wait_for_function(f"() => window.__starling.state().acks.length > {acks}", timeout=10_000)
        ack = _state(page)["acks"][-1]
        assert ack["action"] == "fire"
        impact = (ack.get("result") or {}).get("impact")
        assert impact is not None, ack
        miss = sum((a - b) ** 2 for a, b in zip(impact, centre)) ** 0.5
        assert miss < 10.0, (impact, centre)
    page.evaluate(f"() => window.__starling.send({{type: 'step', n: {then}}})")
    end = first + then
    page.wait_for_function(f"() => window.__starling.state().metricsStep === {end}", timeout=120_000)
    return _state(page)["metrics"]["fish"]


def test_firing_at_a_school_scatters_it(page):
    """The same seeded run twice, once with a shot into the school: the fish flee faster
    and spread out. Paused stepping makes both runs identical up to the shot."""
    control = _run_lagoon_to(page, seed=11, first=30, then=45, fire=False)
    fired = _run_lagoon_to(page, seed=11, first=30, then=45, fire=True)
    # Afraid fish (seed 004's AFRAID state) swim much faster, and the school loosens.
    assert fired["mean_speed"] > 1.5 * control["mean_speed"], (fired, control)
    assert fired["nn_distance"] > control["nn_distance"] or fired["polarization"] < control["polarization"], (fired, control)
    page.evaluate("() => window.__starling.send({type: 'scenario', name: 'flock', seed: 1})")
    page.wait_for_function("() => window.__starling.state().scenario === 'flock'", timeout=60_000)


def test_the_inspector_shows_an_animals_own_drawn_parameters(page):
    """The pond's fish draw their personal space and top speed: the panel shows this fish's."""
    page.evaluate("() => window.__starling.send({type: 'scenario', name: 'pond', seed: 3})")
    page.wait_for_function("() => { const s = window.__starling.state(); return s.scenario === 'pond' && s.step > 2 && s.counts.fish > 0; }",
                           timeout=60_000)
    fish = page.evaluate("() => window.__starling.animals('fish', 1)")[0]
    page.evaluate(f"() => window.__starling.select('fish', {fish['uid']})")
    page.wait_for_function("() => document.querySelector('#inspector .drawn') !== null", timeout=10_000)
    drawn = page.locator("#inspector .drawn").first.inner_text()
    assert drawn.startswith("max_distance ")
    assert 1.2 <= float(drawn.split()[1]) <= 1.8
    assert "mover_max_speed" in page.locator("#inspector .components").text_content()
    page.evaluate("() => window.__starling.deselect()")
    page.evaluate("() => window.__starling.send({type: 'scenario', name: 'flock', seed: 1})")
    page.wait_for_function("() => window.__starling.state().scenario === 'flock'", timeout=60_000)
