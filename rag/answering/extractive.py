"""Answer: retrieved papers -> one `Answer` with numbered, cited `Source`s. The one result type of the project.

Every shell (CLI `--json`, web chat, evaluation) reads the same `Answer`. Sources are numbered by retrieval
rank, [1] being the best; `citations` are the sources the answer text actually cites, in order of first use.

Extractive mode (the default, used when no LLM is configured) answers by question type (`rag.query.intent`): the
record's authors, decision or link; a list or a count of the papers that pass the relevance bar, the bar stated;
one line per paper for a comparison; otherwise the sentences of the top papers that best match the question,
each followed by its [n], each paper's title named once.

A title-only paper (`has_abstract` false: the bundled ICLR 2025 papers no source had an abstract for) is a source
like any other, listed with its title, authors and link, but its `text` and `snippet` are empty: no answer quotes
it, the confidence never comes from it (`rag.search.retrieve`), and the LLM is told it has no abstract
(`rag.generation.prompts`).

LLM mode (`Settings.llm_model` set): the sources go to the model numbered as here, its citations are checked
(`rag.generation.citations`: numbers it was not given are removed and counted as `fabricated`), each cited sentence is
checked against the abstracts it cites (`unsupported`), and "the sources do not contain an answer" maps to
`abstained`. If the endpoint fails, the answer falls back to extractive mode with a `fallback_reason`.

Abstention: the retrieval confidence is the score of the best sentence among the top papers (its cosine to the
question plus the term-overlap bonus of `rag.search.retrieve`). Below `Settings.abstain_threshold` the collection most
likely does not cover the question, so the answer says so, lists the nearest papers and cites nothing, unless
the question names something (a rare, name-like word such as "Scylla" or "BirdSet") that the top paper contains.
Calibration (`python eval/calibrate.py`, eval/questions/seeds_dev.jsonl over the 38 seed abstracts, named after
their ICLR 2025 papers by `rag.store.catalog`: 85 answerable questions, 16 near-miss questions no abstract answers),
with the stored late-chunked sentence vectors: at 0.47, 12/16 (0.75) unanswerable questions abstain and 3/85
(3.5%) answerable ones are refused; 0.45 refuses 1.2% but abstains on 0.62; 0.50 abstains on 0.81 but refuses
5.9%. (The value was chosen on an earlier seed set, 12 of whose 38 abstracts were not the user's: 0.69 at 4.7%
there.) Confirmed over the 2,114-paper corpus (65 answerable, 20 unanswerable corpus questions): 0.65 abstention
at 4.6% false refusals (the per-query sentence embeddings used before gave 0.45 at 3.1% there). The best chunk
cosine alone separated worse. The same kind of set chose the value, so treat these as dev numbers; re-run after
changing the embedder or chunking.

A second, learned gate (`rag.answering.abstain`) also refuses when a logistic regression over retrieval features (a
question term no paper contains, the share of the question's terms the top papers contain, BM25 and dense scores and
margins, a figure asked for that no sentence with a number supports) gives at least its fitted threshold. It is
fitted on questions generated from the papers (`make model`), not on the question sets; over the held-out sets
it raised abstention on 81 unanswerable questions from 0.51 to 0.72 at 1.6% false refusals on 63 answerable ones
(eval/README.md, `python eval/abstain_curve.py`). `RAG_ABSTAIN_MODEL_THRESHOLD` moves or disables it; it is
used over collections of 1,000+ papers only (fitted at that scale).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from rag.answering import abstain, explain as explain_order
from rag.config import Settings
from rag.store.index import StoredPaper
from rag.search.retrieve import Retrieval, ScoredSentence
from rag.text import first_sentence, is_boilerplate

if TYPE_CHECKING:
    from rag.explore.related import Related

MAX_PER_PAPER = 2  # sentences quoted from one paper in an extractive answer
RELATIVE_FLOOR = 0.8  # a quoted sentence scores at least this share of the best sentence's score
# An explain answer quotes one paper when the question names it (`Retrieval.named_match`) or when its best sentence
# leads the other papers' by LEAD (`leads`): up to ONE_PAPER_SENTENCES of it, each scoring at least ONE_PAPER_FLOOR
# of its best. Chosen on the dev sets' single-paper questions (seeds_dev and types_dev explain, 82, over the 2,114
# papers): answers citing only the gold paper 0.585 -> 0.780, answer facts 0.811 -> 0.854, 607 -> 661 characters
# (LEAD 0.03: 0.793 / 0.823; 0.08: 0.732 / 0.835; one paper always: 0.805 / 0.744; floor 0.6: facts 0.860 at 680
# characters; 4 sentences: 0.878 at 769 characters, too long for a short answer). Which of its sentences: its
# contribution sentence and the two after it when it has one (`rag.answering.explain.passage`), else the best by score.
LEAD = 0.05
ONE_PAPER_SENTENCES = 3
ONE_PAPER_FLOOR = 0.7


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


@dataclass
class Answer:
    question: str
    answer: str
    mode: str  # "extractive" or "llm"
    abstained: bool
    citations: list[Source]
    sources: list[Source]
    timings: dict[str, float] = field(default_factory=dict)  # milliseconds
    confidence: float = 0.0  # score of the best sentence of the top papers: what the abstention gate looks at
    retrieval_query: str = ""  # what was searched, when it differs from the question (follow-ups)
    notices: list[str] = field(default_factory=list)  # things the user should know (truncated input, ...)
    model: str = ""  # the LLM that wrote the answer (mode "llm")
    fallback_reason: str = ""  # why an LLM was configured but the answer is extractive
    fabricated: int = 0  # citations the LLM made to source numbers it was not given (removed from the text)
    unsupported: list[str] = field(default_factory=list)  # cited sentences the cited abstracts barely support
    usage: dict[str, int | None] = field(default_factory=dict)  # prompt/completion tokens reported by the LLM
    answer_type: str = "explain"  # what kind of answer the question asked for (`rag.query.intent`)
    filters: dict[str, Any] = field(default_factory=dict)  # decisions / author applied, and which the question set
    focus: list[str] = field(default_factory=list)  # a follow-up answered from these papers of the previous answer

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

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
    """Discard the text streamed so far: what follows replaces it (the LLM failed mid-answer)."""

    reason: str


# How models say "not in the sources" (the answer prompt asks for the first wording).
NO_ANSWER = re.compile(
    r"sources do not contain an answer|(?:sources|abstracts|papers) (?:do|does) not (?:contain|mention|cover|"
    r"address|discuss|say)|not (?:contained|mentioned|covered|addressed) in the (?:sources|abstracts)|"
    r"cannot be answered (?:from|with|using) the (?:sources|abstracts)", re.IGNORECASE)


def source_of(paper: StoredPaper, n: int, score: float = 1.0, snippet: str = "") -> Source:
    """A paper as the n-th source of an answer that was not retrieved by a question (related papers, topics)."""
    return Source(n=n, paper_id=paper.paper_id, title=paper.title or paper.label, authors=list(paper.authors),
                  decision=paper.decision, url=paper.url, text=paper.abstract,
                  snippet=snippet or first_sentence(paper.abstract), score=round(score, 4), venue=paper.venue,
                  has_title=bool(paper.title), has_abstract=paper.has_abstract, enriched_from=paper.enriched_from)


def related_answer(question: str, related: Related, notices: list[str], filters: dict[str, Any] | None = None
                   ) -> Answer:
    """ "Which papers are related to X?": X [1] and its nearest papers by whole-paper vector (`rag.explore.related`);
    "Which orals are related to X?": its nearest papers with that decision (`filters["decisions"]`)."""
    filters = filters or {"decisions": [], "author": None, "from_question": []}
    kind = " or ".join(_decision_kind(d) for d in filters["decisions"])  # "oral", "oral or spotlight"
    kinds = f"{kind} " if kind else ""
    sources = [source_of(related.paper, 1)] + [source_of(nb.paper, i, nb.score)
                                                for i, nb in enumerate(related.related, start=2)]
    lines = [f"The {kinds}papers nearest to “{sources[0].title}” [1] (by the similarity of their whole abstracts):"]
    lines += [f"{BULLET} {s.title} [{s.n}] (similarity {s.score:.2f})" for s in sources[1:]]
    if len(sources) == 1:
        lines = [f"No other {kinds}paper in the list is near “{sources[0].title}” [1]."]
    return Answer(question=question, answer="\n".join(lines), mode="extractive", abstained=False,
                  citations=list(sources), sources=sources, confidence=1.0, notices=notices, answer_type="related",
                  filters=filters)


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


def should_abstain(retrieval: Retrieval, settings: Settings) -> bool:
    if not retrieval.hits:
        return True
    if retrieval.confidence < settings.abstain_threshold and not retrieval.named_match:
        return True
    return abstain.refuses(retrieval, settings.abstain_model_threshold)  # the learned gate (rag/answering/abstain.py)


def abstention_text(sources: list[Source]) -> str:
    text = "The collection does not appear to cover this question."
    if sources:
        nearest = "; ".join(f'"{s.title}"' for s in sources[:3])
        text += f" The nearest papers are: {nearest}."
    return text


def extractive(retrieval: Retrieval, settings: Settings, sources: list[Source], answer_type: str = "explain",
               asked_decision: str = "", whole_list: bool = False, single_paper: bool = False,
               compared: list[int] | None = None, follow_up: bool = False) -> tuple[str, list[int]]:
    """The answer the records and abstracts give, by question type (`rag.query.intent`). Returns (text, cited numbers).

    - authors / decision / link: from the record of the top paper (the one the question names);
    - list / count / compare: one line per paper that passes the relevance bar (a sentence of its abstract
      scores at least `abstain_threshold` against the question, a title-only paper its title, and its text holds
      TOPIC_BAR of the question's topic), the bar stated;
      `whole_list` (a filter with no topic: "papers by X") lists every paper found; a comparison whose sides were
      found (`compared`: their hit indexes, `rag.answering.compare`) lists those papers;
    - explain: the best sentences of the top papers, grouped by paper in abstract order, each paper's title
      named once; only the top paper's when the question is about one paper (`single_paper`)."""
    if not retrieval.hits:
        return "", []
    if answer_type in RECORD_TYPES:
        return record_answer(answer_type, sources[0], asked_decision), [1]
    if answer_type in ("list", "count", "compare"):
        listed = listing(answer_type, retrieval, sources, settings, whole_list, compared)
        if listed[1]:
            return listed
        # The collection covers the question (the gate let it through) but no single paper passes the bar on its
        # own: quote the best sentences rather than refuse.
    return explain(retrieval, sources, settings, single_paper, follow_up)


RECORD_TYPES = ("authors", "decision", "link")
# A listed or counted paper also contains at least this share of the question's topic (`rag.search.topical`), relative
# to the best-covered paper near the question: "near" is not "about". Chosen on types_dev's counts and lists (0.5:
# cited papers on the gold lists 0.43 -> 0.60 for counts, no gold paper lost; 0.6 lost two of 41), a round "half
# of the topic" a user can be told.
TOPIC_BAR = 0.5
MAX_LISTED = 50  # papers a question can ask for, and a count checks at most (`rag.engine.MAX_K`)
# ... and its best sentence scores at least this share of the best paper's (and never below the abstention
# threshold). Chosen with TOPIC_BAR on types_dev's 12 counts and lists (citations on gold or judged-relevant
# papers / share of the gold named): 0.683 / 0.892 without it, 0.740 / 0.871 at 0.7, 0.838 / 0.768 at 0.8.
SENTENCE_SHARE = 0.7
BULLET = "•"


def record_answer(answer_type: str, source: Source, asked_decision: str = "") -> str:
    """Who wrote it, how it was accepted, where to read it: the record's own fields, cited."""
    title = f"“{source.title}” [{source.n}]"
    if answer_type == "authors":
        if not source.authors:
            return f"The list gives no authors for {title}."
        return (f"{title} is by {_names(source.authors)} (the list gives the authors in no particular "
                "order).")
    if answer_type == "link":
        return f"{title} is on OpenReview: {source.url}" if source.url else f"The list gives no link for {title}."
    kind = _decision_kind(source.decision)
    if not kind:
        return f"The list gives no decision for {title}."
    accepted = f"was accepted at ICLR 2025 as {'an' if kind == 'oral' else 'a'} {kind} ({source.decision})"
    if asked_decision:
        asked = _decision_kind(asked_decision)
        if asked == kind:
            return f"Yes: {title} {accepted}."
        return f"No: {title} {accepted}, not as {'an' if asked == 'oral' else 'a'} {asked}."
    return f"{title} {accepted}."


def _relevance(hit) -> float:
    return hit.snippet_score if hit.paper.has_abstract else (hit.dense or 0.0)


def _pool(retrieval: Retrieval) -> list:
    """The hits a list's bar is relative to: its own and, for a filtered list, those of the same search without
    filters (`Retrieval.reference`): the best paper near the question in the whole collection sets the bar, else
    "spotlights on X" would name the spotlights merely nearest to X."""
    return retrieval.hits + (retrieval.reference.hits if retrieval.reference is not None else [])


def sentence_bar(retrieval: Retrieval, settings: Settings) -> float:
    """The score a list's paper's best sentence (a title-only paper: its title) must reach: `abstain_threshold`,
    or SENTENCE_SHARE of the best paper's, whichever is higher."""
    best = max((_relevance(hit) for hit in _pool(retrieval)), default=0.0)
    return max(settings.abstain_threshold, SENTENCE_SHARE * best)


def passes_bar(retrieval: Retrieval, settings: Settings, whole_list: bool = False) -> list[int]:
    """The hits (indexes) a list or count names: those whose best sentence reaches `sentence_bar` and whose text
    holds at least TOPIC_BAR of the share of the question's topic that the best-covered of them holds (a long,
    descriptive question's words are never all in one abstract)."""
    if whole_list:
        return list(range(len(retrieval.hits)))
    cutoff = sentence_bar(retrieval, settings)
    near = [i for i, hit in enumerate(retrieval.hits) if _relevance(hit) >= cutoff]
    best = max((hit.topical for hit in _pool(retrieval) if _relevance(hit) >= cutoff), default=0.0)
    return [i for i in near if retrieval.hits[i].topical >= TOPIC_BAR * best]


def listing(answer_type: str, retrieval: Retrieval, sources: list[Source], settings: Settings,
            whole_list: bool = False, compared: list[int] | None = None) -> tuple[str, list[int]]:
    """One line per paper that passes the relevance bar: "• Title: its best sentence [n]." ("• Title [n]" for a
    count); for a comparison, the papers its sides name (`compared`) if found. Empty when none passes."""
    bar = sentence_bar(retrieval, settings)
    indexes = passes_bar(retrieval, settings, whole_list)
    passing = [sources[i] for i in indexes]
    checked = len(retrieval.hits)
    # Papers still passing among the last fifth of those checked, when as many were checked as asked for: the
    # list goes on beyond them, so a count is a lower bound.
    more = (not whole_list and checked >= retrieval.k and bool(indexes)
            and indexes[-1] >= checked - max(1, checked // 5))
    if answer_type == "compare":
        passing = [sources[i] for i in compared] if compared else passing[:3]
    if not passing:
        return "", []
    lines = []
    for s in passing:
        if answer_type == "count":
            lines.append(f"{BULLET} {s.title} [{s.n}]")
        elif s.has_abstract and s.snippet:
            lines.append(f"{BULLET} {s.title}: {_cite(s.snippet, s.n)}")
        else:
            lines.append(f"{BULLET} {s.title} [{s.n}] (title only: the list has no abstract for it)")
    n = len(passing)
    papers, each = ("paper", "it has") if n == 1 else ("papers", "each has")
    bar_text = (f"a sentence scoring at least {bar:.2f} against the question and {TOPIC_BAR:.0%} of the key terms "
                "the best match has")
    if whole_list:
        head = f"{n} {papers} found:"
    elif answer_type == "count":
        head = (f"{'At least ' if more else ''}{n} {papers} in the list {'matches' if n == 1 else 'match'} this "
                f"question ({each} {bar_text}; checked: the {checked} best-ranked papers):")
    elif answer_type == "compare":
        head = "Side by side, each paper's sentence closest to the question:"
    else:
        head = f"{n} {papers} {'matches' if n == 1 else 'match'} ({each} {bar_text}), with the sentence closest to it:"
    lines = [head] + lines
    if more and answer_type != "compare":
        lines.append(f"(Papers ranked near the {checked}th checked still pass the bar, so there are likely more: "
                     + ("ask about a narrower topic.)" if checked >= MAX_LISTED else "ask for more papers.)"))
    return "\n".join(lines), [s.n for s in passing]


def explain(retrieval: Retrieval, sources: list[Source], settings: Settings, single_paper: bool = False,
            follow_up: bool = False) -> tuple[str, list[int]]:
    """The best sentences of the top papers (at most MAX_PER_PAPER each, none below RELATIVE_FLOOR of the best),
    grouped by paper in rank order, in each abstract's own order, the paper's title named once; or, when one paper
    answers (the question names it, it clearly leads (LEAD), or only its sentences pass), its contribution
    sentence and the ones after it (`rag.answering.explain.passage`), unless the question is a `follow_up` about the
    previous answer's paper ("What data did they use?"): that asks for something specific, and the passage would
    restate what the first answer said."""
    ranked = retrieval.sentences  # the best sentences of the top papers, best first
    if not _ASKS_FOR_CODE.search(retrieval.question):  # "Code is available at ..." answers only a question for it
        ranked = [s for s in ranked if not is_boilerplate(s.text)] or ranked
    quotable = ranked
    if not ranked:
        return "", []
    one = None  # the paper the answer quotes alone, if any
    if retrieval.named_match:  # the question names it ("What is CURIE?"): the paper found to contain the name
        one = next((i for i, hit in enumerate(retrieval.hits) if hit.paper.has_abstract), None)
    elif single_paper or leads(ranked):
        one = ranked[0].paper_index
    single_paper = one is not None and any(s.paper_index == one for s in ranked)
    if single_paper:
        ranked = [s for s in ranked if s.paper_index == one]
    per_paper_limit = ONE_PAPER_SENTENCES if single_paper else MAX_PER_PAPER
    floor = (ONE_PAPER_FLOOR if single_paper else RELATIVE_FLOOR) * ranked[0].score
    chosen: list[ScoredSentence] = []
    per_paper: dict[int, int] = {}
    for sentence in ranked:
        if len(chosen) >= settings.max_answer_sentences or sentence.score < floor:
            break
        if per_paper.get(sentence.paper_index, 0) >= per_paper_limit:
            continue
        per_paper[sentence.paper_index] = per_paper.get(sentence.paper_index, 0) + 1
        chosen.append(sentence)
    # one paper: its contribution and what follows; several: each one's sentences that say what it did
    # (rag.answering.explain)
    one_paper = len({s.paper_index for s in chosen}) == 1 and not follow_up
    window = explain_order.passage(retrieval, chosen[0].paper_index, quotable) if one_paper else []
    chosen = window[:settings.max_answer_sentences] or explain_order.within_papers(retrieval, chosen, quotable)
    if one_paper:  # ... and the sentence holding the figure or result the question asks for, if not quoted yet
        chosen = explain_order.with_asked(retrieval, chosen, quotable)
    paragraphs = []
    for paper_index in dict.fromkeys(s.paper_index for s in chosen):
        mine = sorted((s for s in chosen if s.paper_index == paper_index),
                      key=lambda s: _sentence_position(retrieval, s))
        source = sources[paper_index]
        quoted = " ".join(_cite(s.text, paper_index + 1) for s in mine)
        paragraphs.append(f"{source.title}: {quoted}" if source.has_title else quoted)
    cited = list(dict.fromkeys(s.paper_index + 1 for s in chosen))
    return "\n\n".join(paragraphs), cited


_ASKS_FOR_CODE = re.compile(r"\b(?:code|github|repo|repository|implementation|website|project\s+page|link|url|"
                            r"download|released?|open[- ]source[ds]?|available)\b", re.IGNORECASE)


def leads(ranked: list[ScoredSentence]) -> bool:
    """Whether the paper of the best sentence answers alone: its best sentence beats every other paper's best by
    LEAD (the question is about that paper, so other papers' sentences would only dilute the answer)."""
    others = [s.score for s in ranked if s.paper_index != ranked[0].paper_index]
    return bool(ranked) and (not others or ranked[0].score - max(others) >= LEAD)


def _names(authors: list[str]) -> str:
    return authors[0] if len(authors) == 1 else ", ".join(authors[:-1]) + " and " + authors[-1]


def _decision_kind(decision: str) -> str:
    return next((k.lower() for k in ("Oral", "Spotlight", "Poster") if k.lower() in decision.lower()), "")


def _sentence_position(retrieval: Retrieval, sentence) -> int:
    return retrieval.hits[sentence.paper_index].paper.abstract.find(sentence.text)


def _cite(sentence: str, n: int) -> str:
    """'X does Y.' -> 'X does Y [n].' so the citation sits inside the sentence it supports."""
    sentence = sentence.rstrip()
    if sentence.endswith((".", "!", "?")):
        return f"{sentence[:-1]} [{n}]{sentence[-1]}"
    return f"{sentence} [{n}]"
