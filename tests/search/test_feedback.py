"""Pseudo-relevance feedback (rag/search/retrieve.py `HybridRetriever.feedback`, issue 29 item 3) on eight real
abstracts: RM3 adds the top papers' own terms to the BM25 query, Rocchio moves the question's vector toward theirs,
both only reorder (the hits' signals stay the question's own scores), and both are off unless set."""

from collections import Counter

import pytest
from helpers import DATA

from rag.config import Settings
from rag.engine import Engine
from rag.search.retrieve import Query, RetrievalParams, rm3_weights
from rag.text import tokenize

PROTCOMPOSER = "0ctvBgKFgc"  # the only one of the eight abstracts with "ellipsoid", "layout" and "edit"
QUESTION = "Editing ellipsoid layouts"


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    engine = Engine(Settings.load(data_dir=tmp_path_factory.mktemp("feedback")))
    engine.ingest([DATA / "papers_small.jsonl"])
    return engine.retriever


def _query(retriever, text):
    return Query(text, retriever.index.embedder.embed([text])[0], tokenize([text])[0])


def test_feedback_is_off_unless_set():
    params = RetrievalParams.from_settings(Settings.load())
    assert (params.prf_terms, params.rocchio_weight) == (0, 0.0)


def test_rm3_adds_the_top_papers_most_frequent_terms_beside_the_questions(small):
    state = small.state
    paper = state.papers[state.position[PROTCOMPOSER]]
    terms = tokenize([QUESTION])[0]
    weights = rm3_weights(terms, [(paper, 1.0)], n_terms=10, query_weight=0.6)
    counts = Counter(tokenize([paper.search_text])[0])
    frequent = sorted(counts, key=lambda t: (-counts[t], t))[:10]  # ties broken by the term, as rm3_weights does
    assert set(weights) == set(terms) | set(frequent)  # the question's terms and the paper's ten most frequent
    assert sum(weights.values()) == pytest.approx(1.0)
    assert sum(weights[t] for t in frequent if t not in terms) < 0.4 < sum(weights[t] for t in terms)
    assert max(weights, key=weights.__getitem__) in frequent  # "protein": the paper's word, not the question's


def test_rm3_finds_papers_sharing_the_top_papers_words_and_keeps_the_questions_own_scores(small):
    plain = RetrievalParams(k=8, mode="bm25")
    first = small.candidates(_query(small, QUESTION), plain, small.state)["bm25"]
    assert list(first) == [PROTCOMPOSER]  # no other abstract holds a word of the question
    expanded = small.retrieve(QUESTION, RetrievalParams(k=8, mode="bm25", prf_docs=1, prf_terms=10))
    ids = [h.paper.paper_id for h in expanded.hits]
    assert ids[0] == PROTCOMPOSER and len(ids) > 1  # ... but some share ProtComposer's ("generat", "model")
    assert expanded.hits[0].bm25 == pytest.approx(first[PROTCOMPOSER])  # the question's own BM25 score
    assert all(h.bm25 is None for h in expanded.hits[1:])  # found by the expansion alone: no question score
    assert expanded.terms == set(tokenize([QUESTION])[0])  # the abstention gate still reads the question's terms


def test_rocchio_moves_the_question_toward_the_top_papers_and_only_on_the_dense_side(small):
    query = _query(small, "generating music quickly")
    params = RetrievalParams(k=8, mode="dense", prf_docs=1, rocchio_weight=1.0)
    first = small.candidates(query, params, small.state)["dense"]
    top = next(iter(first))
    fused = [(top, 1.0)]
    second = small.feedback(query, params, small.state, fused)
    assert set(second) == {"dense"} and next(iter(second["dense"])) == top
    assert second["dense"][top] > first[top]  # nearer the top paper than the question alone was
    assert small.feedback(query, RetrievalParams(mode="bm25", rocchio_weight=1.0), small.state, fused) == {}
    hits = small.retrieve("generating music quickly", params).hits
    assert hits[0].dense == pytest.approx(first[hits[0].paper.paper_id])  # the signal: the question's own cosine
