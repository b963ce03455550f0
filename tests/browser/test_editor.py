"""The editor panel in real Chromium against the live server: every change goes through the
panel's own controls and is checked on the running simulation (docs/editor.md)."""
from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
STATE = "window.__starling.state()"


def editor_state(page) -> dict:
    return page.evaluate(f"() => {STATE}.editor")


def server_config(page) -> dict:
    return page.evaluate("async () => (await fetch('/api/config')).json()")


def wait_applied(page, before: int, timeout: float = 60_000) -> None:
    """Wait until the panel has had a config accepted after `before` accepted ones."""
    page.wait_for_function(
        f"() => {{ const e = {STATE}.editor; return e.applied > {before} && e.status === 'applied'; }}", timeout=timeout)


def applied(page) -> int:
    return editor_state(page)["applied"]


@pytest.fixture
def editor(page):
    """The page with the editor open on the running flock; the shipped flock is reloaded after."""
    page.locator("#editor-toggle").click()
    page.wait_for_function(f"() => {STATE}.editor.status === 'applied'", timeout=60_000)
    yield page
    step = page.evaluate(f"() => {STATE}.step")
    page.evaluate("() => window.__starling.send({type: 'scenario', name: 'flock', seed: 1})")
    page.wait_for_function(f"() => {{ const s = {STATE}; return s.scenario === 'flock' && s.step < {step} "
                           "&& s.counts.bird === 1000 && s.species.length === 1; }", timeout=60_000)


def card(page, path: str):
    return page.locator(f'[data-path="{path}"]')


def behaviour_names(page) -> list[str]:
    inspect = page.evaluate(f"() => {STATE}.inspect")
    return [b["kind"] for b in (inspect or {}).get("behaviors", [])]


def test_separation_added_in_a_new_group_shows_on_a_selected_animal(editor):
    page = editor
    page.evaluate("() => window.__starling.selectNearestCenter()")
    page.wait_for_function(f"() => ({STATE}.inspect?.behaviors ?? []).some(b => b.kind === 'separation')", timeout=30_000)
    n_before = len(page.evaluate(f"() => {STATE}.inspect.behaviors"))

    before = applied(page)
    page.locator('[data-action="add-groups"]').click()  # a neighbour group, seeing the species itself
    wait_applied(page, before)
    groups = server_config(page)["species"][0]["groups"]
    assert len(groups) == 2 and groups[1]["query"]["targets"] == ["bird"]

    before = applied(page)
    card(page, "species.0.groups.1").locator('select[data-action="add-behavior"]').select_option("separation")
    wait_applied(page, before)
    assert [b["kind"] for b in server_config(page)["species"][0]["groups"][1]["behaviors"]] == ["separation"]
    # the selected animal now runs two separations: the shipped one and the new group's (a new
    # group compiles its kernels at the next step: minutes on a cold cache and a loaded machine)
    page.wait_for_function(f"() => {STATE}.inspect?.alive && "
                           f"{STATE}.inspect.behaviors.filter(b => b.kind === 'separation').length === 2", timeout=300_000)
    n = len(page.evaluate(f"() => {STATE}.inspect.behaviors"))
    assert n == n_before + 1
    # one arrow label per behaviour of the selected animal is made for the overlay
    assert page.locator("#labels .arrow-label").count() >= n


def test_a_weight_changed_in_its_form_changes_the_behaviour_live(editor):
    page = editor
    page.evaluate("() => window.__starling.selectNearestCenter()")
    page.wait_for_function(f"() => ({STATE}.inspect?.behaviors ?? []).some(b => b.kind === 'wandering' && b.direction_desire > 0)",
                           timeout=30_000)
    kinds = [b["kind"] for b in server_config(page)["species"][0]["behaviors"]]
    i = kinds.index("wandering")
    field = card(page, f"species.0.behaviors.{i}").locator('input[name="root[weight_direction]"]')
    before = applied(page)
    field.fill("0")
    field.dispatch_event("change")
    wait_applied(page, before)
    assert server_config(page)["species"][0]["behaviors"][i]["weight_direction"] == 0
    # the behaviour's own output: with weight 0 it no longer asks for any turn
    try:
        page.wait_for_function(f"() => {{ const b = ({STATE}.inspect?.behaviors ?? []).find(b => b.kind === 'wandering'); "
                               "return b && b.direction_desire === 0; }", timeout=30_000)
    except Exception:
        raise AssertionError(page.evaluate(f"() => JSON.stringify([{STATE}.selection, {STATE}.inspect, {STATE}.errors])"))


def test_an_invalid_value_is_flagged_in_place_and_nothing_is_applied(editor):
    page = editor
    puts: list[str] = []
    page.on("request", lambda r: puts.append(r.url) if r.method == "PUT" else None)
    before_config = server_config(page)
    field = card(page, "species.0.mover").locator('input[name="root[max_speed]"]')
    field.fill("-3")
    field.dispatch_event("change")
    page.wait_for_function(f"() => {STATE}.editor.status === 'invalid'", timeout=10_000)
    assert "nothing is applied" in page.locator(".ed-status").inner_text()
    assert "max_speed: must be > 0, not -3" in card(page, "species.0.mover").inner_text()  # in place
    # twenty more frames (longer than the panel's apply delay): still nothing sent, nothing changed
    frames = page.evaluate(f"() => {STATE}.framesApplied")
    page.wait_for_function(f"() => {STATE}.framesApplied > {frames + 20}", timeout=30_000)
    assert puts == []
    assert server_config(page) == before_config
    # the species count is checked the same way, by the panel's own field
    count = card(page, "species.0").locator('input[data-field="count"]')
    count.fill("2.5")
    count.dispatch_event("input")
    assert "whole number" in card(page, "species.0").inner_text()
    assert server_config(page) == before_config


def test_a_new_species_with_50_animals_appears_and_undo_removes_it(editor):
    page = editor
    before = applied(page)
    page.locator('[data-action="add-species"]').click()
    wait_applied(page, before)
    page.wait_for_function(f"() => {STATE}.counts.species2 === 50", timeout=60_000)
    assert [s["name"] for s in server_config(page)["species"]] == ["bird", "species2"]
    assert editor_state(page)["canUndo"]

    before = applied(page)
    page.locator('#editor [data-action="undo"]').click()
    wait_applied(page, before)
    page.wait_for_function(f"() => !{STATE}.species.includes('species2')", timeout=60_000)
    assert [s["name"] for s in server_config(page)["species"]] == ["bird"]
    assert editor_state(page)["canRedo"]


def test_a_saved_file_loads_back_the_same_configuration_after_a_reload(editor):
    page = editor
    count = card(page, "species.0").locator('input[data-field="count"]')
    before = applied(page)
    count.fill("640")
    count.dispatch_event("input")
    wait_applied(page, before)
    saved = server_config(page)
    assert saved["species"][0]["count"] == 640
    page.locator('#editor [data-action="save-name"]').fill("round_trip")
    page.locator('#editor [data-action="save"]').click()
    page.wait_for_function("() => [...document.querySelectorAll('#editor [data-action=\"files\"] option')]"
                           ".some(o => o.value === 'round_trip')", timeout=10_000)

    before = applied(page)
    page.locator('#editor [data-action="revert"]').click()  # back to the shipped flock
    wait_applied(page, before)
    assert server_config(page)["species"][0]["count"] == 1000

    page.reload()
    page.wait_for_function(f"() => window.__starling && {STATE}.framesApplied > 2", timeout=60_000)
    page.locator("#editor-toggle").click()
    page.wait_for_function(f"() => {STATE}.editor.status === 'applied'", timeout=60_000)
    page.locator('#editor [data-action="files"]').select_option("round_trip")
    before = applied(page)
    page.locator('#editor [data-action="load"]').click()
    wait_applied(page, before)
    assert server_config(page) == saved
    assert card(page, "species.0").locator('input[data-field="count"]').input_value() == "640"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def plugin_server(tmp_path):
    """`starling serve --plugin FILE` in its own process, as a user would run it."""
    scene = tmp_path / "tiny.toml"
    scene.write_text('name = "tiny"\n[world]\nbounds_min = [-20, -20, -20]\nbounds_max = [20, 20, 20]\n'
                     '[[species]]\nname = "fish"\ncount = 30\n[species.spawn]\ncenter = [0, 0, 0]\nsize = [10, 10, 10]\n')
    port = _free_port()
    bin_dir = Path(sys.executable).parent
    proc = subprocess.Popen([str(bin_dir / "starling"), "serve", str(scene), "--port", str(port), "--no-browser",
                             "--plugin", str(ROOT / "docs" / "examples" / "avoid_center.py"),
                             "--workspace", str(tmp_path / "work")],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"starling serve exited: {proc.stdout.read()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            time.sleep(0.2)
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_a_plugin_behaviour_appears_in_the_editor_with_its_own_form(browser, plugin_server):
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(str(exc)))
    try:
        page.goto(plugin_server)
        page.wait_for_function(f"() => window.__starling && {STATE}.framesApplied > 2", timeout=120_000)
        page.locator("#editor-toggle").click()
        page.wait_for_function(f"() => {STATE}.editor.status === 'applied'", timeout=60_000)
        simple = page.locator('select[data-action="add-behavior"][data-group="simple"]')
        assert simple.locator('option[value="avoid_zone"]').count() == 1
        # a neighbour group offers neighbour behaviours only: the plugin's simple one is not there
        page.locator('[data-action="add-groups"]').click()
        page.wait_for_function(f"() => {STATE}.editor.status === 'applied'", timeout=60_000)
        assert page.locator('select[data-action="add-behavior"][data-group="neighbor"] option[value="avoid_zone"]').count() == 0
        before = applied(page)
        simple.select_option("avoid_zone")
        wait_applied(page, before)
        form = page.locator('[data-kind="avoid_zone"]')
        assert form.locator('input[name="root[radius]"]').input_value() == "10"
        assert "Zone radius, m." in form.inner_text()
        config = page.evaluate("async () => (await fetch('/api/config')).json()")
        assert config["species"][0]["behaviors"][-1]["kind"] == "avoid_zone"
    finally:
        context.close()
    assert not problems, problems


def test_the_catalog_offers_behaviours_by_group_and_merger(page):
    catalog = page.evaluate("async () => (await fetch('/api/catalog')).json()")
    groups = {b["name"]: b["group"] for b in catalog["behaviors"]}
    assert groups["separation"] == "neighbor" and groups["avoid_verticals"] == "ray" and groups["wandering"] == "simple"
    assert {"apple", "player", "sound", "carcass"} <= set(catalog["populations"])
    assert json.dumps(catalog["forms"]["QueryConfig"]).count("max_distance") >= 1


def test_restart_reset_and_frame_all_from_the_top_bar(editor):
    page = editor
    count = card(page, "species.0").locator('input[data-field="count"]')
    before = applied(page)
    count.fill("700")
    count.dispatch_event("input")
    wait_applied(page, before)
    page.wait_for_function(f"() => {STATE}.step > 60", timeout=60_000)
    step = page.evaluate(f"() => {STATE}.step")

    page.locator("#restart").click()  # from the first step, the edit kept
    page.wait_for_function(f"() => {STATE}.acks.some(a => a.action === 'restart')", timeout=120_000)
    page.wait_for_function(f"() => {STATE}.step < {step}", timeout=60_000)  # the restarted run's frames
    page.wait_for_function(f"() => {STATE}.counts.bird === 700", timeout=60_000)

    page.locator("#reset").click()  # as shipped
    page.wait_for_function(f"() => {STATE}.acks.filter(a => a.action === 'restart').length === 2", timeout=120_000)
    page.wait_for_function(f"() => {STATE}.counts.bird === 1000", timeout=60_000)
    assert server_config(page)["species"][0]["count"] == 1000

    # follow an animal, then frame all: the orbit view comes back onto the whole flock
    page.evaluate("() => window.__starling.selectNearestCenter()")
    page.locator("#editor-toggle").click()  # close the editor: the view is the user's again
    page.locator('[data-camera="follow"]').click()
    assert page.evaluate(f"() => {STATE}.camera") == "follow"
    page.evaluate(f"() => {{ window.__framedBefore = {STATE}.framed; }}")
    page.locator("#view").focus()
    page.keyboard.press("h")
    page.wait_for_function(f"() => {STATE}.camera === 'orbit' && {STATE}.framed && {STATE}.framed !== window.__framedBefore",
                           timeout=30_000)


def test_the_scene_picker_switches_and_the_hint_offers_the_player_only_where_there_is_one(editor):
    page = editor
    assert page.locator("#hint-player").is_hidden()  # the flock has no player
    page.locator("#scenario").select_option("lagoon")
    page.wait_for_function(f"() => {STATE}.scenario === 'lagoon' && {STATE}.counts.fish > 0", timeout=180_000)
    assert page.locator("#hint-player").is_visible()
    # the editor follows the switch: it now shows the lagoon's species
    page.wait_for_function(f"() => {STATE}.editor.status === 'applied' && "
                           f"{STATE}.editor.draft.species.map(s => s.name).join() === 'fish,shark'", timeout=60_000)


@pytest.mark.parametrize("size", [(1280, 720), (1920, 1080)])
def test_the_inspector_editor_and_charts_do_not_overlap(browser, live_server, size):
    context = browser.new_context(viewport={"width": size[0], "height": size[1]})
    page = context.new_page()
    try:
        page.goto(live_server.url)
        page.wait_for_function(f"() => window.__starling && {STATE}.framesApplied > 2", timeout=60_000)
        page.wait_for_function(f"() => {STATE}.metricsStep > 0", timeout=60_000)
        page.evaluate("() => window.__starling.selectNearestCenter()")
        page.wait_for_function(f"() => {STATE}.inspect?.alive", timeout=30_000)
        page.locator("#editor-toggle").click()
        page.wait_for_function(f"() => {STATE}.editor.status === 'applied'", timeout=60_000)
        page.wait_for_function("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))")
        boxes = {name: page.locator(f"#{name}").bounding_box() for name in ("inspector", "charts", "editor", "topbar")}
        assert all(boxes.values()), boxes

        def overlap(a, b):
            return not (a["x"] + a["width"] <= b["x"] or b["x"] + b["width"] <= a["x"]
                        or a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"])
        pairs = [("inspector", "charts"), ("editor", "charts"), ("editor", "inspector"), ("inspector", "topbar"),
                 ("editor", "topbar")]
        for a, b in pairs:
            assert not overlap(boxes[a], boxes[b]), (a, b, boxes[a], boxes[b])
    finally:
        context.close()


def test_a_pause_from_another_page_is_said_and_shown(page, browser, live_server):
    other = browser.new_context(viewport={"width": 960, "height": 640})
    tab = other.new_page()
    try:
        tab.goto(live_server.url)
        tab.wait_for_function(f"() => window.__starling && {STATE}.framesApplied > 2", timeout=60_000)
        tab.locator("#play").click()  # the other page pauses the shared simulation
        page.wait_for_function("() => [...document.querySelectorAll('#toasts .toast')]"
                               ".some(t => t.textContent.includes('Paused from another page'))", timeout=30_000)
        assert page.locator("#paused-badge").is_visible()
        assert tab.locator("#paused-badge").is_visible()
        # the page that paused is not told about its own pause
        assert "another page" not in tab.locator("#toasts").inner_text()
        tab.locator("#play").click()
        page.wait_for_function("() => document.querySelector('#paused-badge').classList.contains('hidden')", timeout=30_000)
    finally:
        other.close()


def test_the_page_shows_what_loading_does(page):
    # watch the overlay from inside the page: it is up only while the scene loads
    page.evaluate("""() => {
        window.__loadingSeen = [];
        const box = document.getElementById('loading');
        new MutationObserver(() => {
            if (!box.classList.contains('hidden')) window.__loadingSeen.push(document.getElementById('loading-stage').textContent);
        }).observe(box, { attributes: true, subtree: true, childList: true, characterData: true });
    }""")
    step = page.evaluate(f"() => {STATE}.step")
    page.locator("#reset").click()
    page.wait_for_function(f"() => {STATE}.step < {step} && {STATE}.framesApplied > 0", timeout=120_000)
    page.wait_for_function("() => document.getElementById('loading').classList.contains('hidden')", timeout=60_000)
    seen = page.evaluate("() => window.__loadingSeen")
    assert seen and any(text.strip() for text in seen), seen


def test_a_pride_wears_its_states_and_ranks_and_a_death_is_marked_where_it_happened(editor):
    page = editor
    page.locator("#scenario").select_option("savannah")
    page.wait_for_function(f"() => {STATE}.scenario === 'savannah' && {STATE}.headLabels === 3", timeout=180_000)
    # ranked at the pride's first step: the labels before it say the state alone
    page.wait_for_function("() => [...document.querySelectorAll('.head-label')]"
                           ".filter(e => e.textContent.startsWith('#')).length === 3", timeout=60_000)
    texts = page.locator(".head-label").all_inner_texts()
    assert sorted(t.split(" · ")[0] for t in texts) == ["#1", "#2", "#3"], texts
    assert page.locator('.head-label[data-species="lion"]').count() == 3

    page.locator("#scenario").select_option("lagoon")
    page.wait_for_function(f"() => {STATE}.scenario === 'lagoon' && {STATE}.counts.fish > 0", timeout=180_000)
    # the 3 sharks wear their states; 200 fish are a school, not labelled one by one
    page.wait_for_function(f"() => {STATE}.headLabels === 3", timeout=30_000)
    assert page.locator('.head-label[data-species="fish"]').count() == 0
    # the player shoots a fish from straight above it: the death comes back as an event
    fish = page.evaluate("() => window.__starling.animals('fish', 1)[0]")
    x, y, z = fish["position"]
    page.evaluate(f"() => window.__starling.send({{type: 'fire', origin: [{x}, {y + 3}, {z}], direction: [0, -1, 0]}})")
    page.wait_for_function(f"() => {STATE}.deaths.some(d => d.species === 'fish')", timeout=60_000)
    assert page.locator(".death-marker").count() >= 1
