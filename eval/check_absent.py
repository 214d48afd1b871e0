"""Check the "absent_terms" recorded in question sets: an unanswerable question's key terms must occur in no
title or abstract of the corpus, and a "specific figure" question's terms (field "about": the paper it asks
about) must not occur in that paper's abstract, so the abstract cannot give the figure.

    python eval/check_absent.py [QUESTIONS.jsonl ...] [--corpus rag/data/iclr2025.jsonl]

A term matches as a whole word, case-insensitive, plural "s"/"es" allowed. Prints each violation with the papers
that contain the term and exits 1 if there is any; `--drop` rewrites the files without the violating questions.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SETS = ["corpus_none_v2.jsonl", "corpus_figures.jsonl", "compare_none.jsonl"]


def pattern(term: str) -> re.Pattern:
    return re.compile(r"(?<![\w-])" + re.escape(term) + r"(?:s|es)?(?![\w-])", re.IGNORECASE)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("questions", nargs="*", type=Path,
                        default=[ROOT / "eval" / "questions" / name for name in DEFAULT_SETS])
    parser.add_argument("--corpus", type=Path, default=ROOT / "rag" / "data" / "iclr2025.jsonl")
    parser.add_argument("--drop", action="store_true", help="rewrite the files without the violating questions")
    args = parser.parse_args()
    papers = [json.loads(line) for line in args.corpus.read_text(encoding="utf-8").splitlines() if line.strip()]
    text = {p["id"]: f"{p.get('title', '')}\n{p.get('abstract', '')}" for p in papers}
    bad = 0
    for path in args.questions:
        kept, checked = [], 0
        for line in path.read_text(encoding="utf-8").splitlines():
            q = json.loads(line)
            terms = q.get("absent_terms") or []
            about = q.get("about")
            haystack = {about: text[about]} if about else text
            if about and about not in text:
                print(f"{path.name} {q['qid']}: paper {about} is not in the corpus")
                bad += 1
                continue
            hits = {t: [pid for pid, body in haystack.items() if pattern(t).search(body)] for t in terms}
            found = {t: ids for t, ids in hits.items() if ids}
            checked += 1
            if found:
                bad += 1
                print(f"{path.name} {q['qid']}: {q['question']}\n    found: "
                      + "; ".join(f"{t!r} in {len(ids)} ({', '.join(ids[:3])})" for t, ids in found.items()))
            else:
                kept.append(line)
        print(f"{path.name}: {checked} checked, {len(kept)} with every key term absent "
              f"({'from the paper it asks about' if 'figures' in path.name else f'from all {len(text)} papers'})")
        if args.drop:
            path.write_text("".join(k + "\n" for k in kept), encoding="utf-8")
    return 1 if bad and not args.drop else 0


if __name__ == "__main__":
    sys.exit(main())
