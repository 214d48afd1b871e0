"""Abstention on the question sets: the learned gate (rag/answering/abstain.py) against the confidence threshold, as a
trade-off curve (refused unanswerable vs refused answerable) at several thresholds. Reads the sets, fits nothing.

    python eval/abstain_curve.py SET.jsonl [...] [--corpus rag/data/iclr2025.jsonl] [--json OUT]

Each question is retrieved as the app does (hybrid, k = 10, Chinese questions by their English terms). Answerable
= single/multi/followup questions; unanswerable = "none". Prints, per threshold, the share of unanswerable
questions refused and of answerable ones refused (false refusals), for both gates.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rag.config import Settings  # noqa: E402
from rag.query import zh  # noqa: E402
from rag.search.retrieve import RetrievalParams  # noqa: E402
from rag.answering import abstain  # noqa: E402
from rag.engine import Engine  # noqa: E402
from rag.evaluation.harness import load_questions, searched_as  # noqa: E402

CONFIDENCE_T = Settings.model_fields["abstain_threshold"].default


def rates(points: list[tuple[str, bool, float]], threshold: float, above: bool) -> tuple[float, float]:
    refuse = [(none, (score >= threshold) if above else (score < threshold)) for _, none, score in points]
    unans = [r for none, r in refuse if none]
    ans = [r for none, r in refuse if not none]
    return (sum(unans) / len(unans) if unans else float("nan"), sum(ans) / len(ans) if ans else float("nan"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("questions", nargs="+", type=Path)
    parser.add_argument("--corpus", type=Path, default=ROOT / "rag" / "data" / "iclr2025.jsonl")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    engine = Engine(Settings.load(data_dir=ROOT / ".rag-eval" / args.corpus.stem))
    engine.ingest([args.corpus])
    rows = []
    for q in load_questions(args.questions):
        r = engine.retriever.retrieve(zh.retrieval_query(searched_as(q)),
                                      RetrievalParams(k=10))
        rows.append({"set": q["set"], "qid": q["qid"], "none": q["kind"] == "none", "confidence": r.confidence,
                     "named": bool(r.named_match), "p": abstain.probability(r)})
    sets = list(dict.fromkeys(r["set"] for r in rows))
    print(f"learned gate (probability >= t), model: {abstain.TRAINING}; shipped t = {abstain.THRESHOLD}")
    header = "t      " + "  ".join(f"{s[:16]:>16}" for s in sets) + "   all: refused-none / false-refusal"
    print(header)
    for t in sorted({0.3, 0.4, 0.5, 0.6, abstain.THRESHOLD, 0.7, 0.8, 0.9}):
        cells = []
        for s in sets:
            pts = [(s, r["none"], r["p"]) for r in rows if r["set"] == s]
            none_rate, false_rate = rates(pts, t, above=True)
            cells.append(f"{none_rate if any(p[1] for p in pts) else false_rate:>16.3f}")
        a, f = rates([(r["set"], r["none"], r["p"]) for r in rows], t, above=True)
        print(f"{t:<6.3f} " + "  ".join(cells) + f"   {a:.3f} / {f:.3f}")
    print("\nconfidence gate (confidence < t, a rare name matched in the top paper answers anyway)")
    for t in (0.40, 0.45, 0.47, 0.50, 0.55, 0.60):
        cells = []
        pts_all = [(r["set"], r["none"], r["confidence"] if not r["named"] else 9.0) for r in rows]
        for s in sets:
            pts = [p for p in pts_all if p[0] == s]
            none_rate, false_rate = rates(pts, t, above=False)
            cells.append(f"{none_rate if any(p[1] for p in pts) else false_rate:>16.3f}")
        a, f = rates(pts_all, t, above=False)
        print(f"{t:<6.3f} " + "  ".join(cells) + f"   {a:.3f} / {f:.3f}")
    print(f"\nboth gates (probability >= t, or confidence < {CONFIDENCE_T} without a name match)")
    for t in sorted({0.5, 0.6, 0.7, abstain.THRESHOLD, 0.8, 0.9}):
        pts_all = [(r["set"], r["none"], float(r["p"] >= t or (r["confidence"] < CONFIDENCE_T and not r["named"])))
                   for r in rows]
        cells = []
        for s in sets:
            pts = [p for p in pts_all if p[0] == s]
            none_rate, false_rate = rates(pts, 0.5, above=True)
            cells.append(f"{none_rate if any(p[1] for p in pts) else false_rate:>16.3f}")
        a, f = rates(pts_all, 0.5, above=True)
        print(f"{t:<6.3f} " + "  ".join(cells) + f"   {a:.3f} / {f:.3f}")
    print("\n(each set's cell: share refused; for unanswerable sets that is abstention, for answerable ones the "
          "false-refusal rate)")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
