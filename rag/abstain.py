"""Abstention as a learned decision: a logistic regression over retrieval features says how likely it is that
the retrieved papers do NOT answer the question.

It owns the feature list (`features`, computed from a `rag.retrieve.Retrieval` alone) and the fitted weights,
both here so that they change together. The weights are written by `python eval/train_abstain.py` (`make model`),
which fits them on questions GENERATED from the papers (answerable ones from titles and abstract sentences;
unanswerable ones about topics whose key terms occur in no abstract, and about specific figures an abstract does
not give), never on the question sets in eval/questions. numpy only.

Why these features: among 2,114 papers the best sentence's cosine (the old single signal) cannot tell "on topic"
from "answers it"; what separates them is lexical evidence: a question term that no paper contains, the share of
the question's terms the top papers contain, and whether a question asking for a figure meets a number next to
its words.
"""

from __future__ import annotations

import math
import re

import numpy as np

from rag.retrieve import Retrieval, tokenize

RARE_SHARE = 0.01  # a term in at most this share of the papers is "rare"
MIN_PAPERS = 1000  # the learned gate applies to collections at least this large (it was fitted on 2,114 papers)
# A question asking for a specific figure: "how many", "what learning rate", "which GPU", "exact", ...
FIGURE = re.compile(
    r"\bhow (?:many|much|long|large|big|fast)\b|\bexact(?:ly)?\b|\bprecise(?:ly)?\b|\bwhat (?:was |is |were |are )?"
    r"(?:the )?(?:\w+[ -]){0,3}(?:rate|size|value|number|count|length|ratio|budget|temperature|score|fid|error|"
    r"cost|time|hours?|seeds?|epochs?|steps?|parameters?|resolution|strength|accuracy|percentage)\b|"
    r"\bwhich (?:gpus?|hardware|scanner|temperature|value|version|licen[cs]e)\b|\bnumber of\b", re.IGNORECASE)
_DIGIT = re.compile(r"\d")

FEATURES = [
    "confidence",        # the best sentence's score (cosine + term overlap): the old single signal
    "dense_top",         # cosine of the best chunk among the hits
    "dense_margin",      # ... minus the second best paper's
    "bm25_top_per_term",  # top BM25 score / number of question terms
    "bm25_margin",       # (top - second) / top BM25 score
    "cover_top1",        # share of the question's terms found in the top paper
    "cover_top3",        # ... in any of the top 3 papers
    "unknown_share",     # share of the question's terms that no paper contains
    "any_unknown",       # 1 if any term occurs in no paper
    "rare_missing",      # rare terms of the question missing from the top paper, over the question's terms
    "asks_figure",       # the question asks for a specific figure
    "figure_support",    # ... and the top paper has a sentence with a digit and the question's terms (share)
]


def features(retrieval: Retrieval) -> np.ndarray:
    """The feature vector of one retrieval, in the order of FEATURES."""
    hits = retrieval.hits
    terms = retrieval.terms
    n = max(len(terms), 1)
    top_tokens = [set(t) for t in tokenize([h.paper.search_text for h in hits[:3]])] if hits else []
    top1 = top_tokens[0] if top_tokens else set()
    union = set().union(*top_tokens) if top_tokens else set()
    dense = sorted((h.dense for h in hits if h.dense is not None), reverse=True) + [0.0, 0.0]
    bm25 = sorted((h.bm25 for h in hits if h.bm25 is not None), reverse=True) + [0.0, 0.0]
    df = retrieval.term_df
    rare_limit = max(2, RARE_SHARE * retrieval.corpus_size)
    unknown = sum(1 for t in terms if df.get(t, 0) == 0)
    rare_missing = sum(1 for t in terms if 0 < df.get(t, 0) <= rare_limit and t not in top1)
    asks = bool(FIGURE.search(retrieval.question))
    support = 0.0
    if asks and hits and hits[0].paper.has_abstract:
        sentences = [s for s in re.split(r"(?<=[.!?])\s+", hits[0].paper.abstract) if _DIGIT.search(s)]
        for words in tokenize(sentences) if sentences else []:
            support = max(support, len(terms & set(words)) / n)
    return np.array([
        retrieval.confidence, dense[0], dense[0] - dense[1], bm25[0] / n,
        (bm25[0] - bm25[1]) / bm25[0] if bm25[0] > 0 else 0.0,
        len(terms & top1) / n, len(terms & union) / n, unknown / n, float(unknown > 0), rare_missing / n,
        float(asks), support,
    ], dtype=np.float64)


# --- fitted by eval/train_abstain.py; do not edit by hand -------------------------------------------------------
MEAN: list[float] = [0.482144, 0.467835, 0.051897, 0.945247, 0.230656, 0.564326, 0.790858, 0.050799, 0.208636,
    0.049861, 0.248397, 0.043510]
SCALE: list[float] = [0.150798, 0.126433, 0.063685, 0.361228, 0.197357, 0.165494, 0.149875, 0.118060, 0.406334,
    0.080168, 0.432083, 0.108524]
WEIGHTS: list[float] = [-0.171965, 0.387894, 0.193761, -0.123771, 0.332360, 0.287542, -0.369684, 1.325871, 0.983785,
    1.045398, 1.348448, -0.276083]
BIAS = -0.523596
THRESHOLD = 0.8122
TRAINING = "2339 generated questions (seed 2025), eval/train_abstain.py; validation AUC 0.958"
# --- end of fitted values ---------------------------------------------------------------------------------------


def probability(retrieval: Retrieval) -> float:
    """How likely the retrieved papers do not answer the question (0..1); 0.0 when no model is fitted."""
    if not WEIGHTS:
        return 0.0
    x = (features(retrieval) - np.asarray(MEAN)) / np.asarray(SCALE)
    return float(1.0 / (1.0 + math.exp(-(float(x @ np.asarray(WEIGHTS)) + BIAS))))


def refuses(retrieval: Retrieval, threshold: float | None = None) -> bool:
    """The learned gate: refuse when the probability reaches `threshold` (None: the fitted THRESHOLD). Only over
    collections of MIN_PAPERS or more: the model learnt what a term no paper contains means among 2,114 papers,
    and in a small collection most words are missing (over the 38 seeds "cheaper" alone would refuse a question
    the confidence gate answers rightly)."""
    if not WEIGHTS or retrieval.corpus_size < MIN_PAPERS:
        return False
    return probability(retrieval) >= (THRESHOLD if threshold is None else threshold)
