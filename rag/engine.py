"""Engine: the one library call behind every shell. `Engine(settings).ask(question)` -> `Answer`, and
`Engine.stream(...)`, which yields the text as it is written and then the same `Answer`.

It owns the wiring (settings -> embedder -> index -> retriever -> LLM or extractive answer), loads each piece
once and lazily, cleans the user's input, and turns follow-up questions into standalone ones for retrieval
(with the LLM when one is configured; llama-index's condense-plus-context chat engine does the same, but
would hide the fallback on endpoint faults that we need). History is passed in by the caller on every call:
the engine keeps no conversation state, so users never share memory. The CLI and the web app only parse input
and render what this yields.
"""

from __future__ import annotations

import contextlib
import html
import logging
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from collections.abc import Callable, Iterator, Sequence

from rag.errors import RagError, one_line, whole_number
from rag.config import LIMITS, Settings
from rag.text import ESCAPES, load_sentence_splitter, plain
from rag.store import lock, snapshot
from rag.store.catalog import enrich
from rag.store.embeddings import Embedder, make_embedder
from rag.store.index import IngestStats, PaperIndex, StoredPaper, open_client
from rag.store import mpnet
from rag.store.mpnet_vectors import PaperVectors
from rag.store.ingest import read_paths
from rag.generation import rewrite as rewriting
from rag.query import zh
from rag.query.filters import Filters
from rag.query.intent import Intent, parse
from rag.query import wording as question_wording
from rag.query.wording import Wording
from rag.search.retrieve import HybridRetriever, Retrieval, RetrievalParams, named_papers, names_at, title_names
from rag.explore.related import PaperNotFound, Related, explorer, find_paper
from rag.explore.topicmap import TopicMap, topic_map
from rag.generation import prompts, support
from rag.generation.llm import ChatClient, LLMError
from rag.answering import abstain
from rag.answering.collection import answer_topics, related_answer
from rag.answering.compose import compose, unbracket_quotes
from rag.answering.extractive import MAX_LISTED, RECORD_TYPES, decide, members, passes_bar, should_abstain
from rag.answering.records import OUTCOMES, Answer, Delta, Restart, Source, sources_from
from rag.answering.wording import PHRASES

log = logging.getLogger("rag")

# The input caps (rag/config.py `Limits`, with what chose each):
MAX_QUESTION_CHARS = LIMITS.question_chars
MAX_K = MAX_LISTED  # papers one question can ask for (a count checks this many)
MAX_HISTORY_TURNS = LIMITS.history_turns
MAX_AUTHOR_CHARS = LIMITS.author_chars
NAME_THE_PAPER = ("Which paper? Give its title, a distinctive part of it (such as CatVTON) or its OpenReview id, "
                  "e.g. “Which papers are related to CatVTON?”.")
MAX_FOCUS = 10  # papers of the previous answer a follow-up can be about
DECISIONS = ("Accept (Oral)", "Accept (Spotlight)", "Accept (Poster)")
# Control characters, and lone surrogates (a client can send "\ud800" in JSON; nothing downstream can encode it).
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")


class QuestionError(RagError, ValueError):
    """The question cannot be asked as given (empty, ...); the message is for the user."""


class NoIndexError(RagError, LookupError):
    """There is no index to answer from (none in the data dir, or an empty one); the message names `rag ingest`."""


class UploadError(RagError, ValueError):
    """An upload through the page cannot be added as given (too many papers); the message says how instead."""


# Markup pasted into a question ("<script>alert(1)</script> Which papers ...?"): HTML comments, tags of HTML's own
# elements (so "List<String>" and "accuracy<baseline and loss>0" are text), a closed script or style element with
# its content (an unclosed `<script>` loses only its tag), Markdown images and the target of Markdown links.
# Entities are decoded first (`&lt;script&gt;`). Every repetition is bounded and the question is cut to
# MAX_QUESTION_CHARS before this runs: an attacker's 4 MB of "<script " took minutes with an unbounded pattern
# and stalled the server.
_TAGS = ("a|abbr|audio|b|base|body|br|button|canvas|code|details|div|em|embed|font|form|frame|frameset|h[1-6]|head|"
         "html|i|iframe|img|input|label|li|link|marquee|math|meta|noscript|object|ol|option|p|picture|pre|s|script|"
         "select|slot|source|span|strong|style|sub|summary|sup|svg|table|td|template|textarea|th|title|tr|u|ul|"
         "video")
_ATTRS = r"""(?:[\s/](?:"[^"]{0,500}"|'[^']{0,500}'|[^'"<>]){0,500})?"""
_TARGET = r"\((?:[^()]|\([^()]{0,200}\)){0,500}\)"  # a Markdown link's "(url)", one level of parentheses inside
_MARKUP = re.compile(rf"<!--.{{0,{MAX_QUESTION_CHARS}}}?(?:-->|$)|"
                     rf"<(script|style)\b{_ATTRS}>.{{0,{MAX_QUESTION_CHARS}}}?</\1\s*>|"
                     rf"</?(?:{_TAGS}){_ATTRS}/?>|!\[[^\]]{{0,200}}\]{_TARGET}", re.IGNORECASE | re.DOTALL)
_MARKDOWN_LINK = re.compile(rf"\[([^\]]{{0,200}})\]{_TARGET}")


def clean_question(question: str) -> tuple[str, list[str]]:
    """Strip control characters, markup and outer space; cut overlong input. Returns (question, notices).
    Why the markup: a pasted `<img src=x onerror=...>` was searched as words and turned an answerable question
    into a refusal (it is never rendered: the page shows questions as text)."""
    notices = []
    # A terminal escape sequence goes whole ("\x1b[1mgraph neural networks\x1b[0m" was searched as "[1mgraph
    # neural networks [0m" and not covered), then any control character left.
    text = _CONTROL.sub(" ", ESCAPES.sub("", question or "")).strip()
    if len(text) > MAX_QUESTION_CHARS:
        notices.append(f"Your question was {len(text):,} characters long; only the first "
                       f"{MAX_QUESTION_CHARS:,} were used.")
        text = text[:MAX_QUESTION_CHARS]
    decoded = html.unescape(text) if "&" in text else text
    stripped = _MARKDOWN_LINK.sub(r"\1", _MARKUP.sub(" ", decoded))
    if stripped != decoded:
        text = re.sub(r"\s+([?.!,;:])", r"\1", " ".join(stripped.split()))
        notices.append("Markup in the question was left out of the search.")
        if not text:
            raise QuestionError("The question is empty once its markup is left out: type a question about the "
                                "papers.")
    if not text:
        raise QuestionError("The question is empty: type a question about the papers.")
    return text, notices


def check_limit(limit: Any) -> int | None:
    """How many of a list's papers to show, as a caller gave it: None (the policy's `list_shown`), or a whole
    number 0..1000 (0: all of them)."""
    if limit is None:
        return None
    if limit == 0 and not isinstance(limit, bool):
        return 0
    try:
        return whole_number(limit, 1000, "papers of a list to show; 0 shows them all", QuestionError)
    except QuestionError:
        raise QuestionError(f"limit must be a whole number of papers to show, 0 for all of them (e.g. 20), got "
                            f"{str(limit)[:40]!r}.") from None


def check_k(k: Any) -> int | None:
    """`k` as given by a caller (API JSON, CLI, slider): None for the default, else a whole number 1..MAX_K."""
    return None if k is None else whole_number(k, MAX_K, "papers to retrieve", QuestionError)


def check_decisions(decision: Any, known: set[str]) -> list[str]:
    """The decision filter as a list of decision values of the index. Accepts the values themselves in any case
    ("accept (oral)") and the short forms ("Oral", "spotlight"); anything else is an error listing the valid
    ones, never a filter that silently matches nothing."""
    if decision is None or decision == "":
        return []
    given = [decision] if isinstance(decision, str) else decision
    if not isinstance(given, (list, tuple)) or not all(isinstance(d, str) for d in given):
        raise QuestionError('decisions must be a list of decision names, e.g. ["Accept (Oral)"] or ["oral"].')
    by_name: dict[str, str] = {}
    for value in sorted(known | set(DECISIONS)):
        by_name[value.casefold()] = value
        short = re.fullmatch(r"[^(]*\((.+)\)", value)
        if short:
            by_name.setdefault(short.group(1).strip().casefold(), value)
    out = []
    for d in given:
        found = by_name.get(" ".join(d.split()).casefold())
        if found is None:
            raise QuestionError(f"unknown decision {d[:60]!r}; use one of: "
                                + ", ".join(sorted(known | set(DECISIONS))) + " (or Oral / Spotlight / Poster).")
        out.append(found)
    return list(dict.fromkeys(out))


def check_author(author: Any) -> str | None:
    if author is None:
        return None
    if not isinstance(author, str):
        raise QuestionError("author must be text (part of an author's name).")
    author = _CONTROL.sub(" ", author).strip()
    if len(author) > MAX_AUTHOR_CHARS:
        raise QuestionError(f"author is too long ({len(author):,} characters; at most {MAX_AUTHOR_CHARS}).")
    return author or None


def check_history(history: Any) -> list[dict[str, Any]]:
    """Earlier turns as [{"role": "user"|"assistant", "content": text}], cleaned like the question; the last
    MAX_HISTORY_TURNS are kept. A user turn is cut to MAX_QUESTION_CHARS like the question it was (a follow-up may
    be searched together with it: a 20,000-character one made that search take 6.5 s instead of 0.3 s), an
    assistant turn to 20,000. An assistant turn may list the papers its answer cited (`"paper_ids": [...]`),
    which lets a follow-up about "they" or "the paper" answer from those papers, and its outcome (`"outcome":
    "answered" | "unsure" | "not_covered"`): after an answer that found no paper, a follow-up has none to lean on."""
    if history is None or history == "":
        return []
    if not isinstance(history, list) or not all(
            isinstance(t, dict) and t.get("role") in ("user", "assistant", "system")
            and isinstance(t.get("content"), str) for t in history):
        raise QuestionError('history must be a list of {"role": "user" or "assistant", "content": "..."}.')
    out: list[dict[str, Any]] = []
    for t in history[-MAX_HISTORY_TURNS:]:
        if t["role"] == "system":
            continue
        cut = MAX_QUESTION_CHARS if t["role"] == "user" else 20_000
        turn: dict[str, Any] = {"role": t["role"], "content": _CONTROL.sub(" ", t["content"][:cut])}
        ids = t.get("paper_ids")
        if isinstance(ids, list) and all(isinstance(i, str) and len(i) <= 200 for i in ids):
            turn["paper_ids"] = ids[:MAX_FOCUS]
        if t.get("outcome") in OUTCOMES:
            turn["outcome"] = t["outcome"]
        out.append(turn)
    return out


# A follow-up is a short question; a paste this long (an abstract, a page of notes) is never read as one: after
# another question, a 20,000-character paste that says "it" and "they" of itself would be answered from that
# answer's papers.
FOLLOW_UP_CHARS = 400
# How an answer in a history without "outcome" (written by hand, or by a client that drops it) opens when it found
# no paper that answers: the app's own "Not covered:" and "Unsure:", in each language (rag.answering.wording).
_NO_ANSWER = tuple(phrase.split(sep)[0] + sep for key in ("not_covered",)
                   for phrase, sep in zip(PHRASES[key], (":", "："), strict=True))
_UNSURE = tuple(phrase.split(sep)[0] + sep for phrase, sep in zip(PHRASES["unsure"], (":", "："), strict=True))
NO_PAPER_BEFORE = ("The previous answer found no paper on its question, so this one was searched as a new "
                   "question.")


def answered(turn: dict[str, Any]) -> bool:
    """Whether an assistant turn of the history found papers a follow-up may lean on (outcome "answered" or
    "unsure"): its "outcome" when the client passed it (the page, `rag chat`, MCP), else whether its text opens as
    a not-covered answer does. A follow-up after "not covered" has no paper to lean on (issue 53: "How many
    volcanoes did they train on?" after "Not covered" on volcano forecasting was answered from an unrelated
    "N=200"). An unsure answer cites the closest papers, the right one first most of the time (a described paper is
    first 0.98 of the time on a blind set, issue 51), and the user's next turn is about what it showed: whether
    the turn leans on them is for the evidence to say (`Engine._standalone`), as after any answer."""
    outcome = turn.get("outcome")
    if outcome in OUTCOMES:
        return outcome != "not_covered"
    return not str(turn.get("content") or "").lstrip().startswith(_NO_ANSWER)


def unsure_before(history: list[dict[str, Any]]) -> bool:
    """Whether the last assistant turn was unsure (its "outcome", else its opening words): a follow-up leaning on
    the papers it quoted as the closest is at most unsure itself (`compose`'s `doubted`): a follow-up after an
    absent topic answered "unsure" must not be answered from those papers."""
    last = next((t for t in reversed(history) if t.get("role") == "assistant" and t.get("content")), None)
    if last is None:
        return False
    if last.get("outcome") in OUTCOMES:
        return bool(last["outcome"] == "unsure")
    return str(last.get("content") or "").lstrip().startswith(_UNSURE)


def previous_papers(question: str, history: list[dict[str, Any]] | None,
                    papers: Sequence[StoredPaper] = (), named: Sequence[str] = (),
                    names: dict[str, list[str]] | None = None) -> list[str]:
    """The papers a follow-up would be about, if it is one (whether it is, the evidence decides:
    `Engine._standalone`): those the previous answer cited (its turn's `paper_ids`), none when that answer found
    no paper that answers (`answered`) or the question is a paste longer than FOLLOW_UP_CHARS. A turn without
    `paper_ids` (history written by hand, or by another client) cites the `papers` whose whole title (three words
    or more) its text names (or the name before a title's colon, "CatVTON"), in the order it names them: every
    extractive answer names its papers' titles. "Which of them ...?" or "the third one" after an answer about one
    paper ("Who wrote the second one?") means the papers of the last answer that cited several: read from the last
    answer alone, "Which of them is an oral?" there would be answered for the second paper alone."""
    answers = [t for t in reversed(history or []) if t.get("role") == "assistant"][:MAX_HISTORY_TURNS]
    if not answers or len(question) > FOLLOW_UP_CHARS or not answered(answers[0]):
        return []
    place = question_wording.place_named(question)
    names = names if names is not None else title_names(list(papers)) if papers else {}
    ids = _turn_papers(answers[0], papers, names)
    # several to choose from: the last answer citing several
    if len(ids) < 2 and (place is not None or question_wording.refers_to_several(question)):
        ids = next((c for c in (_turn_papers(t, papers, names) for t in answers[1:] if answered(t)) if len(c) > 1),
                   ids)
    # A question that names a paper (`named`: by its coined title name, `rag.search.retrieve.named_papers`; or by
    # its whole title) is about that one: "Why does Drama use Mamba for its world model?" after an answer on another
    # paper searches for Drama (answered from the previous answer's paper, it was "not covered").
    named = list(dict.fromkeys([*named, *(_papers_named(question, papers, names) if papers else [])]))
    if named:
        return [pid for pid in named if pid in ids][:MAX_FOCUS]
    if place is not None:  # "What dataset did the second one use?"
        return [ids[place]] if -len(ids) <= place < len(ids) else []
    # "it", "they" (the authors, most often), "the paper", or no word for it ("What datasets were used?"): the paper
    # the previous answer was first about; "these papers", "which of them", "both": all it cited.
    return ids[:MAX_FOCUS] if question_wording.refers_to_several(question) else ids[:1]


def _turn_papers(turn: dict[str, Any], papers: Sequence[StoredPaper], names: dict[str, list[str]]) -> list[str]:
    """The papers an answer in the history cited: its `paper_ids`, else those its text names (`_papers_named`)."""
    ids = list(turn.get("paper_ids") or [])
    return ids or (_papers_named(str(turn.get("content") or ""), papers, names) if papers else [])


def _papers_named(text: str, papers: Sequence[StoredPaper], names: dict[str, list[str]]) -> list[str]:
    """The ids of the papers a text names, in the order it names them: by whole title (three words or more, case
    and punctuation ignored) or by the coined name before the title's colon ("CatVTON: Concatenation Is All You
    Need ..." -> "CatVTON", by the rule a question's names follow: `rag.search.retrieve.names_at`; `names` is
    `title_names(papers)`, the corpus's built once with its index)."""
    flat = f" {plain(text)} "  # titles are compared as plain words; a name's place in the text is moved there
    named = [(len(plain(text[:at])) + 1, pid) for at, pid in names_at(text, names)]
    for paper in papers:
        title = plain(paper.title)
        if title.count(" ") >= 2 and (at := flat.find(f" {title} ")) >= 0:
            named.append((at, paper.paper_id))
    ids: list[str] = []
    for _, pid in sorted(named):
        ids += [pid] if pid not in ids else []
    return ids


@dataclass
class Plan:
    """How one question will be searched and answered (`Engine._plan`)."""

    intent: Intent
    search: str  # the words searched
    focus: list[str]  # a follow-up's papers: those of the previous answer it refers to
    filters: Filters  # the decisions / author searched, and the kinds the question's words set
    fallback: str  # why the LLM's follow-up or search rewrite failed, if it did
    standalone: str = ""  # a follow-up rewritten to stand alone, asked of the LLM in its place
    rewrite: rewriting.Rewrite | None = None  # the LLM's rewrite for retrieval, once asked (rag.generation.rewrite)
    asked: str = ""  # what `search` translates, when it is Chinese (`Retrieval.asked`: the gate reads its form)
    nothing_before: bool = False  # the previous answer found no paper to lean on: searched as a new question
    # What the searched words ask for (`rag.query.wording`), read once here: every retrieval of the question carries
    # it (`Retrieval.wording`), and the gate and the answer read it instead of the words.
    wording: Wording = field(default_factory=Wording)


@dataclass
class Search:
    """What `Engine.search` found: the papers as numbered `Source`s, best first, and what was searched."""

    query: str  # the query as searched (control characters and markup left out, cut to MAX_QUESTION_CHARS)
    sources: list[Source]
    notices: list[str]  # what the user should know (the query was cut, markup left out)


def partial_caveat(answer: Answer) -> str:
    """What of an answer from a partly indexed collection may change once indexing ends: a refusal (the paper that
    answers may be among those not indexed yet), or an answer resting on a single paper (a better one may come);
    "" for an answer several papers agree on. (A Chinese question was once answered confidently from the wrong
    paper because its own was not indexed yet.)"""
    if answer.abstained:
        return " This refusal may change when indexing ends: the paper that answers may not be indexed yet."
    if len(answer.citations) == 1:
        return " It rests on one paper, which may change when indexing ends: a closer match may not be indexed yet."
    return ""


@dataclass
class Indexing:
    """Progress of an ingest running in the background (`Engine.index_in_background`), for the page to show."""

    running: bool = False
    total: int = 0  # papers the index will hold when done
    adding: int = 0  # papers of uploads ("Add papers", `Engine.ingest(upload=True)`) being stored right now
    summary: str = ""  # the finished ingest's summary line, or why it failed
    failed: bool = False
    seconds: float = 0.0  # how long it took, once done


REPORT_EVERY = 10.0  # seconds between the console's progress lines of a background ingest (`rag serve`)


class Engine:
    """Loads the embedder and index on first use; safe to share between threads for `ask`.

    `serving=True` marks the process that owns an embedded store (`rag serve`); any other process opening the same
    store is refused while it runs (`rag.store.lock`)."""

    def __init__(self, settings: Settings | None = None, serving: bool = False) -> None:
        self.settings = settings or Settings.load()
        self.serving = serving
        self.indexing = Indexing()
        self._ingest_lock = threading.Lock()  # one ingest at a time (background list, uploads)
        self._lock = threading.Lock()
        self._embedder: Embedder | None = None
        self._index: PaperIndex | None = None
        self._retriever: HybridRetriever | None = None
        self._paper_vectors: PaperVectors | None | bool = False  # False: not made yet (`_mpnet`)
        self._llm: ChatClient | None = None
        self.templates: dict[str, str] = {}
        self._generation: str | None = None  # the store's change mark the retriever's papers were loaded at
        self._checked = 0.0  # when that mark was last compared with the store's (monotonic seconds)
        self._owns_index = True  # False for `derive`'s engines: `close` leaves a shared index open
        self.beside = False  # a `rag serve` owns the embedded store: read-only, from the snapshot it shares

    def derive(self, **overrides: Any) -> Engine:
        """An engine with some settings changed that shares this one's loaded embedder, index and retriever
        (the store settings must stay the same)."""
        engine = Engine(Settings.model_validate({**dict(self.settings), **overrides}))
        engine._embedder, engine._index, engine._retriever = self._embedder, self._index, self._retriever
        engine.beside = self.beside
        engine._owns_index = engine._index is None  # a shared index is closed by the engine that opened it
        return engine

    @property
    def index(self) -> PaperIndex:
        with self._lock:
            if self._index is None:
                if not self.serving and lock.served(self.settings):
                    # Beside the `rag serve` that owns this embedded store: never open it; questions read the
                    # snapshot the server shares (`HybridRetriever.share`), anything else is refused.
                    self._embedder = make_embedder(self.settings)
                    self._index = PaperIndex(self.settings, self._embedder, lazy=True,
                                             refuse_open=lock.busy_message(self.settings, "open it"))
                    self.beside = True
                    return self._index
                if not self.serving and (mark := snapshot.read_mark(self.settings)) is not None:
                    # An embedded store at rest: a question reads it from the data dir (rag.store.snapshot),
                    # and chromadb is imported only if something else needs the store. Built with another
                    # embedder: opened now, which says so (ConfigError).
                    self._embedder = make_embedder(self.settings)
                    self._index = PaperIndex(self.settings, self._embedder,
                                             lazy=mark.embedder == self._embedder.identity)
                    return self._index
                # The model loads in a thread while chromadb is imported and the store opened: 0.3 s less
                # start-up on 2 cores. Errors of either side are raised here, as if loaded one after the other.
                with ThreadPoolExecutor(1) as pool:
                    loading = pool.submit(make_embedder, self.settings)
                    try:
                        client = open_client(self.settings)
                    finally:
                        embedder = loading.result()
                self._embedder = embedder
                self._index = PaperIndex(self.settings, embedder, client)
            return self._index

    @property
    def retriever(self) -> HybridRetriever:
        index = self.index
        with self._lock:
            if self._retriever is None:
                self._generation = self._store_generation(index)  # read first: a change meanwhile shows later
                self._checked = time.monotonic()
                self._retriever = HybridRetriever(index, snapshot=not self.serving, mpnet=self._mpnet(),
                                                  beside=self.beside)
            retriever = self._retriever
        self._check_store(index)
        return retriever

    def _mpnet(self) -> PaperVectors | None:
        """The whole-paper all-mpnet-base-v2 vectors of the third ranking, unless `mpnet_weight` is 0 (and the
        ranking is not asked for alone). The model files are checked here, once: without them (a wheel installed
        by pip, which does not carry the 438 MB of weights; a checkout before `make install`) hybrid search goes
        on with MiniLM and BM25 and says so once on stderr with the fix; `--retrieval mpnet` alone fails."""
        settings = self.settings
        if self._paper_vectors is False:
            if settings.mpnet_weight <= 0 and settings.retrieval != "mpnet":
                self._paper_vectors = None
                return None
            try:
                mpnet.check()
            except RagError as exc:
                if settings.retrieval == "mpnet":
                    raise
                log.warning("%s Until then, papers are ranked by MiniLM and BM25 only (RAG_MPNET_WEIGHT=0 says so "
                            "on purpose and silences this).", exc)
                self._paper_vectors = None
            else:
                # One BLAS thread: a question's one short text gains little from two, and on a shared 2-core
                # machine two threads waiting on each other took 0.1-3 s a question against 0.05-0.11 s for one
                # (same run, another process busy; eval/DECISIONS.md, "A second embedder").
                self._paper_vectors = PaperVectors(
                    settings.data_dir / "corpus" / f"{settings.collection}.mpnet.npz",
                    lambda: mpnet.load(threads=1), mpnet.IDENTITY)
        return self._paper_vectors if isinstance(self._paper_vectors, PaperVectors) else None

    def _check_store(self, index: PaperIndex) -> None:
        """On a Chroma server another process (a second `rag serve`, a `rag ingest`) may add papers at any time:
        at most every `store_check_seconds`, compare the store's change mark (`PaperIndex.generation`) with the
        one the papers were loaded at, and reload them when it moved. The embedded store has one owner
        (rag.store.lock)."""
        if not self.settings.chroma_url:
            return
        with self._lock:
            now = time.monotonic()
            if now - self._checked < self.settings.store_check_seconds:
                return
            self._checked = now
        generation = self._store_generation(index)
        if generation is not None and generation != self._generation:
            self._generation = generation
            self._refresh()

    def _store_generation(self, index: PaperIndex) -> str | None:
        if not self.settings.chroma_url:
            return None
        try:
            return index.generation()
        except RagError:  # the server is down: the question's own request says so in its one line
            return None

    def _mark_changed(self, index: PaperIndex) -> None:
        """Tell other processes on the same Chroma server that the papers changed (`_check_store`)."""
        if self.settings.chroma_url:
            self._generation = index.mark_changed()  # this process reloads its papers itself, right after

    def ingest(self, paths: Sequence[str | Path], progress: Callable[[int, int], None] | None = None,
               refresh_every: float | None = None, upload: bool = False) -> IngestStats:
        """Read files and directories into the store. Bad records are skipped and listed in `stats.problems`.
        With `refresh_every` (seconds), questions asked meanwhile search the papers stored so far, refreshed at
        most that often; otherwise they see the new papers when the ingest ends.

        `upload`: the files came from a web user ("Add papers"), who may add papers and update those of their own
        earlier uploads of the same file, never change a paper another file holds (a record with a bundled
        paper's id would replace its abstract, decision and link for every user); such records are skipped as
        problems. An upload of more than `upload_max_records` papers is refused (UploadError) before anything
        is embedded: that is work for `rag ingest`."""
        if not self.serving:  # a reader may answer beside a `rag serve`; a writer may not
            lock.check_free(self.settings, "add papers to it")
        with self._ingest_lock:
            read = read_paths(paths, max_papers=self.settings.upload_max_records if upload else None)
            if read.too_many_papers:
                raise UploadError(
                    f"this upload holds more than {self.settings.upload_max_records:,} papers; the page adds at most "
                    f"{self.settings.upload_max_records:,} at a time (embedding them keeps the server busy for "
                    "everyone). Upload it in smaller files, or add it with `rag ingest FILE` where the server runs.")
            read.papers, enriched = enrich(read.papers)  # untitled abstracts named after bundled ICLR 2025 papers
            if upload:
                self._keep_others_papers(read, paths)
            last = time.monotonic()

            def step(done: int, todo: int) -> None:
                nonlocal last
                if progress:
                    progress(done, todo)
                if refresh_every is not None and done and time.monotonic() - last >= refresh_every:
                    self._mark_changed(index)
                    self._refresh()
                    last = time.monotonic()

            index = self.index  # opened first: a store another process serves is refused with that message
            with lock.writing(self.settings), self._adding(len(read.papers) if upload else 0):
                stats = index.upsert(read.papers, files=read.files, progress=step)
                if (stats.added or stats.updated) and (vectors := self._mpnet()) is not None:
                    # The papers no shipped file holds get their mpnet vector now, as part of the ingest (about
                    # 0.5 s a paper), not at the first question after it: the corpus then reads the cache.
                    vectors.papers(read.papers, prune=False)
                stats.problems = read.report()  # the first problems named, the rest counted by kind
                stats.problem_count, stats.skipped = read.problem_count, read.skipped
                stats.enriched = enriched
                if stats.added or stats.updated or stats.removed:
                    self._mark_changed(index)  # other processes on the same Chroma server refresh
                self._refresh()
                return stats

    @contextlib.contextmanager
    def _adding(self, papers: int) -> Iterator[None]:
        """Count an upload's papers in `indexing.adding` while they are stored, so that a question asked meanwhile
        says it searched without them (`stream`). The write lock above is the one another process is writing
        with, so one ingest waits for the other."""
        self.indexing.adding += papers
        try:
            yield
        finally:
            self.indexing.adding -= papers

    def _keep_others_papers(self, read: Any, paths: Sequence[str | Path]) -> None:
        """Drop from an upload's `read` every paper that would change a stored paper held by a file that is not
        one of this upload's files or an earlier upload of the same file (same name, in the same uploads
        folder: Gradio keeps each upload as `<uploads>/<hash of its content>/<name>`); each is a problem."""
        from rag.store.ingest import Problem

        mine = [Path(p).resolve() for p in paths]

        def own(holder: str) -> bool:
            path = Path(holder)
            return any(path == m or (path.name == m.name and path.parent.parent == m.parent.parent) for m in mine)

        stored = self.index.holders([p.paper_id for p in read.papers])
        kept, refused = [], set()
        for paper in read.papers:
            found = stored.get(paper.paper_id)
            if found is not None and found[0] != paper.content_hash and not (found[1] and all(map(own, found[1]))):
                read.add_problem(Problem(paper.source, paper.line or None,
                                         f"id {paper.paper_id!r} is already in the index from another file; "
                                         "kept that paper (give this record an id of its own to add it)"))
                refused.add(paper.source)
            else:
                kept.append(paper)
        read.papers = kept
        read.files = [f for f in read.files if f not in refused]  # a file with a skipped record is not mirrored

    def _refresh(self) -> None:
        with self._lock:
            retriever = self._retriever
        if retriever is not None:
            retriever.refresh()

    def index_in_background(self, paths: list[str | Path], refresh_every: float = 15.0,
                            report: Callable[[str], None] | None = None,
                            report_every: float = REPORT_EVERY, first: Sequence[str | Path] = ()
                            ) -> threading.Thread:
        """Ingest `paths` in a thread while questions are answered (`rag serve` and the bundled list). Progress
        is in `self.indexing`; answers given meanwhile say how many papers they searched. `report` (the console
        of `rag serve`) gets a progress line at most every `report_every` seconds and a last line when it is done
        ("Indexed 3,706 papers in 52 s: added ..."), so whoever started it knows when the whole list is searchable.
        Stopping the process loses at most the papers being embedded and written (`WRITE_BATCH` and the batch
        after it): a restart skips every paper already stored.

        `first` (`rag serve --seed`, make run's seeds/) is ingested before `paths` when the index holds no papers,
        as `rag ingest --if-empty` before the server did, but in this process: the page is served at once and the
        embedder and store load once, not in a second process first (27 s of a first `make run` at load 7-16).
        Its summary and problems go to `report` as `rag ingest` printed them."""
        load_sentence_splitter()  # on this thread, before the worker (rag.text: nltk's import is not thread-safe)
        self.indexing = state = Indexing(running=True)
        started = time.monotonic()
        last_report = started

        def progress(done: int, todo: int) -> None:
            nonlocal last_report
            if done == 0:
                state.total = self.index.expected  # papers stored, plus the new ones to come
            now = time.monotonic()
            if report is not None and todo and now - last_report >= report_every:
                last_report = now
                stored = state.total - todo + done
                report(f"Indexing: {stored:,} of {state.total:,} papers stored ({done:,} of {todo:,} new), "
                       f"{now - started:.0f} s so far.")

        def run() -> None:
            try:
                self.share_quietly()  # first the store as it is, for readers beside the server while this runs
                seeded = None
                if first and self.is_empty():
                    seeded = self.ingest(first, progress=progress, refresh_every=refresh_every)
                    if report is not None:
                        for problem in seeded.problems:
                            report(f"skipped {problem}")
                        report(f"Ingested {', '.join(str(p) for p in first)}: {seeded.summary()}")
                stats = (self.ingest(paths, progress=progress, refresh_every=refresh_every)
                         if paths or seeded is None else seeded)
                problems = f"; {stats.problem_count:,} problem(s)" if stats.problem_count else ""
                state.summary = stats.summary() + problems
            except Exception as exc:  # shown on the page; the papers stored so far stay searchable
                state.failed, state.summary = True, f"indexing stopped: {exc}"
            finally:
                state.total = self.index.count() if not state.failed else state.total
                state.seconds = time.monotonic() - started
                state.running = False
            if report is not None and state.failed:
                report(f"Indexing stopped after {state.seconds:.0f} s: "
                       f"{state.summary.removeprefix('indexing stopped: ')}")
            elif report is not None:
                report(f"Indexed {state.total:,} papers in {state.seconds:.0f} s: {state.summary}.")
            self.share_quietly()  # after "Indexed": about 9 s on the bundled list at load 10

        thread = threading.Thread(target=run, name="background-ingest", daemon=True)
        thread.start()
        return thread

    def close(self) -> None:
        """Release what the engine holds open: the store's Chroma client (SQLite connections, segment files) and
        the LLM client's connections. A running ingest is waited for first. An engine used after `close` reopens
        them. An engine made by `derive` closes only its own LLM client: the index it shares stays open. A process
        that ends (the CLI, `rag serve`) needs no call; one that builds many engines (tests, a notebook) does, or
        it keeps every store's files open until it exits (chromadb caches one system per path)."""
        with self._ingest_lock, self._lock:
            index, llm, self._llm = self._index, self._llm, None
        if index is not None and self._owns_index:
            index.close()
        if llm is not None:
            llm.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def llm(self) -> ChatClient | None:
        """The chat client when an LLM is configured (`llm_model`), else None (extractive answers)."""
        if not self.settings.llm_enabled:
            return None
        with self._lock:
            if self._llm is None:
                self.templates = prompts.load(self.settings)
                self._llm = ChatClient(self.settings)
            return self._llm

    def ask(self, question: str, history: list[dict[str, Any]] | None = None, k: int | None = None,
            decision: str | list[str] | None = None, author: str | None = None,
            question_filters: Sequence[str] = ("decisions", "author"), limit: int | None = None) -> Answer:
        """Answer a question from the indexed abstracts, with citations. Raises QuestionError on empty input.
        `decision` (one or several) and `author` (a substring of an author's name) restrict the papers; when they
        are not given, the question's own words may set them ("orals on X", "papers by Y"), for the kinds listed
        in `question_filters` (the page's chips ask again with one left out). `limit`: how many papers of a list or
        count the answer shows (None: `AnswerPolicy.list_shown`; 0: all of them)."""
        for event in self.stream(question, history, k, decision, author, question_filters, limit):
            if isinstance(event, Answer):
                return event
        raise AssertionError("stream() ends with an Answer")

    def stream(self, question: str, history: list[dict[str, Any]] | None = None, k: int | None = None,
               decision: str | list[str] | None = None, author: str | None = None,
               question_filters: Sequence[str] = ("decisions", "author"), limit: int | None = None
               ) -> Iterator[Delta | Restart | Answer]:
        """Like `ask`, but yields the answer text as it is written (`Delta`), a `Restart` if the LLM fails
        mid-answer and an extractive answer replaces it, and last the complete `Answer`."""
        started = time.perf_counter()
        if not isinstance(question, str):
            raise QuestionError("the question must be text.")
        question, notices = clean_question(question)
        k, author, history = check_k(k), check_author(author), check_history(history)
        limit = check_limit(limit)
        llm, retriever = self.llm, self.retriever
        decisions = check_decisions(decision, set(retriever.state.decisions.tolist()) - {""})
        plan = self._plan(question, history, llm, decisions, author, question_filters)
        intent, search, focus, filters = plan.intent, plan.search, plan.focus, plan.filters
        if answered := self._without_search(question, intent, focus, k, filters, notices, started):
            answered[-1].policy = self.settings.policy_hash  # type: ignore[union-attr]  # ends with the Answer
            yield from answered
            return
        k = len(focus) if focus else k or self.settings.k
        deep = intent.type in ("list", "count") and intent.has_topic and not focus
        requested = k
        if deep:  # a topic's list or count: decided paper by paper over a deep pool (`_members_first`)
            k = self.settings.policy.list_pool
        elif intent.type == "count" or not intent.has_topic:  # "papers by X": as many as can be shown
            k = max(k, min(MAX_K, self.settings.candidates))
        loaded = time.perf_counter()
        retrieval, lead, filters = self._retrieve(intent, search, k, filters, focus, asked=plan.asked,
                                                  wording=plan.wording)
        if llm is not None and self._rewrites(plan) and intent.has_topic and rewriting.needed(
                retrieval.named_match, abstain.probability(retrieval) if abstain.applies(retrieval) else None,
                self.settings.policy.rewrite_confident_below):
            plan.rewrite = rewriting.ask(llm, self.templates, question)
            plan.fallback = plan.rewrite.fallback
        if plan.rewrite is not None and plan.rewrite.search:  # searched beside the question, fused
            retrieval, lead, filters = self._retrieve(intent, search, k, plan.filters, focus,
                                                      retrieval.query_vector, plan.rewrite.search, plan.asked,
                                                      plan.wording)
        if deep:
            retrieval = self._members_first(retrieval, requested)
        retrieved = time.perf_counter()
        partial = None  # where the notice of a partial index is, to say after answering what may change
        if retriever.stale:
            notices.append(f"A running `rag serve` is changing this index: searched the "
                           f"{len(retriever.state.papers):,} papers of the last snapshot it shared.")
        if self.indexing.running and self.indexing.total:
            partial = len(notices)
            notices.append(f"Searched the {len(retriever.state.papers):,} papers indexed so far; indexing of "
                           f"{self.indexing.total:,} is still under way.")
        elif adding := self.indexing.adding:
            partial = len(notices)
            notices.append(f"{adding:,} added {'paper is' if adding == 1 else 'papers are'} still being stored; "
                           f"this searched the {len(retriever.state.papers):,} already in. Ask again when "
                           "Add papers says they are in.")
        answer = Answer(question=question, answer="", mode="extractive", abstained=True, citations=[],
                        sources=sources_from(retrieval), confidence=round(retrieval.confidence, 4),
                        retrieval_query=search if search != question else "", searched_words=plan.asked,
                        notices=notices,
                        fallback_reason=plan.fallback, answer_type=intent.type, filters=filters, focus=focus,
                        rewrite=plan.rewrite.search if plan.rewrite else "",
                        timings={"load_ms": _ms(started, loaded), "retrieve_ms": _ms(loaded, retrieved)})
        if plan.rewrite is not None and plan.rewrite.called:
            answer.timings["rewrite_ms"] = plan.rewrite.ms  # inside retrieve_ms (or before it, for a follow-up)
        said = next((t["content"] for t in reversed(history) if t["role"] == "assistant"), "") if focus else ""
        yield from [Delta(lead + "\n")] if lead else []
        answer.listed = retrieval.members or 0
        yield from unbracket_quotes(compose(answer, retrieval, self.settings, llm, self.templates, self.checker,
                                            started, intent, said, plan.standalone, limit,
                                            doubted=bool(focus) and unsure_before(history)), answer)
        answer.answer = f"{lead}\n{answer.answer}" if lead else answer.answer
        if partial is not None:
            notices[partial] += partial_caveat(answer)
        if plan.nothing_before and answer.outcome != "answered":  # "How many volcanoes did they train on?"
            notices.append(NO_PAPER_BEFORE)
        if retrieval.unknown_names and not focus:  # "How does ZephyrineNet work?"
            names = ", ".join(f"“{name}”" for name in retrieval.unknown_names[:3])
            notices.append(f"No paper in the list mentions {names}"
                           + ("." if answer.abstained else ": the answer is from the nearest papers."))
        done = time.perf_counter()
        answer.timings.update(answer_ms=_ms(retrieved, done), total_ms=_ms(started, done))
        answer.policy = self.settings.policy_hash
        yield answer

    def _retrieve(self, intent: Intent, search: str, k: int, filters: Filters, focus: list[str],
                  vector: Any = None, rewrite: str = "", asked: str = "", wording: Wording | None = None
                  ) -> tuple[Retrieval, str, Filters]:
        """The retrieval to answer from, a sentence to lead the answer with ("" mostly), and the filters it applied.

        A list or count with a decision or author filter is also searched without filters (`Retrieval.reference`):
        its bar (`rag.answering.extractive.passes_bar`) is relative to the best paper of the whole collection, so
        "spotlights on X" names no spotlight that is merely the nearest to X. "How many orals are on X?" when no paper
        with the decision its words ask for passes that bar: the answer says none does, then lists the papers on X with
        any decision, as the filters returned record (`widened`); a refusal would tell the user the collection has
        nothing on X.
        A filter set in the panel or by a flag is the user's explicit choice and stands.
        `vector`: the search's embedding, when a first retrieval made it; `rewrite`: the LLM's rewrite of the question
        for search (`rag.generation.rewrite`), fused with it in every search; `asked`: the Chinese text `search`
        translates (`Retrieval.asked`); `wording`: what `search` asks for (`Plan.wording`), set on every retrieval."""
        params = RetrievalParams.from_settings(self.settings, k=k, decisions=filters.decisions,
                                               author=filters.author, paper_ids=tuple(focus))
        if k > params.candidates:  # a deep pool (a topic's list): each retriever proposes as many
            params = replace(params, candidates=k)

        def retrieve(params: RetrievalParams, vector: Any) -> Retrieval:
            found = self.retriever.retrieve(search, params, vector, rewrite)
            found.asked = asked
            found.wording = question_wording.read(search, asked) if wording is None else wording
            return found

        retrieval = retrieve(params, vector)
        if (intent.type not in ("count", "list") or not intent.has_topic or focus
                or not (params.decisions or params.author)):
            return retrieval, "", filters
        vector = retrieval.query_vector  # the question embedded once, for all three searches
        retrieval.reference = everything = retrieve(replace(params, decisions=(), author=None), vector)
        if "decisions" not in filters.from_question or (
                not should_abstain(retrieval, self.settings) and passes_bar(retrieval, self.settings)):
            return retrieval, "", filters
        wider = retrieve(replace(params, decisions=()), vector) if params.author else everything
        wider.reference = everything
        if should_abstain(wider, self.settings) or not passes_bar(wider, self.settings):
            return retrieval, "", filters
        kinds = " or ".join(d.removeprefix("Accept (").rstrip(")").lower() for d in params.decisions)
        return (wider, f"No {kinds} paper in the list matches this question. With any decision:",
                replace(filters, widened=("decisions",)))

    def _members_first(self, retrieval: Retrieval, k: int) -> Retrieval:
        """A topic's list or count: its hits cut to the papers about the topic (`rag.answering.extractive.members`),
        in rank order, re-scored as hits of their own (the sentences quoted, the confidence); `members` says how
        many. When none belongs, or the gate finds the collection does not cover the topic, the nearest `k` papers
        instead (the answer then quotes the best sentences, or names them as the nearest)."""
        chosen = members(retrieval, self.settings)
        outcome = decide(retrieval, self.settings)
        if not chosen or outcome == "not_covered":  # the nearest `k` papers, as for any question not covered
            if len(retrieval.hits) > k:
                retrieval.hits, retrieval.k = retrieval.hits[:k], k
                self.retriever.annotate(retrieval, self.retriever.state, self.settings.policy)
            return retrieval
        pool = len(retrieval.hits)
        retrieval.hits = [retrieval.hits[i] for i in chosen]
        retrieval.k = len(chosen)
        self.retriever.annotate(retrieval, self.retriever.state, self.settings.policy)
        retrieval.members, retrieval.pool, retrieval.decided = len(chosen), pool, outcome
        # papers still belonging in the pool's last tenth: the list likely goes on beyond it
        retrieval.pool_full = pool >= self.settings.policy.list_pool and chosen[-1] >= pool - max(1, pool // 10)
        return retrieval

    def _without_search(self, question: str, intent: Intent, focus: list[str], k: int | None,
                        filters: Filters, notices: list[str], started: float) -> list[Delta | Answer]:
        """The answer to a question the collection's structure answers, not a search: which topics have the most
        orals (the topic clusters, `rag.explore.topicmap`), which papers are related to X (X's nearest papers,
        `rag.explore.related`). [] for any other question ("related to X" when X is a topic, not a paper, is a list:
        "papers related to diffusion models")."""
        if intent.type == "topics":
            return list(self._topics(question, intent, notices, started))
        if intent.type == "related":  # X names a paper (`_names_paper`): else the intent is a list
            return self._related(question, focus[0] if focus else intent.query, k, filters, notices, started)
        return []

    def _related(self, question: str, name: str, k: int | None, filters: Filters, notices: list[str],
                 started: float) -> list[Delta | Answer]:
        """ "Which papers are related to X?" when X names one paper (its id, a name written with a capital or a
        digit such as CatVTON or Time-MoE, or half its title): X and its nearest papers. Otherwise [] and the
        question is searched as a list ("papers related to diffusion models" is a topic, not a paper)."""
        if not name or question_wording.is_pronoun(name):  # "related to ?", or "to it" with no answer before it
            answer = Answer(question=question, answer=NAME_THE_PAPER, mode="extractive", abstained=True,
                            citations=[], sources=[], notices=notices, answer_type="related",
                            timings={"total_ms": _ms(started, time.perf_counter())})
            return [Delta(answer.answer), answer]
        paper = self._named_paper(name)
        if paper is None:
            return []
        answer = related_answer(question, self.related(paper.paper_id, k, filters.decisions), notices, filters)
        answer.timings = {"total_ms": _ms(started, time.perf_counter())}
        return [Delta(answer.answer), answer]

    def _named_paper(self, name: str) -> StoredPaper | None:
        """The one paper `name` names in "related to X": its id, a name written with a capital or a digit, or half
        its title; None when X is a topic ("diffusion models")."""
        try:
            paper = find_paper(self.retriever.state.papers, name)
        except PaperNotFound:
            return None
        title = set(plain(paper.title or paper.label).split())
        if not (paper.paper_id == name or question_wording.written_as_name(name)
                or len(set(plain(name).split()) & title) >= len(title) / 2):
            return None
        return paper

    def _names_paper(self, name: str) -> bool:
        """Whether "related to `name`" is answered by `_related` (a paper, or a request to name one)."""
        return not name or question_wording.is_pronoun(name) or self._named_paper(name) is not None

    def _topics(self, question: str, intent: Intent, notices: list[str], started: float
                ) -> Iterator[Delta | Answer]:
        """A question about the collection's topics, answered from its clusters, not by a search."""
        answer = answer_topics(question, intent, self.topics(), self.retriever.state.papers, notices)
        answer.timings = {"total_ms": _ms(started, time.perf_counter())}
        yield Delta(answer.answer)
        yield answer

    def _plan(self, question: str, history: list[dict[str, Any]], llm: ChatClient | None, decisions: list[str],
              author: str | None, question_filters: Sequence[str]) -> Plan:
        """What to search for a question and how to answer it: its type and the filters its words set
        (`rag.query.intent`; the caller's filters win), the follow-up's standalone query or focus papers, and a
        Chinese question's English terms (`rag.query.zh`)."""
        query, focus, fallback, rewrite, nothing_before = self._standalone(question, history, llm)
        intent = parse(question, self._known_author, question_filters,
                       names_paper=lambda name: self._names_paper(focus[0] if focus else name))
        search = intent.query if query == question else parse(query, self._known_author).query
        asked = search if zh.has_chinese(search) else ""
        search = zh.retrieval_query(search)  # a Chinese question is searched by its English terms (rag.query.zh)
        given = (("decisions", decisions, intent.decisions), ("author", author, intent.author))
        filters = Filters(tuple(decisions) or tuple(intent.decisions), author or intent.author,
                          tuple(name for name, mine, theirs in given if theirs and not mine))
        return Plan(intent, search, focus, filters, fallback, query if query != question else "", rewrite, asked,
                    nothing_before, question_wording.read(search, asked, intent.asks))

    def _rewrites(self, plan: Plan) -> bool:
        """Whether a question is rewritten for retrieval by the LLM (`rag.generation.rewrite`): with `llm_rewrite` on,
        unless it is a follow-up about the previous answer's papers (searched among them alone), or the follow-up
        rewrite already asked for it (or failed). (`stream` also skips a question without a topic, "papers by X",
        which lists what the filter lets through, and one whose named paper the first search found.)"""
        return self.settings.llm_rewrite and not plan.focus and not plan.fallback and plan.rewrite is None

    @property
    def checker(self) -> support.Checker:
        """The support check of LLM answers, bound to this engine's embedder and settings."""
        return support.Checker(self.index.embedder, self.settings.support_threshold,
                               self.settings.support_max_sentences)

    def _standalone(self, question: str, history: list[dict[str, Any]] | None, llm: ChatClient | None
                    ) -> tuple[str, list[str], str, rewriting.Rewrite | None, bool]:
        """(query to retrieve with, papers of the previous answer it is about, fallback reason, the LLM's rewrite for
        search if it was asked here, whether the previous answer found no paper to lean on).

        Whether a turn leans on the conversation is decided by the evidence, not by its words (issue 53: "the heads"
        and "that size" lean without a pronoun, "Which one was it?" ending a new question does not): the turn is
        searched as it stands (`_alone`), and it is a follow-up about the previous answer's papers
        (`previous_papers`) unless its own search answers it (`decide`: the gate's outcome) from a paper those
        papers match clearly worse (`AnswerPolicy.follow_up_share`). A turn after an answer that found no paper
        (not covered) has none to lean on and is a new question. A turn after an answer whose papers are not
        known (a history without `paper_ids` whose text names no title) that its own search does not answer is read
        once more: with an LLM as the LLM rewrites it with the conversation (the same
        call also rewrites it for search, `rag.generation.rewrite`, with `llm_rewrite` on; on a CPU server a call
        costs seconds, so a turn its own search answers is not sent); without one, or when the call fails, glued to
        the previous question ("And for video?"), kept only if that reading's papers answer."""
        turns = [t for t in history or [] if t.get("role") in ("user", "assistant") and t.get("content")]
        last = next((t for t in reversed(turns) if t["role"] == "assistant"), None)
        if last is None:
            return question, [], "", None, False
        if not answered(last):
            return question, [], "", None, True
        state = self.retriever.state
        named = named_papers(question, state.names)
        focus = previous_papers(question, turns, state.papers, named, state.names)  # the corpus's names, built once
        if named and not focus:  # it names a paper the previous answer did not cite: it stands alone
            return question, [], "", None, False
        alone = self._alone(question)
        if focus:  # a follow-up, or a new question searched as it stands (read with the conversation, it is not)
            record = parse(question, self._known_author).type in RECORD_TYPES  # "Who wrote it?"
            return question, focus if self._leans(alone, focus, record) else [], "", None, False
        if len(question) > FOLLOW_UP_CHARS or (alone is not None and decide(alone, self.settings) == "answered"):
            return question, [], "", None, False
        fallback, rewrite = "", None
        if llm is not None:
            rewritten = self._rewritten(question, turns, llm)
            if not rewritten[2]:
                return rewritten
            fallback, rewrite = rewritten[2], rewritten[3]  # the call failed: read as without an LLM, with why
        asked = next((t["content"] for t in reversed(turns) if t["role"] == "user"), "")
        # The two together are cut to MAX_QUESTION_CHARS like any question (the previous one loses its end).
        asked = asked[:max(0, MAX_QUESTION_CHARS - len(question) - 1)].rstrip()
        glued = self._alone(f"{asked} {question}") if asked else None
        if glued is not None and decide(glued, self.settings) == "answered":
            return f"{asked} {question}", [], fallback, rewrite, False
        return question, [], fallback, rewrite, False

    def _alone(self, question: str) -> Retrieval | None:
        """The retrieval of a turn read as it stands (its search terms, a Chinese turn's English ones), for
        `_standalone` to weigh; None when its words leave nothing to search ("Who wrote it?")."""
        intent = parse(question, self._known_author)
        search = zh.retrieval_query(intent.query)
        if not search.strip():
            return None
        found = self.retriever.retrieve(search, RetrievalParams.from_settings(self.settings))
        found.asked = intent.query if zh.has_chinese(intent.query) else ""
        found.wording = question_wording.read(search, found.asked)
        return found

    def _leans(self, alone: Retrieval | None, focus: list[str], record: bool = False) -> bool:
        """Whether a turn is about the previous answer's papers (`focus`) rather than a new question. It is new when
        it brings a subject of its own, a word no paper of a large collection holds (an English turn that asks no
        record, `record`: "Which papers forecast volcanic eruptions?" after an answer on point clouds); or when its
        own search
        (`alone`) finds a paper outside `focus` that it matches closely (the paper's best chunk at cosine
        `AnswerPolicy.follow_up_found` or more) and that `focus` matches clearly worse (its best chunk under
        `AnswerPolicy.follow_up_share` of that cosine, and less of the turn's topic, `Hit.topical`). "What datasets
        did they evaluate on?" matches its paper about as well as any other (a follow-up); "... Which one was it?"
        after an answer on another subject finds its own paper far better than that answer's (new)."""
        if alone is None or not alone.hits or alone.hits[0].paper.paper_id in focus:
            return True
        within = self.retriever.retrieve(alone.question, RetrievalParams.from_settings(
            self.settings, k=len(focus), paper_ids=tuple(focus)), alone.query_vector)
        # A subject of its own: a word no paper of the collection holds, so neither do these. Not for a question
        # about a paper's record ("Was it an oral?": no abstract says "oral"), nor a Chinese turn, whose English terms
        # are a glossary's synonyms for its words, nor in a small collection, where most words are missing (where
        # the learned gate applies: `abstain.applies`).
        if (not record and not zh.has_chinese(alone.asked) and abstain.applies(alone)
                and any(alone.term_df.get(t, 0) == 0 for t in alone.terms)):
            return False
        top = alone.hits[0]
        policy = self.settings.policy
        if top.dense is None or top.dense < policy.follow_up_found:
            return True
        best = max(within.hits, key=lambda h: h.dense if h.dense is not None else -1.0, default=None)
        if best is None:
            return True
        if top.topical > 0 and max(h.topical for h in within.hits) >= top.topical:  # as much of its topic
            return True
        return best.dense is not None and best.dense >= policy.follow_up_share * top.dense

    def _rewritten(self, question: str, turns: list[dict[str, Any]], llm: ChatClient
                   ) -> tuple[str, list[str], str, rewriting.Rewrite | None, bool]:
        """The turn as the LLM rewrites it to stand alone with the conversation (and, with `llm_rewrite` on, for search
        in the same call); the turn as it stands when the call fails, with the reason (the third item)."""
        if self.settings.llm_rewrite:
            found = rewriting.ask(llm, self.templates, question, turns)
            return (question if found.fallback else found.standalone or question), [], found.fallback, found, False
        prompt = prompts.fill(self.templates["condense"], history=rewriting.transcript(turns), question=question)
        try:
            rewritten = llm.complete([{"role": "user", "content": prompt}], max_tokens=96)
        except LLMError as exc:
            return question, [], str(exc), None, False
        rewritten = " ".join(rewritten.split()).strip('"')[:MAX_QUESTION_CHARS]
        return rewritten or question, [], "", None, False

    def _known_author(self, name: str) -> bool:
        """Whether an author of the collection has this name (the question's "by X" becomes a filter only then)."""
        needle = " ".join(name.split()).casefold()
        return len(needle) >= 4 and any(needle == a.casefold() or (" " in needle and needle in a.casefold())
                                        for p in self.retriever.state.papers for a in p.authors)

    def stats(self) -> dict[str, Any]:
        if self.index.refuse_open:  # beside a `rag serve`: the snapshot it shares (its chunks: those of its papers)
            state = self.retriever.state
            papers, chunks = state.papers, len(state.dense.chunk_paper) if state.dense is not None else 0
        else:
            papers, chunks = self.index.all_papers(), self.index.chunk_count()
        return {
            "data_dir": str(self.settings.data_dir),
            "collection": self.settings.collection,
            "embedder": self.index.embedder.identity,
            "papers": len(papers),
            "title_only": sum(not p.has_abstract for p in papers),  # found by title and authors, never quoted
            "chunks": chunks,
            "decisions": dict(Counter(p.decision or "(none)" for p in papers).most_common()),
            "sources": dict(Counter(Path(p.source).name for p in papers).most_common()),
        }

    def related(self, paper: str, k: int | None = None, decisions: Sequence[str] = ()) -> Related:
        """The `k` papers nearest a paper (its id or title) by whole-paper vector (`rag.explore.related`), only those
        with one of `decisions` when given."""
        return explorer(self.retriever).related(paper, k, decisions)

    def topics(self) -> TopicMap:
        """The map of the collection and its topic clusters (`rag.explore.topicmap`), built once per index content;
        while a background ingest runs, the last one built (not a new map for every batch)."""
        return topic_map(self, stale_ok=self.indexing.running)

    def is_empty(self) -> bool:
        if self.index.refuse_open:  # beside a `rag serve`: the papers of the snapshot it shares
            return not self.retriever.state.papers
        return self.index.count() == 0

    def share_snapshot(self) -> bool:
        """In `rag serve` over an embedded store at rest: share the snapshot read-only commands in other processes
        answer from beside it (`HybridRetriever.share`), with this process's own ingests kept out meanwhile. Returns
        whether one is shared for the store as it is."""
        if not self.serving or self.settings.chroma_url:
            return False
        with self._ingest_lock:
            return self.retriever.share()

    def share_quietly(self) -> None:
        """`share_snapshot`, where a failure only means readers in other processes are refused (or read the last
        snapshot) until the next one: logged, never raised."""
        try:
            self.share_snapshot()
        except Exception as exc:
            log.warning("could not share the index with other processes: %s", one_line(exc))

    def share_in_background(self) -> threading.Thread:
        """`share_quietly` in a thread (`rag serve` at start-up and after an upload)."""
        thread = threading.Thread(target=self.share_quietly, name="share-snapshot", daemon=True)
        thread.start()
        return thread

    def require_index(self, empty_ok: bool = False, beside_ok: bool = False) -> None:
        """Raise a one-line RagError naming the fix when there is nothing to answer from: a `rag serve` holds this
        embedded store (`rag.store.lock`; with `beside_ok`, a read-only shell answers beside it from the snapshot it
        shares, and is refused only when there is none yet), there is no index in the data dir (nothing is created
        there), or, unless `empty_ok`, it holds no paper. Shells over an existing index call it first; a
        long-running one (`rag mcp`, which would keep answering from a snapshot the server has since changed)
        before every call, since a `rag serve` may have started on the store since."""
        if beside_ok and not self.serving and lock.served(self.settings):
            self.retriever  # noqa: B018  loads the shared snapshot, or raises the busy message saying there is none yet
            if not empty_ok and self.is_empty():
                raise NoIndexError(f"the index in {self.settings.data_dir} is empty; add papers through the running "
                                   "server's page (Add papers)")
            return
        lock.check_free(self.settings, "open it")
        if not self.settings.chroma_url and not self.settings.chroma_path.exists():
            raise NoIndexError(f"there is no index in {self.settings.data_dir}: run `rag ingest PATH` first, or "
                               "point --data-dir / RAG_DATA_DIR at an existing one")
        if not empty_ok and self.is_empty():
            raise NoIndexError(f"the index in {self.settings.data_dir} is empty; run `rag ingest PATH` first")

    def search(self, query: str, k: int | None = None, decision: str | list[str] | None = None,
               author: str | None = None) -> Search:
        """The papers a query finds, best first, with their best-matching sentence, without writing an answer:
        for callers that rank or show papers themselves (the MCP `search_papers` tool). The query is searched as
        given (no question type, no filters read from its words); the input checks are those of `ask`."""
        if not isinstance(query, str):
            raise QuestionError("the query must be text.")
        query, notices = clean_question(query)
        k, author = check_k(k), check_author(author)
        retriever = self.retriever
        decisions = check_decisions(decision, set(retriever.state.decisions.tolist()) - {""})
        params = RetrievalParams.from_settings(self.settings, k=k or self.settings.k, decisions=tuple(decisions),
                                               author=author)
        return Search(query, sources_from(retriever.retrieve(zh.retrieval_query(query), params)), notices)

    def paper(self, id_or_title: str) -> StoredPaper:
        """The paper an id, an OpenReview link or a title names (`rag.explore.related.find_paper`), or else
        PaperNotFound."""
        return find_paper(self.retriever.state.papers, id_or_title)


def _ms(a: float, b: float) -> float:
    return round((b - a) * 1000, 1)
