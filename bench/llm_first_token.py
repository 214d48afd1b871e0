"""How long the project holds the first token: from the moment the LLM server writes its first streamed chunk
to the moment `Engine.stream` hands the first text to its caller (what the CLI prints and the web chat shows).

    python bench/llm_first_token.py [--runs 30] [--data-dir .rag-eval/seeds]

It runs the project's fake OpenAI-compatible server in-process (tests/fake_openai.py), so both ends read the
same clock. Benchmarks are not tests: nothing asserts a time.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from fake_openai import FakeOpenAI  # noqa: E402

from rag.config import Settings  # noqa: E402
from rag.answering.extractive import Delta  # noqa: E402
from rag.engine import Engine  # noqa: E402

QUESTIONS = [
    "Is there work on making sparse autoencoders cheaper to train?",
    "Which papers use diffusion models for image restoration?",
    "How can a robot's body shape and its controller be optimized together more efficiently?",
    "What is the CURIE benchmark?",
    "How does gradient clipping change the dynamics of SGD?",
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--data-dir", type=Path, default=ROOT / ".rag-eval" / "seeds")
    args = parser.parse_args()
    base = Engine(Settings.load(data_dir=args.data_dir))
    base.ingest([ROOT / "seeds"])
    held, ttft = [], []
    with FakeOpenAI() as server:
        engine = base.derive(llm_model="fake-chat", llm_base_url=server.base_url)
        engine.ask(QUESTIONS[0])  # warm-up: model, index, HTTP connection pool
        for i in range(args.runs):
            question = QUESTIONS[i % len(QUESTIONS)]
            sent_before = len(server.first_chunk_sent)
            started = time.perf_counter()
            for event in engine.stream(question):
                if isinstance(event, Delta):
                    got = time.perf_counter()
                    break
            if len(server.first_chunk_sent) == sent_before:
                raise SystemExit(f"no LLM answer for {question!r}")
            held.append((got - server.first_chunk_sent[-1]) * 1000)
            ttft.append((got - started) * 1000)
    q = statistics.quantiles(held, n=20)
    print(f"runs: {args.runs}")
    print(f"server first chunk -> caller first text: median {statistics.median(held):.2f} ms, "
          f"p95 {q[-1]:.2f} ms, max {max(held):.2f} ms")
    print(f"question -> first text (retrieval + prompt + LLM round trip): median {statistics.median(ttft):.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
