"""Check evaluation question sets against the paper records they were written from.

    python eval/check_sets.py eval/questions/types_dev.jsonl [more sets ...] [--corpus rag/data/iclr2025.jsonl]
                              [--disjoint]

Every line must parse and carry the fields of its `kind` (see eval/README.md); every gold entry must name exactly
one record of the corpus (by id, or by the start of its abstract as the older sets do); and every answer fact
must appear literally (case-insensitively) in a gold record's authors, title, abstract, decision or url — for a
multi-paper question in at least one gold record — so that a fact can only be "stated" by an answer that read
the right record. Typed questions (with a "type" field) are also checked against what their type promises:
"authors" facts are author names as written in the record, "decision" facts are Oral/Spotlight/Poster and
match the record, "link" facts are the paper's forum id, "compare" has two gold papers, "filter" carries a
"filters" object every gold paper satisfies, and "followup" has two turns, "standalone" and "followup_type".
A "count" question with "zero_for_filter" ("How many orals on X?" where no paper on X is an oral) carries a
decision filter that no gold paper passes (its gold is the papers on X with any decision); "searched", where
given, lists the searches the gold was found by.
With --disjoint, no paper may be gold in two of the given files (the tuning and held-out sets must not share
papers). Prints one line per problem and a count of questions per type and file; exits 1 on any problem.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KINDS = {"single", "multi", "none", "followup"}
TYPES = {"authors", "decision", "link", "list", "count", "explain", "compare", "filter", "followup"}
DECISIONS = {"Oral": "Accept (Oral)", "Spotlight": "Accept (Spotlight)", "Poster": "Accept (Poster)"}


def norm(text: str) -> str:
    return re.sub(r"\s+", "", text).lower()


def load_corpus(path: Path) -> tuple[dict[str, dict], list[tuple[str, str]]]:
    records = {}
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                rec = json.loads(line)
                records[rec["id"]] = rec
    prefixes = [(norm(rec.get("abstract", "")), pid) for pid, rec in records.items()]
    return records, prefixes


def resolve(gold: str, records: dict[str, dict], prefixes: list[tuple[str, str]]) -> list[str]:
    if gold in records:
        return [gold]
    key = norm(gold)
    return [pid for abstract, pid in prefixes if key and abstract.startswith(key)]


def haystack(rec: dict) -> str:
    return " ".join([" ".join(rec.get("authors", [])), rec.get("title", ""), rec.get("abstract", ""),
                     rec.get("decision", ""), rec.get("url", "")]).lower()


def check_question(q: dict, records: dict, prefixes: list) -> tuple[list[str], list[str]]:
    """Return (problems, resolved gold ids) for one question."""
    problems = []
    kind, typ = q.get("kind"), q.get("type")
    for field in ("qid", "kind", "question", "gold", "answer_facts"):
        if field not in q:
            problems.append(f"missing field {field!r}")
    if kind not in KINDS:
        problems.append(f"kind {kind!r} is not one of {sorted(KINDS)}")
    gold_ids = []
    for g in q.get("gold", []):
        found = resolve(g, records, prefixes)
        if len(found) != 1:
            problems.append(f"gold {g[:40]!r} matches {len(found)} records")
        gold_ids += found
    if kind == "none" and gold_ids:
        problems.append("kind none has gold papers")
    if kind in {"single", "multi", "followup"} and not gold_ids:
        problems.append("no gold paper")
    if kind == "single" and len(q.get("gold", [])) != 1:
        problems.append("kind single needs exactly one gold paper")
    if kind == "followup":
        turns = q.get("turns")
        if not (isinstance(turns, list) and len(turns) == 2 and turns[-1] == q.get("question")):
            problems.append("followup needs turns [first, follow-up] with the follow-up equal to question")
    gold_recs = [records[g] for g in gold_ids]
    for fact in q.get("answer_facts", []):
        if not any(fact.lower() in haystack(rec) for rec in gold_recs):
            problems.append(f"answer fact {fact!r} is not in any gold record")
    if typ is None:
        return problems, gold_ids
    if typ not in TYPES:
        problems.append(f"type {typ!r} is not one of {sorted(TYPES)}")
    facts = q.get("answer_facts", [])
    if typ != "followup" and kind == "followup":
        problems.append("kind followup needs type followup")
    effective = q.get("followup_type") if typ == "followup" else typ
    if typ == "followup":
        if kind != "followup":
            problems.append("type followup needs kind followup")
        if not isinstance(q.get("standalone"), bool):
            problems.append("followup needs a boolean 'standalone'")
        if effective not in TYPES - {"followup"}:
            problems.append(f"followup_type {effective!r} is not a question type")
        if q.get("standalone") is False and len(gold_ids) != 1:
            problems.append("a same-paper follow-up needs exactly one gold paper")
    if not facts:
        problems.append("typed question without answer_facts")
    if effective == "authors":
        for fact in facts:
            if not any(fact in rec.get("authors", []) for rec in gold_recs):
                problems.append(f"author fact {fact!r} is not an author name of a gold record")
    if effective == "decision":
        for fact in facts:
            if fact not in DECISIONS:
                problems.append(f"decision fact {fact!r} is not Oral/Spotlight/Poster")
            elif any(rec.get("decision") != DECISIONS[fact] for rec in gold_recs):
                problems.append(f"decision fact {fact!r} does not match the record")
    if effective == "link" and facts != gold_ids:
        problems.append("link facts must be the gold paper's forum id")
    if typ in {"list", "count", "compare"} and kind != "multi":
        problems.append(f"type {typ} needs kind multi")
    if typ in {"list", "count"} and not 2 <= len(gold_ids) <= 8:
        problems.append(f"type {typ} needs 2-8 gold papers, has {len(gold_ids)}")
    if typ == "compare" and len(gold_ids) != 2:
        problems.append("type compare needs exactly two gold papers")
    if "searched" in q and not (isinstance(q["searched"], list) and q["searched"]
                                and all(isinstance(s, str) and s for s in q["searched"])):
        problems.append("'searched' must be a non-empty list of the searches run")
    if q.get("zero_for_filter"):
        # "How many orals on X?" where no paper on X has that decision: gold is every paper on X (any decision)
        filters = q.get("filters")
        if typ != "count" or kind != "multi" or not isinstance(filters, dict) or set(filters) != {"decisions"}:
            problems.append("zero_for_filter needs type count, kind multi and a 'decisions' filter")
        else:
            for rec in gold_recs:
                if rec.get("decision") in filters["decisions"]:
                    problems.append(f"gold {rec['id']} passes the filter of a zero_for_filter question")
    if typ == "filter":
        filters = q.get("filters")
        if not isinstance(filters, dict) or not filters or set(filters) - {"decisions", "author"}:
            problems.append("type filter needs 'filters' with 'decisions' and/or 'author'")
        else:
            for rec in gold_recs:
                if "decisions" in filters and rec.get("decision") not in filters["decisions"]:
                    problems.append(f"gold {rec['id']} is {rec.get('decision')!r}, outside the decision filter")
                if "author" in filters and filters["author"] not in rec.get("authors", []):
                    problems.append(f"gold {rec['id']} is not by {filters['author']!r}")
    return problems, gold_ids


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sets", nargs="+", type=Path)
    parser.add_argument("--corpus", type=Path, default=ROOT / "rag" / "data" / "iclr2025.jsonl")
    parser.add_argument("--disjoint", action="store_true", help="no paper may be gold in two of the given sets")
    args = parser.parse_args(argv)
    records, prefixes = load_corpus(args.corpus)
    bad = 0
    papers_by_set: dict[Path, set[str]] = {}
    for path in args.sets:
        seen, counts, papers = set(), Counter(), set()
        with path.open(encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    q = json.loads(line)
                except json.JSONDecodeError as exc:
                    print(f"{path}:{lineno}: not JSON ({exc.msg})")
                    bad += 1
                    continue
                problems, gold_ids = check_question(q, records, prefixes)
                if q.get("qid") in seen:
                    problems.append(f"duplicate qid {q.get('qid')!r}")
                seen.add(q.get("qid"))
                for problem in problems:
                    print(f"{path}:{lineno}: {q.get('qid')}: {problem}")
                bad += len(problems)
                papers.update(gold_ids)
                key = q.get("type", q.get("kind"))
                if q.get("type") == "followup":
                    key = "followup (topic change)" if q.get("standalone") else "followup (same paper)"
                counts[key] += 1
        papers_by_set[path] = papers
        print(f"{path}: {sum(counts.values())} questions, {len(papers)} gold papers: "
              + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    if args.disjoint:
        paths = list(papers_by_set)
        for i, a in enumerate(paths):
            for b in paths[i + 1:]:
                shared = papers_by_set[a] & papers_by_set[b]
                if shared:
                    print(f"{a} and {b} share gold papers: {', '.join(sorted(shared))}")
                    bad += len(shared)
    print("OK" if not bad else f"{bad} problem(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
