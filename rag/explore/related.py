"""Explore: the papers nearest a paper ("what else is like this one?"), and finding a paper by id or title.

A paper's neighbours are ranked by the cosine of whole-paper vectors: the `<collection>-papers` records of
`rag.store.index` hold, for every paper, the normalized mean of its chunk vectors. They are read from the store once per
corpus (the retriever's `state`, replaced on every refresh after an ingest; over a store at rest, from the snapshot's
copy of them, `rag.store.snapshot.Dense`, so `rag related` needs no chromadb) into one [papers, dim] matrix, so a
related query is one matrix-vector product (under a millisecond for 2,114 papers) and never embeds anything.

`find_paper` resolves what a user typed (`rag related`, the `/related` API): a paper id; a title, compared with
case, punctuation and spacing ignored; whole words of a title that only one paper has; or else a name its abstract
gives ("TEAL", whose title is "Training-Free Activation Sparsity in Large Language Models"). Words match whole
words only: "TEAL" is not in "sTEALthy" or "STEALing". Anything else is a `PaperNotFound` whose one line says what
to give instead, naming the papers that do have the words (exact-case name hits first).

How good the neighbours are is measured by `rag eval` (`rag.evaluation.harness.related_recall`). A neighbour under
`AnswerPolicy.related_floor` is marked `loose` and shown as "loosely related": every paper has 5 nearest papers,
and for one on a rare topic (LaMPlace, chip placement) the fifth can be about something else entirely.
"""

from __future__ import annotations

import difflib
import re
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rag.errors import RagError, whole_number
from rag.text import plain
from rag.store.index import StoredPaper

DEFAULT_K = 5
MAX_K = 50
_OPENREVIEW = re.compile(r"openreview\.net/(?:forum|pdf)\?id=([\w-]+)")


class PaperNotFound(RagError, ValueError):
    """No single paper matches what the user gave; the message says what to give instead."""


@dataclass(frozen=True)
class Neighbour:
    paper: StoredPaper
    score: float  # cosine similarity of the whole-paper vectors
    loose: bool = False  # under `AnswerPolicy.related_floor`: the nearest there is, not a close relative


@dataclass(frozen=True)
class Related:
    """A paper and its nearest papers, best first (itself excluded)."""

    paper: StoredPaper
    related: list[Neighbour]

    def to_dict(self) -> dict[str, Any]:
        return {"paper": paper_dict(self.paper),
                "related": [{**paper_dict(n.paper), "score": round(n.score, 4), "loose": n.loose}
                            for n in self.related]}


def paper_dict(paper: StoredPaper) -> dict[str, Any]:
    """The fields a card shows (JSON of `rag related`, `/related`, the page's cards)."""
    return {"paper_id": paper.paper_id, "title": paper.title or paper.label, "authors": list(paper.authors),
            "decision": paper.decision, "url": paper.url, "venue": paper.venue, "abstract": paper.abstract,
            "has_abstract": paper.has_abstract}


def check_k(k: Any) -> int:
    """How many related papers a caller asked for: DEFAULT_K when not given, else a whole number 1..MAX_K."""
    return DEFAULT_K if k is None else whole_number(k, MAX_K, "related papers to list", PaperNotFound)


class Explorer:
    """The whole-paper vectors of one corpus, as a matrix in the retriever's paper order."""

    def __init__(self, retriever: Any) -> None:
        self.retriever = retriever
        self.state: Any = None
        self.vectors = np.zeros((0, 0), dtype=np.float32)
        self._lock = threading.Lock()

    def _load(self) -> tuple[Any, np.ndarray]:
        """The current corpus and its paper vectors (read again from the store after a refresh)."""
        with self._lock:
            state = self.retriever.state
            if state is not self.state:
                ids = [p.paper_id for p in state.papers]
                if state.dense is not None and not self.retriever.index.opened:
                    matrix = state.dense.paper_vectors  # the snapshot's copy of them: no chromadb (a store at rest)
                else:
                    found = self.retriever.index.paper_vectors(ids)  # a store that is down: its one-line StoreError
                    dim = len(next(iter(found.values()))) if found else 0
                    matrix = np.zeros((len(ids), dim), dtype=np.float32)
                    for i, pid in enumerate(ids):
                        if pid in found:
                            matrix[i] = found[pid]
                norms = np.linalg.norm(matrix, axis=1, keepdims=True)
                self.vectors = matrix / np.maximum(norms, 1e-12)
                self.state = state
            return self.state, self.vectors

    def related(self, query: str, k: Any = None, decisions: Sequence[str] = ()) -> Related:
        """The `k` papers nearest the paper `query` names (id or title), best first; with `decisions`, only papers
        with one of them ("Which orals are related to X?")."""
        k = check_k(k)
        state, vectors = self._load()
        paper = find_paper(state.papers, query)
        i = state.position[paper.paper_id]
        # einsum, not `@`: a matrix-vector product through the threaded BLAS took 15 ms on this busy 2-core machine
        # (its threads wait for each other), einsum 0.3 ms.
        scores = np.einsum("ij,j->i", vectors, vectors[i])
        scores[i] = -np.inf
        if decisions:
            scores[~np.isin(state.decisions, list(decisions))] = -np.inf
        order = np.argsort(-scores, kind="stable")[:k]
        floor = self.retriever.index.settings.policy.related_floor
        return Related(paper, [Neighbour(state.papers[j], float(scores[j]), bool(scores[j] < floor))
                               for j in order if np.isfinite(scores[j])])

    def matrix(self) -> tuple[list[StoredPaper], np.ndarray]:
        """Every paper and its unit vector (the topic map's input)."""
        state, vectors = self._load()
        return state.papers, vectors


_EXPLORERS: weakref.WeakKeyDictionary[Any, Explorer] = weakref.WeakKeyDictionary()
_EXPLORERS_LOCK = threading.Lock()


def explorer(retriever: Any) -> Explorer:
    """The one `Explorer` of a retriever (made on first use)."""
    with _EXPLORERS_LOCK:
        found = _EXPLORERS.get(retriever)
        if found is None:
            found = _EXPLORERS[retriever] = Explorer(retriever)
        return found


def find_paper(papers: list[StoredPaper], query: Any) -> StoredPaper:
    """The paper `query` names: its id or OpenReview link, its title (case, punctuation and spacing ignored), whole
    words of its title no other paper has, a name that only its abstract gives, or else a title within a few typos
    of it. Raises PaperNotFound otherwise, naming the papers that have the words."""
    if not isinstance(query, str) or not query.strip():
        raise PaperNotFound("give a paper id or title (e.g. one of the ids `rag ask --json` lists in `sources`).")
    text = " ".join(query.split())
    if len(text) > 500:
        raise PaperNotFound(f"the paper id or title is too long ({len(text):,} characters; at most 500).")
    link = _OPENREVIEW.search(text)  # the link a card shows: https://openreview.net/forum?id=<id>
    text = link.group(1) if link else text
    for paper in papers:
        if paper.paper_id == text:
            return paper
    wanted = plain(text)
    if not wanted:
        raise PaperNotFound(f"no paper has the id or title {text[:80]!r}: give a paper id or words of its title.")
    titles = [plain(p.title or p.label) for p in papers]
    exact = [p for p, t in zip(papers, titles, strict=True) if t == wanted]
    if len(exact) == 1:
        return exact[0]
    # Whole words, in the plain form (" teal " is not inside " stealthy "): a part of a word is not a name.
    padded = f" {wanted} "
    within = exact or [p for p, t in zip(papers, titles, strict=True) if padded in f" {t} "]
    if len(within) == 1:
        return within[0]
    if len(within) > 1:
        raise PaperNotFound(f"{len(within)} papers have {text[:60]!r} in their title, e.g. {_shown(within)}: give "
                            "more of the title or the paper id.")
    named = _named_in_abstracts(papers, text, wanted)
    if len(named) == 1:
        return named[0]
    close = difflib.get_close_matches(wanted, titles, n=2, cutoff=0.85)
    if len(close) == 1 or (close and close[0] != close[1] and difflib.SequenceMatcher(
            None, wanted, close[0]).ratio() - difflib.SequenceMatcher(None, wanted, close[1]).ratio() > 0.05):
        return papers[titles.index(close[0])]
    if named:
        raise PaperNotFound(f"no title has {text[:60]!r}; {len(named)} abstracts do, e.g. {_shown(named)}: give the "
                            "paper id or words of its title.")
    raise PaperNotFound(f"no paper has the id or title {text[:80]!r}: give a paper id (`rag ask --json` lists them "
                        "in `sources`) or more words of its title.")


def _named_in_abstracts(papers: list[StoredPaper], text: str, wanted: str) -> list[StoredPaper]:
    """The papers whose abstract has `text` as whole words, those with it as typed (the case of a name: "TEAL")
    first, then those with it in any case; among each, the ones naming it most often first. Only when the exact-case
    hits are one paper is it taken alone: a name is written as its paper writes it."""
    if len(wanted) < 3:
        return []
    as_typed = re.compile(r"(?<!\w)" + r"\W+".join(map(re.escape, text.split())) + r"(?!\w)")
    hits: list[tuple[int, int, int, StoredPaper]] = []
    for i, paper in enumerate(papers):
        if not paper.abstract:
            continue
        count = len(as_typed.findall(paper.abstract))
        if count:
            hits.append((0, -count, i, paper))
        elif f" {wanted} " in f" {plain(paper.abstract)} ":
            hits.append((1, 0, i, paper))
    hits.sort(key=lambda h: h[:3])
    exact_case = [h[3] for h in hits if h[0] == 0]
    return exact_case if len(exact_case) == 1 else [h[3] for h in hits]


def _shown(papers: list[StoredPaper]) -> str:
    return "; ".join(f"{p.paper_id} ({(p.title or p.label)[:60]})" for p in papers[:3])
