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

import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from rag import lock, prompts
from rag.answer import (NO_ANSWER, Answer, Delta, Restart, abstention_text, extractive, should_abstain,
                        sources_from)
from rag.catalog import enrich
from rag.citations import StreamFilter
from rag.config import Settings
from rag.embeddings import Embedder, make_embedder
from rag.index import IngestStats, PaperIndex, open_client
from rag.llm import ChatClient, Completion, LLMError
from rag.ingest import read_paths
from rag.retrieve import HybridRetriever

MAX_QUESTION_CHARS = 2_000
MAX_K = 50
MAX_HISTORY_TURNS = 100
MAX_AUTHOR_CHARS = 200
DECISIONS = ("Accept (Oral)", "Accept (Spotlight)", "Accept (Poster)")
# Control characters, and lone surrogates (a client can send "\ud800" in JSON; nothing downstream can encode it).
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")
# Words that make a question lean on the previous turn ("What dataset did they use?").
_ANAPHORA = re.compile(r"\b(they|them|their|theirs|it|its|this|that|these|those|the paper|the papers|"
                       r"the method|the approach|the authors|same|above|previous|former|latter)\b", re.I)


class QuestionError(ValueError):
    """The question cannot be asked as given (empty, ...); the message is for the user."""


def clean_question(question: str) -> tuple[str, list[str]]:
    """Strip control characters and outer space; cut overlong input. Returns (question, notices)."""
    notices = []
    text = _CONTROL.sub(" ", question or "").strip()
    if not text:
        raise QuestionError("The question is empty: type a question about the papers.")
    if len(text) > MAX_QUESTION_CHARS:
        notices.append(f"Your question was {len(text):,} characters long; only the first "
                       f"{MAX_QUESTION_CHARS:,} were used.")
        text = text[:MAX_QUESTION_CHARS]
    return text, notices


def check_k(k: Any) -> int | None:
    """`k` as given by a caller (API JSON, CLI, slider): None for the default, else a whole number 1..MAX_K."""
    if k is None:
        return None
    if isinstance(k, float) and k.is_integer():
        k = int(k)
    if isinstance(k, str) and k.strip().isdigit():
        k = int(k.strip())
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise QuestionError(f"k must be a whole number from 1 to {MAX_K} (papers to retrieve), got {str(k)[:40]!r}.")
    return k


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
        value = by_name.get(" ".join(d.split()).casefold())
        if value is None:
            raise QuestionError(f"unknown decision {d[:60]!r}; use one of: "
                                + ", ".join(sorted(known | set(DECISIONS))) + " (or Oral / Spotlight / Poster).")
        out.append(value)
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


def check_history(history: Any) -> list[dict[str, str]]:
    """Earlier turns as [{"role": "user"|"assistant", "content": text}], cleaned like the question; the last
    MAX_HISTORY_TURNS are kept."""
    if history is None or history == "":
        return []
    if not isinstance(history, list) or not all(
            isinstance(t, dict) and t.get("role") in ("user", "assistant", "system")
            and isinstance(t.get("content"), str) for t in history):
        raise QuestionError('history must be a list of {"role": "user" or "assistant", "content": "..."}.')
    return [{"role": t["role"], "content": _CONTROL.sub(" ", t["content"])[:20_000]}
            for t in history[-MAX_HISTORY_TURNS:] if t["role"] != "system"]


def standalone_question(question: str, history: list[dict[str, Any]] | None) -> str:
    """The query to retrieve with. Without an LLM to rewrite follow-ups, a question that leans on the previous
    turn (a pronoun like 'they', or five words or fewer) is searched together with the previous user question."""
    previous = [t.get("content", "") for t in (history or []) if t.get("role") == "user" and t.get("content")]
    if not previous:
        return question
    if _ANAPHORA.search(question) or len(question.split()) <= 5:
        return f"{previous[-1]} {question}"
    return question


@dataclass
class Indexing:
    """Progress of an ingest running in the background (`Engine.index_in_background`), for the page to show."""

    running: bool = False
    total: int = 0  # papers the index will hold when done
    summary: str = ""  # the finished ingest's summary line, or why it failed
    failed: bool = False


class Engine:
    """Loads the embedder and index on first use; safe to share between threads for `ask`.

    `serving=True` marks the process that owns an embedded store (`rag serve`); any other process opening the same
    store is refused while it runs (`rag.lock`)."""

    def __init__(self, settings: Settings | None = None, serving: bool = False) -> None:
        self.settings = settings or Settings.load()
        self.serving = serving
        self.indexing = Indexing()
        self._ingest_lock = threading.Lock()  # one ingest at a time (background list, uploads)
        self._lock = threading.Lock()
        self._embedder: Embedder | None = None
        self._index: PaperIndex | None = None
        self._retriever: HybridRetriever | None = None
        self._llm: ChatClient | None = None
        self.templates: dict[str, str] = {}

    def derive(self, **overrides: Any) -> "Engine":
        """An engine with some settings changed that shares this one's loaded embedder, index and retriever
        (the store settings must stay the same)."""
        engine = Engine(Settings.model_validate({**dict(self.settings), **overrides}))
        engine._embedder, engine._index, engine._retriever = self._embedder, self._index, self._retriever
        return engine

    @property
    def index(self) -> PaperIndex:
        with self._lock:
            if self._index is None:
                if not self.serving:
                    lock.check_free(self.settings, "open it")
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
                self._retriever = HybridRetriever(index, self.settings.candidates)
            return self._retriever

    def ingest(self, paths: list[str | Path], progress: Callable[[int, int], None] | None = None,
               refresh_every: float | None = None) -> IngestStats:
        """Read files and directories into the store. Bad records are skipped and listed in `stats.problems`.
        With `refresh_every` (seconds), questions asked meanwhile search the papers stored so far, refreshed at
        most that often; otherwise they see the new papers when the ingest ends."""
        with self._ingest_lock:
            read = read_paths(paths)
            read.papers, enriched = enrich(read.papers)  # untitled abstracts named after bundled ICLR 2025 papers
            last = time.monotonic()

            def step(done: int, todo: int) -> None:
                nonlocal last
                if progress:
                    progress(done, todo)
                if refresh_every is not None and done and time.monotonic() - last >= refresh_every:
                    self._refresh()
                    last = time.monotonic()

            stats = self.index.upsert(read.papers, files=read.files, progress=step)
            stats.problems = [str(p) for p in read.problems]
            stats.skipped = sum(1 for p in read.problems if p.line is not None)
            stats.enriched = enriched
            self._refresh()
            return stats

    def _refresh(self) -> None:
        with self._lock:
            retriever = self._retriever
        if retriever is not None:
            retriever.refresh()

    def index_in_background(self, paths: list[str | Path], refresh_every: float = 15.0) -> threading.Thread:
        """Ingest `paths` in a thread while questions are answered (`rag serve` and the bundled list). Progress
        is in `self.indexing`; answers given meanwhile say how many papers they searched. Stopping the process
        loses at most the two batches being embedded and written: a restart skips every paper already stored."""
        self.indexing = state = Indexing(running=True)

        def progress(done: int, todo: int) -> None:
            if done == 0:
                state.total = self.index.expected  # papers stored, plus the new ones to come

        def run() -> None:
            try:
                stats = self.ingest(paths, progress=progress, refresh_every=refresh_every)
                state.summary = stats.summary() + (f"; {len(stats.problems)} problem(s)" if stats.problems else "")
            except Exception as exc:  # shown on the page; the papers stored so far stay searchable
                state.failed, state.summary = True, f"indexing stopped: {exc}"
            finally:
                state.total = self.index.count() if not state.failed else state.total
                state.running = False

        thread = threading.Thread(target=run, name="background-ingest", daemon=True)
        thread.start()
        return thread

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
            decision: str | list[str] | None = None, author: str | None = None) -> Answer:
        """Answer a question from the indexed abstracts, with citations. Raises QuestionError on empty input.
        `decision` (one or several) and `author` (a substring of an author's name) restrict the papers."""
        for event in self.stream(question, history, k, decision, author):
            if isinstance(event, Answer):
                return event
        raise AssertionError("stream() ends with an Answer")

    def stream(self, question: str, history: list[dict[str, Any]] | None = None, k: int | None = None,
               decision: str | list[str] | None = None, author: str | None = None
               ) -> Iterator[Delta | Restart | Answer]:
        """Like `ask`, but yields the answer text as it is written (`Delta`), a `Restart` if the LLM fails
        mid-answer and an extractive answer replaces it, and last the complete `Answer`."""
        started = time.perf_counter()
        if not isinstance(question, str):
            raise QuestionError("the question must be text.")
        question, notices = clean_question(question)
        k, author, history = check_k(k), check_author(author), check_history(history)
        llm = self.llm
        retriever = self.retriever
        decisions = check_decisions(decision, set(retriever.state.decisions.tolist()) - {""})
        query, fallback = self._standalone(question, history, llm)
        loaded = time.perf_counter()
        retrieval = retriever.retrieve(query, k or self.settings.k, decisions or None,
                                       author, self.settings.retrieval, self.settings.rrf_k,
                                       self.settings.bm25_weight)
        retrieved = time.perf_counter()
        sources = sources_from(retrieval)
        by_n = {s.n: s for s in sources}
        if self.indexing.running and self.indexing.total:
            notices.append(f"Searched the {len(retriever.state.papers):,} papers indexed so far; indexing of "
                           f"{self.indexing.total:,} is still under way.")
        answer = Answer(question=question, answer="", mode="extractive", abstained=True, citations=[],
                        sources=sources, confidence=round(retrieval.confidence, 4),
                        retrieval_query=query if query != question else "", notices=notices,
                        fallback_reason=fallback)
        timings = {"load_ms": _ms(started, loaded), "retrieve_ms": _ms(loaded, retrieved)}

        if should_abstain(retrieval, self.settings):
            answer.answer = abstention_text(sources)
            yield Delta(answer.answer)
        elif llm is not None and not fallback:
            completion = Completion()
            stream = StreamFilter(set(by_n))
            streamed = False
            try:
                messages = [{"role": "system", "content": self.templates["system"]},
                            {"role": "user", "content": prompts.fill(
                                self.templates["answer"], sources=prompts.render_sources(sources),
                                question=question, language=prompts.answer_language(question))}]
                for delta in llm.stream(messages, completion):
                    text = stream.feed(delta)
                    if text:
                        streamed = True
                        yield Delta(text)
                tail, cleaned = stream.finish()
                if tail:
                    yield Delta(tail)
                if not cleaned.text.strip():
                    raise LLMError("the LLM endpoint returned an empty answer")
                if not cleaned.cited and not NO_ANSWER.search(cleaned.text):
                    # Every claim must carry a citation; an answer citing nothing (a model that ignored the
                    # prompt, or obeyed instructions hidden in an abstract) is not shown as an answer.
                    raise LLMError("the LLM's answer cited none of the sources")
                # The support check compares English embeddings (English abstracts, an English MiniLM): a
                # sentence in Chinese, Japanese or Korean scores low whatever it says. Such an answer is neither
                # checked nor discarded for it, and says so in its notices.
                unchecked_language = prompts.language_of(cleaned.text)
                unsupported, checked = ([], 0) if unchecked_language else retriever.unsupported(
                    cleaned.text, {n: s.paper_id for n, s in by_n.items()}, self.settings.support_threshold)
                if checked and len(unsupported) == checked:
                    # Citations on text that none of the cited abstracts supports (e.g. an injected instruction
                    # obeyed and given a [1]): not an answer from the sources.
                    raise LLMError("no sentence of the LLM's answer is supported by the sources it cites")
            except LLMError as exc:
                answer.fallback_reason = str(exc)
                if streamed:
                    yield Restart(answer.fallback_reason)
            else:
                answer.mode, answer.model, answer.answer = "llm", llm.model, cleaned.text.strip()
                answer.fabricated = cleaned.fabricated
                answer.citations = [by_n[n] for n in cleaned.cited]
                answer.abstained = not cleaned.cited
                answer.unsupported = unsupported
                if unchecked_language:
                    answer.notices.append(f"The answer is in {unchecked_language}: its sentences were not checked "
                                          "against the abstracts they cite (the check compares English text).")
                answer.usage = {"prompt_tokens": completion.usage.prompt_tokens,
                                "completion_tokens": completion.usage.completion_tokens}
                if completion.first_token_at is not None:
                    timings["ttft_ms"] = _ms(started, completion.first_token_at)
        if not answer.answer:  # extractive: the default, and the fallback when the LLM failed
            if answer.fallback_reason:
                answer.notices.append(f"The LLM could not answer ({answer.fallback_reason}); "
                                      "showing sentences quoted from the abstracts instead.")
            text, cited = extractive(retrieval, self.settings)
            answer.abstained = not cited
            answer.answer = text if cited else abstention_text(sources)
            answer.citations = [by_n[n] for n in cited]
            yield Delta(answer.answer)
        done = time.perf_counter()
        timings["answer_ms"] = _ms(retrieved, done)
        timings["total_ms"] = _ms(started, done)
        answer.timings = timings
        yield answer

    def _standalone(self, question: str, history: list[dict[str, Any]] | None,
                    llm: ChatClient | None) -> tuple[str, str]:
        """(query to retrieve with, fallback reason). With an LLM, it rewrites follow-ups itself."""
        turns = [t for t in history or [] if t.get("role") in ("user", "assistant") and t.get("content")]
        if llm is None or not turns:
            return standalone_question(question, turns), ""
        transcript = "\n".join(f"{t['role']}: {' '.join(str(t['content']).split())[:1000]}" for t in turns[-6:])
        prompt = prompts.fill(self.templates["condense"], history=transcript, question=question)
        try:
            rewritten = llm.complete([{"role": "user", "content": prompt}], max_tokens=96)
        except LLMError as exc:
            return standalone_question(question, turns), str(exc)
        rewritten = " ".join(rewritten.split()).strip('"')[:MAX_QUESTION_CHARS]
        return rewritten or question, ""

    def stats(self) -> dict[str, Any]:
        papers = self.index.all_papers()
        return {
            "data_dir": str(self.settings.data_dir),
            "collection": self.settings.collection,
            "embedder": self.index.embedder.identity,
            "papers": len(papers),
            "chunks": self.index.chunk_count(),
            "decisions": dict(Counter(p.decision or "(none)" for p in papers).most_common()),
            "sources": dict(Counter(Path(p.source).name for p in papers).most_common()),
        }

    def is_empty(self) -> bool:
        return self.index.count() == 0


def _ms(a: float, b: float) -> float:
    return round((b - a) * 1000, 1)
