"""The read snapshot of an embedded store (`rag.store.snapshot`): a question at rest reads no chromadb, answers as the
Chroma path does, and every change of the store (or a serving process) sends it back through Chroma."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

import pytest
from helpers import COVERED, DATA, ROOT, SEEDS

from rag.config import Settings
from rag.engine import Engine
from rag.store import lock, snapshot
from rag.store.index import PaperIndex

SAE_TITLE = "Efficient Dictionary Learning with Switch Sparse Autoencoders"
QUESTIONS = [json.loads(line)["question"] for line in (ROOT / "eval" / "questions" / "seeds_dev.jsonl").open()][:40]


def _answer(engine, question, **filters):
    answer = engine.ask(question, **filters).to_dict()
    answer.pop("timings", None)
    return answer


def test_the_snapshot_answers_as_chroma_does(tmp_path):
    """Same sources, same ranking, same sentences and scores as querying Chroma, on the seed dev questions, with and
    without decision and author filters: on 38 papers (59 chunks) HNSW is exact, so any difference would be the
    snapshot's."""
    engine = Engine(Settings(data_dir=tmp_path / "index"))
    engine.ingest([SEEDS])
    retriever = engine.retriever
    assert retriever.state.dense is not None  # the ingest left the store at rest: the snapshot was read with it
    dense = retriever.state
    through_chroma = replace(dense, dense=None)
    author = next(p.authors[0] for p in dense.papers if p.authors)
    asked = ([(q, {}) for q in QUESTIONS] + [(q, {"decision": "poster"}) for q in QUESTIONS[:10]]
             + [(q, {"decision": ["oral", "spotlight"]}) for q in QUESTIONS[10:20]]
             + [(q, {"author": author}) for q in QUESTIONS[:5]])
    for question, filters in asked:
        retriever.state = dense
        fast = _answer(engine, question, **filters)
        retriever.state = through_chroma
        slow = _answer(engine, question, **filters)
        assert fast == slow, (question, filters)


def test_a_cold_ask_at_rest_imports_no_chromadb_and_sees_the_next_ingest(tmp_path):
    data = tmp_path / "index"

    def ask(question):
        code = ("import sys\nfrom rag.cli import main\n"
                f"main(['ask', '--json', '--data-dir', {str(data)!r}, {question!r}], standalone_mode=False)\n"
                "print('CHROMADB', 'chromadb' in sys.modules)\n")
        run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
        assert run.returncode == 0, run.stderr[-2000:]
        answer, _, imported = run.stdout.rpartition("CHROMADB ")
        out = json.loads(answer)
        out.pop("timings")
        return out, imported.strip() == "True"

    subprocess.run([sys.executable, "-m", "rag", "ingest", "-q", "--data-dir", str(data), str(SEEDS)], cwd=ROOT,
                   check=True, capture_output=True)
    question = "Which methods forecast the weather with machine learning?"
    first, imported = ask(question)  # builds the corpus cache and the snapshot, through Chroma
    assert imported
    again, imported = ask(question)
    assert not imported and again == first
    engine = Engine(Settings(data_dir=data))
    assert again == _answer(engine, question)  # the library's answer, the same
    # Another ingest changes the store: the next question reads the new paper.
    subprocess.run([sys.executable, "-m", "rag", "ingest", "-q", "--data-dir", str(data),
                    str(DATA / "papers_small.jsonl")], cwd=ROOT, check=True, capture_output=True)
    later = "Is there a benchmark of machine learning agents doing machine learning engineering?"
    after, imported = ask(later)
    assert imported and after["sources"][0]["title"].startswith("MLE-bench"), after["sources"][0]
    assert ask(later) == (after, False)


def test_the_mark_is_gone_while_an_ingest_writes_and_names_the_new_generation_after(tmp_path, monkeypatch):
    settings = Settings(data_dir=tmp_path / "index")
    engine = Engine(settings)
    engine.ingest([SEEDS])
    index = engine.index
    mark = snapshot.read_mark(settings)
    assert mark == snapshot.Mark(index.generation(), 38, index.embedder.identity)
    seen = []
    store = PaperIndex._store

    def watched(self, batch):
        seen.append(snapshot.read_mark(settings))
        return store(self, batch)

    monkeypatch.setattr(PaperIndex, "_store", watched)
    engine.ingest([DATA / "papers_small.jsonl"])
    assert seen and all(found is None for found in seen)
    after = snapshot.read_mark(settings)
    assert after is not None and after.count == 46 and after.generation == index.generation() != mark.generation
    engine.ingest([DATA / "papers_small.jsonl"])  # nothing changes: the mark stays
    assert snapshot.read_mark(settings) == after


def test_a_store_without_a_mark_goes_through_chroma_and_gets_one_unless_an_ingest_is_writing(tmp_path):
    settings = Settings(data_dir=tmp_path / "index")
    Engine(settings).ingest([SEEDS])
    snapshot.mark_path(settings).unlink()  # as a store written by an older version, or a killed ingest, leaves it
    with lock.writing(settings):  # an ingest in another process: no reader vouches for the store meanwhile
        engine = Engine(settings)
        assert engine.retriever.state.dense is None and engine.index.opened
        assert snapshot.read_mark(settings) is None
        assert not _answer(engine, "What is RelCon for wearable data?")["abstained"]
    engine = Engine(settings)
    assert engine.retriever.state.dense is not None and engine.index.opened
    assert snapshot.read_mark(settings) == snapshot.Mark(engine.index.generation(), 38, engine.index.embedder.identity)
    engine = Engine(settings)  # the next process: at rest, Chroma is never opened
    assert engine.retriever.state.dense is not None and not engine.index.opened and not engine.is_empty()


def test_a_broken_mark_or_another_embedder_means_the_chroma_path(tmp_path):
    settings = Settings(data_dir=tmp_path / "index")
    Engine(settings).ingest([SEEDS])
    path = snapshot.mark_path(settings)
    good = path.read_text()
    for broken in ("", "{", '{"format": 1}', good.replace('"minilm:', '"other:')):
        path.write_text(broken)
        engine = Engine(settings)
        engine.retriever  # noqa: B018  loads it: a broken mark is ignored and the store opened
        assert engine.index.opened, broken


def test_a_question_beside_a_serving_process_reads_only_the_snapshot_it_shares(tmp_path):
    """A newcomer started `make run` and then `rag ask`, as README's first section has it, and was refused: a
    running `rag serve` owns the store (issue 54 item 1). A reader beside it now answers from the snapshot the server
    shares (never opening the store), says when the server changed the store since; a writer is still refused."""
    settings = Settings(data_dir=tmp_path / "index")
    serving = Engine(settings, serving=True)
    serving.ingest([SEEDS])
    held = lock.hold(settings)  # what `rag serve` holds
    try:
        with pytest.raises(lock.StoreBusyError, match="has not shared a snapshot of the index for other processes"):
            Engine(settings).ask("protein structure generation")
        assert serving.share_snapshot()
        reader = Engine(settings)
        answer = reader.ask(COVERED)
        assert answer.citations[0].title == SAE_TITLE and answer.notices == []
        assert not reader.index.opened and reader.beside
        # `rag related` from the snapshot's copy of the paper vectors: the store's, exactly
        assert reader.related(SAE_TITLE, 8) == serving.related(SAE_TITLE, 8)
        assert reader.stats()["papers"] == 38 and reader.topics().topics
        with pytest.raises(lock.StoreBusyError, match="cannot add papers to it there"):
            reader.ingest([DATA / "papers_small.jsonl"])
        # The server adds papers: a reader reads the last snapshot it shared, and says so, until it shares again.
        serving.ingest([DATA / "papers_small.jsonl"])
        stale = Engine(settings).ask(COVERED)
        assert stale.notices == ["A running `rag serve` is changing this index: searched the 38 papers of the last "
                                 "snapshot it shared."]
        assert serving.share_snapshot()
        fresh = Engine(settings)
        assert fresh.ask(COVERED).notices == [] and fresh.stats()["papers"] == 46
    finally:
        held.close()


def test_a_serving_process_reads_no_snapshot_and_the_next_question_does(tmp_path):
    """`rag serve` would print "Indexed" seconds later if it read every vector when its indexing ends; it does not,
    and the first question after it stops reads them (once)."""
    settings = Settings(data_dir=tmp_path / "index")
    serving = Engine(settings, serving=True)
    serving.ingest([SEEDS])
    assert serving.retriever.state.dense is None and snapshot.read_mark(settings) is not None
    engine = Engine(settings)
    assert engine.retriever.state.dense is not None
    assert Engine(settings, serving=True).retriever.state.dense is not None  # the cached one, used as it is


def test_a_mark_does_not_vouch_for_store_files_that_changed_under_it(tmp_path):
    """A store copied in by hand (other segment folders) or grown by a writer that does not know the mark (an
    older version) is read through chromadb, not from the snapshot of the store that was there."""
    settings = Settings(data_dir=tmp_path / "d")
    engine = Engine(settings)
    engine.ingest([SEEDS])
    assert snapshot.read_mark(settings) is not None
    (settings.chroma_path / "00000000-copied-in").mkdir()
    assert snapshot.read_mark(settings) is None
    (settings.chroma_path / "00000000-copied-in").rmdir()
    assert snapshot.read_mark(settings) is not None
    with open(settings.chroma_path / "chroma.sqlite3", "ab") as f:
        f.write(b"\0" * 4096)  # grown by a writer that left the mark in place
    assert snapshot.read_mark(settings) is None
