"""Cross-validation of the three-outcome gate (rag/answering/abstain.py) over the DEV sets: does a refit with the
dev questions, or another feature, beat the gate it would replace on questions neither was fitted or tuned on?

    python eval/gate_cv.py record --out dev.pkl      # ask the dev questions once, keep each decision's Retrieval
    python eval/train_abstain.py --dry-run --cache gen.pkl    # the generated questions' retrievals
    python eval/gate_cv.py cv --dev dev.pkl --generated gen.pkl [--before OLD_GATE.json] [--seeds 3] [--json OUT]
    python eval/gate_cv.py oof --dev dev.pkl --generated gen.pkl --rows rows.json   # for tune_outcomes --from-rows

`record` asks every question of tune_outcomes.DEV_SETS as `rag eval` does (`Engine.ask`, k = 10; a follow-up
after its first turn) and pickles, per question, what tune_outcomes records plus the Retrieval the answer's outcome
decision saw, so that features can change without asking again. The sets tune_outcomes.held_out refuses
(eval/questions/manifest.toml: heldout, refused, or not listed) are refused here too.

`cv` compares CANDIDATES (a feature list, and how the dev questions enter the fit: each weighted `dev_weight` beside
a generated question's 1) by grouped k-fold cross-validation. The dev questions are grouped by paper (gold and
`about` ids joined, so paraphrases and near misses of one paper never straddle folds; a question about no paper is
its own group). For each held-out fold a candidate is fitted on the generated questions plus the other folds' dev
questions, its two cut points are chosen on the other folds the way tune_outcomes chooses them (least cost; from
inner out-of-fold probabilities when dev questions are in the fit), and both are applied to the held-out fold. The
gate it would replace (`--before`, default the shipped abstain_gate.json: fixed weights) gets its cut points chosen
the same way, in the same run. Reported: total cost and the outcome shares of answerable and unanswerable questions,
per set and in total, over the pooled held-out folds, averaged over `--seeds` fold assignments.

`oof` writes the chosen candidate's (SHIPPED) out-of-fold probabilities, averaged over the seeds, as tune_outcomes
rows: `python eval/tune_outcomes.py --from-rows rows.json` then chooses the shipped cut points on probabilities of
questions the weights were not fitted on (in-sample ones would be too confident).
"""

from __future__ import annotations

import argparse
import json
import math
import pickle
import random
import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "eval"))

from rag.answering import abstain  # noqa: E402
from rag.query import wording  # noqa: E402
from tune_outcomes import DEV_SETS, GRID, QUESTIONS, ask_as_eval, cost, held_out, is_near, outcome  # noqa: E402

OUTCOMES = ("answered", "unsure", "not_covered")
FOLDS, SEEDS = 5, 3
# The candidate shipped (eval/README.md): the gate's features (abstain.FEATURES, detail_missing among them), each
# dev question weighted 30 beside a generated one (the lowest cross-validated cost: x10 72.3, x30 54.2, x100 56.7).
# Refit with the read description sets (787 dev questions), named and described questions weighed apart
# (abstain.FEATURES' named* copies): x3 285.3, x10 272.2, x30 275.5.
SHIPPED_DEV_WEIGHT = 10.0


def restored(retrieval):
    """A Retrieval pickled before it carried `wording` (rag.query.wording) with its question read as the engine
    reads it (the searched words, a Chinese question's text and English question words); others as they are."""
    if retrieval is not None and "wording" not in vars(retrieval):
        from rag.query import wording, zh

        retrieval.wording = wording.read(retrieval.question, retrieval.asked,
                                         zh.asked_words(retrieval.asked) if retrieval.asked else "")
    return retrieval


def load_rows(path: Path) -> list[dict]:
    """`record`'s pickle, each Retrieval `restored`."""
    rows = pickle.loads(path.read_bytes())
    for r in rows:
        restored(r["retrieval"])
    return rows


def refused(sets: list[str]) -> bool:
    return any(held_out(s) for s in sets)


# ----------------------------------------------------------------------------------------------------- record ---

def record(engine, sets: list[str]) -> list[dict]:
    """One row per dev question: tune_outcomes' fields, the paper ids it is about, and the pickled-then-restored
    Retrieval of its first outcome decision (None when its answer made none). `engine`: an Engine over the corpus."""
    from rag.answering import compose, extractive
    from rag.evaluation.harness import load_questions, matches

    if refused(sets):
        raise ValueError("held-out sets are never tuned on (eval/README.md)")
    seen: list[bytes] = []
    original = extractive.decide

    def recording(retrieval, settings):
        seen.append(pickle.dumps(retrieval))  # as the decision saw it (the answer step edits it afterwards)
        return original(retrieval, settings)

    compose.decide = recording  # the one place the answer step decides (rag/answering/compose.py)
    rows = []
    try:
        for q in load_questions([QUESTIONS / f"{s}.jsonl" for s in sets]):
            answer = ask_as_eval(engine, q, before=seen.clear)
            retrieval = pickle.loads(seen[0]) if seen else None
            top = answer.sources[0] if answer.sources else None
            golds = q.get("gold", [])
            rows.append({
                "set": q["set"], "qid": q["qid"], "answerable": q["kind"] != "none", "near": is_near(q),
                "papers": sorted(set(golds) | ({q["about"]} if q.get("about") else set())),
                "outcome": answer.outcome, "retrieval": retrieval,
                "weak": bool(retrieval and retrieval.hits and retrieval.confidence
                             < engine.settings.abstain_threshold and not retrieval.named_match),
                "top_gold": bool(top and any(matches(g, top.paper_id, top.text) for g in golds))})
    finally:
        compose.decide = original
    return rows


# --------------------------------------------------------------------------------------------------- features ---

# A yes/no question about the paper in a later clause (`extra`'s yes_no_clause).
_CLAUSE_YES_NO = re.compile(
    r"(?:[:;,?]\s+|\band\s+|\bbut\s+)(?!(?:is|are|has|have|does|do)\s+(?:there|anyone|any\s+"
    r"(?:papers?|works?|stud\w+|research|methods?|approach\w*))\b)"
    r"(?:has|have|does|do|did|were|was|is|are|can|could|would|will)\s+"
    r"(?:it|they|this|that|these|those|its|their|the|any|such|one)\b", re.IGNORECASE)


def extra(retrieval) -> dict[str, float]:
    """Candidate features tried beside abstain.FEATURES and not kept (eval/README.md), from the Retrieval alone."""
    from rag.search.retrieve import tokenize
    from rag.search.topical import idf

    hits = retrieval.hits[:abstain.FEATURE_HITS]
    out = dict.fromkeys(("retrievers_agree", "topical_top", "topical_gap", "missing_idf_max", "missing_idf_share",
                         "fused_margin", "missing_elsewhere", "dense_rank_top", "yes_no_clause", "yes_no_any"), 0.0)
    if not hits:
        return out
    # A yes/no question about the paper in a later clause ("The method that ...: does it handle cloth?"), which the
    # shipped yes_no (anchored at the question's start) does not see (thirteenth session).
    start = bool(wording.YES_NO.search(retrieval.question)) and not wording.SEARCH.search(retrieval.question)
    out["yes_no_clause"] = float(bool(_CLAUSE_YES_NO.search(retrieval.question)))
    out["yes_no_any"] = float(start or out["yes_no_clause"] > 0)
    n_corpus = max(retrieval.corpus_size, 1)
    tokens = [set(t) for t in tokenize([h.paper.search_text for h in hits])]
    others = set().union(*tokens[1:]) if len(tokens) > 1 else set()
    weights = {t: idf(retrieval.term_df[t], n_corpus) for t in retrieval.terms if retrieval.term_df.get(t, 0) > 0}
    missing = [t for t in weights if t not in tokens[0]]
    total = sum(weights.values()) or 1.0
    out["topical_top"] = hits[0].topical  # IDF-weighted share of the question's topic in the top paper
    out["topical_gap"] = max((h.topical for h in hits[1:]), default=0.0) - hits[0].topical
    out["missing_idf_max"] = max((weights[t] for t in missing), default=0.0) / math.log(1 + (n_corpus + 0.5) / 0.5)
    out["missing_idf_share"] = sum(weights[t] for t in missing) / total
    out["missing_elsewhere"] = sum(weights[t] for t in missing if t in others) / total
    out["fused_margin"] = hits[0].score - (hits[1].score if len(hits) > 1 else 0.0)
    dense = [h.dense if h.dense is not None else -1.0 for h in hits]
    bm25 = [h.bm25 if h.bm25 is not None else -1.0 for h in hits]
    out["retrievers_agree"] = float(int(np.argmax(dense)) == int(np.argmax(bm25)))  # best cosine = best BM25 hit
    out["dense_rank_top"] = sum(1 for d in dense if d > dense[0]) / max(len(hits) - 1, 1)
    return out


_MEMO: dict[int, dict[str, float]] = {}


def named_features(retrieval) -> dict[str, float]:
    """abstain.FEATURES and the `extra` candidates by name (memoised per object: the pickles stay loaded)."""
    if id(retrieval) not in _MEMO:
        # abstain.FEATURES holds named_match and the named* copies of its own features; the extras get theirs here
        base = {**extra(retrieval), **dict(zip(abstain.FEATURES, abstain.features(retrieval), strict=False))}
        named = base["named_match"]
        _MEMO[id(retrieval)] = {**base, **{f"named*{k}": v * named for k, v in base.items() if "*" not in k}}
    return _MEMO[id(retrieval)]


def matrix(retrievals: list, names: list[str]) -> np.ndarray:
    return np.array([[named_features(r)[n] for n in names] if r is not None else [0.0] * len(names)
                     for r in retrievals]).reshape(len(retrievals), len(names))


# ------------------------------------------------------------------------------------------------------ model ---

def fit(x: np.ndarray, y: np.ndarray, w: np.ndarray | None = None, l2: float = 1e-2) -> tuple:
    """Standardize, then an L2-regularized logistic regression with balanced classes and per-question weights
    (scikit-learn's lbfgs): C = 1 / (l2 n), as train_abstain always fitted. Returns (mean, scale, w, b)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler().fit(x)
    scale = scaler.scale_ + 1e-9
    model = LogisticRegression(C=1.0 / (l2 * len(y)), class_weight="balanced", max_iter=5000)
    model.fit((x - scaler.mean_) / scale, y, sample_weight=w)
    return scaler.mean_, scale, model.coef_[0], float(model.intercept_[0])


def predict(model: tuple, x: np.ndarray) -> np.ndarray:
    mean, scale, w, b = model
    return 1 / (1 + np.exp(-(((x - mean) / scale) @ np.asarray(w) + b)))


def decision(row: dict, p: float) -> dict | None:
    """The decision inputs tune_outcomes.outcome reads, with this gate's probability."""
    r = row["retrieval"]
    if r is None:
        return None
    return {"p": float(p), "applies": abstain.applies(r), "weak": row["weak"], "hits": bool(r.hits)}


def outcomes_of(rows: list[dict], p: np.ndarray, u: float, n: float, low: str) -> list[str]:
    return [outcome(decision(r, pr), u, n, low) or r["outcome"] for r, pr in zip(rows, p, strict=False)]


def choose_cuts(rows: list[dict], p: np.ndarray) -> tuple[float, float, str]:
    """tune_outcomes' choice: least cost, then fewer answerable not covered, then fewer unsure."""
    best = None
    for low in ("unsure", "not_covered"):
        for u in GRID:
            for n in (n for n in GRID if n >= u):
                got = outcomes_of(rows, p, u, n, low)
                key = (sum(cost(r["answerable"], g, r.get("near", False)) for r, g in zip(rows, got, strict=False)),
                       sum(1 for r, g in zip(rows, got, strict=False) if r["answerable"] and g == "not_covered"),
                       sum(1 for r, g in zip(rows, got, strict=False) if r["answerable"] and g == "unsure"))
                if best is None or key < best[0]:
                    best = (key, u, n, low)
    assert best is not None
    return best[1], best[2], best[3]


def groups_of(rows: list[dict]) -> list[int]:
    """A group per row: rows sharing a paper id (gold or `about`) are one group (union-find)."""
    parent = list(range(len(rows)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[str, int] = {}
    for i, r in enumerate(rows):
        for pid in r["papers"]:
            if pid in owner:
                parent[find(i)] = find(owner[pid])
            else:
                owner[pid] = i
    return [find(i) for i in range(len(rows))]


def folds_of(rows: list[dict], k: int, seed: int) -> np.ndarray:
    groups = groups_of(rows)
    ids = sorted(set(groups))
    random.Random(seed).shuffle(ids)
    fold = {g: i % k for i, g in enumerate(ids)}
    return np.array([fold[g] for g in groups])


# ------------------------------------------------------------------------------------------------- candidates ---

class Candidate:
    """A gate to cross-validate: its features by name, and how it is fitted: `gate` (a gate file's dict) = fixed
    weights, not refit; else on the generated questions (`generated`) and the training folds' dev questions, each
    of these weighted `dev_weight` (0: generated only)."""

    def __init__(self, name: str, features: list[str], dev_weight: float = 0.0, generated: bool = True,
                 gate: dict | None = None):
        self.name, self.features, self.dev_weight, self.generated, self.gate = (name, features, dev_weight,
                                                                                generated, gate)

    def fitted(self, gx: np.ndarray, gy: np.ndarray, dx: np.ndarray, dy: np.ndarray) -> tuple:
        xs, ys, ws = [], [], []
        if self.generated:
            xs.append(gx), ys.append(gy), ws.append(np.ones(len(gy)))
        if self.dev_weight:
            xs.append(dx), ys.append(dy), ws.append(np.full(len(dy), float(self.dev_weight)))
        return fit(np.vstack(xs), np.concatenate(ys), np.concatenate(ws))

    @property
    def uses_dev(self) -> bool:
        return self.gate is None and bool(self.dev_weight)


def oof_probabilities(cand: Candidate, rows: list[dict], gen: list[tuple], folds: np.ndarray,
                      within: np.ndarray | None = None) -> np.ndarray:
    """Each dev row's probability from the candidate fitted without its fold (rows outside `within` are ignored,
    neither fitted on nor predicted: the inner loop)."""
    dx = matrix([r["retrieval"] for r in rows], cand.features)
    if cand.gate is not None:
        return predict((cand.gate["mean"], cand.gate["scale"], cand.gate["weights"], cand.gate["bias"]), dx)
    gx = matrix([r for r, _ in gen], cand.features)
    gy = np.array([label for _, label in gen], dtype=float)
    dy = np.array([0.0 if r["answerable"] else 1.0 for r in rows])
    has = np.array([r["retrieval"] is not None for r in rows])
    within = np.ones(len(rows), dtype=bool) if within is None else within
    if not cand.uses_dev:
        return predict(cand.fitted(gx, gy, dx[:0], dy[:0]), dx)
    p = np.zeros(len(rows))
    for f in sorted(set(folds[within].tolist())):
        test = within & (folds == f)
        train = within & (folds != f) & has
        p[test] = predict(cand.fitted(gx, gy, dx[train], dy[train]), dx[test])
    return p


def cross_validate(cand: Candidate, rows: list[dict], gen: list[tuple], k: int, seed: int) -> list[str]:
    """The outcome of every dev row when its fold is held out (weights and cut points chosen without it)."""
    folds = folds_of(rows, k, seed)
    got = [""] * len(rows)
    fixed = None if cand.uses_dev else oof_probabilities(cand, rows, gen, folds)
    for f in range(k):
        test, train = folds == f, folds != f
        if fixed is not None:
            p_train, p_test = fixed[train], fixed[test]
        else:
            p_train = oof_probabilities(cand, rows, gen, folds, within=train)[train]
            has = np.array([r["retrieval"] is not None for r in rows])
            dx = matrix([r["retrieval"] for r in rows], cand.features)
            gx = matrix([r for r, _ in gen], cand.features)
            gy = np.array([label for _, label in gen], dtype=float)
            dy = np.array([0.0 if r["answerable"] else 1.0 for r in rows])
            p_test = predict(cand.fitted(gx, gy, dx[train & has], dy[train & has]), dx[test])
        train_rows = [rows[i] for i in np.flatnonzero(train)]
        u, n, low = choose_cuts(train_rows, p_train)
        for i, o in zip(np.flatnonzero(test), outcomes_of([rows[i] for i in np.flatnonzero(test)], p_test, u, n,
                                                          low), strict=False):
            got[i] = o
    return got


def table(rows: list[dict], runs: list[list[str]]) -> dict:
    """Cost and outcome shares (answerable, unanswerable) per set and in total, averaged over runs (seeds)."""
    out = {}
    for s in [*dict.fromkeys(r["set"] for r in rows), "all"]:
        idx = [i for i, r in enumerate(rows) if s in ("all", r["set"])]
        entry: dict = {"n": len(idx), "cost": round(float(np.mean(
            [sum(cost(rows[i]["answerable"], run[i], rows[i].get("near", False)) for i in idx)
             for run in runs])), 2)}
        for answerable, name in ((True, "answerable"), (False, "unanswerable")):
            sub = [i for i in idx if rows[i]["answerable"] == answerable]
            if sub:
                entry[name] = {o: round(float(np.mean([sum(run[i] == o for i in sub) / len(sub) for run in runs])),
                                        3) for o in OUTCOMES}
                entry[name]["n"] = len(sub)
        out[s] = entry
    return out


def fmt(entry: dict, name: str) -> str:
    e = entry.get(name)
    return f"{e['answered']:.3f} / {e['unsure']:.3f} / {e['not_covered']:.3f}" if e else "–"


def candidates(before: dict) -> list[Candidate]:
    """What was compared (eval/README.md): the gate being replaced, refits on the generated questions alone, with
    the dev questions at several weights, and each `extra` feature or `abstain.FEATURES` addition beside them."""
    old = list(before["features"])
    out = [Candidate("before (fixed weights)", old, gate=before), Candidate("refit, generated only", old)]
    out += [Candidate(f"+dev x{w:g}", old, w) for w in (10, 30, 100)]
    out.append(Candidate("dev only", old, 1, generated=False))
    tried = ["detail_missing", "retrievers_agree", "topical_top", "topical_gap", "missing_idf_max",
             "missing_idf_share", "fused_margin", "missing_elsewhere", "dense_rank_top"]
    for name in tried:
        feats = [*old, name]
        out += [Candidate(f"+{name} generated only", feats), Candidate(f"+{name} +dev x30", feats, 30)]
    detail = [*old, "detail_missing"]
    out += [Candidate(f"+detail_missing +dev x{w}", detail, w) for w in (10, 50, 100, 200, 300)]
    out.append(Candidate("+detail_missing dev only", detail, 1, generated=False))
    both = [*old, "retrievers_agree", "detail_missing"]
    out += [Candidate(f"+retrievers_agree+detail_missing +dev x{w}", both, w) for w in (30, 100)]
    out += [Candidate(f"+all tried +dev x{w}", [*old, *tried], w) for w in (30, 100)]
    out += [Candidate(f"+dev x{w:g}", old, w) for w in (1, 3)]
    out += [Candidate(f"+named_match +dev x{w}", [*old, "named_match"], w) for w in (10, 30, 100)]
    base = [n for n in old if n != "named_match" and "*" not in n]
    split = [*base, "named_match", *(f"named*{n}" for n in base)]
    out += [Candidate(f"+named split +dev x{w}", split, w) for w in (3, 10, 30)]
    # The question's form (abstain.FORM_FEATURES, ninth session): the shipped features without them, and with each
    form = [n for n in abstain.FEATURES if n not in abstain.FORM_FEATURES]
    out.append(Candidate("shipped without the form features", form, SHIPPED_DEV_WEIGHT))
    out += [Candidate(f"shipped without the form features +{n}", [*form, n], SHIPPED_DEV_WEIGHT)
            for n in abstain.FORM_FEATURES]
    out.append(Candidate("shipped", list(abstain.FEATURES), SHIPPED_DEV_WEIGHT))
    # A yes/no question in a later clause (thirteenth session): beside the shipped features, or as their yes_no
    out.append(Candidate("shipped +yes_no_clause", [*abstain.FEATURES, "yes_no_clause"], SHIPPED_DEV_WEIGHT))
    out.append(Candidate("shipped, yes_no in any clause",
                         [("yes_no_any" if n == "yes_no" else n) for n in abstain.FEATURES], SHIPPED_DEV_WEIGHT))
    return out


def generated(path: Path) -> list[tuple]:
    """[(retrieval, label)] of train_abstain's generated questions, from its --cache pickle."""
    import train_abstain

    papers = [json.loads(x) for x in (ROOT / "rag" / "data" / "iclr2025.jsonl").read_text(encoding="utf-8")
              .splitlines() if x.strip()]
    excluded, test_terms = train_abstain.held_out_of_generation()
    items, _ = train_abstain.generate(papers, excluded, test_terms, random.Random(train_abstain.SEED))
    cache = {q: restored(r) for q, r in pickle.loads(path.read_bytes()).items()}
    missing = sum(q not in cache for q, _, _ in items)
    if missing:  # the manifest's sets changed since the cache was written: they decide which papers are left out
        print(f"  {missing} of {len(items)} generated questions are not in {path} (rerun train_abstain.py --cache "
              "to ask them); fitting on the rest", flush=True)
    return [(cache[q], label) for q, label, _ in items if q in cache]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("--corpus", type=Path, default=ROOT / "rag" / "data" / "iclr2025.jsonl")
    rec.add_argument("--sets", nargs="+", default=DEV_SETS)
    rec.add_argument("--out", type=Path, required=True)
    for name in ("cv", "oof"):
        p = sub.add_parser(name)
        p.add_argument("--dev", type=Path, required=True, help="`record`'s pickle")
        p.add_argument("--generated", type=Path, required=True, help="train_abstain.py --cache pickle")
        p.add_argument("--folds", type=int, default=FOLDS)
        p.add_argument("--seeds", type=int, default=SEEDS)
    cv = sub.choices["cv"]
    cv.add_argument("--before", type=Path, default=ROOT / "rag" / "answering" / abstain.GATE_FILE,
                    help="the gate being replaced (e.g. `git show REV:rag/answering/abstain_gate.json`)")
    cv.add_argument("--only", nargs="*", default=None, help="candidate names (prefixes)")
    cv.add_argument("--json", type=Path, default=None)
    cv.add_argument("--write", action="store_true",
                    help="record the figures of 'before' and 'shipped' (and every candidate's cost) in the gate file")
    sub.choices["oof"].add_argument("--rows", type=Path, required=True)
    args = parser.parse_args()
    if args.cmd == "record":
        if refused(args.sets):
            parser.error("held-out sets are never tuned on (eval/README.md)")
        from rag.config import Settings
        from rag.engine import Engine

        engine = Engine(Settings.load(data_dir=ROOT / ".rag-eval" / args.corpus.stem))
        engine.ingest([args.corpus])
        rows = record(engine, args.sets)
        args.out.write_bytes(pickle.dumps(rows))
        print(f"{len(rows)} rows -> {args.out}")
        return 0
    rows = load_rows(args.dev)
    if refused(list({r["set"] for r in rows})):
        parser.error("held-out sets are never tuned on (eval/README.md)")
    gen = generated(args.generated)
    if args.cmd == "oof":
        cand = Candidate("shipped", list(abstain.FEATURES), SHIPPED_DEV_WEIGHT)
        p = np.mean([oof_probabilities(cand, rows, gen, folds_of(rows, args.folds, seed))
                     for seed in range(args.seeds)], axis=0)
        note = (f"probabilities out of fold (eval/gate_cv.py oof: {args.folds} folds by paper, mean of {args.seeds} "
                "fold assignments)")
        out = [{"set": r["set"], "qid": r["qid"], "answerable": r["answerable"], "outcome": r["outcome"],
                "top_gold": r["top_gold"], "decision": decision(r, pr), "p_from": note}
            for r, pr in zip(rows, p, strict=False)]
        args.rows.write_text(json.dumps(out, indent=1), encoding="utf-8")
        print(f"{len(out)} rows with out-of-fold probabilities ({args.folds} folds by paper, mean of {args.seeds} "
              f"seeds) -> {args.rows}")
        return 0
    before = json.loads(args.before.read_text(encoding="utf-8"))
    results = {}
    for cand in candidates(before):
        if args.only and not any(cand.name.startswith(o) for o in args.only):
            continue
        runs = [cross_validate(cand, rows, gen, args.folds, seed) for seed in range(args.seeds)]
        t = results[cand.name] = table(rows, runs)
        print(f"{cand.name:<44} cost {t['all']['cost']:6.1f}  answerable {fmt(t['all'], 'answerable')}  "
              f"unanswerable {fmt(t['all'], 'unanswerable')}  | describe_dev {t['describe_dev']['cost']:5.1f} "
              f"{fmt(t['describe_dev'], 'answerable')} ; {fmt(t['describe_dev'], 'unanswerable')}", flush=True)
        if args.json:
            args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")
    if args.write:
        path = ROOT / "rag" / "answering" / abstain.GATE_FILE
        gate = json.loads(path.read_text(encoding="utf-8"))
        names = ("before (fixed weights)", "shipped")
        assert all(n in results for n in names), "--write needs both 'before' and 'shipped' among the candidates"

        def figures(t: dict) -> dict:
            return {s: {k: v for k, v in e.items() if k != "n"} for s, e in t.items()}
        gate["cross_validation"] = {
            "method": f"eval/gate_cv.py: {args.folds}-fold cross-validation over {len(rows)} dev questions "
                      f"({', '.join(dict.fromkeys(r['set'] for r in rows))}) grouped by paper, weights and cut "
                      f"points chosen without the held-out fold, mean of {args.seeds} fold assignments; cost as "
                      "tune_outcomes.COSTS; shares answered / unsure / not covered",
            "before": {"gate": str(before.get("training")), **figures(results["before (fixed weights)"])},
            "shipped": figures(results["shipped"]),
            "cost_of_each_candidate": {n: t["all"]["cost"] for n, t in results.items()}}
        text = json.dumps(gate, indent=1) + "\n"
        abstain.load_gate(text)
        path.write_text(text, encoding="utf-8")
        print(f"wrote the cross-validation figures into {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
