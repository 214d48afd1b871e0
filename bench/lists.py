"""Latency of a topic's list or count (issue 52): the question read, the top `list_pool` papers of the fused search
decided paper by paper, the list written.

    python bench/lists.py [--data-dir .rag-eval/iclr2025] [--repeats 3]

Over an existing index (default: the 2,114-paper evaluation index `rag eval --corpus` builds), in one warm process:
each question once to warm up, then --repeats times; prints p50 / max per question with the list's length and the
share spent retrieving. Benchmarks are not tests: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rag.config import Settings  # noqa: E402
from rag.engine import Engine  # noqa: E402

QUESTIONS = ("What work is there on diffusion models?", "Which papers reduce the memory of the KV cache for "
             "long-context LLM inference?", "How many papers are about machine unlearning?",
             "What's new in reinforcement learning from human feedback?", "How many orals use optimal transport?",
             "有哪些关于图神经网络的论文？")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=ROOT / ".rag-eval" / "iclr2025")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    engine = Engine(Settings(data_dir=args.data_dir))
    print("| question | listed | p50 ms | max ms | retrieve ms (p50) |\n|---|---|---|---|---|")
    for question in QUESTIONS:
        engine.ask(question, limit=0)  # warm: the models, the corpus cache, this question's code paths
        runs = [engine.ask(question, limit=0) for _ in range(args.repeats)]
        total = [a.timings["total_ms"] for a in runs]
        retrieve = [a.timings.get("retrieve_ms", 0.0) for a in runs]
        print(f"| {question} | {runs[0].listed} | {statistics.median(total):.0f} | {max(total):.0f} | "
              f"{statistics.median(retrieve):.0f} |")


if __name__ == "__main__":
    main()
