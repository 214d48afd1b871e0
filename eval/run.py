"""Evaluate retrieval and answers on question sets, through the same `Engine.ask` the app uses.

    python eval/run.py [QUESTIONS.jsonl ...] [--corpus PATH] [--data-dir DIR] [--json OUT]

Without --corpus the haystack is seeds/; with it, that file or directory (e.g. ../shared/corpus/iclr2025.jsonl).
The index is built once per haystack in --data-dir (default .rag-eval/<name>) and reused afterwards.

Question format (JSON lines): {"qid", "kind": "single"|"multi"|"none"|"followup", "question", "turns" (followup),
"gold": [paper id, or the first 60 characters of the gold abstract], "answer_facts": [...]}.
A gold entry matches a paper whose id equals it or whose abstract starts with it (whitespace-normalized).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rag.config import Settings  # noqa: E402
from rag.engine import Engine  # noqa: E402


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def matches(gold: str, paper_id: str, abstract: str) -> bool:
    return gold == paper_id or norm(abstract).startswith(norm(gold))


def load_questions(paths: list[Path]) -> list[dict]:
    out = []
    for path in paths:
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if line.strip():
                item = json.loads(line)
                item.setdefault("set", path.stem)
                out.append(item)
    return out


def evaluate(engine: Engine, questions: list[dict], k: int = 5) -> dict:
    rows = []
    for q in questions:
        history = None
        if q["kind"] == "followup":
            first = engine.ask(q["turns"][0])
            history = [{"role": "user", "content": q["turns"][0]}, {"role": "assistant", "content": first.answer}]
        started = time.perf_counter()
        answer = engine.ask(q["question"], history=history, k=k)
        ms = (time.perf_counter() - started) * 1000
        ranks = []  # rank (1-based) of each gold paper among the sources, None if missing
        for gold in q.get("gold", []):
            ranks.append(next((s.n for s in answer.sources if matches(gold, s.paper_id, s.text)), None))
        cited_gold = any(matches(g, s.paper_id, s.text) for g in q.get("gold", []) for s in answer.citations)
        text = answer.answer.lower()
        facts = q.get("answer_facts") or []
        rows.append({
            "qid": q["qid"], "kind": q["kind"], "set": q["set"], "ranks": ranks, "abstained": answer.abstained,
            "confidence": answer.confidence, "cited_gold": cited_gold, "ms": round(ms, 1),
            "facts": (sum(f.lower() in text for f in facts) / len(facts)) if facts else None,
        })
    return {"rows": rows, "summary": summarize(rows)}


def summarize(rows: list[dict]) -> dict:
    def mean(xs):
        xs = list(xs)
        return round(sum(xs) / len(xs), 3) if xs else None

    single = [r for r in rows if r["kind"] in ("single", "followup")]
    multi = [r for r in rows if r["kind"] == "multi"]
    none = [r for r in rows if r["kind"] == "none"]
    answerable = [r for r in rows if r["kind"] != "none"]
    first = [r["ranks"][0] for r in single]
    return {
        "questions": len(rows),
        "hit@1": mean(rk == 1 for rk in first),
        "hit@5": mean(rk is not None and rk <= 5 for rk in first),
        "mrr": mean(1 / rk if rk else 0 for rk in first),
        "multi_recall@5": mean(mean(rk is not None for rk in r["ranks"]) for r in multi),
        "abstention_on_none": mean(r["abstained"] for r in none),
        "false_refusal": mean(r["abstained"] for r in answerable),
        "cited_gold": mean(r["cited_gold"] for r in answerable),
        "answer_facts": mean(r["facts"] for r in answerable if r["facts"] is not None),
        "confidence_answerable": _spread([r["confidence"] for r in answerable]),
        "confidence_none": _spread([r["confidence"] for r in none]),
        "ms_p50": round(statistics.median(r["ms"] for r in rows), 1) if rows else None,
    }


def _spread(xs: list[float]) -> dict | None:
    if not xs:
        return None
    xs = sorted(xs)
    return {"min": xs[0], "p05": xs[int(0.05 * (len(xs) - 1))], "median": statistics.median(xs), "max": xs[-1]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("questions", nargs="*", type=Path,
                        default=[ROOT / "eval" / "questions" / "seeds_dev.jsonl"])
    parser.add_argument("--corpus", type=Path, default=ROOT / "seeds")
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--kinds", default="", help="Only these kinds, comma-separated (e.g. single,none).")
    parser.add_argument("--json", type=Path, default=None, help="Write rows and summary here.")
    args = parser.parse_args()
    data_dir = args.data_dir or ROOT / ".rag-eval" / args.corpus.stem
    engine = Engine(Settings.load(data_dir=data_dir))
    stats = engine.ingest([args.corpus])
    print(f"haystack {args.corpus}: {engine.index.count()} papers ({stats.summary()})", file=sys.stderr)
    questions = load_questions(args.questions)
    if args.kinds:
        questions = [q for q in questions if q["kind"] in args.kinds.split(",")]
    result = evaluate(engine, questions)
    result["haystack"] = str(args.corpus)
    print(json.dumps(result["summary"], indent=1))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
