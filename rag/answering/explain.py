"""Explain: which sentences of the top papers answer a what / how / why question, for extractive answers.

**One paper** (the question names it, or it clearly leads, `rag.answering.extractive.leads`): its `passage`, the first
sentence in which the authors state what they propose ("we propose X", "this paper introduces ...", PROPOSE) and
the two after it, in the abstract's own order. Why: an abstract sets the scene, states the contribution, says how
it works, then reports results. The facts a what/how/why question asks for (the method's name, its mechanism)
sit in the contribution sentence (24 of 68 such facts on eval/questions/types_dev2.jsonl) and the two after it
(32 more), while the sentences scoring best against the question are often those restating it (the opening) or
the results ("Experiments show that X outperforms ..."), which repeat its words.

The passage says what a paper does, not its numbers, so the sentence that best matches the question joins it when the
question asks for a figure (`rag.query.wording.FIGURE`: the best sentence with a number in it) or for results
(`rag.query.wording.ASKS_RESULTS`), the question's names masked first ("What is Time-MoE?" asks for no time); or when
that sentence leads the passage's best by BEST_LEAD and holds a word of the question the passage lacks ("X is a
state-of-the-art solution" does not join on the strength of the name alone).

Measured (answer facts; characters): on types_dev2's 40 explain questions (written for this, 2026-12-01) 0.487
before, 0.700 with the passage (604 -> 629), 0.713 with the joining sentence (661); seeds_dev's 76 single-paper
questions 0.855 -> 0.901; corpus_heldout_v2's 11 figure questions 0.455 -> 0.273 with the passage alone, 0.636
with the joining sentence, 0.909 when it is the best sentence with a number ("How many training
samples was CatVTON trained on?" lost its "73K samples" to the passage alone; an attacker's pass then found "How
many parameters does Time-MoE scale to?" without its "2.4 billion"). Did worse on types_dev2: the best-scoring
3-sentence window (0.59-0.63), the contribution plus the best two others (0.55-0.65), swapping in the best
sentence (0.66-0.69); a 4-sentence passage states more (0.775 at 778 characters, half an abstract), 2 sentences
less (0.600 at 474); joining the best sentence every time 0.713 at 747 characters.

**A which question** ("Which three sub-tasks does RMP-SAM perform?", "Which simple debiasing method ...?", "What kinds
of prefixes ...?", `rag.query.wording.ASKS_WHICH`) asks for things by name, and the sentence that lists or names them
("It contains three fundamental sub-tasks: A, B, and C."; "As a debiasing method ..., we revisit feature
normalization") is often neither the contribution nor the best match: "We analyze why this simple method is effective"
matches better and names nothing. So, whichever way the sentences were chosen, the first quoted paper's sentence that
best lists or names what is asked (`with_named`: the asked words side by side, a list or a naming word, the asked
number) joins them when no quoted one does, with the sentence before it when it starts "It" / "This" (issue 29 item
5). On the dev sets (describe_dev, types_dev, types_dev2, types_dev3, seeds_dev: 282 questions with facts) it changes
no answer: none of them asks this way and misses the fact; "what X" in general ("What guarantees does uniINF
achieve?") made three answers 300 characters longer with no fact gained, so only "what kinds / types of", "what are
the", "what N" count.

**The asked figure, cause or remedy, from the best-ranked paper** (`with_top_asked`, one paper or several; the
patterns are `rag.query.wording`'s, read once into `Wording.asks`): a description-style question often asks for a
number ("How often does it find the best route?", ASKS_FIGURE beside the gate's FIGURE), a cause ("Why do ...?",
ASKS_WHY: the sentence saying so, CAUSE) or a remedy or mechanism ("... and what method spreads them out?", "How can X
cope with Y?", ASKS_REMEDY: the contribution sentence, PROPOSE), and the answer quoted several papers' best matches,
or one paper's passage, without it. The best-ranked quoted paper's sentence holding it joins them, unless a quoted one
already does; a later sentence's capitalised first word ("... search? What pass rate ...?") is not masked as a name.
Measured (extractive, answered questions, facts stated) on the read describe sets (describe_dev, describe_heldout,
describe_final..final9: 696 answerable questions with facts, 2,114 papers, 2026-12-04, twelfth session): result 0.517
-> 0.684 (87), why 0.522 -> 0.628 (52), how 0.611 -> 0.632 (72), all 0.655 -> 0.692; 35 questions gained a fact, none
lost one; no change on types_dev, types_dev3, seeds_dev and corpus_heldout_v2, types_dev2 0.767 -> 0.775; answers
20-30 characters longer on average. A question in Chinese is searched by its English terms, which drop its question
words (多少, 为什么, 如何), so `rag.answering.extractive.explained` reads what they ask on the terms with
`Intent.asks` ("how much", "why", "how can") in front (`Wording.asks_in_english`) (read describe sets, 99
Chinese questions: facts 0.705 -> 0.710, one question up, none down). A figure is a number standing alone or with its
unit (_FIGURE_NUMBER), not a digit inside a name ("GPT-4o", "3D"): with both, facts over the 824 read-set questions
0.703 -> 0.704, 4 up and 2 down (two answers had held their fact by quoting a sentence whose only "number" was in a
name, "GSM8K"); thirteenth session.

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
from rag.query.wording import Wording
from rag.search.retrieve import Retrieval, ScoredSentence
from rag.answering.abstain import gives_quantity

OWN_WORK = 0.10  # bonus of a sentence stating the authors' own work
OPENING = 0.10  # penalty of the abstract's first sentence when it does not
RESULTS = 0.20  # penalty of a sentence reporting experiments or results without stating the contribution
# A figure in a sentence: a number standing alone or with its unit ("77%", "23$\\times$", "2.4 billion", "73K"), not a
# digit inside a name ("GPT-4o", "3D", "FP16", "Llama-2"), which gave "The advent of ... LMMs like GPT-4o" for "how
# much compute does it save?".
_FIGURE_NUMBER = re.compile(r"(?<![\w-])\d+(?:[.,]\d+)*(?:\s*(?:%|×|x\b|[KMB]\b)|(?![A-Za-z]))")
# ... nor the number of an item in a list ("1) We directly compress ...", "(2) ...", "3. ..."): Activation Beacon's
# "1) We directly compress the activations" was taken for the sentence giving "how much faster", so its "2x
# acceleration" was left out.
_ENUMERATOR = re.compile(r"^\s*\(?\d{1,2}[).]\s")
PASSAGE = 3  # sentences of a one-paper explanation: the contribution sentence and those after it
BEST_LEAD = 0.08  # ... and the question's best match, when it scores this much above the passage's best
# The sentence that gives a cause ("We attribute this problem to ...", "these issues arise from ...", "... can be
# traced back to ..."), for a question asking why (`rag.query.wording.ASKS_WHY`).
CAUSE = re.compile(r"\b(?:because|due\s+to|arises?\s+from|stems?\s+from|caused\s+by|attribut\w*|traced?\s+back|"
                   r"leads?\s+to|results?\s+from|explains?|the\s+reason|owing\s+to|root\s+cause)\b", re.IGNORECASE)
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


# A question asking which things, or which one by name: "Which three sub-tasks does X perform?", "Which simple
# debiasing method ...?", "What kinds of prefixes ...?", "What are the two stages of X?", "What three losses ...?".
# `asked` is what it names: the words after "which" / "what" up to the verb or preposition that ends them ("does",
# "of", ...). Any other "what X" ("What guarantees does uniINF achieve?", "What is the main idea of StartGrad?")
# asks what the passage already says: on types_dev2 and seeds_dev, three such answers grew by 300 characters each
# and gained no fact.
# A sentence that lists things ("three sub-tasks: A, B, and C"; "consisting of A, B and C") or names one ("a
# setting called X", "namely X", "X, which ...").
_LISTS = re.compile(r"[^,;:]+,[^,;:]+(?:,\s*)?\b(?:and|or)\b|:\s*\S+[^:]*,", re.IGNORECASE)
_NAMES = re.compile(r"\b(?:called|named|termed|dubbed|namely|coined|i\.e\.|such\s+as|including|consist\w*\s+of)\b",
                    re.IGNORECASE)
# A sentence that refers back to what the one before it named ("It contains ...", "This method ...").
_REFERS_BACK = re.compile(r"^(?:it|they|this|these|such)\b", re.IGNORECASE)


def asked_things(wording: Wording) -> tuple[list[str], str]:
    """The stemmed words of what a which / what question asks to be named, and the number it asks for ("three
    sub-tasks" -> (["sub", "task"], "three")); ([], "") when it asks no such thing ("What does X propose?"). Read
    from the question's `Wording` (`rag.query.wording.asked_things`)."""
    asked, number = wording.which, wording.which_number
    if not asked:
        return [], ""
    words = tokenize([asked])[0]
    if not words or words[0] in _PAPERS:  # "Which papers use X?" asks for papers: a list (`rag.query.intent`)
        return [], ""
    return [t for t in words if t not in _GENERIC_ASKED], number.lower()


_GENERIC_ASKED = {"paper", "work", "author", "problem", "way", "kind", "type", "main", "key", "one", "idea"}
_PAPERS = {"paper", "work", "articl", "studi", "public", "oral", "spotlight", "poster"}


def names_asked(asked: list[str], number: str, text: str) -> int:
    """How well `text` lists or names what a which question asks for (`asked_things`): 0 when it holds none of
    the asked words, else two points for two asked words side by side, in order ("debiasing method", "sub-tasks": it
    names the thing, where "this simple method ..., such as" only lists), one for a list or a name (_LISTS,
    _NAMES), one for the asked number ("three fundamental sub-tasks")."""
    words = tokenize([text])[0]
    if not set(asked) & set(words):
        return 0
    pairs = {tuple(asked[i:i + 2]) for i in range(len(asked) - 1)}
    phrase = any(tuple(words[i:i + 2]) in pairs for i in range(len(words) - 1))
    return (2 * int(phrase) + int(bool(_LISTS.search(text) or _NAMES.search(text)))
            + int(bool(number) and re.search(rf"\b{re.escape(number)}\b", text, re.IGNORECASE) is not None))


def with_named(retrieval: Retrieval, chosen: list[ScoredSentence], candidates: list[ScoredSentence]
               ) -> list[ScoredSentence]:
    """`chosen` plus, when the question asks which things or which one (ASKS_WHICH), the sentence of the first
    quoted paper that best lists or names them (`names_asked`, then the score), when it is not quoted yet; with
    the sentence before it when it refers back ("It contains three sub-tasks: ..." says what "it" is only after
    the sentence naming it)."""
    asked, number = asked_things(retrieval.wording)
    if not chosen or not asked:
        return chosen
    paper_index = chosen[0].paper_index
    abstract = retrieval.hits[paper_index].paper.abstract
    mine = sorted((s for s in candidates if s.paper_index == paper_index), key=lambda s: abstract.find(s.text))
    if not mine:
        return chosen
    points = [names_asked(asked, number, s.text) for s in mine]
    at = max(range(len(mine)), key=lambda i: (points[i], mine[i].score))
    quoted = {s.text for s in chosen}
    if points[at] == 0 or mine[at].text in quoted:
        return chosen
    added = [mine[at]]
    if _REFERS_BACK.search(mine[at].text.strip()) and at > 0 and mine[at - 1].text not in quoted:
        added.insert(0, mine[at - 1])
    return chosen + added


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
    asks = retrieval.wording.asks
    if asks.figure:  # the sentence giving the asked quantity, else the best one with a number
        numbers = [s for s in mine if states_figure(s.text)]
        gives = [s for s in numbers if gives_quantity(asks.quantity, s.text)]
        if not numbers or any(s.text in quoted for s in gives):
            return chosen
        best = max(gives or [s for s in numbers if s.text not in quoted] or numbers, key=lambda s: s.score)
    elif asks.results:
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


def with_top_asked(retrieval: Retrieval, chosen: list[ScoredSentence], candidates: list[ScoredSentence]
                   ) -> list[ScoredSentence]:
    """`chosen` (one paper's or several papers' sentences) plus the best-ranked quoted paper's sentence holding what
    the question asks (`Wording.asks`): for a figure the sentence giving it (`with_asked`), for a cause (ASKS_WHY)
    its best sentence with a causal phrase (CAUSE), for a remedy or mechanism (ASKS_REMEDY) its contribution
    sentence (PROPOSE); each unless a quoted sentence already holds it. "How fast does it render, and how long does
    building it take?" is about one paper even when the answer quotes three, and the best-ranked one is most often
    it."""
    if not chosen:
        return chosen
    asks = retrieval.wording.asks
    top = min(s.paper_index for s in chosen)
    mine = [s for s in chosen if s.paper_index == top]
    quoted = {s.text for s in chosen}
    added = []
    if asks.figure:
        added += [s for s in with_asked(retrieval, mine, candidates) if s.text not in quoted]
    if asks.why:
        added += _first_of(candidates, top, CAUSE, quoted)
    if asks.remedy:
        added += _first_of(candidates, top, PROPOSE, quoted)
    return chosen + added  # a sentence picked twice (a figure in the contribution) is quoted once: `explained` dedupes


def _first_of(candidates: list[ScoredSentence], paper_index: int, pattern: re.Pattern, quoted: set[str]
              ) -> list[ScoredSentence]:
    """The best-scoring sentence of a paper matching `pattern`, unless a quoted one does; else nothing."""
    if any(pattern.search(text) for text in quoted):
        return []
    mine = [s for s in candidates if s.paper_index == paper_index and pattern.search(s.text)]
    return [max(mine, key=lambda s: s.score)] if mine else []


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
    asks_results = retrieval.wording.asks.results
    for s in retrieval.sentences if candidates is None else candidates:
        own = bool(_OWN.search(s.text))
        opening = retrieval.hits[s.paper_index].paper.abstract.lstrip().startswith(s.text.strip()[:60])
        score = s.score + (OWN_WORK if own else -OPENING if opening else 0.0)
        if _RESULTS.search(s.text) and not PROPOSE.search(s.text) and not asks_results:
            score -= RESULTS
        out.append(ScoredSentence(s.text, score, s.paper_index))
    return sorted(out, key=lambda s: -s.score)


def states_figure(text: str) -> bool:
    """Whether a sentence states a figure (_FIGURE_NUMBER), its list item's number (_ENUMERATOR) aside."""
    return bool(_FIGURE_NUMBER.search(_ENUMERATOR.sub("", text)))
