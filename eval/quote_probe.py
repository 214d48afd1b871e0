"""Quote probe: how much of the asked facts an LLM answer states by itself, with the nearest sentence quoted after
it (the app before 4c4edcf) and with its first cited paper's passage quoted (the app after), in one run.

Why a probe and not `rag eval`: the three differ only in the app's quote line after the model's text, so one LLM
run gives all three, and the model's sampling cannot make the difference. Run against a served model, e.g.

    OPENAI_BASE_URL=http://127.0.0.1:8091/v1 RAG_LLM_MODEL=qwen2.5-coder-1.5b RAG_BUNDLED=false \\
        .venv/bin/python eval/quote_probe.py QUESTIONS.jsonl --data-dir .rag-eval/iclr2025

Prints one line per answerable question and the means; writes nothing.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rag.answering.compose import ALSO_CLOSE, QUOTED, _mostly_said
from rag.config import Settings
from rag.engine import Engine


def facts_in(text: str, facts: list[str]) -> float:
    return sum(f.lower() in text.lower() for f in facts) / len(facts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("questions", type=Path)
    parser.add_argument("--data-dir", type=Path, required=True)
    args = parser.parse_args()
    engine = Engine(Settings.load(data_dir=args.data_dir))
    totals: dict[str, list[float]] = {"own": [], "sentence": [], "passage": [], "extractive": []}
    plain = engine.derive(llm_model="")
    for line in args.questions.read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        facts = q.get("answer_facts") or []
        if not facts or q.get("kind") == "none":
            continue
        answer = engine.ask(q["question"])
        own = answer.answer.split(f"\n\n{QUOTED}")[0].split(f"\n\n{ALSO_CLOSE}")[0]
        sentence = own
        if answer.mode == "llm" and answer.citations and answer.citations[0].snippet.strip():
            snippet = " ".join(answer.citations[0].snippet.split())
            if not _mostly_said(snippet, own):
                sentence = f"{own}\n\n{QUOTED} “{snippet}”"
        row = {"own": facts_in(own, facts), "sentence": facts_in(sentence, facts),
               "passage": facts_in(answer.answer, facts),
               "extractive": facts_in(plain.ask(q["question"]).answer, facts)}
        for key, value in row.items():
            totals[key].append(value)
        print(q["qid"], answer.mode, answer.outcome, json.dumps(row), flush=True)
    n = len(totals["own"])
    print(f"{n} answerable questions, mean facts stated:",
          ", ".join(f"{key} {sum(v) / n:.3f}" for key, v in totals.items()) if n else "none")


if __name__ == "__main__":
    main()
