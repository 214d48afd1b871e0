"""Snapshot: the mark file that says an embedded store is at rest, and the arrays a question reads from it.

A question in a new process (`rag ask`) read four things through chromadb: the store's change mark and paper count
(the key of the retriever's corpus cache), the nearest chunks of the question's vector and the sentences of the
hits. Importing chromadb and opening the client is about 1 s of a 2.3 s cold question on 2 cores, so for the
embedded store those reads come from the data dir instead (never with a Chroma server, which processes of other
versions may write to without saying so):
- `<data dir>/corpus/<collection>.mark` (JSON: the generation, the paper count, the embedder, and the store files'
  `fingerprint`, so a store copied in by hand or grown by an older version is not vouched for) is written by the
  ingest after its last write, with the same new generation it gives the store (`PaperIndex.mark_changed`), and
  removed before its first write (`forget`). Present, it says the store has not changed since, for writers of this
  version; absent or unreadable, a reader goes through chromadb as before.
- `Dense` (every chunk vector with its paper, every sentence with its text and vector, every paper's whole-paper
  vector) is saved with the corpus
  cache of `rag.search.retrieve` under the same key; dense retrieval is then an exact cosine search in numpy
  (5k x 384: a few ms), which also has none of the run-to-run variation of Chroma's HNSW graph.

A reader that found no mark (a store written by an older version, or after a killed ingest) writes one itself once
it has read the store through chromadb (`claim`), but only if no ingest held the write lock (`rag.store.lock`) when
it began nor holds it when it writes, and the generation and count are still those it read: otherwise it could
vouch for a store in the middle of a change.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rag.config import Settings

MARK_FORMAT = 1


@dataclass(frozen=True)
class Mark:
    """What the last ingest of this version left: the store's generation, its paper count and its embedder."""

    generation: str
    count: int
    embedder: str


@dataclass(frozen=True)
class Dense:
    """What a question reads from the store besides the papers, as arrays: chunk `i` belongs to the paper at corpus
    position `chunk_paper[i]`; the sentences of the paper at position `p` are rows `sentence_start[p]` to
    `sentence_start[p + 1]` of `sentence_vectors` / `sentence_texts`, in order (none for a paper stored without)."""

    chunk_paper: np.ndarray  # int32 [chunks]
    chunk_vectors: np.ndarray  # float32 [chunks, dim], unit rows as stored
    sentence_start: np.ndarray  # int64 [papers + 1]
    sentence_vectors: np.ndarray  # float32 [sentences, dim]
    sentence_texts: list[str]
    # float32 [papers, dim]: each paper's whole-paper vector as its store record holds it (`rag related`, the map),
    # zero for a paper without one
    paper_vectors: np.ndarray | None = None

    def nearest(self, vector: np.ndarray, n: int, allowed: np.ndarray | None) -> list[tuple[int, float]]:
        """The `n` nearest chunks of the papers `allowed` (a mask over corpus positions; None: all) as (paper
        position, cosine similarity), best first: what `PaperIndex.query_chunks` returns from Chroma, exactly."""
        sims = self.chunk_vectors @ np.asarray(vector, dtype=np.float32)
        candidates = np.arange(len(sims)) if allowed is None else np.flatnonzero(allowed[self.chunk_paper])
        if len(candidates) > n:
            candidates = candidates[np.argpartition(-sims[candidates], n - 1)[:n]]
        order = candidates[np.argsort(-sims[candidates], kind="stable")]
        return [(int(self.chunk_paper[i]), float(sims[i])) for i in order]

    def sentences(self, position: int) -> tuple[list[str], np.ndarray] | None:
        """The texts and vectors of the sentences of the paper at `position`, or None if it has none stored."""
        start, end = int(self.sentence_start[position]), int(self.sentence_start[position + 1])
        if start == end:
            return None
        return self.sentence_texts[start:end], self.sentence_vectors[start:end]


def mark_path(settings: Settings) -> Path:
    return settings.data_dir / "corpus" / f"{settings.collection}.mark"


def read_mark(settings: Settings) -> Mark | None:
    """The mark of the embedded store, or None: a Chroma server, no mark, or one that cannot be read."""
    if settings.chroma_url:
        return None
    try:
        data = json.loads(mark_path(settings).read_text(encoding="utf-8"))
        if data.get("format") != MARK_FORMAT or data.get("store") != fingerprint(settings):
            return None
        return Mark(str(data["generation"]), int(data["count"]), str(data["embedder"]))
    except Exception:  # absent, half-written by hand, or not JSON: the reader goes through chromadb
        return None


def fingerprint(settings: Settings) -> str:
    """What the store's files look like without opening them: the names of its segment folders (a collection's
    uuid: another store copied in by hand has others) and the size of chroma.sqlite3 (a writer of an older
    version, which does not remove the mark, grows it). Not its mtime: chromadb touches the file on every open,
    reads included. "" when the store cannot be listed, which no mark matches."""
    try:
        folders = sorted(entry.name for entry in os.scandir(settings.chroma_path) if entry.is_dir())
        return f"{(settings.chroma_path / 'chroma.sqlite3').stat().st_size}:{','.join(folders)}"
    except OSError:
        return ""


def forget(settings: Settings) -> None:
    """Remove the mark before an ingest's first write. A mark that exists and cannot be removed is an error: the
    write would otherwise leave a mark vouching for the old store."""
    if settings.chroma_url:
        return
    with contextlib.suppress(FileNotFoundError):
        mark_path(settings).unlink()


def write_mark(settings: Settings, mark: Mark) -> None:
    """Write the mark whole, then rename it into place, so a reader never sees half of it. A data dir that cannot
    be written only loses the fast path."""
    if settings.chroma_url:
        return
    path = mark_path(settings)
    tmp = ""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=path.name, delete=False,
                                         encoding="utf-8") as f:
            tmp = f.name
            json.dump({"format": MARK_FORMAT, "generation": mark.generation, "count": mark.count,
                       "embedder": mark.embedder, "store": fingerprint(settings)}, f)
        os.replace(tmp, path)
    except OSError:
        if tmp:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


@contextlib.contextmanager
def writers_idle(settings: Settings):
    """Yield True while holding the ingest write lock (`rag.store.lock.writing`) if no ingest holds it, else
    False at once. Held for milliseconds: an ingest starting meanwhile waits for it (`lock.writing` retries)."""
    from rag.store.lock import WRITE_NAME

    try:
        handle = (settings.data_dir / WRITE_NAME).open("a+", encoding="utf-8")
    except OSError:
        yield False
        return
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        yield True


def claim(settings: Settings, index: Any, read: Mark, idle_before: bool) -> None:
    """After reading a store that had no mark through chromadb under `read` (generation and count read before the
    papers): write the mark, if no ingest was writing when the read began (`idle_before`) nor is now, and the store
    still has that generation and count (any ingest that wrote meanwhile gave it a new generation)."""
    if not idle_before or settings.chroma_url:
        return
    with writers_idle(settings) as idle:
        if idle and index.generation() == read.generation and index.count() == read.count:
            write_mark(settings, read)


def dense_from(index: Any, papers: list[Any]) -> Dense:
    """Read every chunk vector and every sentence of `papers` (the corpus's papers, in its order) from the store.
    Chunks of papers without a paper record (an ingest killed mid-batch) are left out, as the retriever leaves them
    out of its rankings; a paper's sentences are those `PaperIndex.sentences_of` would read."""
    position = {p.paper_id: i for i, p in enumerate(papers)}
    chunk_ids, chunk_vectors = index.all_chunk_vectors()
    dim = chunk_vectors.shape[1] if chunk_vectors.ndim == 2 else 0
    keep = [i for i, cid in enumerate(chunk_ids) if cid.rsplit("#", 1)[0] in position]
    chunk_paper = np.asarray([position[chunk_ids[i].rsplit("#", 1)[0]] for i in keep], dtype=np.int32)
    kept_vectors = (np.ascontiguousarray(chunk_vectors[keep], dtype=np.float32) if keep
                    else np.zeros((0, dim), dtype=np.float32))
    by_paper = index.sentences_of(papers)
    start = np.zeros(len(papers) + 1, dtype=np.int64)
    texts: list[str] = []
    vectors: list[np.ndarray] = []
    for p, paper in enumerate(papers):
        found = by_paper.get(paper.paper_id)
        if found is not None:
            texts.extend(found.texts)
            vectors.append(found.vectors.reshape(len(found.texts), -1))
        start[p + 1] = len(texts)
    sentence_vectors = (np.ascontiguousarray(np.concatenate(vectors), dtype=np.float32) if vectors
                        else np.zeros((0, dim), dtype=np.float32))
    found = index.paper_vectors([p.paper_id for p in papers])
    paper_vectors = np.zeros((len(papers), len(next(iter(found.values()))) if found else dim), dtype=np.float32)
    for p, paper in enumerate(papers):
        if paper.paper_id in found:
            paper_vectors[p] = found[paper.paper_id]
    return Dense(chunk_paper, kept_vectors, start, sentence_vectors, texts, paper_vectors)
