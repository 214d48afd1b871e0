"""Embed the bundled ICLR 2025 list once and write its vectors to rag/data/iclr2025_vectors.npz (`make data`).

    python rag/data/build_vectors.py [--dtype int8|float16|float32] [--out PATH]
    python rag/data/build_vectors.py --update    # embed only the texts the file lacks (see `update`)
    python rag/data/build_vectors.py --mpnet [--update]   # rag/data/iclr2025_mpnet.npz (see `build_mpnet`)

Run after any change to the bundled data files, the embedder or the chunk settings (a test fails until it is):
it reads the bundled files (and the seed files of a clone, which `make run` ingests first) as `rag ingest` does,
and sends every paper through `PaperIndex._embed`, the ingest's own chunking and late-chunking code, with the
embedder wrapped in a `rag.store.prebuilt.Recorder`, so the file holds exactly the texts and spans an ingest embeds.
Nothing is written to a store. Default settings only (no RAG_* variables): those are what the file is keyed by.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SEEDS = HERE.parent.parent / "seeds"  # a clone's seed files; absent from an installed package


def _record(papers: list, wrap=None) -> tuple[Any, dict[str, str]]:
    """Send `papers` through the ingest's own chunking and late-chunking code (`PaperIndex._embed`) with the
    embedder (or `wrap(embedder, chunking)`) inside a `Recorder`; (the recorder, the file's meta). A paper id may
    come twice (a seed's own version of a bundled paper): each version goes in a pass of its own."""
    from rag.store import prebuilt
    from rag.config import Settings
    from rag.store.embeddings import make_embedder
    from rag.store.index import INGEST_BATCH, PaperIndex

    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings.model_validate({"data_dir": Path(tmp)})  # defaults: no RAG_* variables
        embedder = make_embedder(settings)
        index = PaperIndex(settings, embedder)
        recorder = prebuilt.Recorder(wrap(embedder, index.chunking) if wrap else embedder)
        index.vectors = recorder
        holders: dict[str, dict[str, int]] = {p.paper_id: {} for p in papers}
        passes: list[dict[str, Any]] = []  # paper id -> paper, one version of each per pass
        for paper in papers:
            free = next((group for group in passes if paper.paper_id not in group), None)
            if free is None:
                passes.append(free := {})
            free[paper.paper_id] = paper
        for group in map(list, (g.values() for g in passes)):
            for start in range(0, len(group), INGEST_BATCH):
                index._embed(group[start:start + INGEST_BATCH], holders)
        return recorder, {"embedder": embedder.identity, "chunking": index.chunking}


def _papers() -> list:
    """The bundled papers, then the seeds' own versions where their text differs from the bundled one (`make run`
    ingests the seeds first, as they are: two seed abstracts of bundled papers differ in a few words, and reading
    the seeds together with the bundled files would keep one version only)."""
    from rag.store.catalog import BUNDLED, enrich
    from rag.store.ingest import read_paths

    papers: list = []
    for paths in ([*BUNDLED], [SEEDS] if SEEDS.is_dir() else []):
        read = read_paths(paths)
        if read.problems:
            raise SystemExit("the bundled files have problems; fix them first:\n" + "\n".join(map(str, read.problems)))
        papers += enrich(read.papers)[0]
    return list({(p.paper_id, p.content_hash): p for p in papers}.values())


def build(out: Path, dtype: str = "int8") -> dict[str, float]:
    from rag.store import prebuilt

    started = time.perf_counter()
    papers = _papers()
    recorder, meta = _record(papers)
    prebuilt.write(out, recorder.entries, meta, [(p.paper_id, p.content_hash) for p in papers], dtype)
    return {"papers": len(papers), "texts": len(recorder.entries),
            "rows": sum(len(v) for v in recorder.entries.values()), "seconds": time.perf_counter() - started}


def update(out: Path) -> dict[str, float]:
    """Bring the file in line with the data without embedding it all again: the texts an ingest would ask for
    are found as `build` finds them, those the file holds keep their stored rows bit for bit, the others (a
    paper whose text, or whose sentence splitting, changed) are embedded, and entries no text asks for any more
    are dropped. Embedding is deterministic whatever a text is batched with (tests/store/test_embeddings.py),
    so the result is what `build` would give, but for the kept rows' float noise. Minutes less than `build`
    (1,648 s at load 15-17) when a few papers changed. Only for the same embedder, chunk settings and dtype."""
    from rag.store import prebuilt

    started = time.perf_counter()
    stored_meta, stored = prebuilt.stored_rows(out)
    papers = _papers()
    recorder, meta = _record(papers, lambda embedder, chunking: prebuilt.Prebuilt(embedder, chunking, out))
    dtype = stored_meta["dtype"]
    if {k: stored_meta.get(k) for k in meta} != meta:
        raise SystemExit(f"{out} was built with {stored_meta}, not {meta}: rebuild it whole (without --update)")
    fresh = [key for key in recorder.entries if key not in stored]
    entries = {key: stored[key] if key in stored else prebuilt.quantize(recorder.entries[key].astype("float32"), dtype)
               for key in recorder.entries}
    prebuilt.write_quantized(out, entries, meta, [(p.paper_id, p.content_hash) for p in papers], dtype)
    return {"papers": len(papers), "texts": len(entries), "rows": sum(len(v[0]) for v in entries.values()),
            "embedded": len(fresh), "dropped": len(set(stored) - set(entries)),
            "seconds": time.perf_counter() - started}


def build_mpnet(out: Path, keep: bool) -> dict[str, float]:
    """The whole-paper all-mpnet-base-v2 vectors of the bundled papers (and the seeds' own versions), as
    `rag.store.mpnet_vectors` looks them up: one per paper, keyed by a hash of exactly the text embedded. `keep`:
    entries the file already holds for a text still asked for are kept, only the rest embedded (a whole build is
    ~25 min on 2 cores)."""
    from rag.store import mpnet
    from rag.store.mpnet_vectors import PaperVectors, key, paper_text, read_file, write_file

    started = time.perf_counter()
    papers = _papers()
    with tempfile.TemporaryDirectory() as tmp:
        vectors = PaperVectors(None, mpnet.load, mpnet.IDENTITY, shipped=out if keep else Path(tmp) / "none.npz")
        matrix = vectors.papers(papers)
    entries = {key(paper_text(p.title, p.abstract)): row for p, row in zip(papers, matrix, strict=True)}
    dropped = len(set(read_file(out, mpnet.IDENTITY)) - set(entries)) if keep else 0
    write_file(out, mpnet.IDENTITY, entries, {"papers": len(papers)})
    out.chmod(0o644)
    return {"papers": len(papers), "texts": len(entries), "rows": len(entries), "embedded": vectors.embedded,
            "dropped": dropped, "seconds": time.perf_counter() - started}


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent.parent))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dtype", choices=["int8", "float16", "float32"], default="int8")
    parser.add_argument("--out", type=Path, default=HERE / "iclr2025_vectors.npz")
    parser.add_argument("--update", action="store_true",
                        help="Embed only the texts the file lacks, keep the rest as stored (its own dtype).")
    parser.add_argument("--mpnet", action="store_true",
                        help="Build the whole-paper all-mpnet-base-v2 vectors (default --out "
                             "rag/data/iclr2025_mpnet.npz), keeping the file's entries with --update.")
    args = parser.parse_args()
    if args.mpnet:
        if args.out == HERE / "iclr2025_vectors.npz":
            args.out = HERE / "iclr2025_mpnet.npz"
        figures = build_mpnet(args.out, keep=args.update)
    else:
        figures = update(args.out) if args.update else build(args.out, args.dtype)
    digest = hashlib.sha256(args.out.read_bytes()).hexdigest()
    changed = f"{figures['embedded']:,} texts embedded, {figures['dropped']:,} dropped, " \
        if "embedded" in figures else ""
    print(f"{args.out}: {figures['papers']:,} papers, {figures['texts']:,} texts, {figures['rows']:,} vectors, "
          f"{changed}{args.out.stat().st_size / 1e6:.2f} MB, sha256 {digest}, built in {figures['seconds']:.0f} s")
