"""Explain: which sentences of the top papers answer a what / how / why question, for extractive answers.

Sentences are scored against the question by `rag.retrieve` (cosine + a term bonus). That score favours an
abstract's opening, which restates the field in the question's own words ("Mean field games (MFGs) model
interactions in large-population multi-agent systems ..."), over the sentences that say what the paper does ("we
develop SemiSGD, ...", "we propose injecting an independent noise into ..."), which are what a what/how/why
question asks for. So, once `rag.answer.explain` has chosen how many sentences to quote from which papers (by
the plain score, so the papers an answer quotes and cites do not change), `within_papers` picks each paper's
sentences by a score with two nudges, in the units of the plain score:
- a sentence in which the authors state their own work ("we", "our", "this paper / work") gains OWN_WORK;
- the abstract's opening sentence, when it does not, loses OPENING (it sets the scene).
Chosen on the explain questions of eval/questions/types_dev.jsonl only (answer facts 0.17 -> 0.83 there, the same
from 0.10 to 0.20), then measured once on types_heldout (eval/reports/types-iclr2025.md). The answer keeps its
other rules (sentences per paper, the relative floor, each paper's sentences in abstract order).
"""

from __future__ import annotations

import re

from rag.retrieve import Retrieval, ScoredSentence

OWN_WORK = 0.10  # bonus of a sentence stating the authors' own work
OPENING = 0.10  # penalty of the abstract's first sentence when it does not
_OWN = re.compile(r"\b(?:we|our|ours|us)\b|\bthis\s+(?:paper|work|study|article)\b|\bhere,?\s+we\b", re.IGNORECASE)


def within_papers(retrieval: Retrieval, chosen: list[ScoredSentence],
                  candidates: list[ScoredSentence] | None = None) -> list[ScoredSentence]:
    """The same number of sentences from the same papers as `chosen` (picked by the plain score, so which papers
    an answer quotes and cites does not change), each paper's now its best by the score of `ranked`, among
    `candidates` (default: all of `retrieval.sentences`)."""
    count: dict[int, int] = {}
    for s in chosen:
        count[s.paper_index] = count.get(s.paper_index, 0) + 1
    out: list[ScoredSentence] = []
    for s in ranked(retrieval, candidates):
        if count.get(s.paper_index, 0) > 0:
            count[s.paper_index] -= 1
            out.append(s)
    return out


def ranked(retrieval: Retrieval, candidates: list[ScoredSentence] | None = None) -> list[ScoredSentence]:
    """`candidates` (default: `retrieval.sentences`, the top papers' sentences) re-scored as above, best first."""
    out = []
    for s in retrieval.sentences if candidates is None else candidates:
        own = bool(_OWN.search(s.text))
        opening = retrieval.hits[s.paper_index].paper.abstract.lstrip().startswith(s.text.strip()[:60])
        score = s.score + (OWN_WORK if own else -OPENING if opening else 0.0)
        out.append(ScoredSentence(s.text, score, s.paper_index))
    return sorted(out, key=lambda s: -s.score)
