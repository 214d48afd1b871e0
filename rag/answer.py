"""Answer: retrieved papers -> one `Answer` with numbered, cited `Source`s. The one result type of the project.

Every shell (CLI `--json`, web chat, evaluation) reads the same `Answer`. Sources are numbered by retrieval
rank, [1] being the best; `citations` are the sources the answer text actually cites, in order of first use.

Extractive mode (the default, used when no LLM is configured): from the top papers, take the sentences that
best match the question and write them out, each followed by its [n].

Abstention: when the best dense similarity between the question and any chunk is below
`Settings.abstain_threshold`, the collection most likely does not cover the question, so the answer says so,
lists the nearest papers and cites nothing.
Calibration: CALIBRATION-PENDING
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from rag.config import Settings
from rag.retrieve import HybridRetriever, Retrieval

MAX_PER_PAPER = 2  # sentences quoted from one paper in an extractive answer
ANSWER_PAPERS = 3  # papers an extractive answer may quote from
RELATIVE_FLOOR = 0.8  # a quoted sentence scores at least this share of the best sentence's score


@dataclass
class Source:
    """A retrieved paper as shown next to an answer. `n` is its citation number."""

    n: int
    paper_id: str
    title: str  # the paper's title, or a readable label ("file.txt #3") when it has none
    authors: list[str]
    decision: str
    url: str
    text: str  # the whole abstract
    snippet: str  # the sentence that best matches the question
    score: float  # fused retrieval score, 0..1
    venue: str = ""
    has_title: bool = True
    dense: float | None = None
    bm25: float | None = None


@dataclass
class Answer:
    question: str
    answer: str
    mode: str  # "extractive"
    abstained: bool
    citations: list[Source]
    sources: list[Source]
    timings: dict[str, float] = field(default_factory=dict)  # milliseconds
    retrieval_query: str = ""  # what was searched, when it differs from the question (follow-ups)
    notices: list[str] = field(default_factory=list)  # things the user should know (truncated input, ...)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def sources_from(retrieval: Retrieval) -> list[Source]:
    out = []
    for n, hit in enumerate(retrieval.hits, start=1):
        p = hit.paper
        out.append(Source(n=n, paper_id=p.paper_id, title=p.label, authors=list(p.authors), decision=p.decision,
                          url=p.url, text=p.abstract, snippet=hit.snippet, score=round(hit.score, 4),
                          venue=p.venue, has_title=bool(p.title),
                          dense=None if hit.dense is None else round(hit.dense, 4),
                          bm25=None if hit.bm25 is None else round(hit.bm25, 4)))
    return out


def should_abstain(retrieval: Retrieval, settings: Settings) -> bool:
    return not retrieval.hits or retrieval.best_dense < settings.abstain_threshold


def abstention_text(sources: list[Source]) -> str:
    text = "The collection does not appear to cover this question."
    if sources:
        nearest = "; ".join(f'"{s.title}"' for s in sources[:3])
        text += f" The nearest papers are: {nearest}."
    return text


def extractive(retrieval: Retrieval, retriever: HybridRetriever, settings: Settings) -> tuple[str, list[int]]:
    """Compose an answer from the best sentences of the top papers. Returns (text, cited numbers)."""
    papers = list(range(min(ANSWER_PAPERS, len(retrieval.hits))))
    ranked = retriever.score_sentences(retrieval, papers)
    if not ranked:
        return "", []
    floor = RELATIVE_FLOOR * ranked[0].score
    chosen = []
    per_paper: dict[int, int] = {}
    for sentence in ranked:
        if len(chosen) >= settings.max_answer_sentences or sentence.score < floor:
            break
        if per_paper.get(sentence.paper_index, 0) >= MAX_PER_PAPER:
            continue
        per_paper[sentence.paper_index] = per_paper.get(sentence.paper_index, 0) + 1
        chosen.append(sentence)
    # Group by paper in rank order, keeping each abstract's own sentence order, so the text reads naturally.
    order = {p: i for i, p in enumerate(dict.fromkeys(s.paper_index for s in chosen))}
    position = {s.text: i for i, s in enumerate(ranked)}
    chosen.sort(key=lambda s: (order[s.paper_index], _sentence_position(retrieval, s), position[s.text]))
    parts = [_cite(s.text, s.paper_index + 1) for s in chosen]
    cited = list(dict.fromkeys(s.paper_index + 1 for s in chosen))
    return " ".join(parts), cited


def _sentence_position(retrieval: Retrieval, sentence) -> int:
    return retrieval.hits[sentence.paper_index].paper.abstract.find(sentence.text)


def _cite(sentence: str, n: int) -> str:
    """'X does Y.' -> 'X does Y [n].' so the citation sits inside the sentence it supports."""
    sentence = sentence.rstrip()
    if sentence.endswith((".", "!", "?")):
        return f"{sentence[:-1]} [{n}]{sentence[-1]}"
    return f"{sentence} [{n}]"
