"""Each outcome of an answer (answered / unsure / not covered) has its own look on the page, in a real headless
browser against the app over the bundled 2,114 abstracts (where the learned gate's cut points apply); the HTTP API
carries the same `outcome`."""

from __future__ import annotations

import os
import re
import shutil

import pytest
from helpers import COVERED, NEAR_MISS, UNCOVERED, api_ask, ask_and_wait, chromium_page

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="chromium is installed by `make test`")]


@pytest.fixture(scope="module")
def app(corpus_engine):
    from rag.web.app import launch

    demo = launch(corpus_engine, block=False)
    yield f"http://127.0.0.1:{corpus_engine.settings.port}"
    demo.close()


@pytest.fixture(scope="module")
def page(app):
    with chromium_page(app) as page:
        yield page


ask = ask_and_wait


def test_each_outcome_has_its_own_label_look_and_card_score_wording(page, app):
    looks = {}
    for turn, (question, outcome) in enumerate([(COVERED, "answered"), (NEAR_MISS, "unsure"),
                                                (UNCOVERED, "not_covered")]):
        ask(page, question, turn)
        answer = page.locator("#chat [data-testid=bot]").last
        badge = answer.locator(".outcome")
        assert badge.count() == 1 and f"outcome-{outcome}" in (badge.get_attribute("class") or "").split(), question
        looks[outcome] = badge.evaluate("e => [getComputedStyle(e).color, getComputedStyle(e).backgroundColor]")
        label = badge.inner_text()
        meta = page.locator("#sources .src-card .src-meta").first.inner_text()
        if outcome == "answered":
            assert label == "Answered from the papers" and re.search(r"· score \d\.\d\d", meta)
            assert "not an answer" not in meta
        else:
            # Beside "unsure" / "not covered" a card's score says what it measures, never a bare "score 1.00".
            assert re.search(r"· match \d\.\d\d \(retrieval, not an answer\)", meta) and "score" not in meta
        if outcome == "unsure":
            # the label says it once: the text's own "Unsure: none of the papers ..." is left out on the page
            assert label.startswith("Unsure") and answer.inner_text().count("Unsure") == 1
            assert "none of the papers clearly answers this" not in answer.inner_text()
            assert answer.locator(f'a[href="#src-{turn}-1"]').count() >= 1  # the closest papers are cited
            assert "cited as closest" in meta
        if outcome == "not_covered":
            assert label == "Not covered by the collection" and "does not appear to cover" not in answer.inner_text()
            assert "Nearest papers:" in answer.inner_text()  # listed once, linked, not also as a sentence
    assert len({tuple(v) for v in looks.values()}) == 3, looks  # three different looks
    status, answer = api_ask(app, [NEAR_MISS])
    assert status == 200 and answer["outcome"] == "unsure" and answer["abstained"] is False and answer["citations"]
