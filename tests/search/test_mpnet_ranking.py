"""The third ranking: whole-paper all-mpnet-base-v2 vectors beside MiniLM's chunks and BM25 (rag.store.mpnet_vectors,
rag.search.retrieve), on the real model and the real bundled list."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rag.store import mpnet
from rag.store.mpnet_vectors import SHIPPED, PaperVectors, key, paper_text, read_file

ROOT = Path(__file__).resolve().parents[2]


def _describe_dev(qid: str) -> dict:
    for line in (ROOT / "eval" / "questions" / "describe_dev.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row["qid"] == qid:
            return row
    raise AssertionError(qid)


def test_the_shipped_file_holds_every_bundled_paper_as_an_ingest_stores_it(corpus_engine):
    """The bundled list's corpus is built from the shipped vectors alone: no paper goes through the model (that
    would be ~0.5 s a paper, 17 min for the list). Fails when rag/data changes without `build_vectors.py --mpnet`."""
    retriever = corpus_engine.retriever
    state = retriever.state
    assert state.mpnet is not None and state.mpnet.shape == (len(state.papers), 768)
    shipped = read_file(SHIPPED, mpnet.IDENTITY)
    missing = [p.paper_id for p in state.papers if key(paper_text(p.title, p.abstract)) not in shipped]
    assert not missing, f"{len(missing)} bundled papers lack a shipped mpnet vector: run rag/data/build_vectors.py " \
                        "--mpnet --update"
    assert np.allclose(np.linalg.norm(state.mpnet, axis=1), 1.0, atol=1e-3)


@pytest.mark.parametrize("qid", ["describe-dev-002", "describe-dev-011"])
def test_a_description_in_other_words_is_found_first_with_the_mpnet_ranking(corpus_engine, qid):
    """Dev questions the app without the mpnet ranking ranked wrong first (eval/DECISIONS.md, "A second embedder"): the
    ranking alone and the app's fusion both put the described paper first; without it the fusion does not."""
    row = _describe_dev(qid)
    first = {}
    for name, overrides in {"mpnet": {"retrieval": "mpnet"}, "app": {}, "without": {"mpnet_weight": 0.0}}.items():
        first[name] = corpus_engine.derive(**overrides).search(row["question"]).sources[0].paper_id
    assert first["mpnet"] == row["gold"][0]
    assert first["app"] == row["gold"][0]
    assert first["without"] != row["gold"][0]


class _Counting:
    """The real model, counting the texts it embeds."""

    def __init__(self) -> None:
        self.model, self.texts = mpnet.load(), 0

    def embed(self, texts: list[str]) -> np.ndarray:
        self.texts += len(texts)
        return self.model.embed(texts)


class _P:
    def __init__(self, title: str, abstract: str) -> None:
        self.title, self.abstract = title, abstract


def test_papers_not_shipped_are_embedded_once_then_read_from_the_data_dirs_cache(tmp_path):
    model = _Counting()
    cache = tmp_path / "corpus" / "papers.mpnet.npz"
    papers = [_P("Bees and flowers", "We count bees visiting flowers in a meadow with a camera."),
              _P("Tidal energy", "A turbine placement study for tidal currents.")]
    first = PaperVectors(cache, lambda: model, mpnet.IDENTITY, shipped=tmp_path / "none.npz").papers(papers)
    assert model.texts == 2 and cache.is_file()
    assert np.allclose(first, mpnet.load().embed([paper_text(p.title, p.abstract) for p in papers]), atol=2e-2)
    again = PaperVectors(cache, lambda: model, mpnet.IDENTITY, shipped=tmp_path / "none.npz")
    second = again.papers(papers)
    assert model.texts == 2 and again.embedded == 0  # nothing embedded the second time
    assert np.allclose(first, second, atol=1e-6)
    edited = [papers[0], _P("Tidal energy", "A turbine placement study for tidal and river currents.")]
    again.papers(edited)
    assert model.texts == 3  # only the edited paper


def test_a_cache_of_another_model_or_a_broken_file_is_ignored_not_trusted(tmp_path):
    model = _Counting()
    cache = tmp_path / "papers.mpnet.npz"
    papers = [_P("Bees and flowers", "We count bees visiting flowers in a meadow with a camera.")]
    PaperVectors(cache, lambda: model, "some-other-model", shipped=tmp_path / "none.npz").papers(papers)
    PaperVectors(cache, lambda: model, mpnet.IDENTITY, shipped=tmp_path / "none.npz").papers(papers)
    assert model.texts == 2
    cache.write_bytes(b"not a numpy file")
    PaperVectors(cache, lambda: model, mpnet.IDENTITY, shipped=tmp_path / "none.npz").papers(papers)
    assert model.texts == 3


def test_with_the_weight_at_zero_the_model_is_never_needed(tmp_path, monkeypatch):
    """`mpnet_weight` 0 (RAG_MPNET_WEIGHT=0) is the escape hatch for an install without the model files: the engine
    answers with the two other rankings and never loads or checks it."""
    from rag.config import Settings
    from rag.engine import Engine

    def refuse(*_a, **_k):
        raise AssertionError("the mpnet model was asked for")

    monkeypatch.setattr(mpnet, "load", refuse)
    monkeypatch.setattr(mpnet, "check", refuse)
    engine = Engine(Settings.load(data_dir=tmp_path / "index", mpnet_weight=0.0))
    engine.ingest([ROOT / "seeds"])
    answer = engine.ask("Which paper studies multi-agent reinforcement learning?")
    assert answer.sources


def test_an_ingest_embeds_its_new_papers_so_the_first_question_after_it_does_not(tmp_path):
    """A user's own papers (no shipped vector) are embedded by the ingest, into the data dir's cache; the corpus the
    first question builds reads them from there, and a new process embeds nothing either."""
    from rag.config import Settings
    from rag.engine import Engine

    papers = tmp_path / "mine.jsonl"
    papers.write_text("\n".join(json.dumps(p) for p in [
        {"id": "bees-1", "title": "Counting pollinators with cameras",
         "abstract": "We count bees visiting flowers in a meadow from video, with a detector trained on 4,000 frames."},
        {"id": "tide-1", "title": "Placing tidal turbines",
         "abstract": "We choose where to put turbines in a tidal channel to maximise the energy they harvest."},
    ]) + "\n")
    settings = Settings.load(data_dir=tmp_path / "index")
    with Engine(settings) as engine:
        engine.ingest([papers])
        assert engine.retriever.mpnet.embedded == 2
        hits = engine.derive(retrieval="mpnet").search("video of insects on blossoms").sources
        assert hits[0].paper_id == "bees-1"
        assert engine.retriever.mpnet.embedded == 2  # the corpus read them from the cache
    with Engine(settings) as again:
        assert again.search("harvesting energy from sea currents").sources[0].paper_id == "tide-1"
        assert again.retriever.mpnet.embedded == 0


def test_without_the_model_files_search_goes_on_with_two_rankings_and_says_so(tmp_path, monkeypatch, caplog):
    """A pip-installed wheel has no weights: the engine answers with MiniLM and BM25 and warns once with the fix;
    asked for the mpnet ranking alone, it fails with that message instead."""
    from rag.config import Settings
    from rag.engine import Engine
    from rag.store.embeddings import EmbeddingError

    def missing(*_a, **_k):
        raise EmbeddingError("all-mpnet-base-v2 file missing: model.safetensors. Run `make install`.")

    monkeypatch.setattr(mpnet, "check", missing)
    engine = Engine(Settings.load(data_dir=tmp_path / "index"))
    engine.ingest([ROOT / "seeds"])
    with caplog.at_level("WARNING", logger="rag"):
        answer = engine.ask("Which paper studies multi-agent reinforcement learning?")
    assert answer.sources and engine.retriever.mpnet is None
    assert [r.getMessage() for r in caplog.records if "MiniLM and BM25 only" in r.getMessage()]
    with pytest.raises(EmbeddingError, match="make install"):
        Engine(Settings.load(data_dir=tmp_path / "index", retrieval="mpnet")).search("bees")
