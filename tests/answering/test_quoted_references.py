"""A quoted abstract's own reference numbers ("As shown in [2], RLHF is unstable [3].") in an answer that cites
only [1]: the page made them inert, but the CLI, `--json` and the exports showed "... unstable [3] [1].", and a
reader took [2] and [3] for the answer's sources (security review, issue 49 row 13). Every shell now reads
"(ref. 2)", from the answer's own text."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from fake_openai import FakeOpenAI
from helpers import DATA, ROOT, rag_cmd

from rag.answering.records import Answer, Delta, Restart
from rag.config import Settings
from rag.engine import Engine

QUOTED = "As shown in [2], RLHF is unstable [3]."
PAPER = {"id": "rlhf-clip", "title": "Clipped reward updates for stable RLHF", "decision": "Accept (Poster)",
         "url": "https://openreview.net/forum?id=rlhf-clip",
         "abstract": f"Reinforcement learning from human feedback aligns language models with human preferences. "
                     f"{QUOTED} We propose clipped reward updates that keep RLHF training stable across seeds."}
QUESTION = "Is RLHF training unstable?"


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    base = tmp_path_factory.mktemp("quoted-refs")
    (base / "rlhf.jsonl").write_text(json.dumps(PAPER) + "\n")
    engine = Engine(Settings(data_dir=base / "index"))
    engine.ingest([DATA / "papers_small.jsonl", base / "rlhf.jsonl"])
    yield engine
    engine.close()


def _run(engine: Engine) -> tuple[str, Answer]:
    """The text a streaming shell shows (since the last Restart) and the final Answer."""
    shown = ""
    for event in engine.stream(QUESTION):
        if isinstance(event, Restart):
            shown = ""
        elif isinstance(event, Delta):
            shown += event.text
        else:
            return shown, event
    raise AssertionError("no Answer")


def _reads_as_its_own_references(text: str, answer: Answer) -> None:
    assert "As shown in (ref. 2), RLHF is unstable (ref. 3)" in text, text
    assert "[2]" not in text and "[3]" not in text, text
    assert [c.paper_id for c in answer.citations] == ["rlhf-clip"], answer.citations


def test_an_extractive_answer_quotes_an_abstracts_reference_numbers_as_its_own(engine):
    shown, answer = _run(engine)
    assert answer.mode == "extractive"
    n = next(s.n for s in answer.sources if s.paper_id == "rlhf-clip")
    assert n == 1 and f"(ref. 3) [{n}]" in answer.answer, answer.answer
    _reads_as_its_own_references(answer.answer, answer)
    _reads_as_its_own_references(shown, answer)  # what `rag ask` streams to the terminal


def test_an_llm_quoting_the_sentence_cites_only_its_own_number(engine):
    """A model copying the sentence with its "[2]" and "[3]" was read as citing sources 2 and 3."""
    with FakeOpenAI() as server:
        server.reply = ("Clipped reward updates keep RLHF training stable across seeds [1]. "
                        "As shown in [2], RLHF is unstable [3] [1].")
        llm = engine.derive(llm_model="fake-chat", llm_base_url=server.base_url, llm_max_retries=0)
        shown, answer = _run(llm)
    assert answer.mode == "llm", answer.fallback_reason
    _reads_as_its_own_references(answer.answer, answer)
    _reads_as_its_own_references(shown, answer)
    assert "RLHF is unstable (ref. 3) [1]." in answer.answer


def test_the_cli_and_its_json_show_the_quote_with_its_own_references(engine):
    env = {**os.environ, "RAG_DATA_DIR": str(engine.settings.data_dir)}
    for args in (("ask", QUESTION), ("ask", "--json", QUESTION)):
        run = subprocess.run(rag_cmd(*args), cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr
        text = json.loads(run.stdout)["answer"] if "--json" in args else run.stdout.split("\n\n")[0]
        assert "As shown in (ref. 2), RLHF is unstable (ref. 3) [1]" in text, run.stdout
        assert "[2]" not in text and "[3]" not in text, run.stdout
