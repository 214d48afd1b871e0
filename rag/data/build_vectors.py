"""Embed the bundled ICLR 2025 list once and write its vectors to rag/data/iclr2025_vectors.npz (`make data`).

    python rag/data/build_vectors.py [--dtype int8|float16|float32] [--out PATH]

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

HERE = Path(__file__).resolve().parent
SEEDS = HERE.parent.parent / "seeds"  # a clone's seed files; absent from an installed package


def build(out: Path, dtype: str = "int8") -> dict[str, float]:
    from rag.store import prebuilt
    from rag.store.catalog import BUNDLED, enrich
    from rag.config import Settings
    from rag.store.embeddings import make_embedder
    from rag.store.index import INGEST_BATCH, PaperIndex
    from rag.store.ingest import read_paths

    started = time.perf_counter()
    read = read_paths([*BUNDLED, *([SEEDS] if SEEDS.is_dir() else [])])
    if read.problems:
        raise SystemExit("the bundled files have problems; fix them first:\n" + "\n".join(map(str, read.problems)))
    papers, _ = enrich(read.papers)
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings.model_validate({"data_dir": Path(tmp)})  # defaults: no RAG_* variables
        embedder = make_embedder(settings)
        index = PaperIndex(settings, embedder)
        recorder = prebuilt.Recorder(embedder)
        index.vectors = recorder
        holders: dict[str, dict[str, int]] = {p.paper_id: {} for p in papers}
        for start in range(0, len(papers), INGEST_BATCH):
            index._embed(papers[start:start + INGEST_BATCH], holders)
        meta = {"embedder": embedder.identity, "chunking": index.chunking}
    prebuilt.write(out, recorder.entries, meta, [(p.paper_id, p.content_hash) for p in papers], dtype)
    return {"papers": len(papers), "texts": len(recorder.entries),
            "rows": sum(len(v) for v in recorder.entries.values()), "seconds": time.perf_counter() - started}


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent.parent))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dtype", choices=["int8", "float16", "float32"], default="int8")
    parser.add_argument("--out", type=Path, default=HERE / "iclr2025_vectors.npz")
    args = parser.parse_args()
    figures = build(args.out, args.dtype)
    digest = hashlib.sha256(args.out.read_bytes()).hexdigest()
    print(f"{args.out}: {figures['papers']:,} papers, {figures['texts']:,} texts, {figures['rows']:,} vectors "
          f"({args.dtype}), {args.out.stat().st_size / 1e6:.2f} MB, sha256 {digest}, "
          f"built in {figures['seconds']:.0f} s")
