"""Explain: which sentences of the top papers answer a what / how / why question, for extractive answers.

**One paper** (the question names it, or it clearly leads, `rag.answering.extractive.leads`): its `passage`, the first
sentence in which the authors state what they propose ("we propose X", "this paper introduces ...", PROPOSE) and
the two after it, in the abstract's own order. Why: an abstract sets the scene, states the contribution, says how
it works, then reports results. The facts a what/how/why question asks for (the method's name, its mechanism)
sit in the contribution sentence (24 of 68 such facts on eval/questions/types_dev2.jsonl) and the two after it
(32 more), while the sentences scoring best against the question are often those restating it (the opening) or
the results ("Experiments show that X outperforms ..."), which repeat its words.

The passage says what a paper does, not its numbers, so the sentence that best matches the question joins it
when the question asks for a figure (`rag.answering.abstain.FIGURE`: the best sentence with a number in it) or for
results (ASKS_RESULTS), the question's names masked first ("What is Time-MoE?" asks for no time); or when that sentence
leads the passage's best by BEST_LEAD and holds a word of the question the passage lacks ("X is a
state-of-the-art solution" does not join on the strength of the name alone).

Measured (answer facts; characters): on types_dev2's 40 explain questions (written for this, 2026-12-01) 0.487
before, 0.700 with the passage (604 -> 629), 0.713 with the joining sentence (661); seeds_dev's 76 single-paper
questions 0.855 -> 0.901; corpus_heldout_v2's 11 figure questions 0.455 -> 0.273 with the passage alone, 0.636
with the joining sentence, 0.909 when it is the best sentence with a number (a newcomer's "How many training
samples was CatVTON trained on?" lost its "73K samples" to the passage alone; an attacker's pass then found "How
many parameters does Time-MoE scale to?" without its "2.4 billion"). Did worse on types_dev2: the best-scoring
3-sentence window (0.59-0.63), the contribution plus the best two others (0.55-0.65), swapping in the best
sentence (0.66-0.69); a 4-sentence passage states more (0.775 at 778 characters, half an abstract), 2 sentences
less (0.600 at 474); joining the best sentence every time 0.713 at 747 characters.

**Otherwise** (several papers, a paper with no contribution sentence, or a follow-up about the previous answer's
paper, which asks for something specific), sentences are scored against the question by `rag.search.retrieve` (cosine +
a term bonus), and once `rag.answering.extractive.explain` has chosen how many to quote from which papers (by that plain
score, so the papers an answer quotes and cites do not change), `within_papers` picks each paper's sentences by that
score with three nudges, in its units:
- a sentence in which the authors state their own work ("we", "our", "this paper / work") gains OWN_WORK;
- the abstract's opening sentence, when it does not, loses OPENING (it sets the scene);
- a sentence reporting experiments or results ("Extensive experiments demonstrate ...", "We hope ...") that does
  not also state the contribution loses RESULTS, unless the question asks for results (seeds_dev single-paper
  facts 0.875 -> 0.895 with the passage rule on; no change on types_dev2).
OWN_WORK and OPENING were chosen on the explain questions of eval/questions/types_dev.jsonl (answer facts 0.17 ->
0.83 there), then measured once on types_heldout (eval/reports/types-iclr2025.md).
"""

from __future__ import annotations

import re

from rag.text import tokenize
from rag.search.retrieve import Retrieval, ScoredSentence, name_words
from rag.answering.abstain import FIGURE, gives_quantity

OWN_WORK = 0.10  # bonus of a sentence stating the authors' own work
OPENING = 0.10  # penalty of the abstract's first sentence when it does not
RESULTS = 0.20  # penalty of a sentence reporting experiments or results without stating the contribution
_DIGIT = re.compile(r"\d")
PASSAGE = 3  # sentences of a one-paper explanation: the contribution sentence and those after it
BEST_LEAD = 0.08  # ... and the question's best match, when it scores this much above the passage's best
# A question asking for what a paper found or how it was evaluated: its best match joins the passage, and results
# sentences are not marked down.
ASKS_RESULTS = re.compile(r"\b(?:results?|findings?|find|found|show(?:s|ed|n)?|perform(?:s|ed|ance)?|how\s+well|"
                          r"evaluat\w*|datasets?|benchmarks?|experiments?|outperform\w*|compar\w*|accura\w*|"
                          r"speed-?ups?|improv\w*)\b", re.IGNORECASE)
_OWN = re.compile(r"\b(?:we|our|ours|us)\b|\bthis\s+(?:paper|work|study|article)\b|\bhere,?\s+we\b", re.IGNORECASE)
PROPOSE = re.compile(r"\b(?:we|this\s+(?:paper|work))\s+(?:\w+\s+)?"
                     r"(?:propose|introduce|present|develop|design|call|name|term)\w*\b", re.IGNORECASE)
_RESULTS = re.compile(r"\b(?:experiments?|experimental(?:ly)?|empirical(?:ly)?|evaluat\w*|outperform\w*|"
                      r"state-of-the-art|sota|effectiveness|superior|extensive|we\s+(?:hope|believe|expect)|"
                      r"benchmarks?\s+(?:show|demonstrate)|results\s+(?:show|demonstrate|indicate|confirm))\b",
                      re.IGNORECASE)


def passage(retrieval: Retrieval, paper_index: int, candidates: list[ScoredSentence]) -> list[ScoredSentence]:
    """The paper's contribution sentence (its first PROPOSE sentence among `candidates`) and the PASSAGE - 1
    sentences after it, in abstract order (ending at the abstract's end, the passage starts earlier); [] when no
    sentence states a contribution."""
    abstract = retrieval.hits[paper_index].paper.abstract
    mine = sorted((s for s in candidates if s.paper_index == paper_index), key=lambda s: abstract.find(s.text))
    first = next((i for i, s in enumerate(mine) if PROPOSE.search(s.text)), None)
    if first is None:
        return []
    start = max(0, min(first, len(mine) - PASSAGE))
    return mine[start:start + PASSAGE]


def with_asked(retrieval: Retrieval, chosen: list[ScoredSentence], candidates: list[ScoredSentence]
               ) -> list[ScoredSentence]:
    """One paper's `chosen` sentences plus, in abstract order, the one of `candidates` that holds what the
    question asks for, when it is not among them: for a figure, the best-scoring sentence giving the asked quantity
    (`rag.answering.abstain.gives_quantity`), else the best with a number in it;
    for results, the best-scoring one; otherwise the best by `ranked`, if it leads the chosen ones by BEST_LEAD
    and holds a word of the question they lack."""
    if not chosen:
        return chosen
    paper_index = chosen[0].paper_index
    abstract = retrieval.hits[paper_index].paper.abstract
    mine = [s for s in candidates if s.paper_index == paper_index]
    # Compared by text: `chosen` may hold `ranked`'s re-scored copies of `candidates`, which are not equal to them,
    # and a sentence already quoted must not be quoted twice.
    quoted = {s.text for s in chosen}
    masked = _masked(retrieval.question)
    if FIGURE.search(masked):  # the sentence giving the asked quantity, else the best one with a number
        numbers = [s for s in mine if _DIGIT.search(s.text)]
        gives = [s for s in numbers if gives_quantity(retrieval.question, s.text)]
        if not numbers or any(s.text in quoted for s in gives):
            return chosen
        best = max(gives or [s for s in numbers if s.text not in quoted] or numbers, key=lambda s: s.score)
    elif ASKS_RESULTS.search(masked):
        best = max(mine, key=lambda s: s.score)
    else:  # "What is Time-MoE?" asks nothing the passage leaves out: "Time-MoE is state-of-the-art" only repeats it
        scored = {s.text: s.score for s in ranked(retrieval, mine)}
        best = max(mine, key=lambda s: scored[s.text])
        said = {t for words in tokenize([s.text for s in chosen]) for t in words}
        new_words = retrieval.terms & set(tokenize([best.text])[0]) - said
        if scored[best.text] - max(scored.get(s.text, s.score) for s in chosen) < BEST_LEAD or not new_words:
            return chosen
    if best.text in quoted:
        return chosen
    return sorted(chosen + [best], key=lambda s: abstract.find(s.text))


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
    asks_results = bool(ASKS_RESULTS.search(_masked(retrieval.question)))
    for s in retrieval.sentences if candidates is None else candidates:
        own = bool(_OWN.search(s.text))
        opening = retrieval.hits[s.paper_index].paper.abstract.lstrip().startswith(s.text.strip()[:60])
        score = s.score + (OWN_WORK if own else -OPENING if opening else 0.0)
        if _RESULTS.search(s.text) and not PROPOSE.search(s.text) and not asks_results:
            score -= RESULTS
        out.append(ScoredSentence(s.text, score, s.paper_index))
    return sorted(out, key=lambda s: -s.score)


def _masked(question: str) -> str:
    for name in name_words(question):
        question = question.replace(name, " ")
    return question
