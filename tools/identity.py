"""Identity check for a refactor that must not change behaviour: ask a fixed list of questions through `Engine.ask`
and write each Answer (its `to_dict()` without timings) and every feature vector the abstention gate read for it
(`rag.answering.abstain.features`, exact float reprs) to JSON. Run it before and after a change; the two files must
be equal (`cmp`).

    PYTHONPATH=$PWD python tools/identity.py --data-dir DIR --out before.json

DIR is an index of the bundled list (`RAG_DATA_DIR=DIR rag ingest rag/data/iclr2025.jsonl`). The questions: every
row of eval/questions/{types,describe,zh,topics}_dev.jsonl and the second turns of chains_dev.jsonl, asked with the
app's own first answer as history (as `rag.evaluation.harness.evaluate` asks a follow-up).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SETS = ("types_dev", "describe_dev", "zh_dev", "topics_dev", "chains_dev")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    from rag.answering import abstain
    from rag.config import Settings
    from rag.engine import Engine

    seen: list[list[str]] = []
    read = abstain.features

    def recorded(retrieval: Any) -> Any:
        vector = read(retrieval)
        seen.append([repr(float(v)) for v in vector])
        return vector

    abstain.features = recorded  # type: ignore[assignment]
    engine = Engine(Settings.load(data_dir=args.data_dir))
    rows = []
    for name in SETS:
        for line in (ROOT / "eval" / "questions" / f"{name}.jsonl").read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            q = json.loads(line)
            history = None
            seen.clear()
            if q["kind"] == "followup":
                first = engine.ask(q["turns"][0])
                history = [{"role": "user", "content": q["turns"][0]},
                           {"role": "assistant", "content": first.answer, "paper_ids": first.cited_ids,
                            "outcome": first.outcome}]
            answer = engine.ask(q["question"], history=history).to_dict()
            answer.pop("timings", None)
            rows.append({"qid": q["qid"], "answer": answer, "features": list(seen)})
    Path(args.out).write_text(json.dumps(rows, ensure_ascii=False, indent=1, sort_keys=True), encoding="utf-8")
    print(f"{len(rows)} questions, {sum(len(r['features']) for r in rows)} feature vectors -> {args.out}")


if __name__ == "__main__":
    main()
