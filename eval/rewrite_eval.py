"""Retrieval with and without the LLM's rewrite of the question (issue 28 item 4, rag/generation/rewrite.py),
in one run.

For every single-gold question of the given sets (dev sets only: the fusion was chosen on these), it asks the LLM
once for the rewrite (`rag.generation.rewrite.ask`, the engine's own call, timed, with the load average beside it),
then ranks the 2,114 papers (`--data-dir`, an index of rag/data/iclr2025.jsonl such as `rag eval --corpus` makes)
without the rewrite and with it under each fusion variant, all from the same replies: hit@1, hit@5 and MRR per set
and variant, the added latency (p50/p90 of the call), how often the call failed or gave nothing usable, and what
skipping the call for questions whose named paper the first pass found (`rewrite.needed`) changes. The search and
filters are the engine's (`Engine._plan` without an LLM: the glossary's English terms for Chinese); only the rewrite
and the fusion vary. Replies are cached in `--cache` (JSON), so variants can be added without asking again.

    python eval/rewrite_eval.py eval/questions/describe_dev.jsonl eval/questions/zh_dev.jsonl \\
        --data-dir .rag-eval/iclr2025 --model qwen2.5-coder-1.5b --base-url http://127.0.0.1:8091/v1
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rag.config import Settings  # noqa: E402
from rag.engine import Engine  # noqa: E402
from rag.evaluation.harness import load_questions, matches  # noqa: E402
from rag.generation import rewrite as rewriting  # noqa: E402
from rag.answering import abstain  # noqa: E402
from rag.search.retrieve import RetrievalParams  # noqa: E402

K = 10
CONFIDENT_CUTS = (0.05, 0.1, 0.2, 0.3)
# name -> (fusion, weight); "question alone" is the app without the rewrite
VARIANTS: dict[str, tuple[str, float] | None] = {
    "question alone": None,
    "rrf 0.3": ("rrf", 0.3), "rrf 0.5": ("rrf", 0.5), "rrf 0.7": ("rrf", 0.7), "rrf 1.0": ("rrf", 1.0),
    "merge 0.5": ("merge", 0.5), "merge 1.0": ("merge", 1.0),
    "rewrite alone": ("alone", 0.0),
}


def rank_of(engine: Engine, search: str, filters, gold: list[str], variant: tuple[str, float] | None,
            rewrite: str) -> int | None:
    params = RetrievalParams.from_settings(engine.settings, k=K, decisions=filters.decisions, author=filters.author)
    if variant is None or not rewrite:
        retrieval = engine.retriever.retrieve(search, params)
    elif variant[0] == "alone":
        retrieval = engine.retriever.retrieve(rewrite, params)
    else:
        fused = replace(params, rewrite_fusion=variant[0], rewrite_weight=variant[1])
        retrieval = engine.retriever.retrieve(search, fused, rewrite=rewrite)
    return next((i + 1 for i, h in enumerate(retrieval.hits)
                 if any(matches(g, h.paper.paper_id, h.paper.abstract) for g in gold)), None)


def summary(ranks: list[int | None]) -> dict[str, float]:
    n = len(ranks) or 1
    return {"hit@1": sum(r == 1 for r in ranks if r) / n, "hit@5": sum(r <= 5 for r in ranks if r) / n,
            "mrr": sum(1 / r for r in ranks if r) / n}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sets", nargs="+", type=Path)
    parser.add_argument("--data-dir", type=Path, default=ROOT / ".rag-eval" / "iclr2025")
    parser.add_argument("--model", required=True)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--cache", type=Path, default=None, help="replies cache (default eval/reports/...)")
    parser.add_argument("--out", type=Path, default=ROOT / "eval" / "reports")
    parser.add_argument("--deadline", type=float, default=90.0)
    parser.add_argument("--cached-only", action="store_true",
                        help="only the questions whose reply is cached (a run cut short); no call is made")
    args = parser.parse_args()
    if any("heldout" in p.name or "final" in p.name for p in args.sets):
        raise SystemExit("error: dev sets only (the fusion is chosen on what this prints)")
    engine = Engine(Settings.load(data_dir=args.data_dir, llm_model=args.model, llm_base_url=args.base_url,
                                  llm_deadline=args.deadline, llm_timeout=args.deadline, llm_max_retries=0))
    engine.require_index()
    llm = engine.llm
    assert llm is not None
    cache_path = args.cache or args.out / f"rewrite-{args.model}.replies.json"
    cache = json.loads(cache_path.read_text()) if cache_path.exists() else {}
    rows = []
    questions = [q for q in load_questions(args.sets) if q["kind"] == "single" and q.get("gold")
                 and (q["qid"] in cache or not args.cached_only)]
    for i, q in enumerate(questions):
        plan = engine._plan(q["question"], [], None, [], None, ("decisions", "author"))
        first = engine.retriever.retrieve(plan.search, RetrievalParams.from_settings(engine.settings, k=K))
        if q["qid"] not in cache:
            load = os.getloadavg()[0]
            found = rewriting.ask(llm, engine.templates, q["question"])
            cache[q["qid"]] = {"raw": found.raw, "ms": found.ms, "fallback": found.fallback, "load": round(load, 2)}
            cache_path.parent.mkdir(parents=True, exist_ok=True)
            cache_path.write_text(json.dumps(cache, ensure_ascii=False, indent=1))
        reply = cache[q["qid"]]
        _, search = rewriting.parse(reply["raw"], engine.templates["search"]) if not reply["fallback"] else ("", "")
        ranks = {name: rank_of(engine, plan.search, plan.filters, q["gold"], variant, search)
                 for name, variant in VARIANTS.items()}
        rows.append({"qid": q["qid"], "set": q["set"], "named": first.named_match, "rewrite": search,
                     "p": round(abstain.probability(first), 4) if abstain.applies(first) else None,
                     "ms": reply["ms"], "load": reply["load"], "fallback": reply["fallback"], "ranks": ranks})
        print(f"{i + 1}/{len(questions)} {q['qid']} {reply['ms'] / 1000:.1f}s load {reply['load']} "
              f"alone {ranks['question alone']} rrf0.5 {ranks['rrf 0.5']} | {search[:100]}", file=sys.stderr)
    lines = [f"# Retrieval with the LLM's rewrite: {args.model}", "",
             f"{len(rows)} single-gold questions, {engine.index.count():,} papers, k={K}. Each variant ranks with the "
             "same reply. '+ skip' leaves the question alone when its first pass found a named paper "
             "(`rag.generation.rewrite.needed`).", "",
             "| set | variant | hit@1 | hit@5 | mrr |", "|---|---|---|---|---|"]
    variants = list(VARIANTS) + [f"{name} + skip" for name in VARIANTS if VARIANTS[name] and name != "rewrite alone"]
    # Skipping the call where the first pass is already confident: the gate's probability of "not covered" under a cut
    variants += [f"rrf 0.3 + skip p<{cut}" for cut in CONFIDENT_CUTS]
    result: dict[str, dict] = {}
    for name in sorted({r["set"] for r in rows}) + ["all"]:
        chosen = [r for r in rows if name in ("all", r["set"])]
        for variant in variants:
            base, skip = variant.removesuffix(" + skip"), variant.endswith(" + skip")
            cut = float(variant.rsplit("p<", 1)[1]) if "p<" in variant else None
            if cut is not None:
                skipped = [bool(r["named"]) or (r.get("p") is not None and r["p"] < cut) for r in chosen]
                ranks = [r["ranks"]["question alone" if s else "rrf 0.3"]
                         for r, s in zip(chosen, skipped, strict=False)]
                note = f" (call skipped for {sum(skipped)} of {len(chosen)})"
            else:
                ranks = [r["ranks"]["question alone" if skip and r["named"] else base] for r in chosen]
                note = ""
            result.setdefault(name, {})[variant] = s = summary(ranks)
            lines.append(f"| {name} | {variant}{note} | {s['hit@1']:.3f} | {s['hit@5']:.3f} | {s['mrr']:.3f} |")
    called = [r for r in rows if not r["fallback"]]
    ms = sorted(r["ms"] for r in rows)
    loads = [r["load"] for r in rows]
    p90 = ms[int(0.9 * (len(ms) - 1))]
    lines += ["", f"Rewrite call: p50 {statistics.median(ms) / 1000:.1f} s, p90 {p90 / 1000:.1f} s "
              f"(load average {min(loads):.1f}-{max(loads):.1f} on 2 cores); failed {len(rows) - len(called)}; "
              f"nothing usable {sum(1 for r in called if not r['rewrite'])}; named (would skip) "
              f"{sum(1 for r in rows if r['named'])}."]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"rewrite-{args.model}.md").write_text("\n".join(lines) + "\n")
    (args.out / f"rewrite-{args.model}.json").write_text(json.dumps({"summary": result, "rows": rows}, indent=1,
                                                                    ensure_ascii=False))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
