"""What one long browser session costs the server and the page, over real HTTP through Gradio's queue as the page
calls it (issue 49 #8, #9): the answer's payload stops growing with the conversation, and a conversation's exports
are one file per kind, however often they are made."""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

import pytest
from helpers import DATA, SEEDS, free_port

from rag.config import Settings
from rag.engine import Engine

QUESTIONS = ["Is there work on making sparse autoencoders cheaper to train?",
             "Which papers use diffusion models?",
             "Which paper introduces a billion-scale time series foundation model?",
             "What about graph neural networks?"]


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    from rag.web.app import launch

    engine = Engine(Settings(data_dir=tmp_path_factory.mktemp("bounds") / "index", port=free_port()))
    engine.ingest([SEEDS])
    engine.ingest([DATA / "papers_small.jsonl"])
    demo = launch(engine, block=False)
    yield f"http://127.0.0.1:{engine.settings.port}"
    demo.close()


def run(base: str, name: str, data: list, session: str) -> tuple[list, int]:
    """Run one of the page's (private) handlers through Gradio's queue as the page does: its final outputs, and
    the bytes of the event stream the page received for it."""
    config = json.loads(urllib.request.urlopen(base + "/config", timeout=10).read())
    fn = next(d for d in config["dependencies"] if d.get("api_name") == name)
    body = {"data": data, "fn_index": fn["id"], "trigger_id": fn["targets"][0][0], "session_hash": session,
            "event_data": None}
    request = urllib.request.Request(base + "/gradio_api/queue/join", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    assert urllib.request.urlopen(request, timeout=30).status == 200
    stream = urllib.request.urlopen(f"{base}/gradio_api/queue/data?session_hash={urllib.parse.quote(session)}",
                                    timeout=300).read()
    for line in stream.decode().splitlines():
        if line.startswith("data: ") and '"process_completed"' in line:
            event = json.loads(line[6:])
            assert event["success"], event
            return event["output"]["data"], len(stream)
    raise AssertionError(stream[-500:])


def ask(base: str, question: str, chat: list, session: str) -> tuple[list, int]:
    """Ask as the page does, with 20 papers (the chat it shows goes back with each question); the chat after
    the answer and the bytes the page received for it."""
    outputs, size = run(base, "stream_answer", [question, chat, None, [], "", 20, None, None], session)
    return outputs[0], size


def test_a_long_sessions_answers_stop_growing_with_the_conversation(app):
    """Each answer used to carry every earlier answer's source cards, with their related papers: 0.5 MB more per
    answer at k=20 (the 80th: 30 MB, 6.3 s). The earlier answers' cards are now lines of titles after the first
    two, and the 80th answer costs what the 3rd does (plus its chat's text)."""
    session, chat, sizes = uuid.uuid4().hex[:11], [], []
    for turn in range(6):
        chat, size = ask(app, f"{QUESTIONS[turn % 4]} ({turn})", chat, session)
        sizes.append(size)
    assert len(chat) == 12 and sizes[0] > 200_000  # 20 cards, each with its related papers
    assert sizes[5] < 1.1 * sizes[2], sizes  # turns 3 to 6: some kilobytes of chat and title lines more


def upload_copies(marker: str) -> list[Path]:
    """Export files holding `marker` in Gradio's upload folder: what a page can download (Gradio copies every file
    it hands to a page there, unless it is there already)."""
    from gradio.utils import get_upload_folder

    return [p for p in Path(get_upload_folder()).rglob("conversation.*")
            if marker in p.read_text(encoding="utf-8", errors="replace")]


def test_a_conversations_exports_are_one_file_per_kind_however_often_made(app):
    """60 rounds of ask + Export JSON kept 101 MB within the hour: Gradio kept a copy of every version, each the
    whole conversation so far. Now a new version replaces the one before, and Gradio serves it without a copy."""
    marker = "okapi" + uuid.uuid4().hex[:8]
    session, chat = uuid.uuid4().hex[:11], []
    for turn in range(4):
        chat, _ = ask(app, f"{QUESTIONS[turn % 4]} ({marker} {turn})", chat, session)
        for kind in ("md", "json"):
            (file, _), _ = run(app, f"export_{kind}", [None, None], session)
            copies = upload_copies(marker)  # this round's md (and json), and at first the json of the round before
            assert len(copies) == (1 if (turn, kind) == (0, "md") else 2), (turn, kind, copies)
            assert len({p.name for p in copies}) == len(copies)  # one file per kind
            download = urllib.request.urlopen(app + file["url"].split(app, 1)[-1], timeout=30).read().decode()
            assert f"{marker} {turn}" in download  # the page downloads this round's version
    again, _ = run(app, "export_json", [None, None], session)  # no new answer: the same file again
    assert again[0]["path"] == file["path"] and len(upload_copies(marker)) == 2
    exported = json.loads(Path(file["path"]).read_text(encoding="utf-8"))
    assert [a["question"] for a in exported["answers"]] == [f"{QUESTIONS[t]} ({marker} {t})" for t in range(4)]
