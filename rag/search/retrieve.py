"""Retrieve: a question -> the top-k papers, each with a fused score, its signals and a best-matching snippet.

Three rankings over the same store, fused per paper with weighted reciprocal rank fusion (RRF):
- dense: the question's vector against the chunk vectors in Chroma; a paper scores its best chunk;
- lexical: BM25 (bm25s, English stemming and stop words) over each paper's title + abstract;
- mpnet: the question's all-mpnet-base-v2 vector against one vector per paper (`rag.store.mpnet_vectors`), the
  ranking that finds a paper from a description in other words (weight `mpnet_weight`, 0 turns it off).
The fusion constant (5, not the textbook 60) and BM25's weight (1.5 against dense's 1) were tuned on the seed dev
questions over the 2,114-paper corpus and confirmed on other questions (eval/DECISIONS.md): on this corpus BM25 is
the stronger signal and the top of each list matters most.

Fusion is written here rather than with llama-index's `QueryFusionRetriever` because that one fuses *nodes*:
the chunks of one paper would vote separately and crowd the list. Here each retriever votes once per paper.
The abstention gate in `rag.answering.extractive` reads `Retrieval.confidence`, the score of the best sentence of the
top papers.

Sentences (for snippets, extractive answers and the abstention signal) are scored by their stored vector
(`rag.store.index`) against the question, plus a small bonus for sharing the question's stemmed terms. A question costs
one embedding (its own), one dense search, one BM25 pass and one read of the hits' sentences; over an embedded store
at rest the search and the read are in numpy, from the snapshot cached with the corpus (`rag.store.snapshot`, below),
and through Chroma otherwise.

What retrieval reads besides Chroma (the papers, the BM25 index, term counts: `_Corpus`) costs a new process
about 2 s to build from the store on 2 cores, more than the rest of a question. It is cached in the data dir
(`corpus/<collection>.npz`, plain arrays and JSON, read without pickle) under the store's change mark,
which every ingest renews before its first write and after its last (`PaperIndex.generation`), so a cold
`rag ask` loads it instead; any change of the store, the code or the cache's format builds it again. For an embedded
store at rest the cache also holds every chunk and sentence vector (`rag.store.snapshot.Dense`), and its key comes
from the data dir's mark instead of Chroma: a question in a new process then never imports chromadb (about 1 s of
a 2.3 s cold `rag ask`), and the dense side is an exact cosine search rather than Chroma's approximate HNSW one.

Pseudo-relevance feedback (issue 29 item 3), off by default (`Settings.prf_terms`, `rocchio_weight`): a researcher
describes a paper in their own words, and the words the abstract uses are then missing from the question. The first
pass usually still finds the paper, or its neighbours, among its top few; so a second pass searches again with their
words (RM3 on the BM25 side: the question's terms plus the terms most frequent in the top `prf_docs` papers) and/or
their vectors (Rocchio on the dense side: the question's vector moved toward their mean), and the second pass's
rankings are fused as usual. Only the ranking changes: each hit's `dense` / `bm25` signal stays the question's own
score from the first pass (what the abstention gate was fitted on), and so do the sentences' scores.

Title-only papers (`has_abstract` false) are ranked like the others, on their title, but have no sentences: no
snippet, nothing an answer could quote, and no say in the confidence. The papers that answer are the first
SNIPPET_PAPERS hits with abstracts, and the top `k` keep room for them (`room_for_abstracts`): a short title that
says the question's words outranks the abstracts that explain them, and over the 3,706 papers `make run` serves
"Are there papers on graph neural networks?" had five title-only papers as its top five, nothing to quote, and
came back unsure.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from collections import Counter
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from collections.abc import Callable

import bm25s
import numpy as np

import rag
from rag.config import DEFAULT_POLICY, AnswerPolicy, Settings
from rag.store import snapshot
from rag.store.index import PaperIndex, Sentences, StoredPaper
from rag.store.lock import StoreBusyError
from rag.store.mpnet_vectors import PaperVectors
from rag.store.snapshot import Dense
from rag.text import is_boilerplate, plain, split_sentences, tokenize, visible
from rag.search.topical import coverage, key_term, names_all, topic_groups
from rag.query import wording as question_wording
from rag.query.wording import Wording, name_words

LEXICAL_BONUS = 0.15  # weight of term overlap next to the cosine similarity when scoring sentences
BOILERPLATE_PENALTY = 0.3  # "Code is available at https://..." (`rag.text.is_boilerplate`) answers no question
_MAX_ID_FILTER = 1000  # papers passed to Chroma as an id filter; more are filtered after the search
CORPUS_FORMAT = 4  # version of the cached corpus (`HybridRetriever.refresh`): bump when what it holds changes
SNIPPET_PAPERS = 3  # the top papers with abstracts whose sentences answer (the best one is the confidence)
_WORD = re.compile(r"(?<![\w-])[\w][\w-]*")


@dataclass
class Hit:
    """A retrieved paper. `score` is the fused score scaled to 0..1 (1 = ranked first by both retrievers)."""

    paper: StoredPaper
    score: float
    dense: float | None  # cosine similarity of the paper's best chunk, if the dense side found it
    bm25: float | None
    snippet: str = ""
    snippet_score: float = 0.0  # the snippet's score (cosine + term bonus): the relevance bar of list answers
    topical: float = 1.0  # share of the question's topic (IDF-weighted, rag.search.topical) in its title + abstract
    title_topic: bool = False  # its title holds every distinctive word of the question's topic (`topical.names_all`)
    key_in_title: bool = False  # its title holds the topic's key term (`topical.key_term`), a list's sign of "about"
    key_in_lead: bool = False  # ... or its first two sentences do (where an abstract says what the paper is about)


_UNREAD = Wording()  # `Retrieval.wording` not given: read from its question


@dataclass
class Retrieval:
    question: str
    hits: list[Hit]
    query_vector: np.ndarray
    terms: set[str] = field(default_factory=set)  # the question's stemmed terms (BM25's tokenizer)
    sentences: list[ScoredSentence] = field(default_factory=list)  # of the top papers, best first
    # Every hit's sentences, best first, by hit index: what an LLM's passages are cut from (rag.answering.context)
    scored: dict[int, list[ScoredSentence]] = field(default_factory=dict)
    named_match: str = ""  # a rare, name-like term of the question found in the top paper ("Scylla")
    unknown_names: list[str] = field(default_factory=list)  # name-like words of the question no paper contains
    k: int = 5  # papers asked for: fewer hits means every paper the filters allow was ranked
    term_df: dict[str, int] = field(default_factory=dict)  # in how many papers each of `terms` occurs (abstain)
    corpus_size: int = 0
    # The same question searched without filters, for a filtered list or count: its best paper sets their bar.
    reference: Retrieval | None = None
    # The question as asked when `question` is its English search terms (a Chinese question, `rag.query.zh`): the
    # gate reads its form from it (`rag.answering.abstain.form_features`), which the terms no longer have.
    asked: str = ""
    # A list or count decided over a deep pool (`rag.engine`): its first `members` hits belong to it (None: not
    # decided that way), out of the `pool` papers checked; `pool_full`: papers near the pool's end still belonged.
    members: int | None = None
    pool: int = 0
    pool_full: bool = False
    # The outcome the gate gave the whole pool before it was cut to its members (`rag.answering.extractive.decide`
    # returns it): the cut changes the margins the gate reads, not whether the collection covers the topic.
    decided: str = ""
    # What the searched words ask for (`rag.query.wording`), read once: the engine sets its reading of the question
    # (`Plan.wording`, with a Chinese question's text and asked words); otherwise `question` is read when the
    # retrieval is made (the offline fits, tests).
    wording: Wording = field(default=_UNREAD)

    def __post_init__(self) -> None:
        if self.wording is _UNREAD:
            self.wording = question_wording.read(self.question)

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
    stem_df: Counter = field(default_factory=Counter)  # the same for BM25's stemmed terms
    terms: list[frozenset[str]] = field(default_factory=list)  # each paper's stemmed terms (rag.search.topical)
    dense: Dense | None = None  # the chunk and sentence vectors of a store at rest (`rag.store.snapshot`)
    mpnet: np.ndarray | None = None  # one all-mpnet-base-v2 vector per paper, rows as `papers` (None: not used)
    # A coined name a title opens with ("SAM 2: ...", "LaMPlace: ...") -> the ids of the papers it names (`title_names`)
    names: dict[str, list[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class ScoredSentence:
    text: str
    score: float
    paper_index: int  # index into Retrieval.hits


@dataclass(frozen=True)
class RetrievalParams:
    """Everything one retrieval call depends on besides the question, passed whole (`from_settings`)."""

    k: int = 5  # papers returned
    mode: str = "hybrid"  # "hybrid", or "dense" / "bm25" / "mpnet" alone (the others are not run)
    candidates: int = 50  # papers each retriever proposes before fusion
    rrf_k: int = 5  # reciprocal-rank-fusion constant
    bm25_weight: float = 1.5  # BM25's vote against dense's 1
    mpnet_weight: float = 1.0  # the whole-paper mpnet ranking's vote (0: not run)
    decisions: tuple[str, ...] = ()  # only papers with one of these decisions (none: all)
    author: str | None = None  # only papers with an author whose name contains this (case-insensitive)
    paper_ids: tuple[str, ...] = ()  # only these papers (a follow-up about the papers of the previous answer)
    policy: AnswerPolicy = DEFAULT_POLICY  # its `rare_limit`: which of the question's names are rare (named_match)
    prf_docs: int = 5  # pseudo-relevance feedback (`HybridRetriever.feedback`): top papers of the first pass read
    prf_terms: int = 0  # ... their terms added to the BM25 query (RM3); 0: none
    prf_query_weight: float = 0.5  # ... the question's own terms' share of the expanded query's weight
    rocchio_weight: float = 0.0  # ... weight of their mean vector added to the question's (dense side); 0: none
    # An LLM's rewrite of the question (`retrieve(rewrite=...)`, rag.generation.rewrite): how it joins the question's
    # search. "rrf": its own two rankings fused beside the question's at `rewrite_weight` of their votes; "merge":
    # one search, its terms added to the BM25 query (`rewrite_weight` of the weight against the question's 1) and
    # its vector added to the question's. Chosen on describe_dev and zh_dev (eval/DECISIONS.md, "The LLM's rewrite for
    # retrieval"): RRF at 0.3 had the best hit@1 with Qwen2.5-1.5B (describe_dev 0.733 -> 0.817, zh_dev 0.955 ->
    # 1.000) and was the one weight that SmolLM2-135M's junk rewrites did not hurt; merge lost hit@5.
    rewrite_fusion: str = "rrf"
    rewrite_weight: float = 0.3

    @classmethod
    def from_settings(cls, settings: Settings, **overrides) -> RetrievalParams:
        return cls(**{"k": settings.k, "mode": settings.retrieval, "candidates": settings.candidates,
                      "rrf_k": settings.rrf_k, "bm25_weight": settings.bm25_weight,
                      "mpnet_weight": settings.mpnet_weight,
                      "policy": settings.policy, "prf_docs": settings.prf_docs, "prf_terms": settings.prf_terms,
                      "prf_query_weight": settings.prf_query_weight, "rocchio_weight": settings.rocchio_weight,
                      **overrides})


@dataclass(frozen=True)
class Query:
    """The question as the retrievers see it: its vector and its stemmed terms (BM25's tokenizer)."""

    text: str
    vector: np.ndarray
    terms: list[str]
    weights: dict[str, float] | None = None  # BM25 term weights of an expanded query (None: each of `terms` once)
    mpnet: np.ndarray | None = None  # its all-mpnet-base-v2 vector, when that ranking runs


#: A reranker reorders (or drops) fused hits, best first; it sees the RERANK_DEPTH best of them.
Reranker = Callable[[Query, list[Hit]], list[Hit]]
RERANK_DEPTH = 30


def fuse(rankings: list[tuple[float, dict[str, float]]], rrf_k: int) -> list[tuple[str, float]]:
    """Weighted reciprocal rank fusion: (paper id, score scaled to 0..1), best first. Each ranking is (weight,
    {paper id: its own score} in rank order); 1 means ranked first by every ranking."""
    fused: dict[str, float] = {}
    for weight, ranking in rankings:
        for rank, pid in enumerate(ranking):
            fused[pid] = fused.get(pid, 0.0) + weight / (rrf_k + rank + 1)
    best_possible = sum(weight for weight, _ in rankings) / (rrf_k + 1) or 1.0
    return [(pid, fused[pid] / best_possible) for pid in sorted(fused, key=lambda pid: (-fused[pid], pid))]


class HybridRetriever:
    """Dense + BM25 over a `PaperIndex`. Call `refresh()` after the store changes.

    `retrieve` runs four steps, each a method, so a new signal or a reranker is one function:
    candidates (each retriever's ranking) -> fuse (weighted RRF) -> rerank (optional `Reranker`) -> annotate
    (sentences, snippets, the abstention signal); with pseudo-relevance feedback set, `feedback` re-runs the
    candidates of the retrievers it expands between fuse and a second fuse."""

    def __init__(self, index: PaperIndex, reranker: Reranker | None = None, snapshot: bool = True,
                 mpnet: PaperVectors | None = None, beside: bool = False) -> None:
        """`snapshot`: read the chunk and sentence vectors into the corpus cache when the store is at rest (2-3 s
        more on the whole bundled list, once per change of the store). `rag serve` says False: it has Chroma open
        anyway, and would otherwise print "Indexed" that much later; a cached snapshot is used all the same (and it
        writes the shared one for other processes afterwards: `share`).
        `mpnet`: the whole-paper vectors of the third ranking (None: dense and BM25 only).
        `beside`: a process beside the `rag serve` that owns the store (`rag.store.lock`): it reads only the
        snapshot that server shares (`share`), never the store; `stale` says the server changed the store since."""
        self.index = index
        self.mpnet = mpnet
        self.reranker = reranker
        self.snapshot = snapshot
        self.beside = beside
        self.stale = False
        self.refresh()

    def refresh(self) -> None:
        """Load the corpus from the cache, or read it from the store (and cache it). A store at rest (its data
        dir's mark says no ingest has changed it since: `rag.store.snapshot`) is cached with its chunk and sentence
        vectors (`Dense`), so a question in a new process reads nothing through chromadb; a store being written
        (the background indexing of `rag serve`) is cached without them, and its questions query Chroma."""
        # One assignment, so a concurrent `retrieve` sees either the old corpus or the new one, never a mix.
        if self.beside:
            self.state = self._shared_state()
            return
        key, read, at_rest = self._cache_key()
        state = _load_corpus(self._cache_path(), key) if key else None
        idle = False
        if self.snapshot and read is not None and not at_rest:  # no mark: this reader may write one (`claim`)
            with snapshot.writers_idle(self.index.settings) as idle:
                pass
        dense = self.snapshot and (at_rest or idle)
        if state is not None and dense and state.dense is None:
            state = None  # cached while the store was changing (or by `rag serve`): read it again, vectors and all
        if state is None:
            state = self._read_corpus(dense=dense)
            if key:
                _save_corpus(self._cache_path(), key, state)
        if idle and read is not None:
            snapshot.claim(self.index.settings, self.index, read, idle)
        self.state = state

    def _cache_key(self) -> tuple[tuple | None, snapshot.Mark | None, bool]:
        """(key, mark, at rest). The key is what the cached corpus must have been built under to be this store's:
        the store's change mark (read before the papers, so a change meanwhile gives a new one;
        `PaperIndex.generation`), its paper count, and the code that reads it; None (no cache) for a store no
        ingest of this version wrote and for a Chroma server, which processes of other versions may write to
        without marking it. The generation and count come from the data dir's mark while the Chroma client is not
        open (`PaperIndex.mark`), from Chroma otherwise; `mark` is what they were (None for a Chroma server), and
        `at rest` says the data dir's mark vouches for them."""
        index = self.index
        if index.settings.chroma_url:
            return None, None, False
        mark = index.mark() if not index.opened else None
        if mark is None:
            generation = index.generation()
            if not generation:
                return None, None, False
            found = index.mark()
            mark = snapshot.Mark(generation, index.count(), index.embedder.identity)
            at_rest = found == mark
        else:
            at_rest = True
        return self._key(mark), mark, at_rest

    def _key(self, mark: snapshot.Mark) -> tuple:
        return (CORPUS_FORMAT, mark.generation, mark.count, self.index.chunking, rag.__version__, bm25s.__version__,
                self.mpnet.identity if self.mpnet else None,
                tuple(f.name for f in fields(StoredPaper)), tuple(f.name for f in fields(_Corpus)))

    def _cache_path(self) -> Path:
        return self.index.settings.data_dir / "corpus" / f"{self.index.settings.collection}.npz"

    def _shared_path(self) -> Path:
        cache = self._cache_path()  # the same format as the corpus cache, under a name of its own
        return cache.with_name(f"{self.index.settings.collection}.shared{cache.suffix}")

    def _shared_mark_path(self) -> Path:
        return self._cache_path().with_name(f"{self.index.settings.collection}.shared.json")

    def share(self) -> bool:
        """In the `rag serve` that owns an embedded store at rest: write the shared snapshot, the corpus with every
        chunk and sentence vector (`Dense`) in `corpus/<collection>.shared.*` (the corpus cache's format) and the
        generation and paper count it was read at in `corpus/<collection>.shared.json`, unless it is there already
        for the store as it is. Read-only commands in other processes answer from it beside the server (`beside`).
        A file of its own: the server's corpus cache is rewritten without vectors while it indexes, this one only
        here, so a reader always finds the last store at rest. The caller keeps its own ingests out meanwhile (no
        other process writes: the serve lock). 9 s on the 3,706 bundled papers at load 10 (63 MB), once per change.
        Returns whether the shared snapshot is the store's now."""
        key, read, at_rest = self._cache_key()
        if not key or not at_rest or read is None:
            return False
        path = self._shared_path()
        found = _load_corpus(path, key)
        if found is None or found.dense is None:
            state = _load_corpus(self._cache_path(), key) or self._read_corpus()
            if state.dense is None:  # a reader's cache of this store at rest has them already
                state = replace(state, dense=snapshot.dense_from(self.index, state.papers))
            _save_corpus(path, key, state)
            if _load_corpus(path, key) is None:
                return False  # an unwritable data dir shares nothing
        shared = {"generation": read.generation, "count": read.count}
        with contextlib.suppress(OSError):
            if json.loads(self._shared_mark_path().read_text(encoding="utf-8")) == shared:
                return True
        tmp = self._shared_mark_path().with_name(f".{self._shared_mark_path().name}.{os.getpid()}")
        try:
            tmp.write_text(json.dumps(shared), encoding="utf-8")
            os.replace(tmp, self._shared_mark_path())  # after the snapshot: it names one that is there
        except OSError:
            return False
        return True

    def _shared_state(self) -> _Corpus:
        """Beside a `rag serve`: the corpus it last shared (`share`), with `stale` set when the store changed since
        (it is adding papers now, or has just added them and not yet shared them). Without one (none yet, or one
        written by another version of this code) the reader is refused, as before, with what to do instead."""
        state = None
        for _ in range(2):  # a second look if the server replaced the snapshot between the two reads
            try:
                shared = json.loads(self._shared_mark_path().read_text(encoding="utf-8"))
                read = snapshot.Mark(str(shared["generation"]), int(shared["count"]), self.index.embedder.identity)
            except Exception:  # none yet (the server is starting, or is of an older version), or unreadable
                break
            state = _load_corpus(self._shared_path(), self._key(read))
            if state is not None and state.dense is not None:
                break
        if state is None or state.dense is None:
            raise StoreBusyError(self.index.refuse_open.rstrip(".") + ". It has not shared a snapshot of the index for "
                                 "other processes yet (it does once the index is at rest): try again in a moment.")
        mark = self.index.mark()
        self.stale = mark is None or (mark.generation, mark.count) != (read.generation, read.count)
        return state

    def _read_corpus(self, dense: bool = False) -> _Corpus:
        papers = self.index.all_papers()
        bm25, tokens = None, []
        if papers:
            bm25 = bm25s.BM25()
            bm25.index(tokens := tokenize([p.search_text for p in papers]), show_progress=False)
        df = Counter(w for p in papers for w in set(_WORD.findall(p.search_text.casefold())))
        return _Corpus(papers, {p.paper_id: i for i, p in enumerate(papers)},
                             np.array([p.decision for p in papers], dtype=object), bm25, df,
                       Counter(t for doc in tokens for t in set(doc)), [frozenset(doc) for doc in tokens],
                       snapshot.dense_from(self.index, papers) if dense else None,
                       self.mpnet.papers(papers) if self.mpnet is not None and papers else None,
                       title_names(papers))

    def retrieve(self, question: str, params: RetrievalParams = RetrievalParams(),
                 vector: np.ndarray | None = None, rewrite: str = "") -> Retrieval:
        """The top `params.k` papers for a question, within the filters of `params`. `vector`: the question's
        embedding when the caller has it (`Retrieval.query_vector` of the same question), not computed again.
        `rewrite`: the question as an LLM rewrote it for search (`rag.generation.rewrite`), searched beside it
        (`params.rewrite_fusion`); the question's own rankings always take part, so a rewrite that misses cannot
        push out the papers the question finds by itself, and every signal of the hits stays the question's own."""
        vector = self.index.embedder.embed([question])[0] if vector is None else vector
        state = self.state  # one corpus for the whole call, even if a refresh happens meanwhile
        # In hybrid search a question that names a rare name the corpus knows ("RMP-SAM") leaves the mpnet ranking
        # out: its words already find the paper, and a description-trained vote for look-alikes only pushed it
        # down (no change on the dev sets' 190 questions; +2 of 203 on the sets that name methods; eval/DECISIONS.md,
        # "A second embedder").
        wants_mpnet = params.mode == "mpnet" or (params.mode == "hybrid" and params.mpnet_weight > 0
                                                 and not self.names_rare(question, state, params.policy))
        query = Query(question, vector, tokenize([question])[0],
                      mpnet=self.mpnet.query(question) if wants_mpnet and state.mpnet is not None and self.mpnet
                      else None)
        retrieval = Retrieval(question, [], query.vector, set(query.terms),
                              term_df={t: state.stem_df[t] for t in query.terms}, corpus_size=len(state.papers))
        if not state.papers:
            return retrieval
        rankings = self.candidates(query, params, state)
        fused = self._fuse(rankings, params)
        named = named_papers(question, state.names)
        if rewrite.strip():  # the LLM's expansion of the question takes the place of pseudo-relevance feedback
            fused = self._with_rewrite(query, rewrite, rankings, params, state)
        elif params.prf_terms or params.rocchio_weight:
            fused = self._fuse({**rankings, **self.feedback(query, params, state, fused)}, params)
        if named:  # the papers whose coined title name the question writes come first, in their fused order
            allowed = self._allowed(params, state)
            named = [pid for pid in named if allowed is None or allowed[state.position[pid]]]
            top = fused[0][1] if fused else 1.0
            fused = [(pid, top) for pid in named] + [(pid, score) for pid, score in fused if pid not in named]
        # The signals are the question's own scores (first pass), whatever the feedback did to the ranking.
        hits = [Hit(state.papers[state.position[pid]], score, rankings.get("dense", {}).get(pid),
                    rankings.get("bm25", {}).get(pid)) for pid, score in fused]
        if self.reranker is not None:
            hits = self.reranker(query, hits[:max(params.k, RERANK_DEPTH)])
        retrieval.hits, retrieval.k = room_for_abstracts(hits, params.k)[:params.k], params.k
        retrieval.unknown_names = list(dict.fromkeys(
            word for word in name_words(question) if not any(state.df.get(w) for w in _word_forms(word))))
        self.annotate(retrieval, state, params.policy)
        return retrieval

    @staticmethod
    def _fuse(rankings: dict[str, dict[str, float]], params: RetrievalParams,
              extra: dict[str, dict[str, float]] | None = None, scale: float = 1.0) -> list[tuple[str, float]]:
        """RRF of the dense, mpnet and BM25 rankings at their weights, with another search's (`extra`) at `scale` of
        theirs beside them when given (the LLM's rewrite: `_with_rewrite`)."""
        weights = (("dense", 1.0), ("mpnet", 1.0 if params.mode == "mpnet" else params.mpnet_weight),
                   ("bm25", params.bm25_weight))
        return fuse([(weight, rankings[name]) for name, weight in weights if name in rankings]
                    + [(weight * scale, (extra or {})[name]) for name, weight in weights if name in (extra or {})],
                    params.rrf_k)

    def _with_rewrite(self, query: Query, rewrite: str, rankings: dict[str, dict[str, float]],
                      params: RetrievalParams, state: _Corpus) -> list[tuple[str, float]]:
        """The fused ranking of the question searched with its rewrite (`retrieve`)."""
        vector = self.index.embedder.embed([rewrite])[0]
        terms = tokenize([rewrite])[0]
        if params.rewrite_fusion == "merge":
            weights: dict[str, float] = {}
            for term in query.terms:
                weights[term] = weights.get(term, 0.0) + 1.0 / max(len(query.terms), 1)
            for term in terms:
                weights[term] = weights.get(term, 0.0) + params.rewrite_weight / max(len(terms), 1)
            moved = query.vector + params.rewrite_weight * vector
            merged = Query(query.text, moved / max(float(np.linalg.norm(moved)), 1e-12), query.terms,
                           weights or None)
            return self._fuse(self.candidates(merged, params, state), params)
        # The rewrite is searched by every ranking the question was (its mpnet one too), so its share of the vote
        # stays `rewrite_weight` of the question's.
        mpnet_vector = self.mpnet.query(rewrite) if query.mpnet is not None and self.mpnet is not None else None
        return self._fuse(rankings, params,
                          self.candidates(Query(rewrite, vector, terms, mpnet=mpnet_vector), params, state),
                          params.rewrite_weight)

    def feedback(self, query: Query, params: RetrievalParams, state: _Corpus,
                 fused: list[tuple[str, float]]) -> dict[str, dict[str, float]]:
        """The second pass of pseudo-relevance feedback: the rankings of the retrievers it expands (BM25 with
        `prf_terms`, dense with `rocchio_weight`), searched with the top `prf_docs` papers of the first pass
        (`fused`: both retrievers' fusion in hybrid mode, BM25's or dense's own ranking alone otherwise)."""
        top = [(state.papers[state.position[pid]], score) for pid, score in fused[:params.prf_docs]]
        if not top:
            return {}
        expanded, sides = query, []
        if params.prf_terms and params.mode != "dense":
            expanded = replace(expanded, weights=rm3_weights(query.terms, top, params.prf_terms,
                                                             params.prf_query_weight))
            sides.append("bm25")
        if params.rocchio_weight and params.mode != "bm25":
            vectors = self.index.paper_vectors([p.paper_id for p, _ in top])
            if vectors:
                centroid = np.mean(np.asarray(list(vectors.values()), dtype=np.float32), axis=0)
                moved = query.vector + params.rocchio_weight * centroid
                expanded = replace(expanded, vector=moved / max(float(np.linalg.norm(moved)), 1e-12))
                sides.append("dense")
        if not sides:
            return {}
        return self.candidates(expanded, replace(params, mode=sides[0] if len(sides) == 1 else "hybrid"), state)

    def candidates(self, query: Query, params: RetrievalParams, state: _Corpus) -> dict[str, dict[str, float]]:
        """Each retriever's ranking within the filters: {"dense" | "mpnet" | "bm25": {paper id: score}, best first}.
        Dense scores a paper by its best chunk's cosine, mpnet by its one whole-paper vector's (when the query
        has an mpnet vector); BM25 scores title + abstract."""
        allowed = self._allowed(params, state)  # boolean mask over state.papers, when filtered
        rankings: dict[str, dict[str, float]] = {}
        if params.mode in ("hybrid", "dense"):
            paper_ids = None
            if (params.author or params.paper_ids) and allowed is not None:  # few papers: Chroma searches theirs
                paper_ids = [state.papers[i].paper_id for i in np.flatnonzero(allowed)][:_MAX_ID_FILTER]
            dense: dict[str, float] = {}
            if state.dense is not None:  # exact search over the snapshot's vectors, filters applied as a mask
                nearest = [(state.papers[p].paper_id, sim)
                           for p, sim in state.dense.nearest(query.vector, params.candidates, allowed)]
            else:
                nearest = self.index.query_chunks(query.vector.tolist(), params.candidates,
                                                  list(params.decisions) or None, paper_ids)
            for pid, sim in nearest:
                if pid in state.position and pid not in dense and (allowed is None or allowed[state.position[pid]]):
                    dense[pid] = sim
            rankings["dense"] = dense
        if query.mpnet is not None and state.mpnet is not None and params.mode in ("hybrid", "mpnet"):
            sims = state.mpnet @ query.mpnet
            if allowed is not None:
                sims = np.where(allowed, sims, -np.inf)
            top = np.argsort(-sims, kind="stable")[: params.candidates]
            rankings["mpnet"] = {state.papers[i].paper_id: float(sims[i]) for i in top if np.isfinite(sims[i])}
        if params.mode in ("hybrid", "bm25"):
            lexical: dict[str, float] = {}
            if query.terms and state.bm25 is not None:
                mask = None if allowed is None else allowed.astype(np.float32)
                if query.weights is None:
                    scores = state.bm25.get_scores(query.terms, weight_mask=mask)
                else:  # a weighted query: BM25 is a sum over the query's terms, so weigh each term's scores
                    scores = np.zeros(len(state.papers), dtype=np.float32)
                    for term, weight in query.weights.items():
                        scores += weight * state.bm25.get_scores([term], weight_mask=mask)
                top = np.argsort(-scores, kind="stable")[: params.candidates]
                lexical = {state.papers[i].paper_id: float(scores[i]) for i in top if scores[i] > 0}
            rankings["bm25"] = lexical
        return rankings

    @staticmethod
    def _allowed(params: RetrievalParams, state: _Corpus) -> np.ndarray | None:
        allowed = None
        if params.decisions:
            allowed = np.isin(state.decisions, list(params.decisions))
        if params.author and params.author.strip():
            needle = params.author.strip().casefold()
            by_author = np.array([any(needle in a.casefold() for a in p.authors) for p in state.papers])
            allowed = by_author if allowed is None else allowed & by_author
        if params.paper_ids:
            by_id = np.zeros(len(state.papers), dtype=bool)
            by_id[[state.position[pid] for pid in params.paper_ids if pid in state.position]] = True
            allowed = by_id if allowed is None else allowed & by_id
        return allowed

    def annotate(self, retrieval: Retrieval, state: _Corpus, policy: AnswerPolicy = DEFAULT_POLICY) -> None:
        """Score the sentences of the hits: each hit's snippet, the answering sentences of the first
        SNIPPET_PAPERS hits with abstracts (the best one is the confidence), each hit's share of the question's
        topic (`rag.search.topical`), and a rare name the question shares with the top answering paper."""
        hits = retrieval.hits
        scored = self.score_sentences(retrieval, list(range(len(hits))))
        answering = [i for i, hit in enumerate(hits) if hit.paper.has_abstract][:SNIPPET_PAPERS]
        retrieval.sentences = distinct([s for s in scored if s.paper_index in answering])
        retrieval.scored = {}
        for s in scored:
            retrieval.scored.setdefault(s.paper_index, []).append(s)
        groups = topic_groups(retrieval.question)
        titles = tokenize([hit.paper.title for hit in hits]) if hits else []
        key = key_term(groups, state.stem_df, len(state.papers), policy.key_term_share)
        leads = tokenize([" ".join(split_sentences(hit.paper.abstract)[:2]) for hit in hits]) if key and hits else []
        for i, hit in enumerate(hits):
            mine = retrieval.scored.get(i)
            best = mine[0] if mine else None
            hit.snippet = best.text if best else hit.paper.abstract[:300]
            hit.snippet_score = best.score if best else 0.0
            position = state.position.get(hit.paper.paper_id)
            if position is not None and position < len(state.terms):
                hit.topical = coverage(groups, state.terms[position], state.stem_df, len(state.papers))
                hit.title_topic = names_all(groups, titles[i], state.stem_df, len(state.papers), policy.common_share)
            hit.key_in_title = bool(key & set(titles[i]))
            hit.key_in_lead = hit.key_in_title or bool(leads and key & set(leads[i]))
        if answering:
            retrieval.named_match = self._named_match(retrieval.question, hits[answering[0]].paper, state,
                                                      policy.rare_limit(len(state.papers)))

    @staticmethod
    def names_rare(question: str, state: _Corpus, policy: AnswerPolicy) -> bool:
        """The question writes a name (`name_words`) that at most `policy.rare_limit` papers contain, and some do."""
        limit = policy.rare_limit(len(state.papers))
        return any(0 < state.df.get(form, 0) <= limit for word in name_words(question) for form in _word_forms(word))

    def _named_match(self, question: str, paper: StoredPaper, state: _Corpus, limit: int) -> str:
        """A name-like word of the question (not its first word) that the top paper contains and at most
        `limit` papers contain (`AnswerPolicy.rare_limit`: max(2, 0.5%)): the user asked about something this
        collection names. Or the paper's whole title (of three words or more) written in the question."""
        title = plain(paper.title)
        if title.count(" ") >= 2 and title in plain(question):
            return paper.title
        words = name_words(question)
        for word in words:
            if state.df.get(word.casefold(), 0) > limit:
                continue
            # An acronym typed in capitals is that acronym: "FIFA" is not the "FiFA" a data-filtering paper coined
            # (a World Cup question came back unsure beside it); other names match in any case.
            pattern = re.compile(r"(?<![\w-])" + re.escape(word) + r"(?![\w-])",
                                 0 if word.isupper() else re.IGNORECASE)
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
        for (i, sentence), cos, words in zip(items, dense, tokenize([s for _, s in items]), strict=False):
            overlap = len(terms & set(words)) / len(terms) if terms else 0.0
            penalty = BOILERPLATE_PENALTY if is_boilerplate(sentence) else 0.0
            scored.append(ScoredSentence(sentence, float(cos) + LEXICAL_BONUS * overlap - penalty, i))
        return sorted(scored, key=lambda s: -s.score)

    def sentences(self, papers: list[StoredPaper]) -> dict[str, Sentences]:
        """The sentences and sentence vectors of these papers, read from the store. Papers stored before the
        index kept sentences (re-run `rag ingest` to add them) have theirs embedded here, more slowly."""
        state = self.state
        if state.dense is not None:
            found = {}
            for paper in papers:
                position = state.position.get(paper.paper_id)
                stored = state.dense.sentences(position) if position is not None else None
                if stored is not None:
                    found[paper.paper_id] = Sentences(*stored)
        else:
            found = self.index.sentences_of(papers)
        for paper in papers:
            if paper.paper_id not in found:
                texts = split_sentences(paper.abstract)
                found[paper.paper_id] = Sentences(texts, self.index.embedder.embed(texts))
        return found


def rm3_weights(terms: list[str], top: list[tuple[StoredPaper, float]], n_terms: int,
                query_weight: float) -> dict[str, float]:
    """RM3's expanded query (Lavrenko & Croft's relevance model, interpolated with the question as in Anserini): the
    relevance model P(t|R) = sum over the feedback papers d of P(t|d) * w(d), where P(t|d) is the term's share of
    the paper's stemmed title + abstract and w(d) its first-pass score normalised to sum to 1 (the fused score
    standing in for RM1's query likelihood); its `n_terms` most likely terms, renormalised, get 1 - `query_weight`
    of the weight and the question's terms (each its share of the question) `query_weight`."""
    total = sum(score for _, score in top) or 1.0
    model: dict[str, float] = {}
    for doc, (_, score) in zip(tokenize([paper.search_text for paper, _ in top]), top, strict=True):
        for term, count in Counter(doc).items():
            model[term] = model.get(term, 0.0) + count / max(len(doc), 1) * score / total
    chosen = sorted(model.items(), key=lambda item: (-item[1], item[0]))[:n_terms]
    mass = sum(p for _, p in chosen) or 1.0
    weights: dict[str, float] = {}
    for term in terms:
        weights[term] = weights.get(term, 0.0) + query_weight / len(terms)
    for term, p in chosen:
        weights[term] = weights.get(term, 0.0) + (1 - query_weight) * p / mass
    return weights


# The name a title opens with, before its colon ("SAM 2: Segment Anything ...", "LaMPlace: Learning to ..."), when it
# is coined: a word with a digit, an inner capital or all capitals, or one capitalised word ("Drama"); not a phrase
# of the field ("Scaling Laws: ...", "Beyond Accuracy: ...").
_TITLE_NAME = re.compile(r"^\s*([^:]{2,40}?)\s*:\s")
_COINED = re.compile(r"\d|^[A-Z]{2,}|[a-z][A-Z]|^[A-Z][\w-]*-[A-Z]")


def title_names(papers: list[StoredPaper]) -> dict[str, list[str]]:
    """Coined title name -> the ids of the papers whose titles open with it (see _TITLE_NAME)."""
    names: dict[str, list[str]] = {}
    for paper in papers:
        match = _TITLE_NAME.match(paper.title or "")
        if not match:
            continue
        name = match.group(1)
        words = name.split()
        if len(words) > 4 or not (any(_COINED.search(w) for w in words) or (len(words) == 1 and name[0].isupper())):
            continue
        names.setdefault(name, []).append(paper.paper_id)
    return names


def named_papers(question: str, names: dict[str, list[str]]) -> list[str]:
    """The papers whose coined title name (`title_names`: name -> ids) the question writes, in the order it writes
    them (`names_at`)."""
    ids: list[str] = []
    for _, pid in names_at(question, names):
        ids += [pid] if pid not in ids else []
    return ids


def names_at(text: str, names: dict[str, list[str]]) -> list[tuple[int, str]]:
    """(where, paper id) for each coined title name (`title_names`) the text writes, as written (case and all), as
    a whole word and not as part of a longer name it also writes ("SAM 2" is not "SAM-CP"), in the order written. A
    user who asks "What is SAM 2?" means the paper titled "SAM 2: ...", which ranked third behind a paper on
    sharpness-aware minimization (SAM) and one titled "SAM-CP: ...". A one-word name that is
    an English word ("Drama") counts in mid-sentence only, where its capital marks a name. The one rule for a
    question's names (`named_papers`) and for the papers a previous answer names (`rag.engine`)."""
    found: list[tuple[int, int, str]] = []  # (start, end, name)
    for name in names:
        if name not in text:  # most names: a substring test, before any pattern
            continue
        for match in re.finditer(r"(?<![\w-])" + re.escape(name) + r"(?![\w-])", text):
            if match.start() == 0 and not any(_COINED.search(w) for w in name.split()):
                continue
            found.append((match.start(), match.end(), name))
    longest = [f for f in found if not any(o[0] <= f[0] and f[1] <= o[1] and o != f for o in found)]
    return [(start, pid) for start, _, name in sorted(longest) for pid in names[name]]


def room_for_abstracts(hits: list[Hit], k: int, room: int = SNIPPET_PAPERS) -> list[Hit]:
    """`hits` in order, except that a title-only paper waits below the top `k` while the papers with abstracts
    left in the top `k` would number fewer than `room` (at most `k` - 1, so the best title-only paper keeps a
    place in a short list; and at most all there are): the answer quotes abstracts, and a title-only paper ranks
    on its title alone. Nothing is dropped; the waiting papers follow the top `k`."""
    need = max(0, min(room, k - 1, sum(hit.paper.has_abstract for hit in hits)))
    top: list[Hit] = []
    for hit in hits:
        if len(top) == k:
            break
        short = need - sum(h.paper.has_abstract for h in top)
        if hit.paper.has_abstract or short < k - len(top):
            top.append(hit)
    chosen = {id(hit) for hit in top}
    return top + [hit for hit in hits if id(hit) not in chosen]


def distinct(sentences: list[ScoredSentence]) -> list[ScoredSentence]:
    """`sentences` (best first) with each sentence once: a repeat, in the same abstract or another paper's (a copy
    of a paper, or one told apart only by zero-width or bidi characters, case or punctuation), is dropped, so no
    answer quotes the same sentence twice."""
    seen: set[str] = set()
    out = []
    for sentence in sentences:
        key = plain(visible(sentence.text))
        if key not in seen:
            seen.add(key)
            out.append(sentence)
    return out


def _word_forms(word: str) -> list[str]:
    """A name as the papers may write it: itself, and without a lower-case suffix ("CatVTON-like",
    "Mamba-style", "ImageNet-scale" -> catvton, mamba, imagenet)."""
    forms = [word.casefold()]
    head, _, tail = word.rpartition("-")
    if head and tail.isalpha() and tail.islower():
        forms.append(head.casefold())
    return forms



# The corpus cache is one numpy `.npz` read with `allow_pickle=False`: numbers as arrays (BM25's sparse matrix, the
# dense and mpnet vectors, counts), each list of texts as one UTF-8 array of the texts joined by NUL (which ingest
# never lets into paper text: `rag.text.INVISIBLE`), and the few other values as JSON in `meta`. Nothing in it can
# run code when read, so a file planted in the data dir (`corpus/papers.pickle` was unpickled before its key was
# compared) is at worst a cache that does not load; a pickle of an older version is never opened. Texts as joined
# arrays rather than JSON: with JSON a cold load of the bundled 2,114 papers' cache took 0.5-0.8 s, the pickle
# 0.22-0.25 s.
_BM25_ARRAYS = ("data", "indices", "indptr")
_DENSE_ARRAYS = ("chunk_paper", "chunk_vectors", "sentence_start", "sentence_vectors")
_SEP, _AUTHOR_SEP = "\x00", "\x01"  # between texts; between the names (terms) of one paper


def _key_text(key: tuple) -> str:
    return json.dumps(key, default=repr)


def _joined(texts: list[str], sep: str = _SEP) -> np.ndarray:
    """`texts` as one UTF-8 array, joined by `sep` (TypeError if one holds it: that corpus is not cached)."""
    if any(sep in t for t in texts):
        raise TypeError("a text holds the cache's separator")
    return np.frombuffer(sep.join(texts).encode("utf-8"), dtype=np.uint8)


def _split(array: np.ndarray, n: int, sep: str = _SEP) -> list[str]:
    texts = array.tobytes().decode("utf-8").split(sep) if n else []
    if len(texts) != n:
        raise ValueError("a cached text list of the wrong length")
    return texts


def _load_corpus(path: Path, key: tuple) -> _Corpus | None:
    """The corpus cached under `key`, or None (no cache, another key, or a file that cannot be read: absent,
    half-written by a killed process, of another format, or holding anything but plain arrays)."""
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(data["meta"].tobytes().decode("utf-8"))
            if meta.get("key") != _key_text(key):
                return None
            arrays = {name: data[name] for name in data.files if name != "meta"}
        return _corpus_from(meta, arrays)
    except Exception:
        return None


def _corpus_from(meta: dict, arrays: dict[str, np.ndarray]) -> _Corpus:
    n = meta["papers"]
    columns: dict[str, list] = {}
    for name, kind in meta["columns"].items():
        if kind == "str":
            columns[name] = _split(arrays[f"paper_{name}"], n)
        elif kind == "strs":
            columns[name] = [tuple(a.split(_AUTHOR_SEP)) if a else () for a in _split(arrays[f"paper_{name}"], n)]
        elif kind == "optint":
            values, known = arrays[f"paper_{name}"].tolist(), arrays[f"paper_{name}_known"].tolist()
            columns[name] = [v if k else None for v, k in zip(values, known, strict=False)]
        else:  # "int", "bool"
            columns[name] = arrays[f"paper_{name}"].tolist()
    papers = ([StoredPaper(*row) for row in zip(*(columns[f.name] for f in fields(StoredPaper)), strict=False)]
              if n else [])
    terms = [frozenset(t.split(_AUTHOR_SEP)) if t else frozenset() for t in _split(arrays["terms"], meta["terms"])]
    stem_df = Counter(dict(zip(_split(arrays["stem_df_words"], meta["stem_df"]), arrays["stem_df_counts"].tolist(),
                               strict=False)))
    bm25 = None
    if meta["bm25"] is not None:
        bm25 = bm25s.BM25.__new__(bm25s.BM25)
        bm25.__dict__.update(meta["bm25"]["attributes"])
        words = _split(arrays["bm25_vocab"], meta["bm25"]["vocab"])
        bm25.__dict__.update(vocab_dict=dict(zip(words, arrays["bm25_vocab_ids"].tolist(), strict=False)),
                             unique_token_ids_set=set(arrays["bm25_token_ids"].tolist()),
                             methods_requiring_nonoccurrence=tuple(meta["bm25"]["nonoccurrence_methods"]),
                             nonoccurrence_array=arrays.get("bm25_nonoccurrence"),
                             scores={**{a: arrays[f"bm25_{a}"] for a in _BM25_ARRAYS},
                                     "num_docs": meta["bm25"]["num_docs"]})
    dense = None
    if meta["dense"] is not None:
        dense = Dense(**{a: arrays[a] for a in _DENSE_ARRAYS},
                      sentence_texts=_split(arrays["sentence_texts"], meta["dense"]),
                      paper_vectors=arrays.get("paper_vectors"))
    df = Counter(dict(zip(_split(arrays["df_words"], meta["df"]), arrays["df_counts"].tolist(), strict=False)))
    return _Corpus(papers, {p.paper_id: i for i, p in enumerate(papers)},
                   np.array([p.decision for p in papers], dtype=object), bm25, df,
                   stem_df, terms, dense, arrays.get("mpnet"),
                   meta["names"])


def _corpus_parts(key: tuple, state: _Corpus) -> tuple[dict, dict[str, np.ndarray]]:
    """`state` as plain arrays and a JSON-able `meta` (`_load_corpus`). Raises TypeError for what has no such form
    (a text holding NUL, a BM25 of another bm25s version holding other kinds of values): that corpus is then not
    cached."""
    arrays: dict[str, np.ndarray] = {}
    kinds: dict[str, str] = {}
    for f in fields(StoredPaper):
        values = [getattr(p, f.name) for p in state.papers]
        if all(isinstance(v, str) for v in values):
            kinds[f.name], arrays[f"paper_{f.name}"] = "str", _joined(values)
        elif all(isinstance(v, tuple) and all(isinstance(a, str) for a in v) for v in values):
            if any(not a or _AUTHOR_SEP in a for v in values for a in v):
                raise TypeError("an empty name, or one holding the cache's separator")
            kinds[f.name], arrays[f"paper_{f.name}"] = "strs", _joined([_AUTHOR_SEP.join(v) for v in values])
        elif all(isinstance(v, bool) for v in values):
            kinds[f.name], arrays[f"paper_{f.name}"] = "bool", np.array(values, dtype=bool)
        elif all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            kinds[f.name], arrays[f"paper_{f.name}"] = "int", np.array(values, dtype=np.int64)
        elif all(v is None or (isinstance(v, int) and not isinstance(v, bool)) for v in values):
            kinds[f.name] = "optint"
            arrays[f"paper_{f.name}"] = np.array([v or 0 for v in values], dtype=np.int64)
            arrays[f"paper_{f.name}_known"] = np.array([v is not None for v in values], dtype=bool)
        else:
            raise TypeError(f"StoredPaper.{f.name} holds values of mixed kinds")
    if any(not t or _AUTHOR_SEP in t for doc in state.terms for t in doc):
        raise TypeError("an empty term, or one holding the cache's separator")
    arrays["terms"] = _joined([_AUTHOR_SEP.join(sorted(doc)) for doc in state.terms])
    arrays["stem_df_words"] = _joined(list(state.stem_df))
    arrays["stem_df_counts"] = np.array(list(state.stem_df.values()), dtype=np.int64)
    bm25 = None
    if state.bm25 is not None:
        attributes = dict(vars(state.bm25))
        scores = attributes.pop("scores")
        vocab_dict, token_ids = attributes.pop("vocab_dict"), attributes.pop("unique_token_ids_set")
        nonoccurrence = attributes.pop("nonoccurrence_array", None)
        methods = attributes.pop("methods_requiring_nonoccurrence", ())
        if any(v is not None and not isinstance(v, (str, int, float, bool)) for v in attributes.values()):
            raise TypeError("a BM25 attribute that is not plain data")
        arrays.update({f"bm25_{a}": np.asarray(scores[a]) for a in _BM25_ARRAYS})
        if nonoccurrence is not None:
            arrays["bm25_nonoccurrence"] = np.asarray(nonoccurrence)
        arrays["bm25_vocab"] = _joined(list(vocab_dict))
        arrays["bm25_vocab_ids"] = np.array(list(vocab_dict.values()), dtype=np.int64)
        arrays["bm25_token_ids"] = np.array(sorted(token_ids), dtype=np.int64)
        bm25 = {"attributes": attributes, "vocab": len(vocab_dict), "nonoccurrence_methods": list(methods),
                "num_docs": int(scores["num_docs"])}
    dense = None
    if state.dense is not None:
        arrays.update({a: getattr(state.dense, a) for a in _DENSE_ARRAYS})
        arrays["sentence_texts"] = _joined(list(state.dense.sentence_texts))
        if state.dense.paper_vectors is not None:  # the shared snapshot's (rag related, the map beside a server)
            arrays["paper_vectors"] = state.dense.paper_vectors
        dense = len(state.dense.sentence_texts)
    if state.mpnet is not None:
        arrays["mpnet"] = state.mpnet
    arrays["df_words"] = _joined(list(state.df))
    arrays["df_counts"] = np.array(list(state.df.values()), dtype=np.int64)
    if any(a.dtype == object for a in arrays.values()):
        raise TypeError("an array of Python objects")  # np.savez would pickle it
    meta = {"key": _key_text(key), "papers": len(state.papers), "columns": kinds, "terms": len(state.terms),
            "stem_df": len(state.stem_df), "names": state.names, "bm25": bm25, "dense": dense, "df": len(state.df)}
    return meta, arrays


def _save_corpus(path: Path, key: tuple, state: _Corpus) -> None:
    """Cache the corpus (written whole, then renamed: a reader never sees half a file). A data dir that cannot be
    written, or a corpus with no plain form, only loses the cache. A corpus cache of the pickle format beside it
    (older versions) is removed."""
    tmp = ""
    try:
        meta, arrays = _corpus_parts(key, state)
        blob = np.frombuffer(json.dumps(meta, ensure_ascii=False).encode("utf-8"), dtype=np.uint8)
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("wb", dir=path.parent, prefix=path.name, delete=False) as f:
            tmp = f.name
            np.savez(f, meta=blob, **arrays)  # type: ignore[arg-type]  # numpy's stub types **kwds as allow_pickle
        os.replace(tmp, path)
        with contextlib.suppress(OSError):
            path.with_suffix(".pickle").unlink()
    except (OSError, TypeError, ValueError):
        if tmp:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
