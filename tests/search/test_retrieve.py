"""Retrieval's seams: parameters passed whole, weighted RRF, a reranker as one function; and the one error base."""

import json

import bm25s
import pytest
from helpers import SEEDS

from rag.errors import RagError, one_line
from rag.config import ConfigError, Settings
from rag.store.embeddings import EmbeddingError
from rag.store.index import PaperIndex, StoreError
from rag.store.lock import StoreBusyError
from rag.search.retrieve import RERANK_DEPTH, HybridRetriever, RetrievalParams, fuse
from rag.generation.llm import LLMError
from rag.engine import Engine, QuestionError
from rag.evaluation.harness import QuestionSetError

SAE = "Is there work on making sparse autoencoders cheaper to train?"


def test_fusion_is_weighted_reciprocal_rank_scaled_to_one():
    fused = dict(fuse([(1.0, {"a": 0.9, "b": 0.8}), (2.0, {"b": 7.0, "c": 3.0})], rrf_k=5))
    assert fused["b"] == pytest.approx((1 / 7 + 2 / 6) / (3 / 6))  # second for dense, first for BM25
    assert fused["a"] == pytest.approx((1 / 6) / (3 / 6)) and fused["c"] == pytest.approx((2 / 7) / (3 / 6))
    assert list(dict(fuse([(1.0, {"x": 1, "y": 1})], 60))) == ["x", "y"]  # rank order, not score order
    assert fuse([(1.0, {})], 5) == []


def test_params_come_from_the_settings_whole_and_overrides_win():
    settings = Settings.load(k=7, candidates=80, rrf_k=9, bm25_weight=0.5, retrieval="bm25")
    params = RetrievalParams.from_settings(settings, k=3, author="Bengio")
    assert (params.k, params.candidates, params.rrf_k, params.bm25_weight, params.mode, params.author) == \
        (3, 80, 9, 0.5, "bm25", "Bengio")


def test_candidates_is_a_per_call_setting(embedded_seed_engine):
    retriever = embedded_seed_engine.retriever
    base = RetrievalParams.from_settings(embedded_seed_engine.settings, k=10)
    wide = retriever.candidates(_query(retriever, SAE), base, retriever.state)
    narrow = retriever.candidates(_query(retriever, SAE), RetrievalParams(k=10, candidates=5), retriever.state)
    assert len(wide["dense"]) > 5 and len(narrow["dense"]) <= 5 and len(narrow["bm25"]) <= 5
    assert list(narrow["bm25"]) == list(wide["bm25"])[:len(narrow["bm25"])]


def test_a_reranker_is_one_function_that_reorders_the_fused_hits(embedded_seed_engine):
    index = embedded_seed_engine.index
    seen = []

    def reverse(query, hits):
        seen.append((query.text, len(hits)))
        return hits[::-1]

    plain = HybridRetriever(index).retrieve(SAE, RetrievalParams(k=38))
    reranked = HybridRetriever(index, reranker=reverse).retrieve(SAE, RetrievalParams(k=3))
    depth = min(RERANK_DEPTH, len(plain.hits))
    assert seen == [(SAE, depth)] and depth == RERANK_DEPTH  # the best RERANK_DEPTH fused candidates, not only k
    assert [h.paper.paper_id for h in reranked.hits] == [h.paper.paper_id for h in plain.hits[:depth][::-1][:3]]
    assert reranked.hits[0].snippet and reranked.sentences  # annotated after reranking


def test_every_error_meant_for_users_shares_one_base():
    for cls in (ConfigError, EmbeddingError, StoreError, StoreBusyError, LLMError, QuestionError, QuestionSetError):
        assert issubclass(cls, RagError), cls
    assert one_line(StoreError("cannot open\n  the store:   disk full")) == "cannot open the store: disk full"
    assert one_line(LLMError("x" * 1000), limit=20) == "x" * 19 + "…"
    assert one_line(RagError()) == "RagError"


def _query(retriever, text):
    from rag.search.retrieve import Query
    from rag.text import tokenize

    return Query(text, retriever.index.embedder.embed([text])[0], tokenize([text])[0])


def test_an_answer_never_quotes_the_same_sentence_twice_whatever_invisible_characters_tell_it_apart(tmp_path):
    """A copy of a paper under another id, told apart by zero-width and bidi characters, had an extractive answer
    quote the same sentences twice, once per copy (security review 3, issue 26 item 21)."""
    import json

    from helpers import DATA

    from rag.engine import Engine
    from rag.text import split_sentences

    records = [json.loads(line) for line in (DATA / "papers_small.jsonl").read_text().splitlines()]
    original = records[0]
    sentences = split_sentences(original["abstract"])
    disguised = " ".join(s.replace(" ", " \u200b", 2).replace("e", "e\u200c", 1) + "\u202c" for s in sentences)
    copy = {**original, "id": "copy-1", "title": "A Copy " + original["title"], "abstract": disguised}
    path = tmp_path / "papers.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [original, copy, *records[1:]]) + "\n")
    engine = Engine(Settings.load(data_dir=tmp_path / "index"))
    engine.ingest([path])
    answer = engine.ask("How can protein structures be generated from a layout of 3D ellipsoids?")
    assert answer.mode == "extractive" and not answer.abstained
    import re

    seen = re.sub("[\u200b-\u200f\u202a-\u202e]", "", answer.answer)  # what a reader sees
    quoted = [s for s in sentences if s[:60] in seen]
    assert quoted and all(seen.count(s[:60]) == 1 for s in quoted), answer.answer
    assert seen == answer.answer  # nothing invisible is quoted either


def test_one_definition_of_a_rare_name_for_the_named_match_and_the_comparison_sides(embedded_seed_engine):
    """"Rare" (a name the question shares with the top paper, a comparison side's name) is `AnswerPolicy.rare_limit`,
    read from the policy the retrieval is given: "LLMs" is in more than max(2, 38 / 200) of the 38 seed papers, so
    it is no name match, unless the policy calls a term in up to 38 / 1 papers rare."""
    from rag.config import DEFAULT_POLICY, AnswerPolicy

    question = "How do LLMs evaluate their answers?"
    retriever = embedded_seed_engine.retriever
    assert (DEFAULT_POLICY.rare_limit(38), DEFAULT_POLICY.rare_limit(2114)) == (2, 10)
    assert retriever.retrieve(question, RetrievalParams.from_settings(embedded_seed_engine.settings)).named_match == ""
    loose = AnswerPolicy.model_validate({"rare_name_papers": 1})
    assert loose.rare_limit(38) == 38
    assert retriever.retrieve(question, RetrievalParams(policy=loose)).named_match == "LLMs"


def _hits(retrieval):
    return [(h.paper.paper_id, h.score, h.snippet) for h in retrieval.hits]


def _write(path, papers):
    path.write_text("".join(json.dumps(p) + "\n" for p in papers), encoding="utf-8")
    return path


ZEBRA = {"id": "zebra-1", "title": "Striped Plasma Tokamaks", "abstract": "We study zebra-striped plasma "
         "confinement in tokamaks. Our zebra stripes keep the plasma stable for hours. Experiments confirm it."}


def test_a_new_engine_loads_the_corpus_from_the_cache_and_every_change_of_the_store_renews_it(tmp_path, monkeypatch):
    """A cold `rag ask` spent ~2 s building the BM25 index and term counts of the whole collection; now a second
    engine over the same store loads them (no BM25 index is built) and retrieves exactly what the first did. An
    ingest that changes the store marks it before its first write, so the cache is never read for a changed store,
    even after an ingest killed midway."""
    settings = Settings.load(data_dir=tmp_path / "index")
    first = Engine(settings)
    first.ingest([SEEDS])
    expected = _hits(first.retriever.retrieve(SAE, RetrievalParams(k=5)))
    assert (tmp_path / "index" / "corpus" / "papers.npz").is_file()

    def built(*args, **kwargs):
        raise AssertionError("the BM25 index was built again")

    with monkeypatch.context() as patch:
        patch.setattr(bm25s.BM25, "index", built)
        assert _hits(Engine(settings).retriever.retrieve(SAE, RetrievalParams(k=5))) == expected

    # An ingest killed after its first write (here: the store fails on the first batch) has already renewed the mark.
    before = first.index.generation()
    with monkeypatch.context() as patch:
        patch.setattr(PaperIndex, "_store", lambda self, batch: (_ for _ in ()).throw(OSError("disk gone")))
        with pytest.raises(StoreError):
            Engine(settings).ingest([_write(tmp_path / "zebra.jsonl", [ZEBRA])])
    assert first.index.generation() != before
    Engine(settings).ingest([tmp_path / "zebra.jsonl"])
    fresh = Engine(settings).retriever
    assert "zebra-1" in fresh.state.position and fresh.retrieve("zebra-striped tokamaks").hits[0].paper.paper_id \
        == "zebra-1"
    # An unchanged re-ingest keeps the mark (a restart of `rag serve` re-reads the bundled list): the cache holds.
    mark = fresh.index.generation()
    Engine(settings).ingest([SEEDS])
    assert fresh.index.generation() == mark


def test_a_filtered_list_embeds_its_question_once(embedded_seed_engine, monkeypatch):
    # "How many orals ...?" with no oral on the topic: searched with the filter, without it (the bar), and widened;
    # the question's vector is computed once and passed along (`HybridRetriever.retrieve(..., vector)`).
    embedder = embedded_seed_engine.retriever.index.embedder
    embed, embedded = embedder.embed, []
    monkeypatch.setattr(embedder, "embed", lambda texts: embedded.append(list(texts)) or embed(texts))
    answer = embedded_seed_engine.ask("How many orals are about virtual try-on?")
    assert answer.filters.widened == ("decisions",)
    assert embedded.count(["virtual try-on"]) == 1, embedded


class _Planted:
    """What a planted pickle runs when it is unpickled: here, it creates a file."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def test_a_planted_cache_file_in_the_data_dir_runs_no_code_and_the_corpus_round_trips(tmp_path):
    """`corpus/papers.pickle` was unpickled before its key was compared: a file planted in the data dir ran code in
    every process that opened the store. The cache is now an .npz read without pickle (plain arrays and JSON);
    a planted pickle is never opened, a planted .npz holding pickled objects is refused and rebuilt."""
    import pickle

    import numpy as np

    from rag.search.retrieve import _Corpus

    settings = Settings.load(data_dir=tmp_path / "index")
    with Engine(settings) as first:
        first.ingest([SEEDS])
        built = first.retriever.state
        expected = _hits(first.retriever.retrieve(SAE, RetrievalParams(k=5)))
    corpus = tmp_path / "index" / "corpus"
    marker = tmp_path / "code-ran"
    (corpus / "papers.pickle").write_bytes(pickle.dumps((None, _Planted(marker))))
    with Engine(settings) as second:
        loaded = second.retriever.state
        assert _hits(second.retriever.retrieve(SAE, RetrievalParams(k=5))) == expected
    assert not marker.exists()
    for field in ("papers", "position", "df", "stem_df", "terms", "names"):
        assert getattr(loaded, field) == getattr(built, field), field
    assert list(loaded.decisions) == list(built.decisions)
    assert loaded.dense is not None and built.dense is not None
    assert loaded.dense.sentence_texts == built.dense.sentence_texts
    assert np.array_equal(loaded.dense.chunk_vectors, built.dense.chunk_vectors)
    assert loaded.bm25.vocab_dict == built.bm25.vocab_dict and all(
        np.array_equal(loaded.bm25.scores[k], built.bm25.scores[k]) for k in ("data", "indices", "indptr"))
    assert isinstance(loaded, _Corpus)

    # An .npz whose arrays are pickled objects: numpy refuses them unread, and the corpus is read from the store.
    with (corpus / "papers.npz").open("wb") as f:
        np.savez(f, meta=np.array([_Planted(marker)], dtype=object))
    with Engine(settings) as third:
        assert _hits(third.retriever.retrieve(SAE, RetrievalParams(k=5))) == expected
    assert not marker.exists()
