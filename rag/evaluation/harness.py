"""Evaluation: question sets -> metrics per retrieval configuration, through the same `Engine.ask` the app uses.

Question format (JSON lines): {"qid", "kind": "single"|"multi"|"none"|"followup", "question", "turns" (followup:
[first question, follow-up], asked with the app's own first answer as history; "standalone": true for a new
question, gold empty for one no paper answers), "gold": [paper id, or the first 60 characters of the gold abstract],
"answer_facts": [short strings a correct answer contains]}. A gold entry matches a paper whose id equals it or
whose abstract starts with it (whitespace and case ignored).

Metrics: hit@1, hit@5, MRR and nDCG@10 over questions with one gold paper (single and follow-up); recall@10 over
multi-paper questions; abstention on unanswerable ("none") questions and false refusals on answerable ones;
answers citing a gold paper; the share of citations on a gold paper or one judged relevant (`cite_precision`; a
question's optional `relevant` lists papers blind pooled judgments found on topic besides its gold;
`cite_precision_gold` counts gold alone); fabricated citations (LLM mode); coverage of the answer facts; latency. And
once per
run, for the related papers (`rag.explore.related`): over the questions with two or more gold papers, the share of the
other gold papers among the first gold paper's 5 (10) nearest papers (`related_recall@5`, `@10`).
`rag eval` (CLI, and `make eval`) is the shell over `run`; `eval/` holds the question sets and reports.
"""

from __future__ import annotations

import json
import math
import re
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag.errors import RagError
from rag.generation.citations import cited_sentences
from rag.query.intent import TYPES
from rag.answering.records import OUTCOMES
from rag.engine import Engine

K = 10  # papers retrieved per question, so that recall@10 and nDCG@10 can be measured
CONFIGS: dict[str, dict[str, Any]] = {  # name -> settings overrides; "hybrid" is what the app runs
    "bm25": {"retrieval": "bm25"},
    "dense": {"retrieval": "dense"},  # MiniLM's chunk vectors alone
    "mpnet": {"retrieval": "mpnet"},  # the whole-paper all-mpnet-base-v2 vectors alone
    # Textbook RRF (k=60, equal weights), before tuning: of BM25 and MiniLM, and of all three rankings.
    "hybrid-rrf60": {"retrieval": "hybrid", "rrf_k": 60, "bm25_weight": 1.0, "mpnet_weight": 0.0},
    "hybrid-rrf60-mpnet": {"retrieval": "hybrid", "rrf_k": 60, "bm25_weight": 1.0, "mpnet_weight": 1.0},
    "hybrid-minilm": {"retrieval": "hybrid", "mpnet_weight": 0.0},  # the app's fusion without the mpnet ranking
    "hybrid": {"retrieval": "hybrid"},  # the engine's own fusion settings (tuned on seeds_dev, eval/DECISIONS.md)
    # Pseudo-relevance feedback from the top 5 papers of the first pass (issue 29 item 3; off in the app: tried on
    # describe_dev and the other dev sets, eval/DECISIONS.md): RM3, 10 terms, the question keeping half the weight;
    # Rocchio, the top papers' mean vector at a quarter of the question's weight; alone and under the app's fusion.
    "bm25-rm3": {"retrieval": "bm25", "prf_terms": 10},
    "dense-rocchio": {"retrieval": "dense", "rocchio_weight": 0.25},
    "hybrid-rm3": {"retrieval": "hybrid", "prf_terms": 10},
    "hybrid-rocchio": {"retrieval": "hybrid", "rocchio_weight": 0.25},
    "hybrid-prf": {"retrieval": "hybrid", "prf_terms": 10, "rocchio_weight": 0.25},
    # With an LLM (`--llm-model`), the app also searches the question as the LLM rewrites it
    # (rag/generation/rewrite.py);
    # this is the same run without that call, to measure what it adds (eval/rewrite_eval.py measures retrieval alone).
    "hybrid-no-rewrite": {"retrieval": "hybrid", "llm_rewrite": False},
    # ... and with that call for every question, also where the first retrieval is already confident (the app skips
    # it there: AnswerPolicy.rewrite_confident_below).
    "hybrid-rewrite-always": {"retrieval": "hybrid", "policy": {"rewrite_confident_below": 0.0}},
    # ... and with the reader given the top 5 papers, as before `llm_papers` became 3 (measured then as
    # "hybrid-llm3" against the default 5, eval/DECISIONS.md: a shorter prompt, prefill being most of a CPU server's
    # latency).
    "hybrid-llm5": {"retrieval": "hybrid", "llm_papers": 5},
    # ... and with an unsupported first sentence taken back only where the gate was unsure, as before the twelfth
    # session (AnswerPolicy.lead_check_answered).
    "hybrid-lead-unsure-only": {"retrieval": "hybrid", "policy": {"lead_check_answered": False}},
}
METRICS = ["hit@1", "hit@5", "mrr", "ndcg@10", "multi_recall@10", "abstention_on_none", "false_refusal",
           "cited_gold", "cite_precision", "fabricated", "answer_facts", "ms_p50", "ms_p95"]
# Lists and counts of a topic (`list_scores`), beside the top 10 of the same search taken as the list.
LIST_METRICS = ["list_recall", "list_precision", "topk_recall", "topk_precision", "count_exact", "count_within_one"]


class QuestionSetError(RagError, ValueError):
    """A question file is malformed; the message names the file and line."""


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def matches(gold: str, paper_id: str, abstract: str) -> bool:
    return gold == paper_id or norm(abstract).startswith(norm(gold))


def _lines(paths: list[Path]):
    """(path, line number, line) of every non-blank line of the JSON-lines files, in order."""
    for path in paths:
        for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
            if line.strip():
                yield path, number, line


def load_questions(paths: list[Path], kinds: list[str] | None = None) -> list[dict]:
    out = []
    for path, number, line in _lines(paths):
        try:
            item = json.loads(line)
            assert isinstance(item, dict) and isinstance(item.get("question"), str)
            assert item.get("kind") in ("single", "multi", "none", "followup")
            assert isinstance(item.get("gold", []), list)
            assert item["kind"] != "followup" or len(item.get("turns") or []) == 2
        except (ValueError, AssertionError):
            raise QuestionSetError(f"{path}:{number}: not a question in the documented format "
                                   '({"qid", "kind", "question", "gold", ...})') from None
        item.setdefault("qid", f"{Path(path).stem}:{number}")
        item.setdefault("set", Path(path).stem)
        if not kinds or item["kind"] in kinds:
            out.append(item)
    return out


def searched_as(q: dict) -> str:
    """What a question set's row is searched as by the gate's offline fits and curves (eval/train_verifier.py,
    eval/abstain_curve.py, eval/calibrate.py), which retrieve without the app's conversation: a follow-up about its
    first turn's paper (`"standalone"` not true) glued to that first turn, any other question alone."""
    if q["kind"] == "followup" and not q.get("standalone"):
        return f"{q['turns'][0]} {q['question']}"
    return q["question"]


def evaluate(engine: Engine, questions: list[dict], k: int = K) -> dict:
    """One row per question, and their summary."""
    rows = []
    for q in questions:
        history = None
        first = None
        if q["kind"] == "followup":  # the app's own first answer is the history, as a user of the page has it
            first = engine.ask(q["turns"][0], k=k)
            history = [{"role": "user", "content": q["turns"][0]},
                       {"role": "assistant", "content": first.answer, "paper_ids": first.cited_ids,
                        "outcome": first.outcome}]
        started = time.perf_counter()
        topic = q["kind"] == "multi" and q.get("type") in ("list", "count")
        answer = engine.ask(q["question"], history=history, k=k, limit=0 if topic else None)  # the whole list
        ms = (time.perf_counter() - started) * 1000
        ranks = [next((s.n for s in answer.sources if matches(gold, s.paper_id, s.text)), None)
                 for gold in q.get("gold", [])]
        facts = q.get("answer_facts") or []
        text = answer.answer.lower()
        golds = q.get("gold", [])
        cited_is_gold = [any(matches(g, c.paper_id, c.text) for g in golds) for c in answer.citations]
        relevant = set(q.get("relevant") or [])  # judged on topic besides the gold (blind pooled judgments)
        on_target = [is_gold or c.paper_id in relevant
                     for is_gold, c in zip(cited_is_gold, answer.citations, strict=True)]
        rows.append({
            "qid": q["qid"], "kind": q["kind"], "set": q.get("set", ""), "ranks": ranks,
            "type": q.get("type", ""), "answer_type": answer.answer_type,
            "cite_precision": (sum(on_target) / len(on_target)) if on_target and golds else None,
            "cite_precision_gold": (sum(cited_is_gold) / len(cited_is_gold)) if cited_is_gold and golds else None,
            "searched_alone": (q["turns"][0] not in answer.retrieval_query and not answer.focus)
            if q["kind"] == "followup" else None,
            "expected_alone": q.get("standalone"),
            "leaned": bool(answer.focus) if first is not None else None,
            "first_cited_gold": any(matches(g, c.paper_id, c.text) for g in golds for c in first.citations)
            if first is not None else None,
            "abstained": answer.abstained, "outcome": answer.outcome, "confidence": answer.confidence,
            "mode": answer.mode,
            "cited_gold": any(matches(g, s.paper_id, s.text) for g in q.get("gold", []) for s in answer.citations),
            "fabricated": answer.fabricated, "ms": round(ms, 1),
            "facts": (sum(f.lower() in text for f in facts) / len(facts)) if facts else None,
            **(list_scores(engine, q, answer, k) if topic else {}),
            "fallback_reason": answer.fallback_reason, "llm_no_answer": answer.llm_no_answer,
            "unsupported": len(answer.unsupported),
            "cited_sentences": sum(1 for _, c in cited_sentences(answer.answer) if c) if answer.mode == "llm" else 0,
            "completion_tokens": (answer.usage or {}).get("completion_tokens")
            or (answer.usage or {}).get("completion_chunks"),
        })
    sets = list(dict.fromkeys(r["set"] for r in rows))
    by_set = {name: summarize([r for r in rows if r["set"] == name]) for name in sets} if len(sets) > 1 else {}
    return {"rows": rows, "summary": summarize(rows), "by_set": by_set, "by_type": by_type(rows)}


def list_scores(engine: Any, q: dict, answer: Any, k: int = K) -> dict[str, Any]:
    """A list or count question (kind "multi", type "list" or "count"; its gold is every paper on the topic, its
    `relevant` the papers judged on topic besides): the share of the gold the answer's list names (`list_recall`),
    the share of the listed papers that are gold or relevant (`list_precision`), whether a count is exact (the
    number of papers it names lies between the gold's and the gold's plus the relevant's) or within one, and the
    textbook baseline beside it: the top `k` papers of this configuration's search taken as the list."""
    gold, relevant = set(q.get("gold") or []), set(q.get("relevant") or [])
    listed = [c.paper_id for c in answer.citations]

    def scores(ids: list[str]) -> tuple[float | None, float | None]:
        recall = len(set(ids) & gold) / len(gold) if gold else None
        precision = len(set(ids) & (gold | relevant)) / len(ids) if ids else (0.0 if gold else None)
        return recall, precision

    recall, precision = scores(listed)
    top = [source.paper_id for source in engine.search(q["question"], k=k).sources]
    top_recall, top_precision = scores(top)
    n, low, high = len(listed), len(gold), len(gold | relevant)
    return {"list_recall": recall, "list_precision": precision, "topk_recall": top_recall,
            "topk_precision": top_precision,
            "count_exact": (low <= n <= high) if q.get("type") == "count" else None,
            "count_within_one": (low - 1 <= n <= high + 1) if q.get("type") == "count" else None}


def related_recall(engine: Any, questions: list[dict], ks: tuple[int, ...] = (5, 10)) -> dict[str, Any]:
    """For the questions with two or more gold papers: the mean share of the other gold papers found among the
    first gold paper's `k` related papers, for each k. Gold entries are paper ids or abstract prefixes
    (`matches`); questions whose first gold paper is not in the index are left out."""
    papers = engine.retriever.state.papers
    shares: dict[int, list[float]] = {k: [] for k in ks}
    for q in questions:
        golds = [next((p.paper_id for p in papers if matches(g, p.paper_id, p.abstract)), None)
                 for g in q.get("gold", [])]
        others = {g for g in golds[1:] if g is not None and g != golds[0]}
        if not golds or golds[0] is None or not others:
            continue
        near = [n.paper.paper_id for n in engine.related(golds[0], max(ks)).related]
        for k in ks:
            shares[k].append(len(others & set(near[:k])) / len(others))
    questions_used = len(shares[ks[0]])
    out: dict[str, Any] = {"related_questions": questions_used}
    for k in ks:
        out[f"related_recall@{k}"] = round(sum(shares[k]) / questions_used, 3) if questions_used else None
    return out


def summarize(rows: list[dict]) -> dict:
    def mean(xs):
        xs = list(xs)
        return round(sum(xs) / len(xs), 3) if xs else None

    def unanswerable(r: dict) -> bool:  # a follow-up with no gold paper: after a topic no paper covers
        return r["kind"] == "none" or (r["kind"] == "followup" and not r["ranks"])

    single = [r for r in rows if r["kind"] == "single" or (r["kind"] == "followup" and r["ranks"])]
    multi = [r for r in rows if r["kind"] == "multi"]
    none = [r for r in rows if unanswerable(r)]
    answerable = [r for r in rows if not unanswerable(r)]
    first = [r["ranks"][0] if r["ranks"] else None for r in single]
    ms = sorted(r["ms"] for r in rows)
    return {
        "questions": len(rows), "single": len(single), "multi": len(multi), "none": len(none),
        "hit@1": mean(rk == 1 for rk in first),
        "hit@5": mean(rk is not None and rk <= 5 for rk in first),
        "mrr": mean(1 / rk if rk else 0 for rk in first),
        "ndcg@10": mean(1 / math.log2(rk + 1) if rk and rk <= 10 else 0 for rk in first),
        "multi_recall@10": mean(mean(rk is not None and rk <= 10 for rk in r["ranks"]) for r in multi),
        "abstention_on_none": mean(r["abstained"] for r in none),
        "false_refusal": mean(r["abstained"] for r in answerable),
        "cited_gold": mean(r["cited_gold"] for r in answerable),
        "fabricated": sum(r["fabricated"] for r in rows),
        "answer_facts": mean(r["facts"] for r in answerable if r["facts"] is not None),
        "cite_precision": mean(r["cite_precision"] for r in answerable if r.get("cite_precision") is not None),
        **{name: mean(r[name] for r in rows if r.get(name) is not None) for name in LIST_METRICS},
        "ms_p50": round(statistics.median(ms), 1) if ms else None,
        "ms_p95": round(ms[int(0.95 * (len(ms) - 1))], 1) if ms else None,
        **outcome_shares(answerable, none),
        **llm_summary(rows),
        **chain_summary(rows),
    }


# Two-turn chains (`"kind": "followup"`, issue 53): a second turn about the first answer's paper ("standalone":
# false, or not given) cites its gold paper; a new question ("standalone": true, with gold) finds its paper first;
# one after a topic no paper covers (gold empty) is not answered.
CHAIN_METRICS = ["followups", "leaning_cited_gold", "leaning_first_cited_gold", "new_hit@1", "no_paper_answered"]


def chain_summary(rows: list[dict]) -> dict[str, Any]:
    """The CHAIN_METRICS of the follow-up rows ({} without any)."""
    chains = [r for r in rows if r["kind"] == "followup"]
    if not chains:
        return {}

    def mean(xs: list[bool]) -> float | None:
        return round(sum(xs) / len(xs), 3) if xs else None

    leaning = [r for r in chains if not r.get("expected_alone") and r["ranks"]]  # unmarked: about the first turn
    new = [r for r in chains if r.get("expected_alone") and r["ranks"]]
    return {"followups": len(chains), "leaning_cited_gold": mean([r["cited_gold"] for r in leaning]),
            "leaning_first_cited_gold": mean([r["first_cited_gold"] for r in leaning]),
            "new_hit@1": mean([r["ranks"][0] == 1 for r in new]),
            "no_paper_answered": mean([r.get("outcome") == "answered" for r in chains if not r["ranks"]])}


# The three outcomes (`Answer.outcome`) per kind of question: "answerable_not_covered" is the false refusal of
# old (`false_refusal` still counts it), "none_answered" the unanswerable questions given an answer.
OUTCOME_METRICS = [f"{side}_{outcome}" for side in ("answerable", "none") for outcome in OUTCOMES]


def outcome_shares(answerable: list[dict], none: list[dict]) -> dict[str, float | None]:
    """The share of each outcome among the answerable and among the unanswerable rows (rows of a report written
    before outcomes existed read as their `abstained` said)."""
    def share(rows: list[dict], outcome: str) -> float | None:
        got = [r.get("outcome") or ("not_covered" if r["abstained"] else "answered") for r in rows]
        return round(sum(g == outcome for g in got) / len(got), 3) if got else None

    return {f"{side}_{outcome}": share(rows, outcome)
            for side, rows in (("answerable", answerable), ("none", none)) for outcome in OUTCOMES}


# Columns of LLM-mode runs (`make eval-llm`), beside the same run's extractive answers.
LLM_METRICS = ["questions", "llm_written", "llm_no_answer", "fell_back", "answer_facts", "cited_gold",
               "cite_precision", "false_refusal", "unanswered_answered", "unsupported_share", "fabricated", "ms_p50",
               "ms_p90", "tokens_p50"]


def _reason_kind(reason: str) -> str:
    """A fallback reason without its specifics (URLs, seconds), so equal causes are counted together."""
    for key, kind in (("cited none", "cited nothing"), ("no sentence", "unsupported"), ("within", "deadline"),
                      ("timed out", "timeout"), ("did not answer", "timeout"), ("max_tokens", "too long"),
                      ("empty", "empty"), ("connect", "no connection"), ("broke off", "stream cut")):
        if key in reason:
            return kind
    return reason[:40]


def llm_summary(rows: list[dict]) -> dict:
    """What an LLM run adds to `summarize`: who wrote the answers, why they fell back, how well supported."""
    def mean(xs):
        xs = list(xs)
        return round(sum(xs) / len(xs), 3) if xs else None

    answerable = [r for r in rows if r["kind"] != "none"]
    none = [r for r in rows if r["kind"] == "none"]
    llm = [r for r in rows if r["mode"] == "llm"]
    ms = sorted(r["ms"] for r in rows)
    tokens = sorted(r["completion_tokens"] for r in rows if r.get("completion_tokens"))
    reasons: dict[str, int] = {}
    for r in rows:
        if r.get("fallback_reason"):
            kind = _reason_kind(r["fallback_reason"])
            reasons[kind] = reasons.get(kind, 0) + 1
    checked = sum(r["cited_sentences"] for r in llm)
    return {"llm_written": mean(r["mode"] == "llm" and not r["abstained"] for r in answerable),
            "llm_no_answer": mean(r.get("llm_no_answer", False) or (r["mode"] == "llm" and r["abstained"])
                                  for r in rows),
            "fell_back": mean(bool(r.get("fallback_reason")) for r in rows),
            "fallback_reasons": dict(sorted(reasons.items(), key=lambda kv: -kv[1])),
            "unanswered_answered": mean(not r["abstained"] for r in none),
            "unsupported_share": round(sum(r["unsupported"] for r in llm) / checked, 3) if checked else None,
            "ms_p90": round(ms[int(0.9 * (len(ms) - 1))], 1) if ms else None,
            "tokens_p50": tokens[len(tokens) // 2] if tokens else None}


def by_type(rows: list[dict]) -> dict[str, dict]:
    """Per question type (the sets' `type` field): the share of answers stating the expected facts, citing a gold
    paper, the share of citations that point at a gold paper, the type detected, and for follow-ups whether a
    change of topic was searched alone."""
    def mean(xs):
        xs = [x for x in xs if x is not None]
        return round(sum(xs) / len(xs), 3) if xs else None

    out = {}
    for kind in sorted({r["type"] for r in rows if r.get("type")}):
        mine = [r for r in rows if r.get("type") == kind]
        out[kind] = {"questions": len(mine), "answer_facts": mean(r["facts"] for r in mine),
                     "cited_gold": mean(r["cited_gold"] for r in mine if r["kind"] != "none"),
                     "cite_precision": mean(r["cite_precision"] for r in mine),
                     "cite_precision_gold": mean(r.get("cite_precision_gold") for r in mine),
                     "type_detected": mean(r["answer_type"] == kind for r in mine)
                     if kind in TYPES else None,
                     "topic_change_alone": mean(r["searched_alone"] for r in mine if r["expected_alone"] is True),
                     "same_paper_followed": mean(not r["searched_alone"] for r in mine
                                                 if r["expected_alone"] is False)}
    return out


TYPE_METRICS = ["questions", "answer_facts", "cited_gold", "cite_precision", "cite_precision_gold", "type_detected",
                "topic_change_alone",
                "same_paper_followed"]


@dataclass
class Report:
    name: str
    results: dict[str, dict]  # config name -> {"summary", "rows", "overrides"}
    meta: dict[str, Any]

    def table(self) -> str:
        """The metrics as a Markdown table, one row per configuration. With several question files: one row per
        file and configuration (each set with the baselines beside the app), then all files together."""
        first = next(iter(self.results.values()), {})
        sets = list(first.get("by_set") or {})
        lead = "| set | config | " if sets else "| config | "
        lines = [lead + " | ".join(METRICS) + " |", "|" + "---|" * (len(METRICS) + 1 + bool(sets))]
        for set_name in [*sets, "all"] if sets else [None]:
            for name, result in self.results.items():
                summary = result["by_set"][set_name] if set_name in sets else result["summary"]
                cells = [_cell(summary.get(m)) for m in METRICS]
                lines.append(("" if set_name is None else f"| {set_name} ") + f"| {name} | " + " | ".join(cells) + " |")
        return "\n".join(lines)

    def chain_table(self) -> str:
        """Per set with follow-ups, for each configuration: the CHAIN_METRICS; "" without follow-ups."""
        first = next(iter(self.results.values()), {})
        sets = [name for name, summary in (first.get("by_set") or {}).items() if summary.get("followups")]
        if not first.get("summary", {}).get("followups"):
            return ""
        lines = ["Two-turn chains (the app's own first answer as history):", "",
                 "| set | config | " + " | ".join(CHAIN_METRICS) + " |", "|" + "---|" * (len(CHAIN_METRICS) + 2)]
        for set_name in [*sets, "all"]:
            for name, result in self.results.items():
                summary = result["by_set"][set_name] if set_name in sets else result["summary"]
                lines.append(f"| {set_name} | {name} | " + " | ".join(_cell(summary.get(m)) for m in CHAIN_METRICS)
                             + " |")
        return "\n".join(lines) + "\n\n"

    def outcome_table(self) -> str:
        """Per set, for each configuration: the share of each outcome (answered / unsure / not covered) among the
        answerable questions and among the unanswerable ones."""
        first = next(iter(self.results.values()), {})
        sets = list(first.get("by_set") or {})
        lead = "| set | config | " if sets else "| config | "
        lines = ["Outcomes (answerable: answered / unsure / not covered; unanswerable: the same):", "",
                 lead + " | ".join(OUTCOME_METRICS) + " |", "|" + "---|" * (len(OUTCOME_METRICS) + 1 + bool(sets))]
        for set_name in [*sets, "all"] if sets else [None]:
            for name, result in self.results.items():
                summary = result["by_set"][set_name] if set_name in sets else result["summary"]
                lines.append(("" if set_name is None else f"| {set_name} ") + f"| {name} | "
                             + " | ".join(_cell(summary.get(m)) for m in OUTCOME_METRICS) + " |")
        return "\n".join(lines) + "\n\n"

    def list_table(self) -> str:
        """Per set, for each configuration: the lists and counts of a topic (`list_scores`): the share of the gold
        listed and of the listed on topic, counts exact and within one, and the top 10 of the same search taken as
        the list (the textbook baseline). Empty when no question is a list or count."""
        first = next(iter(self.results.values()), {})
        if first.get("summary", {}).get("list_recall") is None:
            return ""
        sets = list(first.get("by_set") or {})
        lead = "| set | config | " if sets else "| config | "
        lines = ["Lists and counts (list_* the answer's whole list; topk_* the search's top 10 as the list):", "",
                 lead + " | ".join(LIST_METRICS) + " |", "|" + "---|" * (len(LIST_METRICS) + 1 + bool(sets))]
        for set_name in [*sets, "all"] if sets else [None]:
            for name, result in self.results.items():
                summary = result["by_set"][set_name] if set_name in sets else result["summary"]
                lines.append(("" if set_name is None else f"| {set_name} ") + f"| {name} | "
                             + " | ".join(_cell(summary.get(m)) for m in LIST_METRICS) + " |")
        return "\n".join(lines) + "\n\n"

    def llm_table(self) -> str:
        """For a run with an LLM: per set, the LLM columns of each configuration (the LLM one and the same run's
        extractive one); the fallback reasons counted below. Empty for an extractive run."""
        if not any(r["mode"] == "llm" or r.get("fallback_reason") for res in self.results.values()
                   for r in res.get("rows", [])):
            return ""
        first = next(iter(self.results.values()), {})
        sets = [*(first.get("by_set") or {}), "all"]
        lines = ["| set | answers | " + " | ".join(LLM_METRICS) + " |", "|" + "---|" * (len(LLM_METRICS) + 2)]
        reasons = []
        for set_name in sets:
            for name, result in self.results.items():
                summary = result["by_set"].get(set_name) if set_name != "all" else result["summary"]
                if not summary:
                    continue
                lines.append(f"| {set_name} | {name} | " + " | ".join(_cell(summary.get(m)) for m in LLM_METRICS)
                             + " |")
                if summary.get("fallback_reasons"):
                    reasons.append(f"- {set_name}, {name}: " + ", ".join(
                        f"{k} {v}" for k, v in summary["fallback_reasons"].items()))
        return "\n".join(lines) + ("\n\nFallback reasons:\n" + "\n".join(reasons) if reasons else "") + "\n\n"

    def type_table(self) -> str:
        """Per question type, for the configuration the app runs (hybrid): empty if the set has no types. With
        several typed question files, one row per file and type (a tuning set and a held-out one apart)."""
        result = self.results.get("hybrid") or next(iter(self.results.values()), {})
        types = result.get("by_type") or {}
        if not types:
            return ""
        rows = result.get("rows") or []
        typed_sets = list(dict.fromkeys(r["set"] for r in rows if r.get("type")))
        groups = ([(name, by_type([r for r in rows if r["set"] == name])) for name in typed_sets]
                  if len(typed_sets) > 1 else [(None, types)])
        lead = "| set | type | " if groups[0][0] else "| type | "
        lines = ["By question type (hybrid):", "", lead + " | ".join(TYPE_METRICS) + " |",
                 "|" + "---|" * (len(TYPE_METRICS) + 1 + bool(groups[0][0]))]
        for set_name, figures_by_type in groups:
            for kind, figures in figures_by_type.items():
                lines.append(("" if set_name is None else f"| {set_name} ") + f"| {kind} | "
                             + " | ".join(_cell(figures.get(m)) for m in TYPE_METRICS) + " |")
        return "\n".join(lines) + "\n\n"

    def write(self, out_dir: Path) -> list[Path]:
        out_dir.mkdir(parents=True, exist_ok=True)
        md, js, png = (out_dir / f"{self.name}{ext}" for ext in (".md", ".json", ".png"))
        js.write_text(json.dumps({"name": self.name, "meta": self.meta, "results": self.results}, indent=1,
                                 ensure_ascii=False), encoding="utf-8")
        meta = "\n".join(f"- {key}: {value}" for key, value in self.meta.items())
        md.write_text(f"# Evaluation: {self.name}\n\n{meta}\n\n{self.table()}\n\n{self.outcome_table()}"
                      f"{self.list_table()}"
                      f"{self.llm_table()}{self.chain_table()}{self.type_table()}"
                      "hit@k, MRR and nDCG@10 over questions with one gold paper (single + follow-up); "
                      "multi_recall@10 over multi-paper questions; abstention_on_none over unanswerable questions; "
                      "false_refusal, cited_gold and cite_precision (citations on a gold or judged-relevant "
                      "paper) over answerable ones; fabricated = citations removed; "
                      "ms = time of `Engine.ask` per question. Chains: leaning_cited_gold over second turns about the "
                      "first answer's paper, new_hit@1 over new questions asked after a first turn, "
                      "no_paper_answered over second turns after a topic no paper covers.\n", encoding="utf-8")
        written = [md, js]
        if _plot(self, png):
            written.append(png)
        return written


def _cell(value: Any) -> str:
    if value is None:
        return "–"
    return f"{value:.3f}" if isinstance(value, float) and value <= 1.0 else str(value)


def _plot(report: Report, path: Path) -> bool:
    """Grouped bars of the ranking metrics per configuration (matplotlib, from the test/bench extras)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    metrics = ["hit@1", "hit@5", "mrr", "ndcg@10", "abstention_on_none", "false_refusal"]
    names = list(report.results)
    fig, ax = plt.subplots(figsize=(9, 4))
    width = 0.8 / max(len(names), 1)
    for i, name in enumerate(names):
        values = [report.results[name]["summary"].get(m) or 0 for m in metrics]
        ax.bar([x + i * width for x in range(len(metrics))], values, width, label=name)
    ax.set_xticks([x + width * (len(names) - 1) / 2 for x in range(len(metrics))], metrics)
    ax.set_ylim(0, 1.05)
    ax.set_title(f"{report.name}: {report.meta.get('questions')} questions, {report.meta.get('papers')} papers")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def run(engine: Engine, questions: list[dict], configs: list[str], name: str, k: int = K) -> Report:
    """Evaluate every configuration in one run, over the same loaded index."""
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown:
        raise QuestionSetError(f"unknown configuration(s) {', '.join(unknown)}; choose from {', '.join(CONFIGS)}")
    results = {}
    settings = engine.settings
    for config in configs:
        result = evaluate(engine.derive(**CONFIGS[config]), questions, k)
        key = f"{config} LLM" if settings.llm_enabled else config  # not `name`: that is the report's
        results[key] = {"overrides": CONFIGS[config], **result}
        if settings.llm_enabled:  # the extractive answers of the same run, beside the LLM's
            overrides = {**CONFIGS[config], "llm_model": None}
            results[f"{config} extractive"] = {"overrides": overrides,
                                               **evaluate(engine.derive(**overrides), questions, k)}
    meta = {"questions": len(questions), "papers": engine.index.count(), "k": k,
            "answers": f"LLM {settings.llm_model}" if settings.llm_enabled else "extractive",
            "embedder": engine.index.embedder.identity, "date": time.strftime("%Y-%m-%d %H:%M")}
    # Related papers (rag.explore.related): of the multi-paper questions, the other gold papers among the first's
    # neighbours.
    meta.update(related_recall(engine, questions))
    return Report(name, results, meta)


# ---- the support check (`rag.generation.support`) on hand-labelled (sentence, cited paper, label) pairs --------

SUPPORT_LABELS = ("supported", "unsupported")
MAX_FALSE_UNSUPPORTED = 0.05  # the target: at most 5% of supported sentences flagged


def is_support_set(paths: list[Path]) -> bool:
    """True if the first record of the first file is a support pair (it has a "label") rather than a question."""
    for line in Path(paths[0]).read_text(encoding="utf-8").splitlines():
        if line.strip():
            try:
                return isinstance(item := json.loads(line), dict) and "label" in item
            except ValueError:
                return False
    return False


def load_support_pairs(paths: list[Path]) -> list[dict]:
    """Pairs {"pid", "sentence", "cited": [paper id, ...], "label": "supported"|"unsupported", "why", "half"}; the
    cited ids must be papers of the bundled ICLR 2025 list, whose abstracts the check reads."""
    from rag.store.catalog import known_papers

    by_id = {p.paper_id: p for p in known_papers().values()}
    out = []
    for path, number, line in _lines(paths):
        try:
            item = json.loads(line)
            assert isinstance(item, dict) and isinstance(item.get("sentence"), str) and item["sentence"].strip()
            assert item.get("label") in SUPPORT_LABELS
            assert isinstance(item.get("cited"), list) and item["cited"]
        except (ValueError, AssertionError):
            raise QuestionSetError(f"{path}:{number}: not a support pair in the documented format "
                                   '({"pid", "sentence", "cited", "label", ...})') from None
        unknown = [c for c in item["cited"] if c not in by_id]
        if unknown:
            raise QuestionSetError(f"{path}:{number}: cites {', '.join(map(str, unknown))}, not a paper of the "
                                   "bundled ICLR 2025 list")
        item.setdefault("pid", f"{Path(path).stem}:{number}")
        item.setdefault("why", "")
        item.setdefault("half", "")
        item["papers"] = [by_id[c] for c in item["cited"]]
        out.append(item)
    return out


def check_support_pairs(pairs: list[dict], embedder) -> list[dict]:
    """One row per pair: what `rag.generation.support.check` finds for the pair's sentence written as an answer citing
    its papers. All pairs go through one call, one paragraph each ("<sentence> [3, 7]."), with every cited paper a
    numbered source, so each abstract is embedded once."""
    from types import SimpleNamespace

    from rag.generation import support

    numbers: dict[str, int] = {}
    sources = []
    paragraphs = []
    for pair in pairs:
        for paper in pair["papers"]:
            if paper.paper_id not in numbers:
                numbers[paper.paper_id] = len(numbers) + 1
                sources.append(SimpleNamespace(n=numbers[paper.paper_id], title=paper.title, text=paper.abstract))
        cited = ", ".join(str(numbers[p.paper_id]) for p in pair["papers"])
        paragraphs.append(f"{' '.join(pair['sentence'].split()).rstrip('.')} [{cited}].")
    claims = support.check("\n\n".join(paragraphs), sources, embedder, max_sentences=4 * len(paragraphs))
    rows, at = [], 0
    for pair, paragraph in zip(pairs, paragraphs, strict=True):
        mine = []  # the claims of this paragraph (one, unless the splitter saw two sentences in it)
        while at < len(claims) and claims[at].sentence in paragraph:
            mine.append(claims[at])
            at += 1
        rows.append({"pid": pair["pid"], "half": pair["half"], "label": pair["label"], "why": pair["why"],
                     "similarity": round(min((c.similarity for c in mine), default=0.0), 4),
                     "missing_numbers": sorted({n for c in mine for n in c.missing_numbers}),
                     "missing_names": sorted({n for c in mine for n in c.missing_names}),
                     "misread_numbers": sorted({n for c in mine for n in c.misread_numbers}),
                     "sentence": pair["sentence"]})
    return rows


def support_summary(rows: list[dict], threshold: float) -> dict[str, dict]:
    """Per half ("a", "b", ...) and over all pairs: the false-"unsupported" rate on supported pairs and the catch
    rate on unsupported ones (also per kind of unsupported pair), at `threshold`."""
    def flagged(row: dict) -> bool:
        return (row["similarity"] < threshold or bool(row["missing_numbers"]) or bool(row["missing_names"])
                or bool(row.get("misread_numbers")))

    out = {}
    for half in sorted({r["half"] for r in rows if r["half"]}) + ["all"]:
        part = [r for r in rows if half == "all" or r["half"] == half]
        good = [r for r in part if r["label"] == "supported"]
        bad = [r for r in part if r["label"] == "unsupported"]
        summary = {"supported": len(good), "unsupported": len(bad),
                   "false_unsupported": round(sum(map(flagged, good)) / len(good), 3) if good else None,
                   "catch": round(sum(map(flagged, bad)) / len(bad), 3) if bad else None}
        for why in sorted({r["why"] for r in bad if r["why"]}):
            kind = [r for r in bad if r["why"] == why]
            summary[f"catch_{why}"] = round(sum(map(flagged, kind)) / len(kind), 3)
        out[half] = summary
    return out


def calibrate_support(rows: list[dict], half: str = "a", target: float = MAX_FALSE_UNSUPPORTED) -> float | None:
    """The highest threshold (0.01 steps) that flags at most `target` of the supported pairs of `half`: the value
    chosen on one half, to be read on the other."""
    part = [r for r in rows if r["half"] == half]
    if not any(r["label"] == "supported" for r in part):
        return None
    best = None
    for step in range(0, 101):
        threshold = step / 100
        rate = support_summary(part, threshold)["all"]["false_unsupported"]
        if rate is not None and rate <= target:
            best = threshold
    return best


@dataclass
class SupportReport:
    name: str
    rows: list[dict]
    threshold: float
    meta: dict[str, Any]

    def summary(self) -> dict[str, dict]:
        return support_summary(self.rows, self.threshold)

    def table(self) -> str:
        summary = self.summary()
        kinds = sorted({k for s in summary.values() for k in s if k.startswith("catch_")})
        columns = ["supported", "false_unsupported", "unsupported", "catch", *kinds]
        lines = ["| half | " + " | ".join(columns) + " |", "|" + "---|" * (len(columns) + 1)]
        for half, s in summary.items():
            lines.append(f"| {half} | " + " | ".join(_cell(s.get(c)) for c in columns) + " |")
        return "\n".join(lines)

    def write(self, out_dir: Path) -> list[Path]:
        out_dir.mkdir(parents=True, exist_ok=True)
        md, js = out_dir / f"{self.name}.md", out_dir / f"{self.name}.json"
        js.write_text(json.dumps({"name": self.name, "meta": self.meta, "threshold": self.threshold,
                                  "summary": self.summary(), "rows": self.rows}, indent=1, ensure_ascii=False),
                      encoding="utf-8")
        meta = "\n".join(f"- {key}: {value}" for key, value in self.meta.items())
        flagged = [r for r in self.rows if r["similarity"] < self.threshold or r["missing_numbers"]
                   or r["missing_names"]]
        missed = [r for r in self.rows if r["label"] == "unsupported" and r not in flagged]
        wrong = [r for r in flagged if r["label"] == "supported"]
        listing = "\n".join(f"- {r['pid']} ({r['half']}, {r['label']}, {r['why']}, similarity {r['similarity']:.2f}): "
                            f"{r['sentence']}" for r in wrong + missed)
        md.write_text(f"# Support check: {self.name}\n\n{meta}\n\n{self.table()}\n\n"
                      "false_unsupported: share of supported pairs the check flags; catch: share of unsupported pairs "
                      "it flags (catch_<kind> per kind). A pair is flagged when its best similarity to a sentence of "
                      "the cited abstracts is below the threshold, or it states a number or "
                      "a name the cited abstracts and titles do not contain (rag/generation/support.py).\n\n"
                      f"## Supported pairs flagged, and unsupported pairs missed\n\n{listing}\n", encoding="utf-8")
        return [md, js]


def run_support(pairs: list[dict], embedder, threshold: float, name: str) -> SupportReport:
    rows = check_support_pairs(pairs, embedder)
    calibrated = calibrate_support(rows, "a")
    meta = {"pairs": len(rows), "threshold": threshold,
            "threshold chosen on half a": calibrated if calibrated is not None else "– (no half a)",
            "rule": "highest threshold with at most 5% of half a's supported pairs flagged",
            "embedder": embedder.identity, "date": time.strftime("%Y-%m-%d %H:%M")}
    return SupportReport(name, rows, threshold, meta)
