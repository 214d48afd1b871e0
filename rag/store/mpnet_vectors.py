"""Whole-paper all-mpnet-base-v2 vectors, the third ranking of hybrid search: shipped, cached, or embedded.

Why a second model: questions that describe a paper in other words than its own (issue 29) are where MiniLM's
chunk vectors and BM25 both miss; one mpnet vector per paper ("title. abstract", 384 tokens) found the right paper
first for 0.786 of 252 such read questions against MiniLM's 0.667, and fused beside the two it lifted the dev sets'
hit@1 / hit@5 from 0.847 / 0.958 to 0.879 / 0.979 (eval/DECISIONS.md, "A second embedder"). It is not the index's
embedder: chunks, sentences, snippets and the answer signals stay MiniLM's; only the paper ranking gains a vote.

Where a paper's vector comes from, cheapest first (its key: a hash of exactly the text embedded, so an edited paper
is embedded again):
- `rag/data/iclr2025_mpnet.npz`, shipped for the 3,706 bundled papers (built by `rag/data/build_vectors.py
  --mpnet`): embedding them takes ~25 min on 2 cores, the file 2.8 MB (int8 with a per-vector scale, as the
  MiniLM file);
- `<data dir>/corpus/<collection>.mpnet.npz`, this data dir's cache of the papers it embedded itself;
- the model (`rag.store.mpnet`), about 0.5 s a paper on 2 cores, the result added to that cache.
They live beside the store rather than in a Chroma collection, like the BM25 index: the retriever's corpus
(`rag.search.retrieve`) holds them as one matrix and searches it exactly (3,706 x 768 in about 2 ms).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Any
from collections.abc import Callable

import numpy as np

from rag.store.prebuilt import dequantize, quantize

SHIPPED = Path(__file__).resolve().parents[1] / "data" / "iclr2025_mpnet.npz"
FORMAT = "mpnet-v1"
DIM = 768


def paper_text(title: str, abstract: str) -> str:
    """What is embedded for a paper: sentence-transformers' usual "title. abstract" (the title alone without one)."""
    title, abstract = (title or "").strip(), (abstract or "").strip()
    return f"{title}. {abstract}" if title and abstract else (title or abstract)


def key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).digest()[:16]


def read_file(path: Path, identity: str) -> dict[bytes, np.ndarray]:
    """key -> vector from a shipped or cached file made with this model; {} if absent, unreadable or another's."""
    try:
        return dict(_read(path, identity, path.stat().st_mtime_ns))
    except OSError:
        return {}


@functools.lru_cache(maxsize=4)
def _read(path: Path, identity: str, _mtime: int) -> dict[bytes, np.ndarray]:
    """The file's entries, read once per version of it (its mtime): without this the shipped file was read and
    dequantized again at every corpus refresh (every 15 s of `rag serve`'s background indexing)."""
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
            if meta.get("format") != FORMAT or meta.get("model") != identity:
                return {}
            vectors = dequantize(data["q"], data["scale"])
            return {bytes(k): v for k, v in zip(data["keys"], vectors, strict=False)}
    except Exception:  # absent, half-written by a killed process, or of another format: embed again
        return {}


def write_file(path: Path, identity: str, entries: dict[bytes, np.ndarray], extra: dict[str, Any] | None = None
               ) -> None:
    """Write `entries` whole, then rename: a reader never sees half a file."""
    keys = list(entries)
    vectors = np.stack([entries[k] for k in keys]) if keys else np.zeros((0, DIM), np.float32)
    q, scale = quantize(vectors)
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = json.dumps({"format": FORMAT, "model": identity, **(extra or {})})
    with tempfile.NamedTemporaryFile("wb", dir=path.parent, prefix=path.name, suffix=".tmp", delete=False) as f:
        tmp = f.name
        np.savez(f, meta=np.array(meta), keys=np.frombuffer(b"".join(keys), np.uint8).reshape(len(keys), 16),
                 q=q, scale=scale)
    os.replace(tmp, path)


class PaperVectors:
    """The mpnet side of retrieval: `papers(...)` gives the paper matrix, `query(text)` the question's vector.
    The model is loaded on first need (`load_model`, rag.store.mpnet's cached instance), which a question always
    has and an all-shipped corpus build does not."""

    def __init__(self, cache: Path | None, load_model: Callable[[], Any], identity: str,
                 shipped: Path = SHIPPED) -> None:
        self.cache, self.shipped, self.identity = cache, shipped, identity
        self._load_model = load_model
        self._lock = threading.Lock()
        self.embedded = 0  # papers this process embedded (not shipped, not cached): the ingest can report them

    @property
    def model(self) -> Any:
        return self._load_model()

    def query(self, text: str) -> np.ndarray:
        return self.model.embed([text])[0]

    def papers(self, papers: list[Any], progress: Callable[[int, int], None] | None = None, prune: bool = True
               ) -> np.ndarray:
        """One unit row per paper (objects with `title` and `abstract`), in order. `prune`: `papers` are all the
        store holds (the corpus), so the cache keeps theirs only; False (an ingest's new papers) adds to it."""
        texts = [paper_text(p.title, p.abstract) for p in papers]
        keys = [key(t) for t in texts]
        with self._lock:
            found = read_file(self.shipped, self.identity)
            cached = read_file(self.cache, self.identity) if self.cache else {}
            todo = [i for i, k in enumerate(keys) if k not in found and k not in cached]
            if todo:
                fresh: dict[bytes, np.ndarray] = {}
                for start in range(0, len(todo), 32):
                    part = todo[start:start + 32]
                    # As the cache will hold them (int8), so a paper's vector is the same in this process and the next.
                    rows = dequantize(*quantize(self.model.embed([texts[i] for i in part])))
                    for i, vector in zip(part, rows, strict=True):
                        fresh[keys[i]] = vector
                    if progress:
                        progress(min(start + 32, len(todo)), len(todo))
                self.embedded += len(fresh)
                cached.update(fresh)
                if self.cache:
                    keep = {k: cached[k] for k in dict.fromkeys(keys) if k in cached} if prune else cached
                    with contextlib.suppress(OSError):  # a data dir that cannot be written only loses the cache
                        write_file(self.cache, self.identity, keep)
        out = np.empty((len(papers), DIM), dtype=np.float32)
        for i, k in enumerate(keys):
            out[i] = found[k] if k in found else cached[k]
        return out
