"""Speed and memory of rag.store.mpnet (numpy) against sentence-transformers (torch) on the same texts, and how close
their vectors are: the figures of rag/models/mpnet/MODEL_CARD.md.

Each side runs in its own process on 2 threads: load time, RSS after load, a short query embedded alone 50 times
(p50 / p95 ms, after 3 warm-up calls), then N random papers' "title. abstract" in one `embed` call (papers/s), peak RSS.
    .venv/bin/python bench/mpnet_speed.py numpy --out /tmp/mpnet_speed
    /path/to/torch-venv/bin/python bench/mpnet_speed.py st --out /tmp/mpnet_speed   # sentence-transformers installed
    .venv/bin/python bench/mpnet_speed.py compare --out /tmp/mpnet_speed
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
MODEL_DIR = ROOT / "rag" / "models" / "mpnet"
QUERY = "Which papers make sparse autoencoders cheaper to train on language model activations?"


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def papers(n: int) -> list[str]:
    rows = [json.loads(line) for line in (ROOT / "rag" / "data" / "iclr2025.jsonl").open(encoding="utf-8")]
    return [f"{p['title']}. {p['abstract']}" for p in random.Random(0).sample(rows, n)]


def run(impl: str, n: int, out: Path) -> None:
    texts = papers(n)
    start = time.perf_counter()
    if impl == "numpy":
        from rag.store.mpnet import MPNetEmbedding

        model = MPNetEmbedding(MODEL_DIR, threads=2)
        embed = model.embed
    else:
        import torch
        from sentence_transformers import SentenceTransformer

        torch.set_num_threads(2)
        st = SentenceTransformer(str(MODEL_DIR), device="cpu")

        def embed(batch: list[str]) -> np.ndarray:
            return st.encode(batch, normalize_embeddings=True, batch_size=32, convert_to_numpy=True)
    load_s = time.perf_counter() - start
    loaded = rss_mb()
    for _ in range(3):
        embed([QUERY])
    times = []
    for _ in range(50):
        t = time.perf_counter()
        embed([QUERY])
        times.append((time.perf_counter() - t) * 1000)
    t, cpu = time.perf_counter(), time.process_time()
    vectors = embed(texts)
    wall, cpu = time.perf_counter() - t, time.process_time() - cpu
    np.save(out / f"vectors.{impl}.npy", np.asarray(vectors, dtype=np.float32))
    stats = {"impl": impl, "load_s": load_s, "rss_loaded_mb": loaded, "query_ms_p50": float(np.percentile(times, 50)),
             "query_ms_p95": float(np.percentile(times, 95)), "papers": n, "papers_per_s": n / wall,
             "papers_cpu_s": cpu, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    (out / f"speed.{impl}.json").write_text(json.dumps(stats, indent=1))
    print(json.dumps(stats))


def compare(out: Path) -> None:
    a, b = np.load(out / "vectors.numpy.npy"), np.load(out / "vectors.st.npy")
    cosine = (a * b).sum(axis=1)
    print(f"cosine numpy vs sentence-transformers over {len(a)} papers: min {cosine.min():.7f} "
          f"mean {cosine.mean():.7f}")
    for impl in ("numpy", "st"):
        print((out / f"speed.{impl}.json").read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("impl", choices=["numpy", "st", "compare"])
    parser.add_argument("--papers", type=int, default=128)
    parser.add_argument("--out", type=Path, default=Path("/tmp/mpnet_speed"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    compare(args.out) if args.impl == "compare" else run(args.impl, args.papers, args.out)


if __name__ == "__main__":
    main()
