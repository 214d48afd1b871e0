"""The map of the collection and the cards' Related lists in a real headless browser (Debian's chromium driven by
Playwright), against the app on a free port with a temp index of the seeds plus one hostile record."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from helpers import SEEDS, free_port

from rag.config import Settings
from rag.engine import Engine

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SAE = "Is there work on making sparse autoencoders cheaper to train?"
SAE_ID, SAE_TITLE = "k2ZVAzVeMP", "Efficient Dictionary Learning with Switch Sparse Autoencoders"
EVIL = {"id": "evil-map", "title": '<script>window.__pwned = 1</script>Evil <b>bold</b> zebra title',
        "authors": ['<img src=x onerror="window.__pwned = 2">'], "decision": "Accept (Oral)",
        "url": "https://openreview.net/forum?id=evil-map",
        "abstract": "We study zebra stripes and biting flies. <img src=x onerror=\"window.__pwned = 3\"> Stripes "
                    "confuse flies in field experiments."}

# Bidi overrides in a title and an author: "Alice \u202eecilA" read "Alice Alice" and reversed the text after it.
BIDI = {"id": "bidi-map", "title": "Okapi \u202eecilA gait", "authors": ["Alice \u202eecilA"],
        "decision": "Accept (Poster)", "url": "https://openreview.net/forum?id=bidi-map",
        "abstract": "We study okapi gait \u202eecilA with video in forest reserves."}
BIDI_CONTROLS = set("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="chromium is installed by `make test`")]


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    from rag.web.app import launch

    base = tmp_path_factory.mktemp("map-web")
    (base / "evil.jsonl").write_text(json.dumps(EVIL) + "\n" + json.dumps(BIDI) + "\n")
    engine = Engine(Settings(data_dir=base / "index", port=free_port()))
    engine.ingest([SEEDS, base / "evil.jsonl"])
    demo = launch(engine, block=False)
    yield f"http://127.0.0.1:{engine.settings.port}", engine
    demo.close()


@pytest.fixture(scope="module")
def page(app):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        outside: list[str] = []
        page.on("request", lambda r: outside.append(r.url) if not r.url.startswith(("http://127.0.0.1", "data:",
                                                                                      "blob:")) else None)
        page.goto(app[0] + "/")
        page.wait_for_function("document.querySelectorAll('#map circle').length > 30", timeout=60_000)
        yield page
        assert outside == []  # the page and its map load nothing from outside 127.0.0.1
        browser.close()


def test_clicking_a_point_shows_that_papers_card_with_its_related_papers(page, app):
    count = app[1].index.count()
    assert page.locator("#map circle").count() == count
    assert f"{count} papers in " in page.inner_text("#map .map-status")
    point = page.locator(f'#map circle[data-paper="{SAE_ID}"]')
    point.hover(force=True)
    point.dispatch_event("mouseover")
    assert page.inner_text("#map .map-hover").startswith(SAE_TITLE)  # hover shows the title
    point.dispatch_event("click")
    page.wait_for_function("document.querySelector('#map .map-card .src-title')", timeout=30_000)
    assert page.locator("#map .map-card .src-title").first.inner_text() == SAE_TITLE
    page.locator("#map .map-card > .src-related > summary").click()
    assert page.locator("#map .map-card > .src-related .rel-card").count() == 5


def test_a_hostile_title_stays_text_on_the_map_and_its_card(page):
    point = page.locator('#map circle[data-paper="evil-map"]')
    assert point.locator("title").text_content().startswith(EVIL["title"])
    point.dispatch_event("click")
    page.wait_for_function("document.querySelector('#map .map-card .src-title') && document.querySelector("
                           "'#map .map-card .src-title').innerText.includes('zebra')", timeout=30_000)
    assert page.locator("#map .map-card .src-title").first.inner_text() == EVIL["title"]
    assert page.locator("#map .map-card script, #map .map-card img, #map .map-card b").count() == 0
    assert page.evaluate("window.__pwned") is None


def test_bidi_overrides_are_taken_out_of_the_hover_and_the_map_card(page):
    point = page.locator('#map circle[data-paper="bidi-map"]')
    title = point.locator("title").text_content()
    assert title.startswith("Okapi ecilA gait — topic ") and not BIDI_CONTROLS & set(title)
    point.dispatch_event("mouseover")
    hover = page.inner_text("#map .map-hover")
    assert hover.startswith("Okapi ecilA gait") and not BIDI_CONTROLS & set(hover)
    point.dispatch_event("click")
    page.wait_for_function("document.querySelector('#map .map-card .src-title') && document.querySelector("
                           "'#map .map-card .src-title').innerText.includes('Okapi')", timeout=30_000)
    card = page.locator("#map .map-card")
    card.locator("details").first.evaluate("d => d.open = true")
    text = card.inner_text()
    assert "Alice ecilA" in text and "okapi gait ecilA" in text and not BIDI_CONTROLS & set(text)


def test_an_answer_rings_its_papers_and_zooms_and_the_filters_grey_out_the_rest(page):
    page.fill("#question textarea", SAE)
    page.click("#ask")
    page.wait_for_function("document.querySelectorAll('#map circle.hl').length > 0", timeout=60_000)
    ringed = page.eval_on_selector_all("#map circle.hl", "cs => cs.map(c => c.dataset.paper)")
    assert SAE_ID in ringed
    assert page.get_attribute("#map svg.map-plot", "viewBox") != "-20 -20 1040 1040"  # zoomed to them
    # Every source card lists its related papers on expand, escaped like the rest.
    assert page.locator("#sources .src-related").count() == page.locator("#sources .src-card").count()
    related = page.locator("#sources .src-related").first
    related.locator(":scope > summary").click()
    assert related.locator(".rel-card").count() == 5
    page.get_by_label("Accept (Oral)").check()
    page.wait_for_function("document.querySelectorAll('#map circle.dim').length > 0", timeout=30_000)
    dim = page.eval_on_selector_all("#map circle.dim", "cs => cs.map(c => c.dataset.paper)")
    kept = page.eval_on_selector_all("#map circle:not(.dim)", "cs => cs.map(c => c.dataset.paper)")
    assert "evil-map" in kept and kept and dim
    page.get_by_label("Accept (Oral)").uncheck()
    page.wait_for_function("document.querySelectorAll('#map circle.dim').length === 0", timeout=30_000)
    assert page.evaluate("window.__pwned") is None


def test_after_an_answer_zooms_the_map_show_all_and_a_double_click_give_the_whole_map_back(page):
    """A newcomer could not zoom back out after an answer zoomed the map (double-click and the wheel did nothing;
    only "New conversation" reset it)."""
    if not page.locator("#map circle.hl").count():
        page.fill("#question textarea", SAE)
        page.click("#ask")
        page.wait_for_function("document.querySelectorAll('#map circle.hl').length > 0", timeout=60_000)
    full = "-20 -20 1040 1040"
    assert page.get_attribute("#map svg.map-plot", "viewBox") != full
    reset = page.locator("#map .map-reset")
    assert reset.is_visible()
    reset.click()
    assert page.get_attribute("#map svg.map-plot", "viewBox") == full
    assert page.locator("#map circle.hl").count() > 0 and not reset.is_visible()  # still ringed, whole map
    page.set_viewport_size({"width": 1300, "height": 1000})  # a resize keeps the whole map
    page.wait_for_timeout(200)
    assert page.get_attribute("#map svg.map-plot", "viewBox") == full
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.fill("#question textarea", "Which papers use diffusion models for virtual try-on?")
    page.click("#ask")  # the next answer zooms again ...
    page.wait_for_function(f"document.querySelector('#map svg.map-plot').getAttribute('viewBox') !== '{full}'",
                           timeout=60_000)
    page.locator("#map svg.map-plot").dblclick(position={"x": 5, "y": 5})  # ... and a double-click zooms out
    assert page.get_attribute("#map svg.map-plot", "viewBox") == full


def call_api(base: str, name: str, payload: list) -> dict:
    """A named API endpoint over plain HTTP (Gradio's two-step call + SSE): its result, or {"error": message}."""
    import urllib.request

    request = urllib.request.Request(f"{base}/gradio_api/call/{name}", data=json.dumps({"data": payload}).encode(),
                                     headers={"Content-Type": "application/json"})
    event = json.loads(urllib.request.urlopen(request, timeout=30).read())["event_id"]
    text = urllib.request.urlopen(f"{base}/gradio_api/call/{name}/{event}", timeout=120).read().decode()
    data = [line[6:] for line in text.splitlines() if line.startswith("data: ")][-1]
    if "event: error" in text:
        return {"error": json.loads(data)}
    return json.loads(data)[0]


def test_the_related_api_answers_like_rag_related(app):
    base, engine = app
    got = call_api(base, "related", ["switch sparse autoencoders", 3])
    assert got == json.loads(json.dumps(engine.related(SAE_ID, 3).to_dict()))
    assert got["paper"]["title"] == SAE_TITLE and len(got["related"]) == 3
    unknown = call_api(base, "related", ["zebra quokka /etc/passwd", 5])
    assert "no paper has the id or title" in str(unknown["error"]) and "/etc/passwd" not in str(unknown["error"])


def test_the_topics_api_answers_like_rag_topics_and_gives_the_map_on_request(app):
    base, engine = app
    got = call_api(base, "topics", [False])
    assert got == json.loads(json.dumps(engine.topics().summary()))
    mapped = call_api(base, "topics", [True])
    assert [p["paper_id"] for p in mapped["points"]] == engine.topics().paper_ids
    assert mapped["topics"] == got["topics"]
    for bad in ("abc", 1_000_000_000, {"x": 1}):
        assert "points must be true or false" in str(call_api(base, "topics", [bad])["error"])


def test_on_a_phone_the_question_box_is_on_the_first_screen_and_map_points_can_be_tapped(page, app):
    """On a 390x844 phone the box was below the 560 px chat, at the bottom of the first screen or past it (behind
    the keyboard once tapped), and a map point was 3 px across (6 units of a 1040-unit map drawn 360 px wide)."""
    phone = page.context.browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True,
                                             has_touch=True, device_scale_factor=3)  # the module's browser
    try:
        screen = phone.new_page()
        screen.goto(app[0] + "/")
        screen.wait_for_function("document.querySelectorAll('#map circle').length > 30", timeout=60_000)
        box = screen.evaluate("(() => { const r = document.querySelector('#question textarea')"
                              ".getBoundingClientRect(); return [r.top, r.bottom, r.width]; })()")
        # On the first screen, and in its upper half: the on-screen keyboard covers the lower one.
        assert box[0] >= 0 and box[1] <= 844 / 2 and box[2] > 150, box
        assert screen.evaluate("window.scrollY") == 0
        screen.locator("#map .map-plot").scroll_into_view_if_needed()
        sizes = screen.evaluate("[...document.querySelectorAll('#map circle')].map((c) => "
                                "c.getBoundingClientRect().width)")
        assert min(sizes) >= 10, min(sizes)
        point = screen.locator(f'#map circle[data-paper="{SAE_ID}"]')
        point.evaluate("(c) => c.parentNode.appendChild(c)")  # on top of its neighbours, now bigger
        point.tap()  # a real touch at the point's centre (its hover line must not move the map meanwhile)
        screen.wait_for_function("document.querySelector('#map .map-card .src-title')", timeout=30_000)
        assert screen.locator("#map .map-card .src-title").first.inner_text() == SAE_TITLE
    finally:
        phone.close()


# Scroll the chat back until an answer's outcome badge is at its top edge (the last answer that can get there), and
# say whether the chat's label covers it. The label takes no pointer events, so `elementFromPoint` sees through it:
# the rectangles are compared as well.
BADGE_AT_TOP = """() => {
  const chat = document.querySelector('#chat');
  window.scrollTo(0, chat.getBoundingClientRect().top + scrollY - 10);
  const badges = [...chat.querySelectorAll('.outcome')].reverse();
  let scroller = badges[0].parentElement;
  while (scroller && !(scroller.scrollHeight > scroller.clientHeight + 5
                       && getComputedStyle(scroller).overflowY !== 'visible')) scroller = scroller.parentElement;
  if (!scroller) return {reached: false};
  const top = () => scroller.getBoundingClientRect().top;
  const badge = badges.find((b) => {
    scroller.scrollTop += b.getBoundingClientRect().top - top() - 2;
    return Math.abs(b.getBoundingClientRect().top - top() - 2) < 2;
  });
  if (!badge) return {reached: false};
  const r = badge.getBoundingClientRect();
  const l = chat.querySelector('[data-testid="block-label"]').getBoundingClientRect();
  const overlap = Math.max(0, Math.min(r.right, l.right) - Math.max(r.left, l.left))
                * Math.max(0, Math.min(r.bottom, l.bottom) - Math.max(r.top, l.top));
  return {reached: true, overlap, label: l.height > 0 && l.width > 0,
          hit: document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2) === badge};
}"""
PAGE_TOP = "(s) => document.querySelector(s).getBoundingClientRect().top + window.scrollY"


@pytest.mark.parametrize("locale, width, height", [("en-US", 390, 844), ("zh-CN", 1400, 1000)])
def test_the_outcome_badge_is_never_under_the_chat_label_and_a_phone_shows_the_sources_first(page, app, locale,
                                                                                             width, height):
    """The outcome badge of an answer scrolled to the top of the chat was hidden under the "Conversation" / "对话"
    label floating over it (on a phone, and on the Chinese desktop page), and on a phone the source cards came
    after five examples, four buttons and the filters (issue 54 item 4)."""
    phone = width < 640
    context = page.context.browser.new_context(viewport={"width": width, "height": height}, locale=locale,
                                               is_mobile=phone, has_touch=phone)
    try:
        screen = context.new_page()
        screen.goto(app[0] + "/")
        screen.wait_for_selector("#question textarea")
        questions = [SAE, "Which papers use diffusion models for virtual try-on?",
                     "有没有用稀疏自编码器分解激活的论文？" if locale == "zh-CN" else "Who wrote the Switch SAE paper?"]
        for n, question in enumerate(questions, start=1):
            screen.fill("#question textarea", question)
            screen.click("#ask")
            screen.wait_for_function(f"document.querySelectorAll('#chat .outcome').length >= {n} && "
                                     "!document.querySelector('#ask[disabled]')", timeout=120_000)
            screen.wait_for_timeout(500)
        seen = screen.evaluate(BADGE_AT_TOP)
        assert seen["reached"] and seen["label"], seen
        assert seen["overlap"] == 0 and seen["hit"], seen
        if phone:
            sources = screen.evaluate(PAGE_TOP, "#sources")
            assert screen.evaluate(PAGE_TOP, "#chat") < sources, "the chat comes first"
            for below in ("#examples", "#decision", "#clear"):
                assert sources < screen.evaluate(PAGE_TOP, below), below
        if locale == "zh-CN":  # the Chinese question's English search terms are there on demand only
            terms = screen.locator("#chat details.search-terms").last
            assert terms.locator("summary").inner_text() == "英文检索词"
            assert not terms.evaluate("d => d.open") and "sparse autoencoder" not in terms.inner_text()
            terms.locator("summary").click()
            assert "sparse autoencoder" in terms.inner_text()
    finally:
        context.close()
