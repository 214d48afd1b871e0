"""Plain helpers the tests import (`from helpers import ...`): the repo's paths, the seed abstracts, free ports, the
`rag` CLI as a subprocess, the web API over HTTP. Fixtures live in conftest.py; pytest puts tests/ on the import
path (`pythonpath` in pyproject.toml), so these, fake_openai.py and netaudit.py import by name."""

from __future__ import annotations

import os
import re
import shutil
import socket
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT / "seeds"
DATA = Path(__file__).resolve().parent / "data"
CORPUS = ROOT / "rag" / "data" / "iclr2025.jsonl"  # the bundled list (a copy of ../shared/corpus)
# Over CORPUS, one question per outcome (`Answer.outcome`; tests/answering/test_outcomes.py, the page's look in
# tests/web/test_outcomes_web.py): a near miss about a real paper, a topic no abstract is about, a covered one.
# Measured (gate probability / best sentence, k = 5): 0.51 / 0.54 (CatVTON is the paper; its abstract says nothing of
# video), 1.00 / 0.23, 0.04 / 0.78; the cut points are 0.26 and 0.78, the confidence bar 0.47 (the gate refit on the
# dev sets, issue 29 item 4; before it 0.56, 0.95, 0.29 against 0.44 and 0.98).
NEAR_MISS = ("Has the virtual try-on model that concatenates garment and person images been used for video try-on "
             "of dancers?")
UNCOVERED = "Which papers predict the ripeness of avocados from photos?"
COVERED = "Is there work on making sparse autoencoders cheaper to train?"


def seed_paragraphs(name: str) -> list[str]:
    """The abstracts of a seed file, as the seed format defines them (header line dropped)."""
    text = (SEEDS / name).read_text()
    return [" ".join(p.split()) for p in text.split("\n\n")[1:] if p.strip()]


def short_abstracts() -> list[str]:
    """The first two sentences of the abstracts of two seed files: real text for tests that ingest hundreds of
    generated papers to kill the process midway (crash safety), where embedding whole abstracts only adds minutes."""
    sentences = (re.split(r"(?<=\.) ", p) for p in seed_paragraphs("000_99312b63f56aee43.txt")
                 + seed_paragraphs("003_ca1cb07fa40ffbf8.txt"))
    return [" ".join(s[:2]) for s in sentences]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rag_cmd(*args: str, **settings) -> list[str]:
    """The `rag` CLI of this venv as a subprocess command, with settings as flags."""
    cmd = [sys.executable, "-m", "rag", *args]
    for name, value in settings.items():
        cmd += ["--" + name.replace("_", "-"), str(value)]
    return cmd


def api_ask(base: str, payload: list, cookies: str = "", timeout: float = 120) -> tuple[int, dict | None]:
    """Call the web app's `/ask` API over plain HTTP (Gradio's two-step call + SSE). payload: [question, history,
    k, decisions, author], trailing ones optional. Returns (HTTP status, the Answer as a dict), or for an error the
    app raised for the user (gr.Error): (200, {"error": message})."""
    import json
    import urllib.error
    import urllib.request

    payload = payload + [None, 5, None, ""][len(payload) - 1:]
    headers = {"Content-Type": "application/json", **({"Cookie": cookies} if cookies else {})}
    request = urllib.request.Request(base + "/gradio_api/call/ask", data=json.dumps({"data": payload}).encode(),
                                     headers=headers)
    try:
        event = json.loads(urllib.request.urlopen(request, timeout=30).read())["event_id"]
    except urllib.error.HTTPError as exc:
        return exc.code, None
    stream = urllib.request.Request(f"{base}/gradio_api/call/ask/{event}", headers=headers)
    text = urllib.request.urlopen(stream, timeout=timeout).read().decode()
    data = [line[6:] for line in text.splitlines() if line.startswith("data: ")][-1]
    if "event: error" in text:
        error = json.loads(data)
        return 200, {"error": error.get("error") if isinstance(error, dict) else error}
    return 200, json.loads(data)[0]


def wait_for_page(url: str, proc, timeout: float = 120) -> str:
    """The body of `url` once the server started as `proc` answers; fails if it exits or takes too long."""
    import time
    import urllib.request

    deadline = time.time() + timeout
    while True:
        try:
            return urllib.request.urlopen(url, timeout=2).read().decode()
        except OSError:
            assert proc.poll() is None, "the server exited"
            assert time.time() < deadline, "the server did not start"
            time.sleep(0.3)


def without_capabilities(cmd: list[str]) -> list[str]:
    """Root ignores file modes; run without capabilities so chmod 0 / a-w mean what they say (CI is root)."""
    import shutil

    if os.geteuid() == 0:
        return [shutil.which("setpriv") or "/usr/bin/setpriv", "--bounding-set=-all", "--inh-caps=-all", "--", *cmd]
    return cmd


def start_chroma(path: Path, port: int, output=None):
    """A real `chroma run` (this venv's chromadb) serving `path` on 127.0.0.1:port, returned once it answers its
    heartbeat. One starter for every test that needs its own server (tests/conftest.py's `chroma_server` too)."""
    import subprocess
    import time
    import urllib.request

    proc = subprocess.Popen([str(Path(sys.executable).parent / "chroma"), "run", "--path", str(path),
                             "--host", "127.0.0.1", "--port", str(port)],
                            stdout=output or subprocess.DEVNULL, stderr=subprocess.STDOUT)
    deadline = time.time() + 60
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=2)
            return proc
        except OSError:
            assert proc.poll() is None and time.time() < deadline, "chroma run did not start"
            time.sleep(0.2)


def chromium_page(url: str):
    """A headless Debian chromium page (Playwright) at `url` once its question box is there, for a module's browser
    tests: a context manager yielding the page."""
    import contextlib

    @contextlib.contextmanager
    def opened():
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium", headless=True,
                                        args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                                              "--disable-component-update", "--no-first-run", "--disable-sync",
                                              "--disable-quic"])
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(url + "/")
            page.wait_for_selector("#question textarea")
            try:
                yield page
            finally:
                browser.close()

    return opened()


def ask_and_wait(page, question: str, answers_before: int) -> None:
    """Ask in the page and wait for the whole event chain (the session line is written last): a click while the
    previous answer's event is pending is dropped by Gradio."""
    page.fill("#question textarea", question)
    page.click("#ask")
    page.wait_for_function(
        f"document.querySelectorAll('#chat [data-testid=bot]').length > {answers_before} && "
        "document.querySelector('#sources h3') && "
        f"document.querySelector('#sources h3').innerText.includes('answer {answers_before + 1}') && "
        f"/This session: {answers_before + 1} answers?\\b/.test(document.querySelector('#session-totals').innerText)",
        timeout=120_000)
