"""Prebuilt vectors: the bundled ICLR 2025 list's chunk and sentence vectors, shipped so indexing it embeds nothing.

The bundled papers (rag/data/) and the shipped embedder change only with a release, yet embedding their 3,706
papers took 14 minutes on a loaded 2-core machine (issue 30). `rag/data/build_vectors.py` embeds them once, through
the same `PaperIndex` code an ingest runs, and writes `rag/data/iclr2025_vectors.npz`; at ingest the index asks
`vectors_for(embedder, chunking)` for its embedder, and gets back either the embedder itself or a `Prebuilt` that
answers `embed_spans` / `embed` from the file for every text it holds and passes the rest to the embedder.

What a vector is keyed by, so a stale one is never used:
- the file as a whole: the embedder's identity (`minilm:<sha256 of model.onnx>:<max tokens>`) and the index's chunk
  settings (`chunk_size/chunk_overlap/sentence format`). Another embedder or setting: the file is not used at all;
- each entry: a hash of exactly what the embedder is given, the text ("title\\n\\nchunk") and the character spans
  of its sentences (late chunking pools them from the same pass). An edited paper, a user's own file, or a chunk
  that falls differently has other text or spans, finds no entry, and is embedded.
The file also lists each bundled paper's (id, content hash), so a test notices a data file edited without a rebuild.

Format (numpy `.npz`, read with `allow_pickle=False`): `meta` (JSON), `keys` uint8 [texts, 16], `offsets` int32
[texts + 1] (rows of text i: offsets[i] .. offsets[i+1], its own vector first, then one per span), `q` int8
[rows, dim] and `scale` float32 [rows] (vector = q * scale, renormalized; NaN scale: a span the model never saw,
cut off by truncation, which the index then embeds on its own), `papers` (JSON list of [id, hash]). int8 with a
per-vector scale rather than float16: half the size, 8.3 MB compressed (the choice and its figures: rag/data/README.md).
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
from pathlib import Path
from typing import Any
from collections.abc import Iterable

import numpy as np

VECTORS = Path(__file__).resolve().parents[1] / "data" / "iclr2025_vectors.npz"
FORMAT = "v1"


def entry_key(text: str, spans: Iterable[tuple[int, int]] = ()) -> bytes:
    """What a vector is filed under: the text given to the embedder and the spans pooled from it."""
    payload = json.dumps([text, [list(s) for s in spans]], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8", "surrogateescape")).digest()[:16]


class Shipped:
    """The loaded file: a key -> rows lookup over the dequantized vectors."""

    def __init__(self, path: Path) -> None:
        with np.load(path, allow_pickle=False) as data:
            self.meta: dict[str, Any] = json.loads(str(data["meta"]))
            keys, offsets = data["keys"], data["offsets"]
            q, scale = data["q"], data["scale"]
            self.papers = [tuple(p) for p in json.loads(str(data["papers"]))]
        self.vectors = dequantize(q, scale)  # NaN rows (NaN scale) stay NaN
        self.rows = {bytes(k): (int(a), int(b)) for k, a, b in zip(keys, offsets[:-1], offsets[1:], strict=False)}

    def lookup(self, text: str, n_spans: int, spans: Iterable[tuple[int, int]] = ()) -> np.ndarray | None:
        """The text's vector and its spans' ([1 + n_spans, dim]), or None when the file does not hold them."""
        found = self.rows.get(entry_key(text, spans))
        if found is None or found[1] - found[0] != 1 + n_spans:
            return None
        return self.vectors[found[0]:found[1]]


@functools.lru_cache(maxsize=4)
def load(path: Path = VECTORS) -> Shipped | None:
    """The shipped vectors, read once per process (~0.1 s), or None if the file is absent (a trimmed install)."""
    return Shipped(path) if path.is_file() else None


class Prebuilt:
    """An embedder's `embed_spans` / `embed`, answered from the shipped vectors where they hold the text, when the
    file was built with this embedder and these chunk settings (else every text goes to the embedder). The file
    is read on first use, so a process that only answers questions never reads it. `hits` / `misses` count the
    chunk texts each way (the ingest's summary reports the hits)."""

    def __init__(self, embedder: Any, chunking: str, path: Path = VECTORS) -> None:
        self.embedder, self.chunking, self.path = embedder, chunking, path
        self.hits = self.misses = 0
        self._lock = threading.Lock()
        self._shipped: Shipped | None | bool = False  # False: not looked at yet

    @property
    def shipped(self) -> Shipped | None:
        """The file's vectors if they fit this embedder and these settings, else None."""
        with self._lock:
            if self._shipped is False:
                shipped = load(self.path)
                fits = shipped is not None and shipped.meta.get("format") == FORMAT and \
                    shipped.meta.get("embedder") == getattr(self.embedder, "identity", None) and \
                    shipped.meta.get("chunking") == self.chunking
                self._shipped = shipped if fits else None
            return self._shipped if isinstance(self._shipped, Shipped) else None

    def embed_spans(self, texts: list[str], spans: list[list[tuple[int, int]]]
                    ) -> tuple[np.ndarray, list[np.ndarray]]:
        shipped = self.shipped
        if shipped is None:
            self.misses += len(texts)
            return self.embedder.embed_spans(texts, spans)
        found = [shipped.lookup(t, len(s), s) for t, s in zip(texts, spans, strict=False)]
        todo = [i for i, rows in enumerate(found) if rows is None]
        self.hits += len(texts) - len(todo)
        self.misses += len(todo)
        if not todo:
            return np.stack([rows[0] for rows in found]), [rows[1:].copy() for rows in found]  # type: ignore[index]
        vectors, span_vectors = self.embedder.embed_spans([texts[i] for i in todo], [spans[i] for i in todo])
        out = np.empty((len(texts), vectors.shape[1]), dtype=np.float32)
        span_out: list[np.ndarray] = [np.empty((0, vectors.shape[1]), np.float32)] * len(texts)
        for i, rows in enumerate(found):
            if rows is not None:
                out[i], span_out[i] = rows[0], rows[1:].copy()
        for j, i in enumerate(todo):
            out[i], span_out[i] = vectors[j], span_vectors[j]
        return out, span_out

    def embed(self, texts: list[str]) -> np.ndarray:
        """(Sentences no chunk pass saw; not counted as chunks.)"""
        shipped = self.shipped
        found = [shipped.lookup(t, 0) for t in texts] if shipped is not None else [None] * len(texts)
        todo = [i for i, rows in enumerate(found) if rows is None]
        if len(todo) == len(texts):
            return self.embedder.embed(texts)
        fresh = self.embedder.embed([texts[i] for i in todo]) if todo else None
        dim = next(rows.shape[1] for rows in found if rows is not None)
        out = np.empty((len(texts), dim), dtype=np.float32)
        for i, rows in enumerate(found):
            if rows is not None:
                out[i] = rows[0]
        for j, i in enumerate(todo):
            out[i] = fresh[j]  # type: ignore[index]  # fresh is set whenever todo is not empty
        return out


def vectors_for(embedder: Any, chunking: str, path: Path = VECTORS) -> Any:
    """What the index embeds with: a `Prebuilt` over `embedder` (see there), or `embedder` itself when no vectors
    are shipped (a trimmed install) or the embedder is not the shipped kind."""
    if not path.is_file() or not str(getattr(embedder, "identity", "")).startswith("minilm:"):
        return embedder
    return Prebuilt(embedder, chunking, path)


class Recorder:
    """Wraps an embedder and keeps every text it embeds with its spans and vectors (what `build_vectors.py` writes)."""

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder
        self.entries: dict[bytes, np.ndarray] = {}

    def embed_spans(self, texts: list[str], spans: list[list[tuple[int, int]]]
                    ) -> tuple[np.ndarray, list[np.ndarray]]:
        out, span_out = self.embedder.embed_spans(texts, spans)
        for text, text_spans, vector, span_vectors in zip(texts, spans, out, span_out, strict=False):
            self.entries[entry_key(text, text_spans)] = np.vstack([vector[None, :], span_vectors])
        return out, span_out

    def embed(self, texts: list[str]) -> np.ndarray:
        out = self.embedder.embed(texts)
        for text, vector in zip(texts, out, strict=True):
            self.entries[entry_key(text)] = vector[None, :]
        return out


def quantize(vectors: np.ndarray, dtype: str = "int8") -> tuple[np.ndarray, np.ndarray]:
    """(q, scale) with vectors ≈ q * scale per row. int8: symmetric, scale = max |v| / 127; float16 / float32 are
    stored as they are with scale 1 (kept for measuring the choice). NaN rows get a NaN scale."""
    nan = np.isnan(vectors).any(axis=1)
    clean = np.where(nan[:, None], 0.0, vectors)
    if dtype == "int8":
        scale = np.abs(clean).max(axis=1) / 127.0
        q = np.round(clean / np.clip(scale, 1e-12, None)[:, None]).astype(np.int8)
    else:
        scale, q = np.ones(len(vectors), np.float32), clean.astype(dtype)
    scale = np.where(nan, np.nan, scale).astype(np.float32)
    return q, scale


def dequantize(q: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Unit rows from `quantize`'s (q, scale)."""
    vectors = q.astype(np.float32) * scale[:, None]
    return vectors / np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12, None)


def write(path: Path, entries: dict[bytes, np.ndarray], meta: dict[str, Any], papers: list[tuple[str, str]],
          dtype: str = "int8") -> None:
    """Write recorded entries as a compressed `.npz`, sorted by key and with fixed zip timestamps, so that a rebuild
    of the same data gives the same bytes (and the checksum in rag/data/README.md stays true)."""
    write_quantized(path, {key: quantize(rows.astype(np.float32), dtype) for key, rows in entries.items()}, meta,
                    papers, dtype)


def stored_rows(path: Path = VECTORS) -> tuple[dict[str, Any], dict[bytes, tuple[np.ndarray, np.ndarray]]]:
    """The file's meta and its entries exactly as stored (key -> (q, scale) rows, not dequantized), so that an
    update (`build_vectors.py --update`) writes the entries it keeps back bit for bit."""
    with np.load(path, allow_pickle=False) as data:
        meta = json.loads(str(data["meta"]))
        keys, offsets, q, scale = data["keys"], data["offsets"], data["q"], data["scale"]
    return meta, {bytes(k): (q[a:b], scale[a:b]) for k, a, b in zip(keys, offsets[:-1], offsets[1:], strict=False)}


def write_quantized(path: Path, entries: dict[bytes, tuple[np.ndarray, np.ndarray]], meta: dict[str, Any],
                    papers: list[tuple[str, str]], dtype: str = "int8") -> None:
    """`write` for entries already quantized (key -> (q, scale) rows; `quantize` works row by row, so quantizing
    entry by entry gives the same rows as quantizing them all at once)."""
    import io
    import zipfile

    keys = sorted(entries)
    arrays = {"meta": np.array(json.dumps({**meta, "format": FORMAT, "dtype": dtype}, sort_keys=True)),
              "keys": np.frombuffer(b"".join(keys), np.uint8).reshape(len(keys), 16),
              "offsets": np.cumsum([0] + [len(entries[k][0]) for k in keys]).astype(np.int32),
              "q": np.vstack([entries[k][0] for k in keys]), "scale": np.concatenate([entries[k][1] for k in keys]),
              "papers": np.array(json.dumps(sorted(papers)))}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, array in arrays.items():
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, array, allow_pickle=False)
            info = zipfile.ZipInfo(name + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, buffer.getvalue())
