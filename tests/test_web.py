"""The web chat in a real headless browser (Debian's chromium driven by Playwright), against the app on a free
port with a temp index of the seeds plus a few titled papers and one hostile record, and the project's fake
LLM server. Plus its HTTP API under 10 concurrent sessions, and the login."""

from __future__ import annotations

import json
import os
import shutil
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import DATA, ROOT, SEEDS, api_ask, free_port, seed_paragraphs
from fake_openai import FakeOpenAI

from rag.config import Settings
from rag.engine import Engine

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SAE = "Is there work on making sparse autoencoders cheaper to train?"
TIME_MOE_Q = "Which paper introduces a billion-scale time series foundation model?"
EVIL = {"id": "evil-1", "title": '<script>window.__pwned = 1</script>Evil <b>bold</b> title',
        "authors": ['<img src=x onerror="window.__pwned = 2">'], "decision": "Accept (Poster)",
        "url": "https://openreview.net/forum?id=evil-1",
        "abstract": 'We study hostile markup in abstracts about zebra stripes. <img src=x onerror="window.__pwned = 3"> '
                    "<script>window.__pwned = 4</script> Zebra stripes confuse biting flies in field experiments."}

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="chromium is installed by `make test`")


@pytest.fixture(scope="module")
def llm():
    with FakeOpenAI() as server:
        server.chunk_delay = 0.04  # slow enough to watch the answer grow
        yield server


@pytest.fixture(scope="module")
def app(tmp_path_factory, llm):
    from ui.app import launch

    base = tmp_path_factory.mktemp("web")
    (base / "evil.jsonl").write_text(json.dumps(EVIL) + "\n")
    engine = Engine(Settings(data_dir=base / "index", port=free_port(), llm_model="fake-chat",
                             llm_base_url=llm.base_url, llm_timeout=3, llm_max_retries=0))
    engine.ingest([SEEDS, DATA / "papers_small.jsonl", base / "evil.jsonl"])
    demo = launch(engine, block=False)
    yield f"http://127.0.0.1:{engine.settings.port}", engine
    demo.close()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--no-first-run", "--disable-sync", "--disable-quic"])
        yield browser
        browser.close()


@pytest.fixture
def page(browser, app):
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    page = context.new_page()
    page.goto(app[0] + "/")
    page.wait_for_selector("#question textarea")
    yield page
    context.close()


def ask(page, question: str, answers_before: int = 0) -> None:
    page.fill("#question textarea", question)
    page.click("#ask")
    page.wait_for_function(
        f"document.querySelectorAll('#chat [data-testid=bot]').length > {answers_before} && "
        "document.querySelector('#sources h3') && "
        f"document.querySelector('#sources h3').innerText.includes('answer {answers_before + 1}')", timeout=60_000)


def last_answer(page) -> str:
    return page.locator("#chat [data-testid=bot]").last.inner_text()


def test_the_answer_streams_in_and_links_to_a_source_card(page, llm):
    page.fill("#question textarea", SAE)
    page.click("#ask")
    seen = []
    deadline = time.time() + 60
    while time.time() < deadline and not page.locator("#sources .src-card").count():
        bots = page.locator("#chat [data-testid=bot]")
        if bots.count():
            text = bots.last.inner_text()
            if text and (not seen or text != seen[-1]):
                seen.append(text)
        time.sleep(0.03)
    assert len(seen) >= 3, seen  # the text grew in front of the user
    final = last_answer(page)
    assert "[1]" in final and "fake-chat (LLM)" in final
    card = page.locator("#src-0-1")
    assert "003_iclr2025_abstracts.txt #17" in card.inner_text()
    assert "score" in card.inner_text() and card.locator("mark").count() >= 1  # question terms highlighted
    page.locator('#chat a[href="#src-0-1"]').first.click()
    assert page.evaluate("location.hash") == "#src-0-1"
    card.locator("summary").click()
    assert seed_paragraphs("003_iclr2025_abstracts.txt")[16] in card.inner_text()
    page.screenshot(path=str(ROOT / ".pytest_cache" / "web-answer.png"), full_page=True)


def test_the_decision_filter_shows_only_matching_cards(page):
    page.get_by_label("Accept (Oral)").check()
    ask(page, "protein structure generation and agents for machine learning engineering")
    cards = page.locator("#sources .src-card")
    assert cards.count() == 2
    for i in range(cards.count()):
        assert "Oral" in cards.nth(i).locator(".badge").inner_text()
    titles = page.locator("#sources").inner_text()
    assert "ProtComposer" in titles and "MLE-bench" in titles
    assert "openreview.net/forum?id=0ctvBgKFgc" in page.inner_html("#sources")


def test_a_follow_up_question_uses_the_conversation(page):
    ask(page, TIME_MOE_Q)
    ask(page, "What dataset did they use?", answers_before=1)
    top = page.locator("#src-1-1")
    assert "000_iclr2025_abstracts.txt #16" in top.inner_text()  # Time-MoE again
    assert page.locator("#chat [data-testid=bot]").count() == 2


def test_export_markdown_and_json(page):
    ask(page, SAE)
    with page.expect_download() as download:
        page.click("#export-md")
    markdown = open(download.value.path(), encoding="utf-8").read()
    assert f"## Q1: {SAE}" in markdown and "[1] 003_iclr2025_abstracts.txt #17" in markdown
    with page.expect_download() as download:
        page.click("#export-json")
    exported = json.loads(open(download.value.path(), encoding="utf-8").read())
    answer = exported["answers"][0]
    assert answer["question"] == SAE and answer["citations"][0]["n"] == 1
    assert answer["citations"][0]["text"] == seed_paragraphs("003_iclr2025_abstracts.txt")[16]


def test_feedback_is_stored_as_a_json_line(page, app):
    feedback = app[1].settings.data_dir / "feedback.jsonl"
    before = feedback.read_text().splitlines() if feedback.exists() else []
    ask(page, SAE)
    page.locator('#chat button[aria-label="Like"]').last.click()
    deadline = time.time() + 10
    while time.time() < deadline and len(feedback.read_text().splitlines() if feedback.exists() else []) == len(before):
        time.sleep(0.1)
    line = json.loads(feedback.read_text().splitlines()[-1])
    assert line["helpful"] is True and line["question"] == SAE and line["cited"]


def test_hostile_markup_in_papers_renders_as_text(page):
    ask(page, "zebra stripes and biting flies")
    sources = page.locator("#sources")
    assert "<script>window.__pwned = 1</script>Evil <b>bold</b> title" in sources.inner_text()
    sources.locator("summary").first.click()
    assert '<img src=x onerror="window.__pwned = 3">' in sources.inner_text()
    assert page.evaluate("window.__pwned") is None
    assert page.locator("#sources img, #chat img, #sources script, #sources b").count() == 0


def test_with_the_llm_down_the_page_says_so_and_answers_extractively(page, llm):
    llm.mode = "cut"
    try:
        ask(page, SAE)
    finally:
        llm.mode = "normal"
    final = last_answer(page)
    assert "The LLM could not answer" in final and "stream broke off" in final
    assert "[1]" in final and "extractive" in final


def test_ten_concurrent_api_sessions_get_their_own_answers(app):
    base = app[0]
    firsts = {  # each session's earlier question, and the seed abstract its follow-up must retrieve
        "Which paper introduces a billion-scale time series foundation model?": seed_paragraphs(
            "000_iclr2025_abstracts.txt")[15],
        "What is the BirdSet dataset for avian bioacoustics?": seed_paragraphs("000_iclr2025_abstracts.txt")[13],
        "What is the CURIE benchmark for scientific long-context reasoning?": seed_paragraphs(
            "003_iclr2025_abstracts.txt")[10],
        "What is the INCLUDE benchmark of regional knowledge in many languages?": seed_paragraphs(
            "003_iclr2025_abstracts.txt")[19],
        "What is the OMG metagenomic corpus?": seed_paragraphs("003_iclr2025_abstracts.txt")[1],
    }
    jobs = [(first, gold) for first, gold in firsts.items()] * 2

    def session(job):
        first, gold = job
        status, answer = api_ask(base, ["How big is it?", [{"role": "user", "content": first},
                                                         {"role": "assistant", "content": "(earlier answer)"}]])
        return status, answer, gold

    with ThreadPoolExecutor(max_workers=10) as pool:
        results = list(pool.map(session, jobs))
    for status, answer, gold in results:
        assert status == 200
        assert answer["question"] == "How big is it?"
        assert answer["sources"][0]["text"] == gold, answer["retrieval_query"]


def test_login_is_required_when_rag_auth_is_set(tmp_path):
    from ui.app import launch

    engine = Engine(Settings(data_dir=tmp_path / "index", port=free_port(), auth="reader:s3cret"))
    engine.ingest([DATA / "papers_small.jsonl"])
    demo = launch(engine, block=False)
    base = f"http://127.0.0.1:{engine.settings.port}"
    try:
        status, _ = api_ask(base, ["protein structure generation"])
        assert status == 401
        login = urllib.request.Request(base + "/login", data=b"username=reader&password=s3cret",
                                       headers={"Content-Type": "application/x-www-form-urlencoded"})
        response = urllib.request.urlopen(login, timeout=10)
        cookies = "; ".join(c.split(";")[0] for c in response.headers.get_all("set-cookie"))
        status, answer = api_ask(base, ["protein structure generation"], cookies)
        assert status == 200 and answer["sources"][0]["title"].startswith("ProtComposer")
        bad = urllib.request.Request(base + "/login", data=b"username=reader&password=wrong",
                                     headers={"Content-Type": "application/x-www-form-urlencoded"})
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(bad, timeout=10)
    finally:
        demo.close()

