"""Engine: the one library call behind every shell. `Engine(settings).ask(question)` -> `Answer`.

It owns the wiring (settings -> embedder -> index -> retriever -> answer), loads each piece once and lazily,
cleans the user's input, and turns follow-up questions into standalone ones for retrieval. The CLI and the web
app only parse input and render the `Answer`.
"""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable

from rag.answer import Answer, abstention_text, extractive, should_abstain, sources_from
from rag.config import Settings
from rag.embeddings import Embedder, make_embedder
from rag.index import IngestStats, PaperIndex
from rag.ingest import read_paths
from rag.retrieve import HybridRetriever

MAX_QUESTION_CHARS = 2_000
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
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


def standalone_question(question: str, history: list[dict[str, Any]] | None) -> str:
    """The query to retrieve with. Without an LLM to rewrite follow-ups, a question that leans on the previous
    turn (a pronoun like 'they', or five words or fewer) is searched together with the previous user question."""
    previous = [t.get("content", "") for t in (history or []) if t.get("role") == "user" and t.get("content")]
    if not previous:
        return question
    if _ANAPHORA.search(question) or len(question.split()) <= 5:
        return f"{previous[-1]} {question}"
    return question


class Engine:
    """Loads the embedder and index on first use; safe to share between threads for `ask`."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings.load()
        self._lock = threading.Lock()
        self._embedder: Embedder | None = None
        self._index: PaperIndex | None = None
        self._retriever: HybridRetriever | None = None

    @property
    def index(self) -> PaperIndex:
        with self._lock:
            if self._index is None:
                self._embedder = make_embedder(self.settings)
                self._index = PaperIndex(self.settings, self._embedder)
            return self._index

    @property
    def retriever(self) -> HybridRetriever:
        index = self.index
        with self._lock:
            if self._retriever is None:
                self._retriever = HybridRetriever(index, self.settings.candidates, self.settings.rrf_k)
            return self._retriever

    def ingest(self, paths: list[str | Path], progress: Callable[[int, int], None] | None = None) -> IngestStats:
        """Read files and directories into the store. Bad records are skipped and listed in `stats.problems`."""
        read = read_paths(paths)
        stats = self.index.upsert(read.papers, files=read.files, progress=progress)
        stats.problems = [str(p) for p in read.problems]
        stats.skipped = sum(1 for p in read.problems if p.line is not None)
        with self._lock:
            if self._retriever is not None:
                self._retriever.refresh()
        return stats

    def ask(self, question: str, history: list[dict[str, Any]] | None = None, k: int | None = None,
            decision: str | None = None) -> Answer:
        """Answer a question from the indexed abstracts, with citations. Raises QuestionError on empty input."""
        started = time.perf_counter()
        question, notices = clean_question(question)
        query = standalone_question(question, history)
        retriever = self.retriever
        loaded = time.perf_counter()
        retrieval = retriever.retrieve(query, k or self.settings.k, decision or None)
        retrieved = time.perf_counter()
        sources = sources_from(retrieval)
        if should_abstain(retrieval, self.settings):
            text, cited = abstention_text(sources), []
            abstained = True
        else:
            text, cited = extractive(retrieval, self.settings)
            abstained = not cited
            if abstained:
                text = abstention_text(sources)
        done = time.perf_counter()
        by_n = {s.n: s for s in sources}
        return Answer(
            question=question, answer=text, mode="extractive", abstained=abstained,
            citations=[by_n[n] for n in cited], sources=sources,
            timings={"load_ms": _ms(started, loaded), "retrieve_ms": _ms(loaded, retrieved),
                     "answer_ms": _ms(retrieved, done), "total_ms": _ms(started, done)},
            confidence=round(retrieval.confidence, 4),
            retrieval_query=query if query != question else "", notices=notices,
        )

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
