"""What the viewer shows of a scene: the camera finds the animals, fish are seen through
the water, and the ecology's sounds, apples and player are drawn."""
from __future__ import annotations

import io

import pytest
from PIL import Image, ImageChops, ImageStat

pytestmark = pytest.mark.browser


def _state(page) -> dict:
    return page.evaluate("() => window.__starling.state()")


def _canvas(page) -> tuple[Image.Image, dict]:
    box = page.locator("#view").bounding_box()
    return Image.open(io.BytesIO(page.locator("#view").screenshot())).convert("RGB"), box


def _free_area(page) -> dict:
    """The part of the page where the 3D view is not covered by the top bar, HUD or charts."""
    return page.evaluate("""() => {
        const r = (id) => document.getElementById(id).getBoundingClientRect();
        return {top: r('topbar').bottom, bottom: r('charts').top, hudRight: r('hud').right, hudBottom: r('hud').bottom,
                width: window.innerWidth};
    }""")


def _visible(spot: dict | None, free: dict, margin: float = 4) -> bool:
    if not spot:
        return False
    x, y = spot["x"], spot["y"]
    if not (free["top"] + margin < y < free["bottom"] - margin and margin < x < free["width"] - margin):
        return False
    return not (x < free["hudRight"] + margin and y < free["hudBottom"] + margin)


def test_the_camera_starts_on_the_flock_not_on_the_world_box(page):
    page.wait_for_function("() => window.__starling.state().framed !== null", timeout=10_000)
    framed = _state(page)["framed"]
    assert framed["species"] == "bird"
    free = _free_area(page)
    birds = page.evaluate("() => window.__starling.animals('bird')")
    shown = [b["screen"] for b in birds if _visible(b["screen"], free)]
    assert len(shown) > 0.6 * len(birds), f"only {len(shown)} of {len(birds)} birds in view"
    ys = sorted(s["y"] for s in shown)
    xs = sorted(s["x"] for s in shown)
    # The middle 70 % of the flock spans a good part of the free view: not a speck, not cropped.
    spread_y = ys[int(0.85 * len(ys))] - ys[int(0.15 * len(ys))]
    spread_x = xs[int(0.85 * len(xs))] - xs[int(0.15 * len(xs))]
    height = free["bottom"] - free["top"]
    assert max(spread_y / height, spread_x / free["width"]) > 0.2, (spread_x, spread_y, height)


def test_the_meadow_opens_on_its_composed_view_with_the_whole_ecosystem_in_it(page):
    """The meadow's own opening camera (its file's ``[view]``) instead of framing one flock from
    below: the pond's fish and sharks, the herd, the wolves and the flocks are in the free view."""
    from starling.config import read_scenario_data

    view = read_scenario_data("meadow")[0]["view"]
    page.locator("#scenario").select_option("meadow")
    page.wait_for_function("""() => { const s = window.__starling.state();
        return s.scenario === 'meadow' && s.framesApplied > 2 && (s.counts.sheep || 0) > 0; }""", timeout=300_000)
    applied = _state(page)["framesApplied"]
    page.wait_for_function(f"() => window.__starling.state().framesApplied > {applied + 3}", timeout=60_000)
    state = _state(page)
    assert state["framed"] is None, "the meadow was framed on its animals instead of opening on its view"
    assert state["view"]["position"] == pytest.approx(view["position"], abs=1e-6), state["view"]
    # its target is drawn in the middle of the part of the view the panels leave free
    free = _free_area(page)
    middle = page.evaluate(f"() => window.__starling.projectPoint({view['target']})")
    assert middle["x"] == pytest.approx(free["width"] / 2, abs=2)
    assert middle["y"] == pytest.approx((free["top"] + free["bottom"]) / 2, abs=2), (middle, free)
    shown = {}
    for species in state["species"]:
        animals = page.evaluate(f"() => window.__starling.animals('{species}')")
        shown[species] = (sum(_visible(a["screen"], free) for a in animals), len(animals))
    assert shown["fish"][0] > 0.5 * shown["fish"][1], shown
    assert shown["shark"][0] >= 1 and shown["wolf"][0] >= 1, shown
    assert shown["sheep"][0] >= 15, shown  # 35 of 160 in this 960 x 640 tab, 98 at 1280 x 800
    assert shown["bird_west"][0] + shown["bird_east"][0] >= 50, shown  # 115 here, 430 at 1280 x 800
    # "Frame all" still frames the animals, as in every other scene
    page.locator("#frame-all").click()
    page.wait_for_function("() => window.__starling.state().framed !== null", timeout=30_000)
    # a live edit of the view (what the editor's Apply sends) takes the camera there at once
    applied = page.evaluate("""async () => {
        const config = await (await fetch('/api/config')).json();
        config.view = {position: [-60, 30, -60], target: [0, 5, 0]};
        const reply = await fetch('/api/config', {method: 'PUT', headers: {'Content-Type': 'application/json'},
                                                  body: JSON.stringify(config)});
        return reply.status; }""")
    assert applied == 200
    page.wait_for_function("""() => { const p = window.__starling.state().view.position;
        return Math.abs(p[0] + 60) < 1e-6 && Math.abs(p[1] - 30) < 1e-6 && Math.abs(p[2] + 60) < 1e-6; }""", timeout=30_000)
    assert _state(page)["framed"] is None


def _fishy(pixel: tuple[int, int, int]) -> bool:
    """The golden fish (#e0b040), even tinted by the water: warm (more red than blue), unlike
    the blue-green water, its muddy bottom and the grey boulders."""
    r, g, b = pixel
    return r > 100 and r > b + 20 and g > b


def test_fish_are_seen_through_the_water_and_the_ecology_is_drawn(page):
    page.evaluate("() => window.__starling.send({type: 'scenario', name: 'lagoon', seed: 5, paused: true})")
    page.wait_for_function(
        "() => { const s = window.__starling.state(); return s.scenario === 'lagoon' && s.paused === true && s.step === 0; }",
        timeout=120_000)
    page.evaluate("() => window.__starling.send({type: 'step', n: 30})")
    page.wait_for_function("() => window.__starling.state().step === 30", timeout=120_000)
    page.wait_for_function("() => window.__starling.state().framed !== null", timeout=10_000)
    # Settle the framed view on the school and hold it there (it otherwise keeps drifting after
    # the fish, and on a busy machine the drawn image would lag positions projected a moment
    # later), then wait for two fresh draws of the paused scene.
    page.evaluate("() => window.__starling.hold()")
    drawn = _state(page)["framesRendered"]
    page.wait_for_function(f"() => window.__starling.state().framesRendered >= {drawn + 2}", timeout=30_000)

    # The player stands on the shore and is streamed with the animals.
    assert _state(page)["entities"].get("player") == 1

    level = page.evaluate("() => window.__starling.state().water")
    assert level is not None, "the lagoon has water"
    free = _free_area(page)
    fish = [f for f in page.evaluate("() => window.__starling.animals('fish')")
            if f["position"][1] < level - 0.5 and _visible(f["screen"], free, margin=8)]
    assert len(fish) >= 30, f"only {len(fish)} fish under water in view"
    image, box = _canvas(page)

    def hit(x: float, y: float) -> bool:
        cx, cy = int(x - box["x"]), int(y - box["y"])
        return any(_fishy(image.getpixel((cx + dx, cy + dy)))
                   for dx in range(-3, 4) for dy in range(-3, 4)
                   if 0 <= cx + dx < image.width and 0 <= cy + dy < image.height)

    seen = sum(hit(f["screen"]["x"], f["screen"]["y"]) for f in fish)
    # (One fish may hide another, or swim behind a boulder.)
    assert seen >= 0.7 * len(fish), f"{seen} of {len(fish)} fish under water show their colour"
    # The same test on the water beside the school finds (almost) no such colour.
    beside = [(f["screen"]["x"] + 60, f["screen"]["y"] + 140) for f in fish]
    beside = [(x, y) for x, y in beside if _visible({"x": x, "y": y}, free, margin=8)]
    if beside:
        false = sum(hit(x, y) for x, y in beside)
        assert false <= 0.3 * len(beside), f"{false} of {len(beside)} spots beside the school look like fish"

    # A shot makes two sounds (muzzle, impact) and an apple lands: both are streamed and drawn.
    spot = page.evaluate("() => window.__starling.centroid('fish')")
    page.keyboard.down("Shift")
    page.mouse.click(spot["x"], spot["y"])
    page.keyboard.up("Shift")
    page.wait_for_function("() => window.__starling.state().acks.some(a => a.action === 'fire')", timeout=10_000)
    page.keyboard.down("Alt")
    page.mouse.click(spot["x"] + 40, spot["y"])
    page.keyboard.up("Alt")
    page.wait_for_function("() => window.__starling.state().acks.some(a => a.action === 'throw_apple')", timeout=10_000)
    # one sound at the muzzle, and one where the bullet stopped if it stopped anywhere
    shot = next(a for a in page.evaluate("() => window.__starling.state().acks") if a["action"] == "fire")
    sounds = 1 + (shot["result"]["impact"] is not None)
    page.evaluate("() => window.__starling.send({type: 'step', n: 3})")
    try:
        page.wait_for_function(
            f"() => {{ const e = window.__starling.state().entities; return e.sound === {sounds} && e.apple >= 1; }}",
            timeout=60_000)
    except Exception:
        state = _state(page)
        raise AssertionError(f"expected {sounds} sounds and an apple after the shot {shot['result']} "
                             f"(step {state['step']}, entities {state['entities']})") from None

    page.evaluate("() => window.__starling.send({type: 'scenario', name: 'flock', seed: 1})")
    page.wait_for_function("() => window.__starling.state().scenario === 'flock'", timeout=60_000)


def test_one_part_of_the_scene_can_be_hidden_to_measure_it(page):
    """``window.__starling.show`` hides the terrain, water, obstacles, animals or a species alone
    (``scripts/render_cost.py`` measures each part's cost per frame with it)."""
    page.evaluate("() => window.__starling.send({type: 'scenario', name: 'lagoon', seed: 5, paused: true})")
    page.wait_for_function(
        "() => { const s = window.__starling.state(); return s.scenario === 'lagoon' && s.framed !== null; }",
        timeout=120_000)
    page.evaluate("() => window.__starling.hold()")

    def drawn() -> Image.Image:
        count = _state(page)["framesRendered"]
        page.wait_for_function(f"() => window.__starling.state().framesRendered >= {count + 2}", timeout=30_000)
        return _canvas(page)[0]

    def change(a: Image.Image, b: Image.Image) -> float:
        return sum(ImageStat.Stat(ImageChops.difference(a, b)).mean) / 3

    before = drawn()
    assert page.evaluate("() => window.__starling.show('terrain', false)") is True
    without = drawn()
    assert page.evaluate("() => window.__starling.show('terrain', true)") is True
    again = drawn()
    assert change(before, without) > 10 * max(change(before, again), 0.5), (change(before, without), change(before, again))
    for part in ("water", "obstacles", "animals", "fish", "shark"):
        assert page.evaluate(f"() => window.__starling.show('{part}', true)") is True, part
    assert page.evaluate("() => window.__starling.show('elephant', false)") is False
    page.evaluate("() => window.__starling.send({type: 'scenario', name: 'flock', seed: 1})")
    page.wait_for_function("() => window.__starling.state().scenario === 'flock'", timeout=60_000)


def _scenario_names() -> list[str]:
    from starling.config import scenario_names

    return scenario_names()


@pytest.mark.parametrize("name", _scenario_names())
def test_every_scene_loads_from_the_picker_and_is_drawn(page, name):
    if name != "flock":
        page.locator("#scenario").select_option(name)
    page.wait_for_function(f"""() => {{ const s = window.__starling.state();
        return s.scenario === '{name}' && s.framesApplied > 2 && Object.values(s.counts).some(n => n > 0); }}""",
                           timeout=300_000)
    applied = _state(page)["framesApplied"]
    page.wait_for_function(f"() => window.__starling.state().framesApplied > {applied + 3}", timeout=60_000)
    image, _ = _canvas(page)
    assert max(ImageStat.Stat(image).stddev) > 8, f"{name}: the canvas looks blank"
    state = _state(page)
    assert set(state["counts"]) == set(state["species"]) and not state["errors"], state["errors"]
