"""Retrieve: a question -> the top-k papers, each with a fused score, its signals and a best-matching snippet.

Two retrievers over the same store, fused per paper with weighted reciprocal rank fusion (RRF):
- dense: the question's vector against the chunk vectors in Chroma; a paper scores its best chunk;
- lexical: BM25 (bm25s, English stemming and stop words) over each paper's title + abstract.
The fusion constant (5, not the textbook 60) and BM25's weight (1.5 against dense's 1) were tuned on the seed dev
questions over the 2,114-paper corpus and confirmed on other questions (eval/README.md): on this corpus BM25 is
the stronger signal and the top of each list matters most.

Fusion is written here rather than with llama-index's `QueryFusionRetriever` because that one fuses *nodes*:
the chunks of one paper would vote separately and crowd the list. Here each retriever votes once per paper.
The abstention gate in `rag.answer` reads `Retrieval.confidence`, the score of the best sentence of the top papers.

Sentences (for snippets, extractive answers and the abstention signal) are scored by their stored vector
(`rag.index`) against the question, plus a small bonus for sharing the question's stemmed terms. A question costs
one embedding (its own), one Chroma query, one BM25 pass and one Chroma read of the hits' sentences.

Title-only papers (`has_abstract` false) are ranked like the others, on their title, but have no sentences: no
snippet, nothing an answer could quote, and no say in the confidence. The papers that answer are the first
SNIPPET_PAPERS hits with abstracts, so titles ranked high do not crowd out the abstracts below them.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

import bm25s
import numpy as np
import Stemmer

from rag.config import Settings
from rag.index import PaperIndex, Sentences, StoredPaper
from rag.sentences import split_sentences

_STEMMER = Stemmer.Stemmer("english")
LEXICAL_BONUS = 0.15  # weight of term overlap next to the cosine similarity when scoring sentences
_MAX_ID_FILTER = 1000  # papers passed to Chroma as an id filter; more are filtered after the search
SNIPPET_PAPERS = 3  # the top papers with abstracts whose sentences answer (the best one is the confidence)
_WORD = re.compile(r"(?<![\w-])[\w][\w-]*")
# A method or dataset name as users type it: CatVTON, BirdSet, Time-MoE, X-ALMA, TEAL, Scylla (not sentence-initial).
_NAME = re.compile(r"(?<![\w-])(?:[A-Za-z]+[A-Z][\w-]*|[A-Z][A-Z0-9-]{2,}|[A-Z][a-z]+(?:-[A-Za-z0-9]+)*)(?![\w-])")


@dataclass
class Hit:
    """A retrieved paper. `score` is the fused score scaled to 0..1 (1 = ranked first by both retrievers)."""

    paper: StoredPaper
    score: float
    dense: float | None  # cosine similarity of the paper's best chunk, if the dense side found it
    bm25: float | None
    snippet: str = ""


@dataclass
class Retrieval:
    question: str
    hits: list[Hit]
    query_vector: np.ndarray
    terms: set[str] = field(default_factory=set)  # the question's stemmed terms (BM25's tokenizer)
    sentences: list["ScoredSentence"] = field(default_factory=list)  # of the top papers, best first
    named_match: str = ""  # a rare, name-like term of the question found in the top paper ("Scylla")

    @property
    def confidence(self) -> float:
        """How well the best sentence of the top papers matches the question (the abstention signal)."""
        return self.sentences[0].score if self.sentences else 0.0


@dataclass(frozen=True)
class _Corpus:
    """What retrieval reads besides Chroma: the papers, their positions, decisions, and the BM25 index."""

    papers: list[StoredPaper]
    position: dict[str, int]
    decisions: np.ndarray
    bm25: bm25s.BM25 | None
    df: Counter  # in how many papers each lower-cased word (hyphens kept) occurs


@dataclass(frozen=True)
class ScoredSentence:
    text: str
    score: float
    paper_index: int  # index into Retrieval.hits


def tokenize(texts: list[str]) -> list[list[str]]:
    return bm25s.tokenize(texts, stopwords="en", stemmer=_STEMMER, return_ids=False, show_progress=False)


class HybridRetriever:
    """Dense + BM25 over a `PaperIndex`. Call `refresh()` after the store changes."""

    def __init__(self, index: PaperIndex, candidates: int = 50) -> None:
        self.index = index
        self.candidates = candidates
        self.refresh()

    def refresh(self) -> None:
        papers = self.index.all_papers()
        bm25 = None
        if papers:
            bm25 = bm25s.BM25()
            bm25.index(tokenize([p.search_text for p in papers]), show_progress=False)
        # One assignment, so a concurrent `retrieve` sees either the old corpus or the new one, never a mix.
        df = Counter(w for p in papers for w in set(_WORD.findall(p.search_text.casefold())))
        self.state = _Corpus(papers, {p.paper_id: i for i, p in enumerate(papers)},
                             np.array([p.decision for p in papers], dtype=object), bm25, df)

    @property
    def papers(self) -> list[StoredPaper]:
        return self.state.papers

    def retrieve(self, question: str, k: int = 5, decisions: list[str] | None = None,
                 author: str | None = None, mode: str = "hybrid", rrf_k: int | None = None,
                 bm25_weight: float | None = None) -> Retrieval:
        """The top-k papers for a question, optionally only papers with one of `decisions` and an author whose
        name contains `author` (case-insensitive). `mode` "dense" or "bm25" ranks with that retriever alone (the
        other is not run); `rrf_k` and `bm25_weight` default to the Settings defaults (engines pass their own)."""
        rrf_k = Settings.model_fields["rrf_k"].default if rrf_k is None else rrf_k
        bm25_weight = Settings.model_fields["bm25_weight"].default if bm25_weight is None else bm25_weight
        vector = self.index.embedder.embed([question])[0]
        terms = tokenize([question])[0]
        state = self.state
        if not state.papers:
            return Retrieval(question, [], vector, set(terms))
        allowed = None  # boolean mask over state.papers, when filtered
        if decisions:
            allowed = np.isin(state.decisions, list(decisions))
        if author and author.strip():
            needle = author.strip().casefold()
            by_author = np.array([any(needle in a.casefold() for a in p.authors) for p in state.papers])
            allowed = by_author if allowed is None else allowed & by_author
        paper_ids = None
        if author and allowed is not None:  # few papers: let Chroma search only theirs
            paper_ids = [state.papers[i].paper_id for i in np.flatnonzero(allowed)][:_MAX_ID_FILTER]
        dense_ranked: dict[str, float] = {}
        chunks = [] if mode == "bm25" else \
            self.index.query_chunks(vector.tolist(), self.candidates, decisions or None, paper_ids)
        for pid, sim in chunks:
            if pid in state.position and pid not in dense_ranked:
                if allowed is None or allowed[state.position[pid]]:
                    dense_ranked[pid] = sim

        lexical_ranked: dict[str, float] = {}
        if terms and state.bm25 is not None and mode != "dense":
            mask = None if allowed is None else allowed.astype(np.float32)
            scores = state.bm25.get_scores(terms, weight_mask=mask)
            top = np.argsort(-scores, kind="stable")[: self.candidates]
            lexical_ranked = {state.papers[i].paper_id: float(scores[i]) for i in top if scores[i] > 0}

        rankings = {"hybrid": ((1.0, dense_ranked), (bm25_weight, lexical_ranked)),
                    "dense": ((1.0, dense_ranked),), "bm25": ((1.0, lexical_ranked),)}[mode]
        fused: dict[str, float] = {}
        for weight, ranking in rankings:
            for rank, pid in enumerate(ranking):
                fused[pid] = fused.get(pid, 0.0) + weight / (rrf_k + rank + 1)
        best_possible = sum(weight for weight, _ in rankings) / (rrf_k + 1)
        order = sorted(fused, key=lambda pid: (-fused[pid], pid))[:k]
        hits = [Hit(state.papers[state.position[pid]], fused[pid] / best_possible,
                    dense_ranked.get(pid), lexical_ranked.get(pid)) for pid in order]
        retrieval = Retrieval(question, hits, vector, set(terms))
        scored = self.score_sentences(retrieval, list(range(len(hits))))
        answering = [i for i, hit in enumerate(hits) if hit.paper.has_abstract][:SNIPPET_PAPERS]
        retrieval.sentences = [s for s in scored if s.paper_index in answering]
        for i, hit in enumerate(hits):
            best = next((s for s in scored if s.paper_index == i), None)
            hit.snippet = best.text if best else hit.paper.abstract[:300]
        if answering:
            retrieval.named_match = self._named_match(question, hits[answering[0]].paper, state)
        return retrieval

    def _named_match(self, question: str, paper: StoredPaper, state: "_Corpus") -> str:
        """A name-like word of the question (not its first word) that the top paper contains and at most
        max(2, 0.5%) of all papers contain: the user asked about something this collection names."""
        words = [m.group(0) for m in _NAME.finditer(question) if m.start() > 0 or not m.group(0).istitle()]
        limit = max(2, len(state.papers) // 200)
        for word in words:
            if state.df.get(word.casefold(), 0) > limit:
                continue
            pattern = re.compile(r"(?<![\w-])" + re.escape(word) + r"(?![\w-])", re.IGNORECASE)
            if pattern.search(paper.search_text):
                return word
        return ""

    def score_sentences(self, retrieval: Retrieval, paper_indexes: list[int]) -> list[ScoredSentence]:
        """Sentences of the given hits, best first: cosine to the question + a term-overlap bonus. Title-only
        papers have none."""
        terms = retrieval.terms
        paper_indexes = [i for i in paper_indexes if retrieval.hits[i].paper.has_abstract]
        stored = self.sentences([retrieval.hits[i].paper for i in paper_indexes])
        items: list[tuple[int, str]] = []
        vectors = []
        for i in paper_indexes:
            sentences = stored[retrieval.hits[i].paper.paper_id]
            items.extend((i, text) for text in sentences.texts)
            vectors.append(sentences.vectors)
        if not items:
            return []
        dense = np.concatenate(vectors) @ retrieval.query_vector
        scored = []
        for (i, sentence), cos, words in zip(items, dense, tokenize([s for _, s in items])):
            overlap = len(terms & set(words)) / len(terms) if terms else 0.0
            scored.append(ScoredSentence(sentence, float(cos) + LEXICAL_BONUS * overlap, i))
        return sorted(scored, key=lambda s: -s.score)

    def sentences(self, papers: list[StoredPaper]) -> dict[str, Sentences]:
        """The sentences and sentence vectors of these papers, read from the store. Papers stored before the
        index kept sentences (re-run `rag ingest` to add them) have theirs embedded here, more slowly."""
        found = self.index.sentences_of(papers)
        for paper in papers:
            if paper.paper_id not in found:
                texts = split_sentences(paper.abstract)
                found[paper.paper_id] = Sentences(texts, self.index.embedder.embed(texts))
        return found
