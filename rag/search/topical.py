"""Topical: how much of a question's topic a paper's own text contains, as one number per paper (0..1).

Why: a list or a count ("How many papers are about music generation?") needs a yes/no per paper, and the
sentence score alone (cosine + term bonus) says "near", not "about": at the bar that separates answerable from
unanswerable questions, a count of crystal-generation papers also took in molecule, protein and audio
generators (28 papers for 3). What those papers lack is the question's rarer words. So each paper is scored by
the share of the question's topic, weighted by how rare each word is in the collection (BM25's IDF), that its
title and abstract contain:

- the question's terms are BM25's (stemmed, stop words dropped), minus words that only frame a question about
  papers (`rag.query.framing.SCAFFOLD`: "papers", "study", "how many", ...);
- alternatives count once: "attack or build watermarks" needs "attack" or "build" (the rarer one's weight);
- a word of the question that no paper contains has weight 0 (it cannot tell papers apart).

Plain arithmetic over the term statistics the retriever already keeps, so it costs microseconds per paper.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping

from rag.query.framing import SCAFFOLD
from rag.text import tokenize

_WORD = re.compile(r"[\w-]+")


def topic_groups(question: str) -> list[frozenset[str]]:
    """The question's topic terms, as groups of alternatives: "watermarks or fingerprints" is one group."""
    groups: list[set[str]] = []
    join = False
    for word in _WORD.findall(question.casefold()):
        if word == "or" and groups:
            join = True
            continue
        stems = [t for words in tokenize([word]) for t in words if t not in SCAFFOLD]
        for i, stem in enumerate(stems):
            if join and i == 0:
                groups[-1].add(stem)
            else:
                groups.append({stem})
        join = False if stems else join
    unique: dict[frozenset[str], None] = {}
    for group in groups:
        unique.setdefault(frozenset(group), None)
    return list(unique)


def idf(df: int, corpus_size: int) -> float:
    """BM25's inverse document frequency (bm25s's default, Lucene's): 0 for a term no paper contains."""
    return math.log(1 + (corpus_size - df + 0.5) / (df + 0.5)) if df else 0.0


def coverage(groups: list[frozenset[str]], paper_terms: Iterable[str] | set[str], df: Mapping[str, int],
             corpus_size: int) -> float:
    """The IDF-weighted share of the topic groups that the paper's terms contain (1.0 when nothing is weighed)."""
    terms = paper_terms if isinstance(paper_terms, (set, frozenset)) else set(paper_terms)
    total = found = 0.0
    for group in groups:
        weight = max(idf(df.get(t, 0), corpus_size) for t in group)
        total += weight
        if terms & group:
            found += weight
    return found / total if total > 0 else 1.0


def names_all(groups: list[frozenset[str]], terms: Iterable[str] | set[str], df: Mapping[str, int], corpus_size: int,
              common: float) -> bool:
    """Whether `terms` (a title's) contain every distinctive group of the topic: each group some paper has and fewer
    than `common` of the papers have ("diffusion" of "diffusion models", not "models"); False when there is none."""
    have = terms if isinstance(terms, (set, frozenset)) else set(terms)
    distinctive = [g for g in groups if 0 < max(df.get(t, 0) for t in g) < common * corpus_size]
    return bool(distinctive) and all(have & g for g in distinctive)


def key_term(groups: list[frozenset[str]], df: Mapping[str, int], corpus_size: int, share: float) -> frozenset[str]:
    """The topic's key term: its rarest group of terms ("unlearn" of "machine unlearning", "kv" of "reduce the memory of
    the KV cache"), if at most `share` of the papers contain it; empty when every word is common. A paper whose title
    holds it is about the topic far more often than one that is only near it (`rag.answering.extractive.members`)."""
    found = [(max(df.get(t, 0) for t in g), sorted(g), g) for g in groups if max(df.get(t, 0) for t in g) > 0]
    if not found:
        return frozenset()
    rarest = min(found)
    return rarest[2] if rarest[0] <= share * corpus_size else frozenset()
