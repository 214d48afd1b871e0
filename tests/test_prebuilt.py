"""The shipped vectors of the bundled list (rag.store.prebuilt): they agree with the embedder, an ingest of the bundled
papers embeds nothing, anything else (another chunk setting, another embedder, an edited paper) is embedded, and the
file matches the bundled data files and its README checksum."""

from __future__ import annotations

import hashlib
import json
import random
import re
from pathlib import Path

import numpy as np
import pytest
from helpers import ROOT

from rag.store import prebuilt
from rag.store.catalog import BUNDLED, WITH_ABSTRACTS, enrich
from rag.config import Settings
from rag.store.embeddings import MiniLMEmbedding
from rag.engine import Engine
from rag.store.index import INGEST_BATCH, PaperIndex
from rag.store.ingest import read_paths


@pytest.fixture(scope="module")
def bundled():
    papers, _ = enrich(read_paths(BUNDLED).papers)
    return papers


@pytest.fixture(scope="module")
def sample_file(tmp_path_factory, bundled):
    """30 bundled records (24 with abstracts, 6 title-only) in a file of their own, as a user might pass them."""
    rng = random.Random(30)
    lines = [line for path in BUNDLED for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    with_abstract = [line for line in lines if '"has_abstract": false' not in line]
    title_only = [line for line in lines if '"has_abstract": false' in line]
    path = tmp_path_factory.mktemp("sample") / "sample.jsonl"
    path.write_text("\n".join(rng.sample(with_abstract, 24) + rng.sample(title_only, 6)) + "\n", encoding="utf-8")
    return path


class Counted:
    """The real embedder, counting the texts it is asked to embed (the observable "was anything embedded")."""

    def __init__(self, embedder):
        self.embedder, self.texts = embedder, 0
        self.identity, self.tokens = embedder.identity, embedder.tokens

    def embed_spans(self, texts, spans):
        self.texts += len(texts)
        return self.embedder.embed_spans(texts, spans)

    def embed(self, texts):
        self.texts += len(texts)
        return self.embedder.embed(texts)


def _index(tmp_path, embedder, **settings) -> PaperIndex:
    return PaperIndex(Settings.load(data_dir=tmp_path, **settings), embedder)


def test_shipped_vectors_are_the_embedders_own(tmp_path, bundled):
    """A sample recomputed with the shipped embedder through the ingest's own chunking: every text is in the
    file, and every vector (chunks and sentences) has cosine >= 0.999 with the shipped one."""
    rng = random.Random(7)
    sample = rng.sample([p for p in bundled if p.has_abstract], 40) + rng.sample(
        [p for p in bundled if not p.has_abstract], 8)
    embedder = MiniLMEmbedding()
    embedder.remember = False  # computed here, not taken from the tests' memo (conftest.py)
    index = PaperIndex(Settings.load(data_dir=tmp_path), embedder)
    index.vectors = recorder = prebuilt.Recorder(embedder)
    for start in range(0, len(sample), INGEST_BATCH):
        index._embed(sample[start:start + INGEST_BATCH], {p.paper_id: {} for p in sample})
    shipped = prebuilt.load()
    assert shipped is not None
    cosines = []
    for key, fresh in recorder.entries.items():
        start, end = shipped.rows[key]
        stored = shipped.vectors[start:end]
        assert stored.shape == fresh.shape
        assert (np.isnan(stored[:, 0]) == np.isnan(fresh[:, 0])).all()  # spans truncation cut off: in both
        seen = ~np.isnan(fresh[:, 0])
        cosines += list((stored[seen] * fresh[seen]).sum(axis=1) / np.linalg.norm(fresh[seen], axis=1))
    assert len(recorder.entries) >= len(sample) and len(cosines) > 300
    assert min(cosines) >= 0.999, min(cosines)


def test_ingest_of_bundled_papers_embeds_nothing_and_searches_them(tmp_path, sample_file):
    engine = Engine(Settings.load(data_dir=tmp_path))
    counted = Counted(engine.index.embedder)
    engine.index.vectors = prebuilt.vectors_for(counted, engine.index.chunking)
    stats = engine.ingest([sample_file])
    assert stats.added == 30 and stats.embedded_chunks >= 30
    assert (stats.shipped_chunks, counted.texts) == (stats.embedded_chunks, 0)
    assert "loaded from the shipped vectors" in stats.summary()
    record = json.loads(sample_file.read_text(encoding="utf-8").splitlines()[0])
    answer = engine.ask(record["title"])
    assert answer.sources and answer.sources[0].paper_id == record["id"]


def test_an_edited_paper_and_a_users_own_file_are_embedded(tmp_path, sample_file):
    lines = sample_file.read_text(encoding="utf-8").splitlines()
    edited = json.loads(lines[0])
    edited["abstract"] = "We revisit this question. " + edited["abstract"]
    own = tmp_path / "own.jsonl"
    own.write_text("\n".join([json.dumps(edited), *lines[1:3]]) + "\n", encoding="utf-8")
    index = _index(tmp_path / "index", Counted(MiniLMEmbedding()))
    stats = index.upsert(read_paths([own]).papers)
    assert stats.added == 3
    assert index.vectors.misses >= 1 and index.embedder.texts == index.vectors.misses  # the edited paper's chunks
    assert stats.shipped_chunks == index.vectors.hits >= 2  # the two unedited papers


@pytest.mark.parametrize("change", ["chunk_size", "embedder"])
def test_another_chunk_setting_or_embedder_embeds_everything(tmp_path, sample_file, change):
    class Truncating(MiniLMEmbedding):
        max_length = 128  # another embedder: its identity says so ("minilm:<sha>:128")

    embedder = Counted(Truncating() if change == "embedder" else MiniLMEmbedding())
    index = _index(tmp_path, embedder, **({"chunk_size": 200} if change == "chunk_size" else {}))
    stats = index.upsert(read_paths([sample_file]).papers)
    assert stats.added == 30 and stats.shipped_chunks == 0
    assert embedder.texts >= stats.embedded_chunks >= 30


def test_the_shipped_file_matches_the_bundled_papers_and_settings(bundled):
    """Fails when a bundled data file, the embedder or a default chunk setting changes without
    `make data` (python rag/data/build_vectors.py) being run again."""
    shipped = prebuilt.load()
    assert shipped is not None, "rag/data/iclr2025_vectors.npz is missing: run make data"
    defaults = Settings()
    from rag.store.index import SENTENCE_FORMAT
    from rag.store.embeddings import SHA256, MAX_TOKENS

    assert shipped.meta["embedder"] == f"minilm:{SHA256['model.onnx'][:12]}:{MAX_TOKENS}"
    assert shipped.meta["chunking"] == f"{defaults.chunk_size}/{defaults.chunk_overlap}/{SENTENCE_FORMAT}"
    missing = {(p.paper_id, p.content_hash) for p in bundled} - set(shipped.papers)
    assert not missing, f"{len(missing)} bundled papers changed since the vectors were built: run make data"
    assert len(bundled) == 3706 and WITH_ABSTRACTS.name == "iclr2025.jsonl"


def test_the_readme_states_the_shipped_files_checksum():
    text = (ROOT / "rag" / "data" / "README.md").read_text(encoding="utf-8")
    stated = re.search(r"iclr2025_vectors\.npz.*?sha256 `([0-9a-f]{64})`", text, re.S)
    assert stated, "rag/data/README.md names no sha256 for iclr2025_vectors.npz"
    assert stated.group(1) == hashlib.sha256(Path(prebuilt.VECTORS).read_bytes()).hexdigest()


class _Lookups:
    """Stands in for the embedder: notes every text the index asks it for that the shipped file lacks, and
    answers with zero vectors (what is checked is which texts are asked for, not their vectors)."""

    def __init__(self, embedder, shipped):
        self.identity, self.tokens, self.shipped, self.missing = embedder.identity, embedder.tokens, shipped, []

    def embed_spans(self, texts, spans):
        self.missing += [t for t, s in zip(texts, spans, strict=False) if self.shipped.lookup(t, len(s), s) is None]
        return np.zeros((len(texts), 384), np.float32), [np.zeros((len(s), 384), np.float32) for s in spans]

    def embed(self, texts):
        self.missing += [t for t in texts if self.shipped.lookup(t, 0) is None]
        return np.zeros((len(texts), 384), np.float32)


def test_every_bundled_and_seed_paper_loads_from_the_file_without_embedding(tmp_path):
    """The (id, content hash) check above misses a paper whose text is the same but whose chunks or sentence spans
    changed (a new sentence-splitting rule): its chunks were embedded at every `make run` (AutoG and TempMe were,
    until `build_vectors.py --update`), and so were the seeds' own versions of two bundled papers, which `make run`
    ingests first. Here the whole list and those versions go through the ingest's chunking, and every text it
    would embed must be in the file."""
    shipped = prebuilt.load()
    index = PaperIndex(Settings.load(data_dir=tmp_path), MiniLMEmbedding())
    index.vectors = lookups = _Lookups(index.embedder, shipped)
    for paths in ([ROOT / "seeds"], BUNDLED):  # `make run`: `rag ingest seeds`, then the list in the background
        papers, _ = enrich(read_paths(paths).papers)
        for start in range(0, len(papers), INGEST_BATCH):
            index._embed(papers[start:start + INGEST_BATCH], {p.paper_id: {} for p in papers})
    assert len(papers) == 3706
    assert not lookups.missing, [t[:60] for t in lookups.missing]


def test_an_update_embeds_only_what_the_file_lacks_and_keeps_the_rest_bit_for_bit(tmp_path):
    from rag.data.build_vectors import update

    meta, rows = prebuilt.stored_rows()
    with np.load(prebuilt.VECTORS, allow_pickle=False) as data:
        papers = [tuple(p) for p in json.loads(str(data["papers"]))]
    gone = sorted(rows)[100]  # an entry the data needs, lost; and one no text asks for
    stale = dict(rows)
    del stale[gone]
    stale[b"\0" * 16] = rows[sorted(rows)[0]]
    path = tmp_path / "vectors.npz"
    prebuilt.write_quantized(path, stale, meta, papers, meta["dtype"])
    figures = update(path)
    assert (figures["embedded"], figures["dropped"]) == (1, 1)
    _, updated = prebuilt.stored_rows(path)
    assert set(updated) == set(rows)
    assert all(np.array_equal(updated[k][0], rows[k][0]) and np.array_equal(updated[k][1], rows[k][1], equal_nan=True)
               for k in rows if k != gone)
    fresh, before = (q.astype(np.float32) * s[:, None] for q, s in (updated[gone], rows[gone]))
    seen = ~np.isnan(before[:, 0])
    cosines = (fresh[seen] * before[seen]).sum(axis=1) / np.linalg.norm(fresh[seen], axis=1) / np.linalg.norm(
        before[seen], axis=1)
    assert cosines.min() >= 0.999, cosines
