"""The two cut points of the three-outcome gate (rag/answering/abstain.py): chosen on DEV sets only, written into
abstain_gate.json's "outcomes" entry with the sets and the figures that chose them.

    python eval/tune_outcomes.py [--corpus rag/data/iclr2025.jsonl] [--dry-run] [--rows OUT.json]

Each dev question is asked as `rag eval` asks it (`Engine.ask`, k = 10, a follow-up after its first turn), and the
inputs of every outcome decision the app makes (`rag.answering.extractive.decide`: the gate's probability, whether
the best sentence is below the confidence bar) are recorded; the cut points are then swept over those records,
no question being asked twice. The choice minimises the cost over all dev questions, a false "not covered" on an
answerable question costing more than an "unsure" (COSTS). The sets eval/questions/manifest.toml marks heldout or
refused, and any set it does not list, are refused (`held_out`): nothing is tuned on them.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rag.config import Settings  # noqa: E402
from rag.answering import abstain, compose, extractive  # noqa: E402
from rag.engine import Engine  # noqa: E402
from rag.evaluation.harness import K, load_questions, matches  # noqa: E402
from eval import manifest  # noqa: E402

QUESTIONS = ROOT / "eval" / "questions"
# The gate's dev sets, in their order (eval/questions/manifest.toml, `gate`): the sets written for tuning and the
# held-out sets read since, never a held-out or refused one.
DEV_SETS = [s.name for s in manifest.sets(gate=True)]
held_out = manifest.held_out  # refused here: a heldout set, a read one kept out of every fit, or one not listed


# (answerable?, outcome) -> cost. A false "not covered" hides papers that answer; an "unsure" still cites the
# closest, so it costs a third as much; an unanswerable question answered is as bad as a false "not covered", and an
# "unsure" on it (the closest papers, labelled as not answering) costs little.
COSTS = {(True, "answered"): 0.0, (True, "unsure"): 1.0, (True, "not_covered"): 3.0,
         (False, "answered"): 3.0, (False, "unsure"): 0.5, (False, "not_covered"): 0.0}
# A near miss (a real paper, asked what its abstract does not say) is rightly "unsure": that paper is close and does
# not say (issue 51's outcomes); "not covered" tells the user no paper is about what they described, which hides it.
NEAR_COSTS = {"answered": 3.0, "unsure": 0.0, "not_covered": 1.0}


def is_near(q: dict) -> bool:
    """A question set's unanswerable question about a real paper: `near_miss`, `about`, `near` or form near_miss."""
    return q.get("kind") == "none" and bool(q.get("near_miss") or q.get("about") or q.get("near")
                                             or q.get("form") == "near_miss")


def cost(answerable: bool, outcome: str, near: bool = False) -> float:
    """What an outcome costs: COSTS, NEAR_COSTS for a near miss."""
    return NEAR_COSTS[outcome] if near and not answerable else COSTS[(answerable, outcome)]
GRID = [round(0.02 * i, 2) for i in range(1, 51)] + [1.01]


def ask_as_eval(engine: Engine, q: dict, before=lambda: None):
    """The answer `rag eval` gives to question `q` (k = K; a follow-up asked after its first turn, whose answer is
    its history). `before` runs just before the question itself is asked: recorders clear what the first turn left."""
    history = None
    if q["kind"] == "followup":
        first = engine.ask(q["turns"][0], k=K)
        history = [{"role": "user", "content": q["turns"][0]},
                   {"role": "assistant", "content": first.answer, "paper_ids": first.cited_ids}]
    before()
    return engine.ask(q["question"], history=history, k=K)


def record(engine: Engine, questions: list[dict]) -> list[dict]:
    """One row per question: the inputs of the first outcome decision its answer made (None when none was made:
    a list with no topic, a comparison of named papers, a follow-up's own papers), and whether the top paper is
    gold."""
    seen: list[dict] = []
    original = extractive.decide

    def recording(retrieval, settings):
        seen.append({"p": abstain.probability(retrieval), "applies": abstain.applies(retrieval),
                     "weak": bool(retrieval.hits) and retrieval.confidence < settings.abstain_threshold
                     and not retrieval.named_match, "hits": bool(retrieval.hits)})
        return original(retrieval, settings)

    compose.decide = recording  # the one place the answer step decides (rag/answering/compose.py)
    rows = []
    try:
        for q in questions:
            answer = ask_as_eval(engine, q, before=seen.clear)
            golds = q.get("gold", [])
            top = answer.sources[0] if answer.sources else None
            rows.append({"set": q["set"], "qid": q["qid"], "answerable": q["kind"] != "none", "near": is_near(q),
                         "decision": seen[0] if seen else None, "outcome": answer.outcome,
                         "top_gold": bool(top and any(matches(g, top.paper_id, top.text) for g in golds))})
    finally:
        compose.decide = original
    return rows


def outcome(decision: dict | None, unsure_at: float, not_covered_at: float, low: str) -> str | None:
    """What `decide` gives for a recorded decision under these cut points (None: no decision was made)."""
    if decision is None:
        return None
    if not decision["hits"]:
        return "not_covered"
    if not decision["applies"]:
        return "not_covered" if decision["weak"] else "answered"
    if decision["p"] >= not_covered_at:
        return "not_covered"
    if decision["weak"]:
        return low
    return "unsure" if decision["p"] >= unsure_at else "answered"


def shares(rows: list[dict], unsure_at: float, not_covered_at: float, low: str) -> dict:
    """Cost and the outcome shares of answerable and unanswerable rows (a row with no decision keeps the outcome
    its answer had)."""
    counts = {True: {"answered": 0, "unsure": 0, "not_covered": 0}, False: {"answered": 0, "unsure": 0,
                                                                             "not_covered": 0}}
    total = 0.0
    for r in rows:
        got = outcome(r["decision"], unsure_at, not_covered_at, low) or r["outcome"]
        counts[r["answerable"]][got] += 1
        total += cost(r["answerable"], got, r.get("near", False))
    out: dict = {"cost": round(total, 2)}
    for answerable, name in ((True, "answerable"), (False, "unanswerable")):
        n = sum(counts[answerable].values()) or 1
        out[name] = {k: round(v / n, 3) for k, v in counts[answerable].items()}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=ROOT / "rag" / "data" / "iclr2025.jsonl")
    parser.add_argument("--sets", nargs="+", default=DEV_SETS, help="dev sets (names under eval/questions)")
    parser.add_argument("--dry-run", action="store_true", help="print, do not write abstain_gate.json")
    parser.add_argument("--rows", type=Path, default=None, help="write the recorded decisions here (JSON)")
    parser.add_argument("--from-rows", type=Path, default=None, help="sweep recorded decisions, ask nothing")
    args = parser.parse_args()
    if any(held_out(s) for s in args.sets):
        parser.error("held-out sets are never tuned on (eval/README.md)")
    if args.from_rows:
        rows = json.loads(args.from_rows.read_text(encoding="utf-8"))
    else:
        engine = Engine(Settings.load(data_dir=ROOT / ".rag-eval" / args.corpus.stem))
        engine.ingest([args.corpus])
        rows = record(engine, load_questions([QUESTIONS / f"{s}.jsonl" for s in args.sets]))
    if args.rows:
        args.rows.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    candidates = [(shares(rows, u, n, low), u, n, low) for low in ("unsure", "not_covered") for u in GRID
                  for n in GRID if n >= u]
    # Least cost; among equals, fewer answerable questions "not covered", then fewer "unsure".
    best, unsure_at, not_covered_at, low = min(candidates, key=lambda c: (
        c[0]["cost"], c[0]["answerable"]["not_covered"], c[0]["answerable"]["unsure"]))
    old = shares(rows, abstain.THRESHOLD, abstain.THRESHOLD, "not_covered")
    print(f"{len(rows)} dev questions ({', '.join(dict.fromkeys(r['set'] for r in rows))})")
    print(f"two outcomes (threshold {abstain.THRESHOLD}): {old}")
    print(f"three outcomes: unsure from {unsure_at}, not covered from {not_covered_at}, low confidence -> {low}: "
          f"{best}")
    for u, n in ((unsure_at - 0.1, not_covered_at), (unsure_at + 0.1, not_covered_at),
                 (unsure_at, min(1.01, not_covered_at + 0.05)), (unsure_at, max(unsure_at, not_covered_at - 0.05))):
        print(f"  neighbour unsure {u:.2f} / not covered {n:.2f}: {shares(rows, round(u, 2), round(n, 2), low)}")
    by_set = {s: shares([r for r in rows if r["set"] == s], unsure_at, not_covered_at, low)
              for s in dict.fromkeys(r["set"] for r in rows)}
    for s, figures in by_set.items():
        print(f"  {s:<16} {figures}")
    path = ROOT / "rag" / "answering" / abstain.GATE_FILE
    gate = json.loads(path.read_text(encoding="utf-8"))
    gate["outcomes"] = {
        "unsure_at": unsure_at, "not_covered_at": not_covered_at, "low_confidence": low,
        "chosen_on": f"{len(rows)} dev questions: {', '.join(dict.fromkeys(r['set'] for r in rows))} "
                     f"(eval/tune_outcomes.py; no held-out set)" + (f"; {rows[0]['p_from']}" if rows[0].get("p_from")
                                                                     else ""),
        "costs": "answerable: unsure 1, not covered 3; unanswerable: answered 3, unsure 0.5",
        "figure": {"answerable": best["answerable"], "unanswerable": best["unanswerable"],
                   "two_outcomes_before": {"answerable": old["answerable"], "unanswerable": old["unanswerable"]}}}
    text = json.dumps(gate, indent=1) + "\n"
    abstain.load_gate(text)
    if args.dry_run:
        print(json.dumps(gate["outcomes"], indent=1))
        return 0
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
