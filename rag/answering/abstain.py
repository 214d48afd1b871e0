"""Abstention as a learned decision: a logistic regression over retrieval features says how likely it is that
the retrieved papers do NOT answer the question.

Two models share the feature list (`features`, computed from a `rag.search.retrieve.Retrieval` alone): the reader's
gate (FEATURES: the retrieval features and three of the reader's, rag/answering/reader.py) judges whether a
described English question is answered; the coverage model ("coverage" in the file: RETRIEVAL_FEATURES, the gate as
it was before the reader) says whether any paper is about the question ("not covered"), and judges questions that
name their paper or are typed in Chinese (`reads`, `judgement`). Both sets of weights are read from
abstain_gate.json beside this module, whose feature names must match (`load_gate`), so that they change together.
The reader's gate is refit by `make reader` (eval/reader_lso.py --write, scikit-learn); the coverage model's weights
were written by `python eval/train_abstain.py` (the former `make model`, scikit-learn),
which fits them on questions GENERATED from the papers (answerable ones from titles and abstract sentences;
unanswerable ones about topics whose key terms occur in no abstract, and about specific figures an abstract does
not give) and, since issue 29, on the DEV question sets (eval/tune_outcomes.py's DEV_SETS, researchers' wording
among them, and the description sets read after their held-out run,
tune_outcomes.READ_SETS), each dev question weighted 10
(eval/gate_cv.py SHIPPED_DEV_WEIGHT) beside a generated one: the generated questions reuse the abstracts' words,
researchers describe work in other words. Never on a held-out set. numpy only at run time.

Why these features: among 2,114 papers the best sentence's cosine (the old single signal) cannot tell "on topic"
from "answers it"; what separates them is lexical evidence: a question term that no paper contains, the share of
the question's terms the top papers contain, and whether a question asking for a figure meets a number next to
its words.

Named and described questions are weighed apart (the `named*` copies of every feature) since the refit on the
read description sets (eval/DECISIONS.md, "The gate refit on the read description sets"). One set of weights fitted
mostly on descriptions in other words sent named questions to unsure (types_dev answered 0.989 -> 0.966, "Which
three sub-tasks does RMP-SAM perform in real time?" p 0.47), and answered figure questions about a named paper
(corpus_figures answered 0.022 -> 0.244). Cross-validated over the 787 dev questions (eval/gate_cv.py), cost: the
gate before 327.0, refit 307.0, with a `named_match` feature 282.5, with the named copies 272.2.

Figure questions ("What learning rate was used in X?", "How many GPUs did X need?") are on topic by construction: they
name a real paper, so every retrieval signal says "covered". What tells them apart is the asked quantity itself:
`rag.query.wording.asked_quantity` takes the words right after "how many / what / which ..." ("learning rate", "GPU
hours", "teachers"), and two features read the top paper for them: `quantity_missing` (the share of those words its
title and abstract lack: an abstract that never says "learning rate" cannot give one) and `quantity_number` (one of
them stands within a few words of a number, digits or "eight": "56 teachers", "a score of only 18.4%"). An abstract
that mentions the quantity without a figure ("we tune the learning rate") gives 1 / 0: still no answer. A quantity
also counts under the names abstracts give it (ALIASES: "bitrate" as "4 kbit/s", "faster" as "2.3x", "accuracy" as a
percentage): with them, false refusals on corpus_heldout_v2 (read, so a dev set since) went 0.100 -> 0.075 at the same
0.836 refused on corpus_none_v3 + corpus_figures_v2.
"""

from __future__ import annotations

import json
import math
import re
from importlib import resources
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from rag.answering import reader
from rag.errors import RagError
from rag.query import zh
from rag.query.wording import WORD as _WORD
from rag.search.retrieve import Retrieval, tokenize
from rag.store.index import StoredPaper

# The hits the features read: the app's default k. `rag eval` and the fits retrieve 10, the app 5 by default, and a
# margin to "the second hit the dense side found" changes with k (a paper ranked 6-10 by fusion): under a first refit
# "What does LLMCert-B certify?" read p 0.09 at k = 10 and 0.89 at k = 5, so the features read the first 5 always.
FEATURE_HITS = 5
RARE_SHARE = 0.01  # a term in at most this share of the papers is "rare"
MIN_PAPERS = 1000  # the learned gate applies to collections at least this large (it was fitted on 2,114 papers)
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
    "quantity_missing",  # share of the asked quantity's words (`Wording.quantity`) the top paper does not contain
    "quantity_number",   # 1 if one of them stands within NEAR words of a number in the top paper's abstract
    "detail_missing",    # share of the question's details (`Wording.details`: names, numbers) the top paper lacks
]
# Two kinds of question in one model: one that names what it asks about, a rare name the top paper contains
# (`Retrieval.named_match`: "RMP-SAM"), and one that describes it. Each base feature gets a copy that is its value
# for a named question and 0 for the others, so the weights can differ by kind (module docstring).
BASE_FEATURES = list(FEATURES)
# What the question's form says, one weight for both kinds (`form_features`): near misses ask whether a real paper's
# work was also done on something it was not ("Has the layer-by-layer generator for directed graphs been used to
# produce causal graphs ...?", "Does the theory ... also cover recurrent networks?"), answerable descriptions mostly
# ask for the work itself ("Is there work on ...?", "How does ...?"). Over the describe dev sets: a yes/no question
# 0.41 of near misses against 0.08 of answerable questions; an extension marker 0.42 / 0.09. Refit with them
# (`make model`), the cross-validated cost over the 979 dev rows is 311.7 against 361.2 for the gate before (its fixed
# weights), unanswerable answered 0.158 against 0.228 (eval/gate_cv.py; eval/DECISIONS.md, "The question's form").
# Held out (describe_final7): near misses answered 9 of 16 against 10, answerable unsure 0.047 against 0.125.
FORM_FEATURES = [
    "yes_no",            # a yes/no question that is not a search ("Has it been ...?", not "Is there work ...?")
    "extension",         # it asks about more than the work ("also", "still", "beyond", "been applied to / tested on")
    "tail_missing",      # share of the words after that marker the top paper lacks while other papers use them
]
RETRIEVAL_FEATURES = [*BASE_FEATURES, "named_match", *(f"named*{name}" for name in BASE_FEATURES), *FORM_FEATURES]
# The reader's (rag/answering/reader.py): the question's words read against the top papers' best sentences. Left out
# of each of the 31 gate dev sets in turn (fitted and cut without it, eval/reader_lso.py), the pooled cost went 741.0
# (refit without them) -> 627.0, unanswerable answered 0.147 -> 0.105, absent_v5 (blind-written absent topics and near
# misses) 0.575 -> 0.275 (the weights before: 0.475); eval/DECISIONS.md, "The reader in the gate".
# Read for a described question in English only (`reads`): a question naming its paper's rare name finds the paper
# by the name and its other words are few ("What is SAM 2?"), so word-by-word reading says little of it, and the
# named* copies of the retrieval features already weigh what it asks of the paper. Read for every question, the
# refit sent "What is SAM 2?" and "Who wrote the SAM 2 paper?" to unsure (p 0.81, 0.99).
# Three of the reader's seven: with all seven the fit gave the sentence and cover scores positive weights beside a
# large negative one for reader_missing (collinear: each says how well the words are matched), and a covered
# question sat at the cut ("Is there work on making sparse autoencoders cheaper to train?" p 0.395 against 0.36).
READER_FEATURES = ["reader_missing", "reader_rare_min", "reader_number"]
_READ_AT = [reader.FEATURES.index(name) for name in READER_FEATURES]
assert "reader_second" not in READER_FEATURES  # features() reads the top paper alone
FEATURES = [*RETRIEVAL_FEATURES, *READER_FEATURES]
NUMBER_WORDS = {"two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
                "twenty", "thirty", "fifty", "hundred", "hundreds", "thousand", "thousands", "million", "millions",
                "billion", "billions", "dozen", "dozens", "half", "twice", "double", "triple", "single"}
NEAR = 4  # words between a quantity word and a number
# What a quantity is called in an abstract when a question names it otherwise ("What bitrate ...?" against "at
# 4 kbit/s", "How much faster ...?" against "a 2.3x speedup"): question word -> the abstract's words for it. "%"
# stands for a number written with a percent sign, "x" for a factor ("2.3x", "3×"). Kept to units and plain
# synonyms, so that a figure an abstract does not give does not find a stand-in.
ALIASES: dict[str, tuple[str, ...]] = {
    "bitrate": ("kbps", "kbit", "kb/s", "bps", "mbps", "bits", "bit"),
    "accuracy": ("%", "accurate"), "accurate": ("%", "accuracy"),
    "faster": ("x", "speedup", "speed", "acceleration"), "speedup": ("x", "faster", "speed"),
    "speed": ("x", "speedup", "faster"),
    "fewer": ("%", "x", "reduction", "reduces", "less"), "less": ("%", "x", "reduction", "reduces", "fewer"),
    "reduction": ("%", "x", "fewer", "less", "reduces"), "improvement": ("%", "x", "improves", "gain"),
    "big": ("parameters", "params", "billion", "million"), "parameters": ("params", "billion", "million"),
    "memory": ("gb", "mb", "tb", "footprint"), "latency": ("ms", "milliseconds", "seconds"),
    "long": ("hours", "minutes", "seconds", "days", "ms"), "time": ("hours", "minutes", "seconds", "days", "ms"),
}
_FORMS: dict[str, set[str]] = {
    t: {a for alias in aliases for a in (tokenize([alias])[0] or [alias])}
    for word, aliases in ALIASES.items() for t in tokenize([word])[0]}
_FACTOR = re.compile(r"^(?:\d+(?:\.\d+)?)?[x×]$", re.IGNORECASE)


def _forms(stem: str) -> set[str]:
    return {stem} | _FORMS.get(stem, set())


def _is_form(word: str, stems: list[str], forms: set[str]) -> bool:
    """Whether one abstract word names the quantity (its stem, an alias, a percentage or a factor)."""
    return bool(forms & set(stems)) or ("%" in forms and word.endswith("%")) or (
        "x" in forms and bool(_FACTOR.match(word)))


def _quantity_features(quantity: Sequence[str], paper: StoredPaper | None) -> tuple[float, float]:
    """(share of the asked quantity's stems missing from the paper, under their own name or an ALIASES name;
    1 if one of them sits within NEAR words of a number)."""
    asked = {t for words in tokenize(list(quantity)) for t in words}
    if not asked or paper is None:
        return 0.0, 0.0
    words = _WORD.findall(paper.abstract if paper.has_abstract else "")
    stems = tokenize(words) if words else []
    title = {t for s in tokenize([paper.title]) for t in s}
    forms = {a: _forms(a) for a in asked}
    found = {a for a in asked
             if forms[a] & title or any(_is_form(w, s, forms[a]) for w, s in zip(words, stems, strict=True))}
    return len(asked - found) / len(asked), float(_near_number(words, stems, forms))


def _near_number(words: list[str], stems: list[list[str]], forms: dict[str, set[str]]) -> bool:
    """Whether a word naming one of the asked quantities (`forms`: stem -> its names) sits within NEAR words of a
    number."""
    named = [i for i, (w, s) in enumerate(zip(words, stems, strict=True))
             if any(_is_form(w, s, f) for f in forms.values())]
    numbers = [i for i, w in enumerate(words) if w[0].isdigit() or w.lower() in NUMBER_WORDS]
    return any(abs(i - j) <= NEAR for i in named for j in numbers)


def gives_quantity(quantity: Sequence[str], sentence: str) -> bool:
    """Whether a sentence gives the figure a question asks for: a number within NEAR words of the asked
    quantity's name or an ALIASES name ("How many parameters ...?" against "... up to 2.4 billion parameters")."""
    asked = {t for words in tokenize(list(quantity)) for t in words}
    words = _WORD.findall(sentence)
    if not asked or not words:
        return False
    return _near_number(words, tokenize(words), {a: _forms(a) for a in asked})


def features(retrieval: Retrieval) -> np.ndarray:
    """The feature vector of one retrieval, in the order of FEATURES, from its first FEATURE_HITS hits."""
    hits = retrieval.hits[:FEATURE_HITS]
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
    asks = retrieval.wording.figure
    support = 0.0
    if asks and hits and hits[0].paper.has_abstract:
        sentences = [s for s in re.split(r"(?<=[.!?])\s+", hits[0].paper.abstract) if _DIGIT.search(s)]
        for words in tokenize(sentences) if sentences else []:
            support = max(support, len(terms & set(words)) / n)
    details = [t for t in tokenize(list(retrieval.wording.details)) if t] if hits else []
    missing_details = sum(1 for d in details if not top1.intersection(d)) / len(details) if details else 0.0
    base = np.array([
        retrieval.confidence, dense[0], dense[0] - dense[1], bm25[0] / n,
        (bm25[0] - bm25[1]) / bm25[0] if bm25[0] > 0 else 0.0,
        len(terms & top1) / n, len(terms & union) / n, unknown / n, float(unknown > 0), rare_missing / n,
        float(asks), support,
        *(_quantity_features(retrieval.wording.quantity, hits[0].paper if hits else None) if asks else (0.0, 0.0)),
        missing_details,
    ], dtype=np.float64)
    named = float(bool(retrieval.named_match))
    # The reader's model call is for collections the gate speaks for (`applies`); elsewhere its weights are unused.
    reading = retrieval.corpus_size >= MIN_PAPERS and (reads(retrieval) or not COVERAGE)
    read = np.asarray(reader.features(retrieval, second=False) if reading else [0.0] * len(reader.FEATURES),
                      dtype=np.float64)[_READ_AT]
    return np.concatenate([base, [named], base * named, form_features(retrieval, top1), read])


def form_features(retrieval: Retrieval, top1: set[str]) -> list[float]:
    """FORM_FEATURES of a question: (yes/no, extension marker, share of the tail's terms that the top paper
    (`top1`, its stemmed terms) lacks and some paper has). All 0 without hits."""
    if not retrieval.hits:
        return [0.0, 0.0, 0.0]
    yes_no, extension, tail = question_form(retrieval)
    terms = tokenize([tail])[0] if tail else []
    missing = sum(1 for t in terms if t not in top1 and retrieval.term_df.get(t, 0) > 0)
    return [float(yes_no), float(extension), missing / len(terms) if terms else 0.0]


def question_form(retrieval: Retrieval) -> tuple[bool, bool, str]:
    """(a yes/no question about a work, an extension marker, the tail: what it asks beyond the work), as
    `rag.query.wording` read them from the question's words (a Chinese question's from its Chinese)."""
    wording = retrieval.wording
    return wording.yes_no, wording.extension, wording.tail


def asked_beyond(retrieval: Retrieval) -> float:
    """For a question asking whether the work went further (a yes/no question or an extension marker, with a tail:
    "Has that approach also been tested on audio or speech generators?"), the share of the tail's terms, weighted by
    their inverse document frequency, that none of the retrieved papers contains; 0.0 for any other question.

    A follow-up about the previous answer's papers is answered from them without the gate
    (`rag.answering.compose`): its question ("What data did they use?") is too vague for it. This is what tells
    such a follow-up that the papers never say what it asks of them (without it, "Has that approach also been tested
    on audio?" was answered from an image-watermark abstract that says nothing of audio)."""
    if not retrieval.hits:
        return 0.0
    yes_no, extension, tail = question_form(retrieval)
    terms = set(tokenize([tail])[0]) if (yes_no or extension) and tail else set()
    if not terms:
        return 0.0
    papers = set().union(*tokenize([h.paper.search_text for h in retrieval.hits]))
    n = max(retrieval.corpus_size, 1)
    weight = {t: math.log((n + 1) / (retrieval.term_df.get(t, 0) + 1)) for t in terms}
    return sum(w for t, w in weight.items() if t not in papers) / (sum(weight.values()) or 1.0)


class GateError(RagError):
    """The gate's data file does not fit this code (another feature list, a missing value)."""


GATE_FILE = "abstain_gate.json"  # beside this module, package data; written by eval/train_abstain.py


def load_gate(text: str | None = None) -> dict[str, Any]:
    """The fitted gate from its JSON file (or `text`): its feature names must be FEATURES, in order, and every
    list as long, so weights fitted for other features are refused instead of silently misread."""
    gate: dict[str, Any] = json.loads(text if text is not None else resources.files("rag.answering").joinpath(GATE_FILE)
                      .read_text(encoding="utf-8"))
    if gate.get("features") != FEATURES:
        raise GateError(f"rag/answering/{GATE_FILE} was fitted for the features {gate.get('features')}, not "
                        f"{FEATURES}: refit it with `make model`.")
    for name in ("mean", "scale", "weights"):
        if len(gate.get(name) or []) != len(FEATURES):
            raise GateError(f"rag/answering/{GATE_FILE}: '{name}' needs {len(FEATURES)} values; refit it with "
                            "`make model`.")
    coverage = gate.get("coverage")
    if coverage is not None and (coverage.get("features") != RETRIEVAL_FEATURES or any(
            len(coverage.get(name) or []) != len(RETRIEVAL_FEATURES) for name in ("mean", "scale", "weights"))):
        raise GateError(f"rag/answering/{GATE_FILE}: its 'coverage' model must be fitted for {RETRIEVAL_FEATURES}; "
                        "refit it with `make model`.")
    return gate


_GATE = load_gate()
MEAN: list[float] = _GATE["mean"]
SCALE: list[float] = _GATE["scale"]
WEIGHTS: list[float] = _GATE["weights"]
BIAS: float = _GATE["bias"]
THRESHOLD: float = _GATE["threshold"]  # the one cut of the two-outcome gate, fitted on generated questions
TRAINING: str = _GATE["training"]
# Three outcomes (`rag.answering.records.Outcome`): the probability gives two cut points, chosen on the dev sets by
# eval/tune_outcomes.py (the set and the figure that chose them are in the file's "outcomes" entry): below
# UNSURE_AT the papers answer; from NOT_COVERED_AT nothing in the collection is close; in between, unsure. A
# gate file without the entry (an older one) keeps the single fitted THRESHOLD for both.
CUTS: dict[str, Any] = _GATE.get("outcomes") or {}
UNSURE_AT: float = float(CUTS.get("unsure_at", THRESHOLD))
NOT_COVERED_AT: float = float(CUTS.get("not_covered_at", THRESHOLD))
# A best sentence below `Settings.abstain_threshold` with the probability under NOT_COVERED_AT: unsure or not covered
# (chosen with the cut points; "not_covered" is how the two-outcome gate treated it).
LOW_CONFIDENCE: Literal["unsure", "not_covered"] = "unsure" if CUTS.get("low_confidence") == "unsure" else "not_covered"


# An unsure question is read by the LLM (where one is set) only below this probability; from it the papers are
# quoted as they are (`extractive.reader_doubt`). The file's outcomes entry says what chose it.
LLM_READS_BELOW: float = float(CUTS.get("llm_reads_below", 1.01))
# Whether any paper is about the question at all, apart from whether one answers it: "not covered" is decided by
# the retrieval features alone (RETRIEVAL_FEATURES, no reader), with the weights and cut they had before the reader
# joined (the file's "coverage" entry). The reader tells a paper that answers from one that is only near; nearness
# is what "not covered" is about, and a near miss (a real paper asked what it does not say) is "unsure": that paper
# is close and does not say (issue 51). A file without the entry decides both with the one model, as before.
COVERAGE: dict[str, Any] = _GATE.get("coverage") or {}
if COVERAGE:
    NOT_COVERED_AT = float(COVERAGE["not_covered_at"])

_FORM_AT = [FEATURES.index(name) for name in FORM_FEATURES]
_RETRIEVAL_AT = len(RETRIEVAL_FEATURES)  # FEATURES starts with them


def probability(retrieval: Retrieval) -> float:
    """How likely the retrieved papers do not answer the question (0..1; `judgement`'s); 0.0 when no model is
    fitted."""
    return judgement(retrieval)[0] if WEIGHTS else 0.0


def reads(retrieval: Retrieval) -> bool:
    """Whether the reader judges this question: a described question in English. One naming its paper's rare name
    is found by the name (its other words are few); a Chinese one is searched by the English terms a glossary gives
    its words, which are not the researcher's words to read (read, "有没有让稀疏自编码器训练更便宜的工作？" went
    unsure). Both are judged as before the reader."""
    return not retrieval.named_match and not zh.has_chinese(retrieval.asked or retrieval.question)


def judgement(retrieval: Retrieval, threshold: float | None = None) -> tuple[float, float, float, str]:
    """(how likely the papers do not answer, the same with FORM_FEATURES at 0, the unsure cut, what a weak best
    sentence gets): the reader's gate for a question it `reads`; for the others, the coverage model (the gate before
    the reader) at its own cut points. `threshold`
    (`Settings.abstain_model_threshold`) replaces the unsure cut."""
    if COVERAGE and not reads(retrieval):
        p, formless = coverage(retrieval)
        unsure_at, low = float(COVERAGE["unsure_at"]), str(COVERAGE["low_confidence"])
    else:
        (p, formless), unsure_at, low = probabilities(retrieval), UNSURE_AT, LOW_CONFIDENCE
    return p, formless, unsure_at if threshold is None else threshold, low


def probabilities(retrieval: Retrieval) -> tuple[float, float]:
    """(`probability`, the same as if the question's form said nothing: FORM_FEATURES at 0, their value for a
    search), from one feature vector: the second is what the retrieval alone says (`rag.answering.extractive`'s
    `reader_doubt`). (0.0, 0.0) when no model is fitted."""
    if not WEIGHTS:
        return 0.0, 0.0
    raw = features(retrieval)
    formless = raw.copy()
    formless[_FORM_AT] = 0.0
    x = (np.vstack([raw, formless]) - np.asarray(MEAN)) / np.asarray(SCALE)
    logits = x @ np.asarray(WEIGHTS) + BIAS
    return float(1.0 / (1.0 + math.exp(-logits[0]))), float(1.0 / (1.0 + math.exp(-logits[1])))


def coverage(retrieval: Retrieval) -> tuple[float, float]:
    """(how likely no paper of the collection is about the question, the same with FORM_FEATURES at 0): the
    "coverage" model's, or `probabilities` where the gate file has none."""
    if not COVERAGE:
        return probabilities(retrieval)
    raw = features(retrieval)[:_RETRIEVAL_AT]
    formless = raw.copy()
    formless[_FORM_AT] = 0.0
    x = (np.vstack([raw, formless]) - np.asarray(COVERAGE["mean"])) / np.asarray(COVERAGE["scale"])
    logits = x @ np.asarray(COVERAGE["weights"]) + float(COVERAGE["bias"])
    return float(1.0 / (1.0 + math.exp(-logits[0]))), float(1.0 / (1.0 + math.exp(-logits[1])))


def applies(retrieval: Retrieval) -> bool:
    """Whether the learned gate speaks for this retrieval: a fitted model and a collection of MIN_PAPERS or more.
    The model learnt what a term no paper contains means among 2,114 papers, and in a small collection most words
    are missing (over the 38 seeds "cheaper" alone would refuse a question the confidence gate answers rightly)."""
    return bool(WEIGHTS) and retrieval.corpus_size >= MIN_PAPERS


def cut_points(threshold: float | None = None) -> tuple[float, float]:
    """(unsure from, not covered from). `threshold` (`Settings.abstain_model_threshold`) moves the first, and the
    second with it when it is higher; 1.01 turns the gate off."""
    if threshold is None:
        return UNSURE_AT, NOT_COVERED_AT
    return threshold, max(threshold, NOT_COVERED_AT)

