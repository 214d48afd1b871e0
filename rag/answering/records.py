"""Records: the one result type of the project, an `Answer` with its numbered, cited `Source`s, and the stream
events (`Delta`, `Restart`) that come before it.

Every shell (CLI `--json`, web chat, evaluation) reads the same `Answer`. Sources are numbered by retrieval
rank, [1] being the best; `citations` are the sources the answer text actually cites, in order of first use.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from rag.query.filters import NOT_RECORDED, Filters
from rag.search.retrieve import Retrieval
from rag.store.index import StoredPaper
from rag.text import first_sentence


@dataclass
class Source:
    """A retrieved paper as shown next to an answer. `n` is its citation number."""

    n: int
    paper_id: str
    title: str  # the paper's title, or a readable label ("file.txt #3") when it has none
    authors: list[str]
    decision: str
    url: str
    text: str  # the whole abstract ("" for a title-only paper)
    snippet: str  # the sentence that best matches the question
    score: float  # fused retrieval score, 0..1
    venue: str = ""
    has_title: bool = True
    has_abstract: bool = True  # False: a title-only paper; `text` and `snippet` are empty
    enriched_from: str = ""  # where the title, ... came from when the file had only the abstract (rag.store.catalog)
    dense: float | None = None
    bm25: float | None = None


#: What became of a question (`Answer.outcome`): the papers answer it; none clearly does and the closest are cited
#: ("unsure"); nothing in the collection is close ("not_covered", the only outcome with `abstained` true).
Outcome = Literal["answered", "unsure", "not_covered"]
OUTCOMES: tuple[Outcome, ...] = ("answered", "unsure", "not_covered")


@dataclass
class Answer:
    question: str
    answer: str
    mode: str  # "extractive" or "llm"
    abstained: bool  # True only for outcome "not_covered" (kept for the shells and reports that read it)
    citations: list[Source]
    sources: list[Source]
    timings: dict[str, float] = field(default_factory=dict)  # milliseconds
    confidence: float = 0.0  # score of the best sentence of the top papers: what the abstention gate looks at
    retrieval_query: str = ""  # what was searched, when it differs from the question (follow-ups)
    # A Chinese question's own words that were searched (`retrieval_query` then holds their English terms from the
    # glossary, which may miss: the page shows these words, the English terms only on demand)
    searched_words: str = ""
    # What the LLM rewrote the question into for search, searched beside it (rag.generation.rewrite): model output, so
    # plain text wherever it is shown
    rewrite: str = ""
    notices: list[str] = field(default_factory=list)  # things the user should know (truncated input, ...)
    model: str = ""  # the LLM that wrote the answer (mode "llm")
    fallback_reason: str = ""  # why an LLM was configured but the answer is extractive
    llm_no_answer: bool = False  # the LLM read the papers and said they do not answer: the answer shown is unsure
    attributed: int = 0  # citations added to an LLM answer that cited nothing, where an abstract supports the sentence
    fabricated: int = 0  # citations the LLM made to source numbers it was not given (removed from the text)
    unsupported: list[str] = field(default_factory=list)  # cited sentences the cited abstracts barely support
    usage: dict[str, int | None] = field(default_factory=dict)  # prompt/completion tokens reported by the LLM
    answer_type: str = "explain"  # what kind of answer the question asked for (`rag.query.intent`)
    filters: Filters = NOT_RECORDED  # decisions / author applied, and which the question set ({} in `to_dict`: none)
    focus: list[str] = field(default_factory=list)  # a follow-up answered from these papers of the previous answer
    policy: str = ""  # short hash of the answer policy that answered (`Settings.policy_hash`)
    outcome: Outcome | None = None  # None at construction: derived from `abstained` (`conclude` sets both)
    # A topic's list or count: how many papers belong to it (the count, by decision: `extractive.members`);
    # `sources` are those papers, `citations` the ones the answer shows (all of them with `limit` 0). 0: not a list.
    listed: int = 0

    def __post_init__(self) -> None:
        if self.outcome is None:
            self.outcome = "not_covered" if self.abstained else "answered"

    def conclude(self, outcome: Outcome) -> None:
        """Set the outcome, and `abstained` with it (true only when the collection does not cover the question)."""
        self.outcome, self.abstained = outcome, outcome == "not_covered"

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["filters"] = self.filters.to_dict()
        return out

    @property
    def cited_ids(self) -> list[str]:
        """The ids of the cited papers: what a follow-up's history passes back (`paper_ids`)."""
        return [c.paper_id for c in self.citations]


@dataclass
class Delta:
    """A piece of answer text, streamed as it is written."""

    text: str


@dataclass
class Restart:
    """Discard the text streamed so far: what follows replaces it (the LLM failed mid-answer, or `failed` false:
    its answer is shown again as the app amended it, e.g. with citations added)."""

    reason: str
    failed: bool = True


def source_of(paper: StoredPaper, n: int, score: float = 1.0, snippet: str = "") -> Source:
    """A paper as the n-th source of an answer that was not retrieved by a question (related papers, topics)."""
    return Source(n=n, paper_id=paper.paper_id, title=paper.title or paper.label, authors=list(paper.authors),
                  decision=paper.decision, url=paper.url, text=paper.abstract,
                  snippet=snippet or first_sentence(paper.abstract), score=round(score, 4), venue=paper.venue,
                  has_title=bool(paper.title), has_abstract=paper.has_abstract, enriched_from=paper.enriched_from)


def sources_from(retrieval: Retrieval) -> list[Source]:
    out = []
    for n, hit in enumerate(retrieval.hits, start=1):
        p = hit.paper
        out.append(Source(n=n, paper_id=p.paper_id, title=p.label, authors=list(p.authors), decision=p.decision,
                          url=p.url, text=p.abstract, snippet=hit.snippet, score=round(hit.score, 4),
                          venue=p.venue, has_title=bool(p.title), has_abstract=p.has_abstract,
                          enriched_from=p.enriched_from,
                          dense=None if hit.dense is None else round(hit.dense, 4),
                          bm25=None if hit.bm25 is None else round(hit.bm25, 4)))
    return out
