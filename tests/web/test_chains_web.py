"""A conversation in the page, as a new user has it (issue 53), in a real headless browser against the app over the
bundled 2,114 abstracts: a follow-up that leans on the first answer without a pronoun is answered from its paper,
a new question ending "Which one was it?" finds its own, and a follow-up after "Not covered" is not answered from
an unrelated paper. The HTTP API's history takes the same turns, with their outcome."""

from __future__ import annotations

import os
import shutil

import pytest
from helpers import api_ask, ask_and_wait, chromium_page

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="chromium is installed by `make test`")]

HEADS = "Retrieval Head Mechanistically Explains Long-Context Factuality"
POINT_CLOUDS = "MIRACLE 3D"


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


def ask(page, question: str, answers_before: int) -> tuple[str, list[str]]:
    """Ask, wait for the whole event chain (the session line is written last, as tests/web/test_outcomes_web.py
    waits), and return the answer's text and its source cards' titles."""
    ask_and_wait(page, question, answers_before)
    text = page.locator("#chat [data-testid=bot]").last.inner_text()
    return text, [t for t in page.locator("#sources .src-card .src-title").all_inner_texts() if t]


def test_a_chain_and_a_change_of_topic_in_the_page(page, app):
    text, cards = ask(page, "Which paper finds the attention heads that retrieve facts from a long context?", 0)
    assert cards[0] == HEADS
    # No pronoun, no paper named: the heads are that answer's.
    text, cards = ask(page, "What share of the heads are like that?", 1)
    assert cards == [HEADS] and "[1]" in text and "Not covered" not in text
    # A description of another paper ending "Which one was it?": its own paper, not "it" of the answer before.
    text, cards = ask(page, "I read about a continual learning method for 3D point clouds that keeps only a mean "
                            "shape and a few modes of variation per class. Which one was it?", 2)
    assert cards[0].startswith(POINT_CLOUDS) and HEADS not in cards and "[1]" in text
    # A topic no paper covers, then a follow-up: nothing to lean on, and nothing answers it.
    ask(page, "Which papers forecast volcanic eruptions from seismic data?", 3)
    text, _ = ask(page, "How many volcanoes did they train on?", 4)
    answer = page.locator("#chat [data-testid=bot]").last
    assert "outcome-answered" not in (answer.locator(".outcome").get_attribute("class") or "").split(), text
    assert "searched as a new question" in page.content()


def test_the_api_history_carries_the_outcome(app):
    status, first = api_ask(app, ["Which papers forecast volcanic eruptions from seismic data?"])
    assert status == 200 and first["outcome"] != "answered"
    history = [{"role": "user", "content": first["question"]},
               {"role": "assistant", "content": first["answer"],
                "paper_ids": [c["paper_id"] for c in first["citations"]], "outcome": first["outcome"]}]
    status, answer = api_ask(app, ["How many volcanoes did they train on?", history])
    assert status == 200 and answer["focus"] == [] and answer["outcome"] != "answered"
