"""What the CC-CEDICT fallback adds to Chinese questions (rag/query/zh.py `dictionary`), in one run.

For every Chinese question of the given sets, the engine answers it (extractive, as without an LLM) with the
dictionary off (the glossary alone), and with it on at 1 and 2 senses a word; per variant: of the answerable
questions, hit@1, hit@5 and the three outcomes; of the unanswerable ones, the three outcomes (answered is the
error). Dev sets only: the variant is chosen on what this prints.

    RAG_BUNDLED=false python eval/zh_dictionary_eval.py eval/questions/zh_dev.jsonl eval/questions/describe_dev.jsonl \\
        --data-dir .rag-eval/iclr2025
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rag.config import Settings  # noqa: E402
from rag.engine import Engine  # noqa: E402
from rag.evaluation.harness import load_questions, matches  # noqa: E402
from rag.query import zh  # noqa: E402
from eval.tune_outcomes import held_out  # noqa: E402

VARIANTS = {"glossary alone": (False, 2), "dictionary, 1 sense": (True, 1), "dictionary, 2 senses": (True, 2),
            "dictionary, 3 senses": (True, 3)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sets", nargs="+", type=Path)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--held-out", action="store_true",
                        help="allow held-out sets: once, after the variant was chosen on dev")
    args = parser.parse_args()
    if not args.held_out and any(held_out(p.stem) for p in args.sets):
        raise SystemExit("error: dev sets only (the variant is chosen on what this prints)")
    engine = Engine(Settings.load(data_dir=args.data_dir))
    engine.require_index()
    questions = [q for q in load_questions(args.sets) if zh.has_chinese(q["question"])
                 and q["kind"] in ("single", "none")]
    print(f"# CC-CEDICT fallback: {len(questions)} Chinese questions of {', '.join(p.stem for p in args.sets)}\n")
    print("| variant | answerable | hit@1 | hit@5 | answered / unsure / not covered | unanswerable | "
          "answered / unsure / not covered |\n|---|---|---|---|---|---|---|")
    for name, (on, senses) in VARIANTS.items():
        zh.USE_DICTIONARY, zh.SENSES = on, senses
        zh.dictionary.cache_clear()
        rows = []
        for q in questions:
            answer = engine.ask(q["question"])
            rank = next((s.n for s in answer.sources for g in q.get("gold", []) if matches(g, s.paper_id, s.text)),
                        None)
            rows.append((q, rank, answer.outcome))
        good = [(r, o) for q, r, o in rows if q["kind"] == "single"]
        bad = [o for q, r, o in rows if q["kind"] == "none"]

        def shares(outcomes: list[str]) -> str:
            return " / ".join(f"{outcomes.count(o) / max(1, len(outcomes)):.3f}"
                              for o in ("answered", "unsure", "not_covered"))
        print(f"| {name} | {len(good)} | {sum(r == 1 for r, _ in good) / len(good):.3f} | "
              f"{sum(r is not None and r <= 5 for r, _ in good) / len(good):.3f} | {shares([o for _, o in good])} | "
              f"{len(bad)} | {shares(bad)} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
