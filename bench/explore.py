"""Timings of exploring the collection (rag/explore/related.py, rag/explore/topicmap.py) -> section 7 of
bench/REPORT.md.

    python bench/explore.py [--data-dir .rag-eval/iclr2025] [--queries 200] [--repeats 1]

Over an existing index (default: the 2,114-paper evaluation index `rag eval --corpus` builds), in one process:
reading the whole-paper vectors, a related query (p50/p95 over random papers, warm), building the topic map
(PCA + t-SNE + KMeans + c-TF-IDF labels; median of --repeats), reading the stored map back, and a topics
question answered from it. `make bench` runs it after bench/run.py, which rewrites the report; run alone, it
replaces its own section. Benchmarks are not tests: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from rag.config import Settings  # noqa: E402
from rag.explore.related import explorer  # noqa: E402
from rag.explore.topicmap import TopicMap, build, map_path  # noqa: E402
from rag.engine import Engine  # noqa: E402

HEAD = "## 7. Related papers and the topic map"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=ROOT / ".rag-eval" / "iclr2025")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--report", type=Path, default=ROOT / "bench" / "REPORT.md")
    args = parser.parse_args()

    engine = Engine(Settings.load(data_dir=args.data_dir))
    papers = engine.retriever.state.papers  # the store opened and the corpus read: not timed here
    started = time.perf_counter()
    _, vectors = explorer(engine.retriever).matrix()
    load_s = time.perf_counter() - started
    rng = random.Random(0)
    ids = [p.paper_id for p in rng.sample(papers, min(args.queries, len(papers)))]
    times = []
    for pid in ids:
        t = time.perf_counter()
        engine.related(pid, 5)
        times.append((time.perf_counter() - t) * 1000)
    builds, cpu = [], []
    for _ in range(args.repeats):
        t, c = time.perf_counter(), time.process_time()
        tmap = build(papers, vectors, engine.settings.topics)
        builds.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    engine.topics()  # stored beside the index (computed now if the stored one is stale)
    t = time.perf_counter()
    TopicMap.from_json(map_path(engine.settings).read_text(encoding="utf-8"))
    read_ms = (time.perf_counter() - t) * 1000
    t = time.perf_counter()
    answer = engine.ask("Which topics have the most orals?")
    topics_ms = (time.perf_counter() - t) * 1000
    assert answer.answer_type == "topics"

    section = "\n".join([
        HEAD,
        f"`python bench/explore.py` over {len(papers):,} papers ({args.data_dir.name}), "
        f"{time.strftime('%Y-%m-%d %H:%M')}; {engine.settings.topics} topics; load average "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores at the end (wall times stretch with it; CPU time "
        "does not).",
        "",
        "| | figure |",
        "|---|---|",
        f"| read the whole-paper vectors from Chroma (once per index change) | {load_s * 1000:.0f} ms |",
        f"| related query (5 nearest, warm), p50 / p95 over {len(ids)} papers | "
        f"{np.percentile(times, 50):.2f} / {np.percentile(times, 95):.2f} ms |",
        f"| build the map: PCA + t-SNE + KMeans + labels (median of {args.repeats}) | "
        f"{statistics.median(builds):.1f} s ({statistics.median(cpu):.1f} s of CPU) |",
        f"| read the stored map back (`{map_path(engine.settings).name}`) | {read_ms:.0f} ms |",
        f"| \"Which topics have the most orals?\" answered from the map | {topics_ms:.0f} ms |",
        f"| topics and their sizes | {len(tmap.topics)}: {', '.join(str(t.size) for t in tmap.topics)} |",
        "",
    ])
    print(section)
    report = args.report.read_text(encoding="utf-8") if args.report.exists() else "# Benchmark report\n"
    pattern = re.compile(re.escape(HEAD) + r".*?(?=^## |\Z)", re.S | re.M)
    if pattern.search(report):
        report = pattern.sub(lambda m: section + "\n", report)
    elif "## What the report shows" in report:
        report = report.replace("## What the report shows", section + "\n## What the report shows", 1)
    else:
        report = report.rstrip("\n") + "\n\n" + section
    args.report.write_text(report, encoding="utf-8")


if __name__ == "__main__":
    main()
