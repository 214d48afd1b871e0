"""Calibrate the abstention threshold (`Settings.abstain_threshold`) on a dev question set.

    python eval/calibrate.py [QUESTIONS.jsonl] [--corpus seeds] [--data-dir DIR]

For every question it records the retrieval confidence (best sentence score of the top papers) and whether a
rare name in the question matched the top paper (which bypasses the gate), then sweeps the threshold and prints,
for each value, the abstention rate on unanswerable ("none") questions and the false-refusal rate on the rest.
Pick the value that keeps false refusals low while refusing most unanswerable questions, and write it and these
numbers into the docstring of rag/answering/extractive.py.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rag.config import Settings  # noqa: E402
from rag.search.retrieve import RetrievalParams  # noqa: E402
from rag.engine import Engine  # noqa: E402
from rag.evaluation.harness import load_questions, searched_as  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("questions", nargs="?", type=Path, default=ROOT / "eval" / "questions" / "seeds_dev.jsonl")
    parser.add_argument("--corpus", type=Path, default=ROOT / "seeds")
    parser.add_argument("--data-dir", type=Path, default=None)
    args = parser.parse_args()
    engine = Engine(Settings.load(data_dir=args.data_dir or ROOT / ".rag-eval" / args.corpus.stem))
    engine.ingest([args.corpus])
    points = []  # (is_none, confidence, named)
    for q in load_questions([args.questions]):
        retrieval = engine.retriever.retrieve(searched_as(q),
                                              RetrievalParams.from_settings(engine.settings))
        points.append((q["kind"] == "none", retrieval.confidence, retrieval.named_match))
        print(f"{q['kind']:<8} {retrieval.confidence:.3f} {retrieval.named_match or '-':<10} {q['question'][:70]}")
    none = [p for p in points if p[0]]
    answerable = [p for p in points if not p[0]]
    print(f"\n{len(answerable)} answerable, {len(none)} unanswerable questions")
    print("threshold  abstain(none)  false_refusal(answerable)")
    for t in [x / 100 for x in range(30, 66, 2)]:
        refuse = lambda p, t=t: p[1] < t and not p[2]  # noqa: E731
        print(f"  {t:.2f}      {sum(map(refuse, none)) / len(none):.3f}          "
              f"{sum(map(refuse, answerable)) / len(answerable):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
