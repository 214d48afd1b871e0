"""The pool judged for the list questions' `relevant` field (eval/README.md, "Judged relevance for lists").

For each `list` question of types_dev and types_heldout: the papers any evaluated configuration (bm25, dense,
hybrid-rrf60, hybrid) cites or ranks in its top 10, minus the gold, shuffled (seed 7) with no system named,
written to /tmp/pool/list_pool.json for a blind assessor. Run from the repo root after `make eval` built
.rag-eval/iclr2025: `python eval/judgments/make_pool.py`. The judgments are in list_relevance.json beside it.
"""

import json
import random
from pathlib import Path

from rag.config import Settings
from rag.engine import Engine
from rag.evaluation.harness import CONFIGS

SETS = ("eval/questions/types_dev.jsonl", "eval/questions/types_heldout.jsonl")
OUT = Path("/tmp/pool/list_pool.json")


def main() -> None:
    base = Engine(Settings.load(data_dir=Path(".rag-eval/iclr2025"), k=10))
    questions = [json.loads(line) for name in SETS for line in open(name, encoding="utf-8")]
    papers = {p.paper_id: p for p in base.retriever.state.papers}
    out = []
    for q in (q for q in questions if q.get("type") == "list"):
        pool: set[str] = set()
        for overrides in CONFIGS.values():
            answer = base.derive(**overrides).ask(q["question"])
            pool |= {c.paper_id for c in answer.citations} | {s.paper_id for s in answer.sources[:10]}
        items = sorted(pool - set(q["gold"]))
        random.Random(7).shuffle(items)
        out.append({"qid": q["qid"], "question": q["question"],
                    "known_on_topic": [papers[g].title for g in q["gold"] if g in papers],
                    "candidates": [{"id": i, "title": papers[i].title, "abstract": papers[i].abstract}
                                   for i in items]})
        print(q["qid"], len(items))
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps(out, indent=1, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    main()
