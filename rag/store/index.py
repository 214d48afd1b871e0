"""Index: papers -> chunks -> embeddings -> Chroma, kept in step with the files by stable ids and content hashes.

Three Chroma collections, all given their vectors (Chroma's own embedding function, which downloads a model,
is never attached):
- `<collection>`: chunks of "title + abstract" made by llama-index's `SentenceSplitter` (≤250 tokens, so the
  256-token embedder never truncates one), written through llama-index's `ChromaVectorStore`;
  ids `<paper_id>#<n>`, metadata `paper_id`, `title`, `decision`, `chunk`.
  A title-only paper (`has_abstract` false) has one chunk: its title.
- `<collection>-sentences`: every sentence of every abstract (ids `<paper_id>@<n>`; metadata `paper_id`, `n`
  and its span `start`, `end` in the abstract, which holds its text: Chroma is given no document to index), for
  snippets, extractive answers, the abstention signal and the support check. Their vectors come from the chunk
  pass itself ("late chunking": the mean of the sentence's token states inside the chunk that holds most of it),
  so they cost no extra model pass at ingest and no embedding at question time.
- `<collection>-papers`: one record per paper: the whole abstract, every field, its content hash, and the
  normalized mean of its chunk vectors as a whole-paper vector. A paper's record is written after its chunks
  and sentences, so its presence marks the paper as complete. It also names every ingested file that holds the
  paper (`src_<h>`: the path, `pos_<h>`: the record's position there, h a hash of the path; one key per file,
  so `where={"src_<h>": path}` finds a file's papers with the plain str/int values every Chroma 1.x server
  stores), besides the one it is shown from (`source`, `position`: the latest). Records written before these keys
  existed have `source` alone, which then counts as the only file holding the paper.
Only the chunks are searched by vector; the other two get a tiny HNSW graph (`read_by_id_config`).

llama-index is imported only when writing: answering a question needs chromadb alone, which keeps start-up short;
and over an embedded store at rest not even that (`PaperIndex(lazy=True)` opens Chroma on first use, and the
question reads the snapshot of `rag.store.snapshot`).

Upserts are idempotent: unchanged papers (same id, same hash) cost nothing, changed ones have their chunks
replaced, and a paper that vanished from a re-ingested file leaves that file's keys; it is removed once no
ingested file holds it, so re-ingesting an edited subset never takes papers another file still has (an edited
untitled abstract, whose id is the hash of its text, counts as an update of the paper at the same file position).
"""

from __future__ import annotations

import hashlib
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from collections.abc import Callable, Iterable

import numpy as np

from rag.errors import RagError, redact_url
from rag.config import ConfigError, Settings
from rag.text import sentence_spans
from rag.store.embeddings import Embedder, EmbeddingError
from rag.store.ingest import Paper
from rag.store import prebuilt, snapshot
from rag.store.lock import StoreBusyError

SENTENCE_FORMAT = "s1"  # version of the stored sentences; part of the `chunking` marker
INGEST_BATCH = 64  # papers embedded together
# ... and written together, but for batches whose every chunk came from the shipped vectors (rag.store.prebuilt):
# those are gathered into writes of at least this many papers. Embedding them costs little and every Chroma write
# pays a transaction, its log and its index updates: writing the bundled list took 35 s at load 7 in writes of 64
# papers, 22 s in writes of 256 (1,024: 21 s). A batch the model embeds (seconds) is written on its own, so the
# progress of a user's file moves as often as before. Crash safety holds within a write: chunks, sentences, then
# the papers' records.
WRITE_BATCH = 256
_IN_LIMIT = 500  # ids per Chroma `$in` filter
_ADD_LIMIT = 5000  # records per Chroma write (chromadb's `get_max_batch_size()` is 5,461 for the embedded store)
_Spans = list[list[tuple[int, int]]]  # per paper or chunk: (start, end) pairs


class StoreError(RagError, RuntimeError):
    """The store cannot be opened or used; the message says what to do."""


def store_error(settings: Settings, exc: BaseException, doing: str = "use") -> StoreError:
    """One clear StoreError for whatever chromadb, sqlite or httpx raised, naming the fix. A failed request
    changes nothing: the next one tries again (a Chroma server that is back is used again)."""
    detail = " ".join(str(exc).split())[:240] or type(exc).__name__
    if settings.chroma_url:
        return StoreError(f"cannot {doing} the Chroma server at {redact_url(settings.chroma_url)}: {detail}. "
                          "Check that it is running (`chroma run --path DIR --port P`); the next request will try "
                          "again.")
    low = detail.lower()
    if isinstance(exc, PermissionError) or any(w in low for w in ("readonly", "read-only", "permission denied")):
        return StoreError(f"cannot write the data dir {settings.data_dir} ({detail}). Make it writable "
                          f"(chmod -R u+w {settings.data_dir}) or choose another with --data-dir / RAG_DATA_DIR.")
    return StoreError(f"cannot {doing} the index in {settings.chroma_path}: {detail}. If it is damaged, move it "
                      f"away (mv {settings.data_dir} {settings.data_dir}.broken) and ingest again.")


def _guarded(method: Callable) -> Callable:
    """Turn any failure of a store call into a StoreError (see `store_error`)."""
    import functools

    @functools.wraps(method)
    def wrapper(self: PaperIndex, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except (StoreError, ConfigError, EmbeddingError, StoreBusyError):
            raise
        except Exception as exc:
            raise store_error(self.settings, exc) from None

    return wrapper


@dataclass
class IngestStats:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    skipped: int = 0
    enriched: int = 0  # untitled abstracts matched to a bundled ICLR 2025 paper (rag.store.catalog)
    embedded_chunks: int = 0  # chunks stored, the shipped ones included
    shipped_chunks: int = 0  # of those, from the bundled list's shipped vectors (rag.store.prebuilt), not embedded
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)  # the first problems, then counts of the rest by kind
    problem_count: int = 0  # all problems, named or counted

    def summary(self) -> str:
        matched = f", {self.enriched} matched to ICLR 2025 papers" if self.enriched else ""
        return (f"added {self.added}, updated {self.updated}, unchanged {self.unchanged}, "
                f"removed {self.removed}, skipped {self.skipped}{matched} "
                f"({self.embedded_chunks - self.shipped_chunks} chunks embedded"
                f"{f', {self.shipped_chunks} loaded from the shipped vectors,' if self.shipped_chunks else ''}"
                f" in {self.seconds:.1f} s)")


@dataclass
class _Batch:
    """Papers embedded and ready to store (`PaperIndex._embed` -> `PaperIndex._store`)."""

    papers: list[Paper]
    nodes: list[Any]  # llama-index TextNodes of the chunks, embeddings set
    sentences: tuple[list[str], list[np.ndarray], list[str], list[dict]]  # ids, vectors, texts, metadatas
    paper_vectors: list[list[float]]
    paper_metas: list[dict[str, Any]]

    def extend(self, other: _Batch) -> None:
        """Append another embedded batch (written together: `WRITE_BATCH`)."""
        self.papers = self.papers + other.papers
        self.nodes = self.nodes + other.nodes
        (ids, vectors, texts, metas), more = self.sentences, other.sentences
        self.sentences = (ids + more[0], vectors + more[1], texts + more[2], metas + more[3])
        self.paper_vectors = self.paper_vectors + other.paper_vectors
        self.paper_metas = self.paper_metas + other.paper_metas


@dataclass(frozen=True)
class StoredPaper:
    """A paper as the store holds it: what retrieval and answers show."""

    paper_id: str
    abstract: str
    title: str
    label: str
    authors: tuple[str, ...]
    decision: str
    venue: str
    url: str
    year: int | None
    source: str
    content_hash: str
    sentences: int = 0  # sentences stored for it (0: stored before the index kept sentences, or no abstract)
    has_abstract: bool = True  # False: a title-only paper, found by title and authors, never quoted
    enriched_from: str = ""  # where its title, ... came from, when its file had only the abstract (rag.store.catalog)

    @property
    def search_text(self) -> str:
        return "\n".join(t for t in (self.title, self.abstract) if t)


TITLE_ONLY_MEANS = "found by title and authors, with no abstract to answer from"


def paper_count(papers: list[StoredPaper]) -> str:
    """How many papers, and how many of them are title-only and what that means, wherever a count is shown: the
    bundled list is 3,706 papers of which 1,592 have no abstract, so "2,114" (those with abstracts) and "3,706"
    both appear, and a reader should see why."""
    title_only = sum(not p.has_abstract for p in papers)
    count = f"{len(papers):,} papers"
    return f"{count} ({title_only:,} of them title-only: {TITLE_ONLY_MEANS})" if title_only else count


@dataclass(frozen=True)
class Sentences:
    """The sentences of one abstract, in order, and their unit vectors [n, dim]."""

    texts: list[str]
    vectors: np.ndarray


SERVER_API_MAJOR = "1"  # what `chroma run` of chromadb 1.x reports from /api/v2/version


def open_client(settings: Settings) -> Any:
    """A Chroma client, with telemetry off: the embedded store in the data dir, or a server (`chroma_url`)."""
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    chroma_settings = ChromaSettings(anonymized_telemetry=False)
    if settings.chroma_url:
        return _connect(settings.chroma_url, chroma_settings)
    try:
        settings.chroma_path.mkdir(parents=True, exist_ok=True)
        return chromadb.PersistentClient(path=str(settings.chroma_path), settings=chroma_settings)
    except Exception as exc:  # chromadb raises many types for a damaged or read-only store
        raise store_error(settings, exc, "open") from None


def _connect(url: str, chroma_settings: Any) -> Any:
    import chromadb
    from urllib.parse import urlparse

    parts = urlparse(url)
    ssl = parts.scheme == "https"
    port = parts.port or (443 if ssl else 8000)
    hint = (f"Start one with `chroma run --path DIR --port {port}` (the `chroma` of this venv, chromadb "
            f"{chromadb.__version__}), or unset RAG_CHROMA_URL to use the embedded store.")
    try:
        client = chromadb.HttpClient(host=parts.hostname or "", port=port, ssl=ssl, settings=chroma_settings)
        client.heartbeat()
        version = str(client.get_version())
    except Exception as exc:
        raise StoreError(f"cannot use the Chroma server at {redact_url(url)}: {' '.join(str(exc).split())[:200]}. "
                         f"{hint}") from None
    if version.split(".")[0] != SERVER_API_MAJOR:
        raise StoreError(f"the Chroma server at {redact_url(url)} reports version {version}, which this client "
                         f"(chromadb {chromadb.__version__}, server API {SERVER_API_MAJOR}.x) cannot use. {hint}")
    return client


def searched_config() -> dict[str, Any]:
    """The chunks' collection: the only one searched by vector (`query_chunks`), with Chroma's default graph."""
    return {"hnsw": {"space": "cosine"}}


def read_by_id_config() -> dict[str, Any]:
    """The papers' and sentences' collections are read by id or `where` only, never by vector (related papers and
    the map compute on the paper vectors themselves), yet Chroma builds an HNSW graph for every collection, in
    the writes that dominate indexing the bundled list. With this tiny graph instead of Chroma's default
    (ef_construction 100, max_neighbors 16), `rag ingest` of the whole list into a new store took 12% less CPU
    and 26% less wall time (bench/FINDINGS.md), with the same stored records; a vector query on these
    collections would still run, with poor recall. Chroma applies a configuration only when it creates a collection
    (`get_or_create_collection` ignores it for one that exists), so stores made before keep their graphs and
    open as they are. A new dict per call: chromadb may add keys to the one it is given."""
    return {"hnsw": {"space": "cosine", "ef_construction": 16, "max_neighbors": 4}}


class PaperIndex:
    """The Chroma side of the app: upsert papers, query chunks, list papers."""

    def __init__(self, settings: Settings, embedder: Embedder, client: Any | None = None, lazy: bool = False,
                 refuse_open: str = "") -> None:
        """`lazy`: open the Chroma client and collections on first use, not here. A question over an embedded store
        at rest reads everything from the data dir (`rag.store.snapshot`): then chromadb is never imported.
        `refuse_open`: never open them; whatever would is refused with this message (a StoreBusyError: a reader
        beside a `rag serve`, which owns the store, `rag.store.lock`)."""
        self.settings = settings
        self.refuse_open = refuse_open
        self.embedder = embedder
        self._client = client
        self._opening = threading.Lock()
        # Papers stored with other chunking (or before sentence vectors were stored) are re-embedded on ingest.
        self.chunking = f"{settings.chunk_size}/{settings.chunk_overlap}/{SENTENCE_FORMAT}"
        self._writer: tuple[Any, Any] | None = None  # llama-index splitter and vector store, made on first write
        # The bundled list's shipped vectors where they hold a text, the embedder for the rest (rag.store.prebuilt).
        self.vectors = prebuilt.vectors_for(embedder, self.chunking)
        self.expected = 0  # papers the store will hold when the running (or last) upsert ends
        self._changing = False  # the running upsert has written (or is about to): it marks the end too
        if not lazy:
            self._open()

    def __getattr__(self, name: str) -> Any:
        """The Chroma client and collections of a lazy index, opened on first use."""
        if name in ("client", "chunks", "papers", "sentences"):
            self._open()
            return self.__dict__[name]
        raise AttributeError(name)

    @property
    def opened(self) -> bool:
        return "sentences" in self.__dict__

    def _open(self) -> None:
        if self.refuse_open:
            raise StoreBusyError(self.refuse_open)
        with self._opening:
            if self.opened:
                return
            settings, embedder = self.settings, self.embedder
            client = self._client or open_client(settings)
            meta = {"embedder": embedder.identity, "chunk_size": settings.chunk_size}
            try:
                chunks = client.get_or_create_collection(
                    settings.collection, configuration=searched_config(), metadata=meta, embedding_function=None)
                papers = client.get_or_create_collection(
                    settings.collection + "-papers", configuration=read_by_id_config(), metadata=meta,
                    embedding_function=None)
                sentences = client.get_or_create_collection(
                    settings.collection + "-sentences", configuration=read_by_id_config(), metadata=meta,
                    embedding_function=None)
            except Exception as exc:
                raise store_error(settings, exc, "open") from None
            built_with = (chunks.metadata or {}).get("embedder")
            if built_with and built_with != embedder.identity:
                raise ConfigError(
                    f"the index in {settings.data_dir} was built with embedder {built_with!r}, but "
                    f"{embedder.identity!r} is configured. Use the same embedder, or another --data-dir / "
                    "--collection for the new one.")
            self.client, self.chunks, self.papers = client, chunks, papers
            self.sentences = sentences  # last: `opened` tests it

    def close(self) -> None:
        """Release the Chroma client: its SQLite connections and the open files of the vector segments (about 19
        descriptors an embedded store). chromadb keeps one system per path for the whole process until every
        client of it is closed, so an index that is only dropped keeps them all. Used again, it reopens."""
        with self._opening:
            client = self.__dict__.get("client") or self._client
            for name in ("client", "chunks", "papers", "sentences"):
                self.__dict__.pop(name, None)
            self._client, self._writer = None, None
        if client is not None and hasattr(client, "close"):
            client.close()
            # The stopped system's Rust bindings, which hold the SQLite connections, sit in reference cycles:
            # without a collection now, their files stay open until the collector happens to run.
            import gc

            gc.collect()

    def mark(self) -> snapshot.Mark | None:
        """The data dir's mark (`rag.store.snapshot`) if it was written for this embedder, else None."""
        found = snapshot.read_mark(self.settings)
        return found if found is not None and found.embedder == self.embedder.identity else None

    def _llama_index(self) -> tuple[Any, Any]:
        if self._writer is None:
            from llama_index.core.node_parser import SentenceSplitter
            from llama_index.vector_stores.chroma import ChromaVectorStore

            # Chunk ids `<paper_id>#<n>` from the start (the default draws a uuid4 per chunk, and each draw waits
            # for the GIL while the writer thread is in Chroma); the links between chunks then name them too.
            self._writer = (SentenceSplitter(chunk_size=self.settings.chunk_size,
                                             chunk_overlap=self.settings.chunk_overlap,
                                             tokenizer=self.embedder.tokens,
                                             id_func=lambda n, doc: f"{doc.id_}#{n}"),
                            ChromaVectorStore(chroma_collection=self.chunks))
        return self._writer

    # ---- writing -------------------------------------------------------------------------------------

    @_guarded
    def upsert(self, papers: list[Paper], files: Iterable[str] = (),
               progress: Callable[[int, int], None] | None = None) -> IngestStats:
        """Bring the store in line with `papers` (read from `files`). Returns what changed."""
        started = time.perf_counter()
        stats = IngestStats()
        self._changing = False
        mirrored = {_source_key(f) for f in files}
        stored = self._stored_meta([p.paper_id for p in papers])
        holders = {p.paper_id: _held_by(p, stored.get(p.paper_id), mirrored) for p in papers}
        todo, moved = self._sort_out(papers, stored, holders, stats)
        self._record_moves(moved, stored, holders)
        self._drop_vanished(papers, todo, stored, mirrored, stats)
        # The papers the store holds when this ends: those stored now, plus the new ones among `todo`.
        self.expected = self.papers.count() + sum(1 for p in todo if p.paper_id not in stored)
        self._embed_and_store(todo, holders, stats, progress)
        if self._changing:
            # The end of the change: what a reader that loaded the papers meanwhile missed; and the data dir's mark
            # that lets the next question read the store from its snapshot (`rag.store.snapshot`).
            generation = self.mark_changed()
            snapshot.write_mark(self.settings, snapshot.Mark(generation, self.papers.count(), self.embedder.identity))
        stats.seconds = time.perf_counter() - started
        return stats

    def _sort_out(self, papers: list[Paper], stored: dict[str, dict], holders: dict[str, dict[str, int]],
                  stats: IngestStats) -> tuple[list[Paper], list[Paper]]:
        """(todo, moved): the papers to embed (new, changed, or stored with other chunking; counted as added or
        updated), and the unchanged ones whose file, place or holders changed (new provenance, no re-embedding)."""
        todo: list[Paper] = []
        moved: list[Paper] = []
        for paper in papers:
            old = stored.get(paper.paper_id)
            if old is None:
                todo.append(paper)
                stats.added += 1
            elif old["hash"] != paper.content_hash or old.get("chunking") != self.chunking:
                todo.append(paper)
                stats.updated += 1
            else:
                stats.unchanged += 1
                if ((old.get("source"), old.get("position")) != (_source_key(paper.source), paper.position)
                        or _holders(old) != holders[paper.paper_id]):
                    moved.append(paper)  # same text, from another file or place: new provenance, no re-embedding
        return todo, moved

    def _record_moves(self, moved: list[Paper], stored: dict[str, dict],
                      holders: dict[str, dict[str, int]]) -> None:
        """Write the new provenance of papers whose text did not change (`_sort_out`'s `moved`)."""
        for part in range(0, len(moved), _IN_LIMIT):
            batch = moved[part:part + _IN_LIMIT]
            self._will_change()
            self.papers.update(ids=[p.paper_id for p in batch],
                               metadatas=[_paper_meta(p, stored[p.paper_id].get("chunks", 0), self.chunking,
                                                     stored[p.paper_id].get("sentences", 0))
                                          | _holder_fields(holders[p.paper_id], stored[p.paper_id])
                                          for p in batch])

    def _drop_vanished(self, papers: list[Paper], todo: list[Paper], stored: dict[str, dict], mirrored: set[str],
                       stats: IngestStats) -> None:
        """Papers that were ingested from these files before but are no longer in them: they leave those files'
        keys, and the index once no file holds them. (A removed paper whose file slot now holds a new one counts
        as an update.) Marks the change before the first write when anything is to be written."""
        incoming = {p.paper_id for p in papers}
        by_position = {(_source_key(p.source), p.position): p for p in todo if p.paper_id not in stored}
        stale: list[str] = []
        released: dict[str, dict[str, Any]] = {}  # paper id -> metadata update, for papers other files still hold
        for pid, meta in self._papers_from_sources(mirrored).items():
            if pid in incoming:
                continue
            still = {source: n for source, n in _holders(meta).items() if source not in mirrored}
            if still:
                released[pid] = _release(meta, still)
                continue
            stale.append(pid)
            if (meta.get("source"), meta.get("position")) in by_position:
                stats.added -= 1  # the same slot of the same file, with new text: an update
                stats.updated += 1
            else:
                stats.removed += 1
        if stale or released or todo:
            self._will_change()
        self._delete(stale)
        for ids in _parts(list(released)):
            self.papers.update(ids=ids, metadatas=[released[pid] for pid in ids])

    def _embed_and_store(self, todo: list[Paper], holders: dict[str, dict[str, int]], stats: IngestStats,
                         progress: Callable[[int, int], None] | None) -> None:
        """Embed `todo` in batches of INGEST_BATCH and store them (batches of shipped vectors gathered: `WRITE_BATCH`),
        counting the chunks into `stats`. The model embeds while a writer thread stores the write before. One writer
        keeps the writes in order."""
        done, hits = 0, getattr(self.vectors, "hits", 0)
        if progress:
            progress(0, len(todo))
        with ThreadPoolExecutor(1, thread_name_prefix="index-writer") as writer:
            pending: Future | None = None
            gathered: _Batch | None = None
            for start in range(0, len(todo), INGEST_BATCH):
                misses = getattr(self.vectors, "misses", None)
                embedded = self._embed(todo[start:start + INGEST_BATCH], holders)
                stats.embedded_chunks += len(embedded.nodes)
                if gathered is None:
                    gathered = embedded
                else:
                    gathered.extend(embedded)
                shipped = misses is not None and getattr(self.vectors, "misses", None) == misses
                if shipped and len(gathered.papers) < WRITE_BATCH and start + INGEST_BATCH < len(todo):
                    continue  # shipped vectors: written with the next batch (`WRITE_BATCH`)
                if pending is not None:
                    done += pending.result()
                    if progress:
                        progress(done, len(todo))
                pending, gathered = writer.submit(self._store, gathered), None
            if pending is not None:
                done += pending.result()
                if progress:
                    progress(done, len(todo))
        stats.shipped_chunks = getattr(self.vectors, "hits", 0) - hits

    def _will_change(self) -> None:
        """Before an upsert's first write: a new `generation` mark, so that whatever was read or cached under the
        old one (`rag.search.retrieve`'s corpus cache) is known to be stale, even if this ingest is killed before
        it ends. The upsert marks again when it ends."""
        if not self._changing:
            self._changing = True
            snapshot.forget(self.settings)  # first: from now on no reader trusts a snapshot of this store
            self.mark_changed()

    def _embed(self, papers: list[Paper], holders: dict[str, dict[str, int]]) -> _Batch:
        """Chunk and embed `papers` (the model's work; nothing is written)."""
        nodes, owners, texts, starts = self._chunk(papers)
        sentences = [sentence_spans(p.abstract) for p in papers]
        spans, placed = _place_sentences(sentences, [len(n.get_content()) for n in nodes], owners, texts, starts)
        vectors, span_vectors = self.vectors.embed_spans(texts, spans)
        for node, vector in zip(nodes, vectors, strict=True):
            node.embedding = vector.tolist()
        owners_arr = np.asarray(owners)
        counts = np.bincount(owners_arr, minlength=len(papers))
        return _Batch(
            papers=papers, nodes=nodes,
            sentences=self._sentence_records(papers, sentences, placed, span_vectors, vectors.shape[1]),
            paper_vectors=_paper_vectors(vectors, owners_arr, len(papers)),
            paper_metas=[_paper_meta(p, int(c), self.chunking, len(n)) | _holder_fields(holders[p.paper_id])
                         for p, c, n in zip(papers, counts, sentences, strict=True)])

    def _chunk(self, papers: list[Paper]) -> tuple[list[Any], list[int], list[str], list[int]]:
        """The chunks of `papers` as llama-index TextNodes (ids `<paper_id>#<n>`), with, for each, its paper (an
        index into `papers`), the text embedded ("title\n\nchunk") and where it starts in its abstract (-1: not
        found, or a title-only paper's one chunk)."""
        from llama_index.core.schema import Document, TextNode

        splitter = self._llama_index()[0]
        nodes: list[TextNode] = []
        owners: list[int] = []
        texts: list[str] = []  # what is embedded: "title\n\nchunk"
        starts: list[int] = []  # where each chunk starts in its abstract (-1: not found)
        docs = [Document(  # the splitter leaves room in each chunk for the title, which is embedded with it
            id_=paper.paper_id, text=paper.abstract,
            metadata={"paper_id": paper.paper_id, "title": paper.title, "decision": paper.decision},
            excluded_embed_metadata_keys=["paper_id", "decision"],
            excluded_llm_metadata_keys=["paper_id", "decision"],
            metadata_template="{value}", metadata_seperator="\n", text_template="{metadata_str}\n\n{content}",
        ) for paper in papers if paper.has_abstract]
        # One splitter call for the batch, not one a paper: each call costs llama-index's instrumentation (a span
        # and a uuid4 drawn from the OS), 13% of chunking the bundled list. The nodes are the same: ids, offsets
        # and previous/next links are made per document (the ids in a batch are distinct: `read_paths`).
        split: dict[str, list[Any]] = {}
        for node in splitter.get_nodes_from_documents(docs) if docs else ():
            split.setdefault(node.ref_doc_id or "", []).append(node)
        for i, paper in enumerate(papers):
            if not paper.has_abstract:  # one chunk, the title: what it can be found by (its sentences: none)
                nodes.append(TextNode(id_=f"{paper.paper_id}#0", text=paper.title,
                                      metadata={"paper_id": paper.paper_id, "title": paper.title,
                                                "decision": paper.decision, "chunk": 0}))
                owners.append(i)
                texts.append(paper.title)
                starts.append(-1)
                continue
            for n, node in enumerate(split.get(paper.paper_id, [])):
                node.id_ = f"{paper.paper_id}#{n}"
                node.metadata["chunk"] = n
                content = node.get_content()
                start = node.start_char_idx
                if start is None or paper.abstract[start:start + len(content)] != content:
                    start = paper.abstract.find(content)
                nodes.append(node)
                owners.append(i)
                texts.append(f"{paper.title}\n\n{content}" if paper.title else content)
                starts.append(start)
        return nodes, owners, texts, starts

    def _sentence_records(self, papers: list[Paper], sentences: _Spans, placed: _Spans, span_vectors: Any, dim: int
                          ) -> tuple[list[str], list[np.ndarray], list[str], list[dict]]:
        """(ids, vectors, texts, metadatas) of every sentence of `papers`: its vector pooled in its chunk
        (`_place_sentences`), or, for a sentence no chunk holds (or cut off by truncation), embedded on its own."""
        ids, documents, metadatas = [], [], []
        sentence_vectors: list[np.ndarray] = []
        missing: list[int] = []  # sentences no chunk holds (or cut off by truncation): embedded on their own
        for owner, paper in enumerate(papers):
            for m, ((a, b), (j, k)) in enumerate(zip(sentences[owner], placed[owner], strict=False)):
                ids.append(f"{paper.paper_id}@{m}")
                documents.append(paper.abstract[a:b])
                metadatas.append({"paper_id": paper.paper_id, "n": m, "start": a, "end": b})
                vector = span_vectors[j][k] if j >= 0 else None
                if vector is None or np.isnan(vector[0]):
                    missing.append(len(sentence_vectors))
                    vector = np.zeros(dim, dtype=np.float32)
                sentence_vectors.append(vector)
        if missing:
            for pos, vector in zip(missing, self.vectors.embed([documents[i] for i in missing]), strict=True):
                sentence_vectors[pos] = vector
        return ids, sentence_vectors, documents, metadatas

    def _store(self, batch: _Batch) -> int:
        """Write an embedded batch: chunks, sentences, then each paper's record (the completion marker).
        Returns the number of papers written."""
        # Also clears chunks a killed earlier run left behind without their paper record (the marker).
        self._delete([p.paper_id for p in batch.papers])
        if batch.nodes:
            self._llama_index()[1].add(batch.nodes)
        # Without their texts: each is its paper's abstract[start:end] (`sentences_of`), and a text given to Chroma
        # costs a third of the sentences' write (it indexes every document for full-text search, unused here).
        ids, vectors, _, metadatas = batch.sentences
        for part in range(0, len(ids), _ADD_LIMIT):
            self.sentences.add(ids=ids[part:part + _ADD_LIMIT], embeddings=np.asarray(vectors[part:part + _ADD_LIMIT]),
                               metadatas=metadatas[part:part + _ADD_LIMIT])
        self.papers.upsert(ids=[p.paper_id for p in batch.papers], embeddings=batch.paper_vectors,
                           documents=[p.abstract for p in batch.papers], metadatas=batch.paper_metas)
        return len(batch.papers)

    def _delete(self, paper_ids: list[str]) -> None:
        for part in _parts(paper_ids):
            self.papers.delete(ids=part)  # the completion marker goes first
            self.chunks.delete(where={"paper_id": {"$in": part}})
            self.sentences.delete(where={"paper_id": {"$in": part}})

    # ---- reading -------------------------------------------------------------------------------------

    def _stored_meta(self, paper_ids: list[str]) -> dict[str, dict]:
        found: dict[str, dict] = {}
        for part in _parts(list(dict.fromkeys(paper_ids))):
            got = self.papers.get(ids=part, include=["metadatas"])
            found.update(zip(got["ids"], got["metadatas"], strict=False))
        return found

    def _papers_from_sources(self, sources: set[str]) -> dict[str, dict]:
        """The stored papers these files hold: by their `src_<h>` keys, or (stored before those) their `source`."""
        found: dict[str, dict] = {}
        for part in _parts(sorted(sources)):
            where = {"$or": [{"source": {"$in": part}}, *({_holder_key(s): s} for s in part)]}
            got = self.papers.get(where=where, include=["metadatas"])
            found.update(zip(got["ids"], got["metadatas"], strict=False))
        return found

    @_guarded
    def paper_vectors(self, paper_ids: list[str]) -> dict[str, Any]:
        """The whole-paper vectors of these papers (`rag.explore`), by id; a store that fails is a StoreError."""
        found: dict[str, Any] = {}
        for part in _parts(paper_ids):
            got = self.papers.get(ids=part, include=["embeddings"])
            found.update(zip(got["ids"], got["embeddings"], strict=False))
        return found

    @_guarded
    def holders(self, paper_ids: list[str]) -> dict[str, tuple[str, dict[str, int]]]:
        """For each of these papers the store holds: its content hash and the files that hold it (path ->
        position), for an upload that may not replace another file's paper (`Engine.ingest`)."""
        return {pid: (str(meta.get("hash", "")), _holders(meta)) for pid, meta in self._stored_meta(paper_ids).items()}

    @_guarded
    def generation(self) -> str:
        """A mark that changes whenever an ingest changes this collection (`mark_changed`, before its first write and
        after its last): how a process sharing a Chroma server with another one learns that the other added papers,
        and what the corpus cache of `rag.search.retrieve` is keyed by. Empty for a store no ingest of this
        version has written to."""
        if not self.opened and (mark := self.mark()) is not None:
            return mark.generation
        return str((self.client.get_collection(self.papers.name).metadata or {}).get("generation", ""))

    @_guarded
    def mark_changed(self) -> str:
        """Give the collection a new `generation` mark (around an ingest that changes anything); returns it."""
        import uuid

        generation = uuid.uuid4().hex
        meta = dict(self.client.get_collection(self.papers.name).metadata or {})
        self.papers.modify(metadata={**meta, "generation": generation})
        return generation

    @_guarded
    def count(self) -> int:
        """The papers stored; while the client is not opened, the count the data dir's mark holds (the store has
        not changed since it was written), so a question at rest needs no chromadb."""
        if not self.opened and (mark := self.mark()) is not None:
            return mark.count
        return self.papers.count()

    @_guarded
    def all_chunk_vectors(self) -> tuple[list[str], np.ndarray]:
        """Every chunk's id and vector (for `rag.store.snapshot.Dense`)."""
        got = self.chunks.get(include=["embeddings"])
        return list(got["ids"]), np.asarray(got["embeddings"], dtype=np.float32)

    @_guarded
    def chunk_count(self) -> int:
        return self.chunks.count()

    @_guarded
    def all_papers(self) -> list[StoredPaper]:
        """Every complete paper, in a stable order (by id)."""
        got = self.papers.get(include=["metadatas", "documents"])
        papers = [_stored(pid, doc, meta)
                  for pid, doc, meta in zip(got["ids"], got["documents"], got["metadatas"], strict=False)]
        return sorted(papers, key=lambda p: p.paper_id)

    @_guarded
    def query_chunks(self, vector: list[float], n: int, decisions: list[str] | None = None,
                     paper_ids: list[str] | None = None) -> list[tuple[str, float]]:
        """The `n` nearest chunks as (paper_id, cosine similarity), best first, optionally only of papers with
        one of `decisions` and/or among `paper_ids`. Asks Chroma for ids and distances only (the paper id is
        in the chunk id): 2 ms instead of 12 ms through llama-index's query, which fetches every text."""
        if paper_ids == []:
            return []
        conditions: list[dict] = []
        if decisions:
            conditions.append({"decision": {"$in": list(decisions)}})
        if paper_ids is not None:
            conditions.append({"paper_id": {"$in": list(paper_ids)}})
        where = None if not conditions else conditions[0] if len(conditions) == 1 else {"$and": conditions}
        got = self.chunks.query(query_embeddings=[vector], n_results=n, where=where, include=["distances"])
        # Cosine space: distance = 1 - cosine similarity.
        return [(cid.rsplit("#", 1)[0], 1.0 - float(d))
                for cid, d in zip(got["ids"][0], got["distances"][0], strict=False)]

    @_guarded
    def sentences_of(self, papers: list[StoredPaper]) -> dict[str, Sentences]:
        """The stored sentences of these papers, read by id (twice as fast as a `paper_id` filter). Papers stored
        without sentences are missing from the result."""
        by_id = {p.paper_id: p for p in papers}
        ids = [f"{p.paper_id}@{n}" for p in by_id.values() for n in range(p.sentences)]
        found: dict[str, list[tuple[int, str, Any]]] = {}
        for part in _parts(ids):
            got = self.sentences.get(ids=part, include=["documents", "metadatas", "embeddings"])
            for doc, meta, vector in zip(got["documents"], got["metadatas"], got["embeddings"], strict=False):
                pid = meta["paper_id"]
                if "start" in meta:  # stored without its text (see `_store`); before, the text was the document
                    doc = by_id[pid].abstract[int(meta["start"]):int(meta["end"])]
                found.setdefault(pid, []).append((meta["n"], doc, vector))
        out = {}
        for pid, items in found.items():
            items.sort(key=lambda item: item[0])
            out[pid] = Sentences([doc for _, doc, _ in items],
                                 np.asarray([v for _, _, v in items], dtype=np.float32))
        return out


def _place_sentences(sentences: _Spans, lengths: list[int], owners: list[int], texts: list[str], starts: list[int]
                     ) -> tuple[_Spans, _Spans]:
    """Each sentence is pooled inside the chunk that holds most of it. `sentences`: each paper's sentence spans in
    its abstract; per chunk, its length, paper (`owners`), embedded text and start in the abstract (`_chunk`).
    Returns (spans: per chunk, the spans to pool in its embedded text; placed: per paper and sentence, (chunk,
    index into that chunk's spans), or (-1, -1) when no chunk holds it)."""
    spans: _Spans = [[] for _ in lengths]
    placed: _Spans = []
    chunks_of: dict[int, list[int]] = {}
    for j, owner in enumerate(owners):
        chunks_of.setdefault(owner, []).append(j)
    for owner, paper_sentences in enumerate(sentences):
        placed.append([])
        for a, b in paper_sentences:
            best, best_overlap = -1, 0
            for j in chunks_of.get(owner, []):
                lo, hi = starts[j], starts[j] + lengths[j]
                overlap = min(b, hi) - max(a, lo) if starts[j] >= 0 else 0
                if overlap > best_overlap:
                    best, best_overlap = j, overlap
            if best < 0:
                placed[-1].append((-1, -1))
                continue
            shift = len(texts[best]) - lengths[best] - starts[best]  # abstract -> text
            lo, hi = starts[best], starts[best] + lengths[best]
            spans[best].append((max(a, lo) + shift, min(b, hi) + shift))
            placed[-1].append((best, len(spans[best]) - 1))
    return spans, placed


def _paper_vectors(vectors: np.ndarray, owners: np.ndarray, n: int) -> list[list[float]]:
    """Each paper's whole-paper vector: the normalized mean of its chunks' vectors."""
    out = []
    for i in range(n):
        v = vectors[owners == i].mean(axis=0)
        out.append((v / max(float(np.linalg.norm(v)), 1e-12)).tolist())
    return out


def _paper_meta(paper: Paper, n_chunks: int, chunking: str, n_sentences: int) -> dict[str, Any]:
    return {
        "title": paper.title, "label": paper.label, "authors": "; ".join(paper.authors),
        "decision": paper.decision, "venue": paper.venue, "url": paper.url,
        "keywords": "; ".join(paper.keywords), "year": paper.year if paper.year is not None else -1,
        "source": _source_key(paper.source), "position": paper.position, "hash": paper.content_hash,
        "chunks": n_chunks, "chunking": chunking, "sentences": n_sentences,
        "has_abstract": paper.has_abstract, "enriched_from": paper.enriched_from,
    }


def _holder_key(source: str) -> str:
    return "src_" + hashlib.sha256(source.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def _holder_fields(holders: dict[str, int], old: dict[str, Any] | None = None) -> dict[str, Any]:
    """The metadata naming the files that hold a paper (see the module docstring). Keys of files in the stored
    metadata `old` that no longer hold it are set to None, which removes them in an update."""
    fields: dict[str, Any] = {key: None for key in old or {} if key.startswith(("src_", "pos_"))}
    for source, position in holders.items():
        key = _holder_key(source)
        fields[key], fields["pos_" + key[4:]] = source, position
    return fields


def _holders(meta: dict[str, Any]) -> dict[str, int]:
    """The files that hold a stored paper and its position in each; a paper stored before these were kept is held
    by its `source` alone."""
    found = {value: int(meta.get("pos_" + key[4:], 0)) for key, value in meta.items() if key.startswith("src_")}
    return found or ({meta["source"]: int(meta.get("position", 0))} if meta.get("source") else {})


def _held_by(paper: Paper, old: dict[str, Any] | None, mirrored: set[str]) -> dict[str, int]:
    """The files that hold `paper` after this ingest: those it was just read from, and those it was stored with
    that were not read again in full (a file with a broken record may still hold it)."""
    kept = {source: n for source, n in _holders(old or {}).items() if source not in mirrored}
    return kept | {_source_key(source): n for source, n in ((paper.source, paper.position), *paper.also_in)}


def _release(meta: dict[str, Any], holders: dict[str, int]) -> dict[str, Any]:
    """The metadata update for a stored paper that only `holders` still hold. If it was shown from a file that
    dropped it, it is shown from one of them instead (and an untitled paper relabelled by that file and place)."""
    update = _holder_fields(holders, meta)
    if meta.get("source") not in holders:
        source = min(holders)
        update.update(source=source, position=holders[source])
        if not meta.get("title"):
            update["label"] = f"{Path(source).name} #{holders[source]}"
    return update


def _stored(pid: str, abstract: str, meta: dict[str, Any]) -> StoredPaper:
    year = meta.get("year", -1)
    return StoredPaper(
        paper_id=pid, abstract=abstract or "", title=meta.get("title", ""), label=meta.get("label", pid),
        authors=tuple(a for a in str(meta.get("authors", "")).split("; ") if a),
        decision=meta.get("decision", ""), venue=meta.get("venue", ""), url=meta.get("url", ""),
        year=year if isinstance(year, int) and year >= 0 else None, source=meta.get("source", ""),
        content_hash=meta.get("hash", ""), sentences=int(meta.get("sentences", 0)),
        has_abstract=bool(meta.get("has_abstract", True)), enriched_from=meta.get("enriched_from", ""),
    )


def _source_key(source: str) -> str:
    return str(Path(source).resolve()) if source else ""


def _parts(items: list[str]) -> Iterable[list[str]]:
    for start in range(0, len(items), _IN_LIMIT):
        yield items[start:start + _IN_LIMIT]
