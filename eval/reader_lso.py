"""Leave whole sets out: does the reader (rag/answering/reader.py) make the three-outcome gate better on question
sets it was neither fitted nor tuned on? (issue 51)

    python eval/gate_cv.py record --out dev.pkl                     # each dev question's Retrieval, asked once
    python eval/train_abstain.py --dry-run --dev-weight 0 --cache gen.pkl   # the generated questions' Retrievals
    python eval/reader_lso.py --dev dev.pkl --generated gen.pkl --features feats.pkl [--json OUT] [--md OUT]

For each dev set of eval/tune_outcomes.DEV_SETS (never a held-out or refused one), every candidate gate is fitted
without it (the generated questions plus the other sets' questions, each weighted gate_cv.SHIPPED_DEV_WEIGHT, as
`make model` fits), its two cut points are chosen on the other sets the way tune_outcomes chooses them (least
tune_outcomes.cost, on probabilities out of fold: the other sets split INNER ways by set), and both are applied to
the set.
Candidates, in one run:
- shipped (fixed weights): rag/answering/abstain_gate.json as it is (or --before), only its cut points chosen without
  the set.
  Its weights were fitted on every dev set, the left-out one included, so it is flattered here;
- refit: the shipped features, fitted the shipped way without the set (the fair baseline);
- refit +reader: the same with reader.FEATURES added (and variants);
- textbook baselines: the top BM25 score alone, the top cosine alone (a one-feature fit = two thresholds).
Reported per set and pooled: the shares of unanswerable questions answered (absent topics and near misses apart:
a near miss is about a real paper, `about` or `near_miss`), of answerable questions unsure and not covered, and
the cost. The reader's features are computed once per Retrieval and kept in --features (text -> word states are
cached within the run: a sentence read for one question is not read again).
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "eval"))

from rag.answering import abstain, reader  # noqa: E402
from gate_cv import SHIPPED_DEV_WEIGHT, fit, generated, load_rows, named_features, predict, refused  # noqa: E402
from tune_outcomes import GRID, QUESTIONS, cost, is_near  # noqa: E402

INNER = 4  # inner folds (by set) for the cut points of a refit candidate
OUTCOMES = ("answered", "unsure", "not_covered")
CODE = {o: i for i, o in enumerate(OUTCOMES)}


def key(r) -> tuple:
    """What the reader's features of a retrieval depend on: the question, the first two papers, their best
    sentences."""
    return (r.question, tuple(h.paper.paper_id for h in r.hits[:2]),
            tuple(s.text for i in (0, 1) for s in r.scored.get(i, [])[:reader.READ_TOP1]))


def reader_features(retrievals: list, path: Path) -> list[dict[str, float]]:
    """reader.FEATURES of each retrieval (None -> zeros), read from / written to `path` (by `key`)."""
    store = pickle.loads(path.read_bytes()) if path.exists() else {}
    cache: dict = {}
    started, done = time.perf_counter(), 0
    for r in retrievals:
        if r is None or key(r) in store:
            continue
        t = time.process_time()
        store[key(r)] = (reader.features(r, cache=cache), time.process_time() - t)
        done += 1
        if done % 200 == 0:
            print(f"  reader: {done} new ({time.perf_counter() - started:.0f} s)", flush=True)
            path.write_bytes(pickle.dumps(store))
    path.write_bytes(pickle.dumps(store))
    return [dict(zip(reader.FEATURES, store[key(r)][0], strict=False)) if r is not None
            else dict.fromkeys(reader.FEATURES, 0.0)
            for r in retrievals]


def all_features(retrievals: list, feats: list[dict]) -> list[dict[str, float]]:
    out = []
    for r, f in zip(retrievals, feats, strict=False):
        if r is None:
            out.append({})
            continue
        base = dict(named_features(r))
        bm25 = [h.bm25 for h in r.hits[:abstain.FEATURE_HITS] if h.bm25 is not None]
        base["bm25_top"] = max(bm25, default=0.0)
        base.update(f)
        named = base["named_match"]
        base.update({f"named*{k}": v * named for k, v in f.items()})
        out.append(base)
    return out


def matrix(feats: list[dict], names: list[str]) -> np.ndarray:
    return np.array([[f.get(n, 0.0) for n in names] for f in feats], dtype=float).reshape(len(feats), len(names))


class Decisions:
    """The recorded decision inputs of dev rows as arrays, for the cut-point sweep."""

    def __init__(self, rows: list[dict], near: np.ndarray, covered_not: np.ndarray | None = None):
        # covered_not: where the coverage model (abstain.coverage: the gate before, retrieval features alone) reaches
        # its not-covered cut; then "not covered" is its call and only the unsure cut is chosen
        self.has = np.array([r["retrieval"] is not None for r in rows])
        self.hits = np.array([bool(r["retrieval"] and r["retrieval"].hits) for r in rows])
        self.applies = np.array([bool(r["retrieval"] and abstain.applies(r["retrieval"])) for r in rows])
        self.weak = np.array([r["weak"] for r in rows])
        self.fixed = np.array([CODE[r["outcome"]] for r in rows])
        self.answerable = np.array([r["answerable"] for r in rows])
        kinds = np.where(self.answerable, 1, np.where(near, 2, 0))  # absent, answerable, near miss
        table = np.array([[cost(False, o) for o in OUTCOMES], [cost(True, o) for o in OUTCOMES],
                          [cost(False, o, near=True) for o in OUTCOMES]])
        self.cost = table[kinds]  # [rows, 3]
        self.covered_not = covered_not
        self.given = np.full(len(rows), -1)  # an outcome code decided elsewhere (`split`), -1 where this gate decides
        self.fits = self.has.copy()  # the rows its weights are fitted on

    def split(self, named: np.ndarray, given: np.ndarray) -> Decisions:
        """These rows where the `named` ones keep the outcomes `given` (the gate before, as abstain.judgement
        decides a question naming its paper) and are left out of the fit."""
        self.given = np.where(named, given, -1)
        self.fits = self.has & ~named
        return self

    def outcomes(self, p: np.ndarray, u: float, n: float, low: str, idx: np.ndarray) -> np.ndarray:
        """tune_outcomes.outcome, vectorised over the rows `idx`."""
        p = p[idx]
        out = np.where(p >= u, 1, 0)
        out = np.where(self.weak[idx], CODE[low], out)
        out = np.where(p >= n if self.covered_not is None else self.covered_not[idx], 2, out)
        out = np.where(~self.applies[idx], np.where(self.weak[idx], 2, 0), out)
        out = np.where(~self.hits[idx], 2, out)
        out = np.where(self.given[idx] >= 0, self.given[idx], out)
        return np.where(self.has[idx], out, self.fixed[idx])

    def choose(self, p: np.ndarray, idx: np.ndarray) -> tuple[float, float, str]:
        """tune_outcomes' choice on rows `idx`: least cost, then fewer answerable not covered, then fewer unsure."""
        best = None
        ans = self.answerable[idx]
        rows = np.arange(len(idx))
        for low in ("unsure", "not_covered"):
            for u in GRID:
                for n in (n for n in GRID if n >= u) if self.covered_not is None else (1.01,):
                    got = self.outcomes(p, u, n, low, idx)
                    key = (round(float(self.cost[idx][rows, got].sum()), 6), int((ans & (got == 2)).sum()),
                           int((ans & (got == 1)).sum()))
                    if best is None or key < best[0]:
                        best = (key, u, n, low)
        assert best is not None
        return best[1], best[2], best[3]


def run(name: str, names: list[str] | None, gate: dict | None, rows: list[dict], dx: dict, gen_x: dict,
        gy: np.ndarray, dec: Decisions, sets: list[str]) -> np.ndarray:
    """Each row's outcome code when its set is left out."""
    set_of = np.array([r["set"] for r in rows])
    dy = np.array([0.0 if r["answerable"] else 1.0 for r in rows])
    got = np.zeros(len(rows), dtype=int)
    if gate is not None:
        x = matrix(dx["all"], gate["features"])
        p_all = predict((gate["mean"], gate["scale"], gate["weights"], gate["bias"]), x)
    else:
        assert names is not None
        x, gx = matrix(dx["all"], names), matrix(gen_x["all"], names)

    def fitted(train: np.ndarray) -> tuple:
        train = train & dec.fits
        return fit(np.vstack([gx, x[train]]), np.concatenate([gy, dy[train]]),
                   np.concatenate([np.ones(len(gy)), np.full(int(train.sum()), SHIPPED_DEV_WEIGHT)]))

    for s in sets:
        test, train = set_of == s, set_of != s
        if gate is not None:
            p_cut, p_test = p_all, p_all
        else:
            others = [t for t in sets if t != s]
            p_cut = np.zeros(len(rows))
            for k in range(INNER):
                part = np.isin(set_of, others[k::INNER])
                p_cut[part] = predict(fitted(train & ~part), x[part])
            p_test = np.zeros(len(rows))
            p_test[test] = predict(fitted(train), x[test])
        u, n, low = dec.choose(p_cut, np.flatnonzero(train))
        got[test] = dec.outcomes(p_test, u, n, low, np.flatnonzero(test))
    return got


def summary(rows: list[dict], near: np.ndarray, got: np.ndarray, dec: Decisions, idx: np.ndarray) -> dict:
    ans = dec.answerable[idx]
    g = got[idx]
    nr = near[idx]

    def share(mask: np.ndarray, code: int) -> float | None:
        return round(float((g[mask] == code).mean()), 3) if mask.any() else None
    return {"n_answerable": int(ans.sum()), "n_unanswerable": int((~ans).sum()),
            "n_near": int((~ans & nr).sum()), "n_absent": int((~ans & ~nr).sum()),
            "unanswerable_answered": share(~ans, 0), "absent_answered": share(~ans & ~nr, 0),
            "near_answered": share(~ans & nr, 0), "answerable_unsure": share(ans, 1),
            "answerable_not_covered": share(ans, 2),
            "cost": round(float(dec.cost[idx][np.arange(len(idx)), g].sum()), 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dev", type=Path, required=True, help="eval/gate_cv.py record's pickle")
    parser.add_argument("--generated", type=Path, required=True, help="train_abstain.py --cache pickle")
    parser.add_argument("--features", type=Path, required=True, help="reader features, read and updated")
    parser.add_argument("--only", nargs="*", default=None,
                        help="candidate names (prefixes; a trailing $ matches the whole name)")
    parser.add_argument("--before", type=Path, default=ROOT / "rag" / "answering" / abstain.GATE_FILE,
                        help="the 'shipped (fixed weights)' gate: the one being replaced (e.g. `git show "
                             "REV:rag/answering/abstain_gate.json`)")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--md", type=Path, default=None)
    parser.add_argument("--write", default=None, metavar="CANDIDATE",
                        help="fit this candidate on everything and write rag/answering/abstain_gate.json (its "
                             "features must be abstain.FEATURES)")
    args = parser.parse_args()
    rows = load_rows(args.dev)
    sets = list(dict.fromkeys(r["set"] for r in rows))
    if refused(sets):
        parser.error("held-out sets are never tuned on (eval/questions/manifest.toml)")
    meta = {}
    for s in sets:
        for line in (QUESTIONS / f"{s}.jsonl").read_text(encoding="utf-8").splitlines():
            if line.strip():
                q = json.loads(line)
                meta[(s, q["qid"])] = q
    near = np.array([is_near(meta[(r["set"], r["qid"])]) for r in rows])
    gen = generated(args.generated)
    gy = np.array([label for _, label in gen], dtype=float)
    retrievals = [r["retrieval"] for r in rows] + [g for g, _ in gen]
    started = time.perf_counter()
    feats = reader_features(retrievals, args.features)
    print(f"reader features: {len(retrievals)} retrievals, {time.perf_counter() - started:.0f} s", flush=True)
    store = pickle.loads(args.features.read_bytes())
    cpu = np.array([store[key(r)][1] for r in retrievals if r is not None])
    # abstain.features reads the reader too: give it the values just computed instead of a second model call each
    known = {key(r): store[key(r)][0] for r in retrievals if r is not None}
    live = reader.features
    reader.features = lambda r, model=None, cache=None, second=True: list(known.get(key(r)) or live(r, model, cache))
    everything = all_features(retrievals, feats)
    dx, gen_x = {"all": everything[:len(rows)]}, {"all": everything[len(rows):]}
    dec = Decisions(rows, near)
    shipped = coverage_gate(json.loads(args.before.read_text(encoding="utf-8")))
    dec_cov = Decisions(rows, near, coverage_not(shipped, dx))
    # what ships (abstain.judgement): the gate before decides a question naming its paper, at its own cut points
    # the rows abstain.reads leaves to the gate before: a question naming its paper, a Chinese one
    named = np.array([r["retrieval"] is not None and not abstain.reads(r["retrieval"]) for r in rows])
    before_p = predict((shipped["mean"], shipped["scale"], shipped["weights"], shipped["bias"]),
                       matrix(dx["all"], shipped["features"]))
    cuts = shipped["outcomes"]
    before_got = Decisions(rows, near, coverage_not(shipped, dx)).outcomes(  # never "not covered" when named
        before_p, cuts["unsure_at"], cuts["not_covered_at"], cuts["low_confidence"], np.arange(len(rows)))
    dec_split = Decisions(rows, near, coverage_not(shipped, dx)).split(named, before_got)
    base = list(abstain.RETRIEVAL_FEATURES)  # the gate's features without the reader's
    no_form = [n for n in base if n not in abstain.FORM_FEATURES]
    named_reader = [f"named*{n}" for n in reader.FEATURES]
    candidates: list[tuple[str, list[str] | None, dict | None]] = [
        ("shipped (fixed weights)", None, shipped),
        ("refit", base, None),
        ("refit +reader", [*base, *reader.FEATURES], None),
        # "not covered" left to the gate being replaced (its retrieval features: nearness), the reader's gate deciding
        # answered / unsure: what ships (abstain.coverage)
        ("refit +reader, not covered by --before", [*base, *reader.FEATURES], None),
        ("refit +reader, described questions only, not covered by --before", list(abstain.FEATURES), None),
        ("refit +reader +named copies", [*base, *reader.FEATURES, *named_reader], None),
        ("refit +reader -form", [*no_form, *reader.FEATURES], None),
        # without reader_second, the reader reads the top paper only (70 ms of CPU against 96, eval/README.md)
        ("refit +reader top paper only", [*base, *(n for n in reader.FEATURES if n != "reader_second")], None),
        ("refit -form", no_form, None),
        ("BM25 top alone", ["bm25_top"], None),
        ("cosine top alone", ["dense_top"], None),
    ]
    candidates += [(f"refit +{n}", [*base, n], None) for n in reader.FEATURES]
    results: dict = {"reader_cpu_ms": {"median": round(float(np.median(cpu)) * 1000, 1),
                                       "p90": round(float(np.percentile(cpu, 90)) * 1000, 1),
                                       "note": "process CPU time per retrieval with the run's sentence cache"},
                     "candidates": {}}
    if args.write:
        names = dict((n, f) for n, f, _ in candidates)[args.write]
        assert names == abstain.FEATURES, "--write: the candidate's features must be abstain.FEATURES"
        write_gate(names, rows, dx, gen_x, gy, dec_split, shipped)
        return 0
    for name, names, gate in candidates:
        if args.only and not any(name == o[:-1] if o.endswith("$") else name.startswith(o) for o in args.only):
            continue
        t = time.perf_counter()
        chosen = dec_split if "described" in name else dec_cov if "not covered by" in name else dec
        got = run(name, names, gate, rows, dx, gen_x, gy, chosen, sets)
        per = {s: summary(rows, near, got, dec, np.flatnonzero(np.array([r["set"] == s for r in rows])))
               for s in sets}
        per["pooled"] = summary(rows, near, got, dec, np.arange(len(rows)))
        results["candidates"][name] = per
        a = per["pooled"]
        print(f"{name:<34} cost {a['cost']:7.1f}  unans answered {a['unanswerable_answered']:.3f} (absent "
              f"{a['absent_answered']:.3f}, near {a['near_answered']:.3f})  ans unsure {a['answerable_unsure']:.3f} "
              f"not covered {a['answerable_not_covered']:.3f}  [{time.perf_counter() - t:.0f} s]", flush=True)
        if args.json:
            args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")
    if args.md:
        args.md.write_text(markdown(results, sets), encoding="utf-8")
    return 0


def coverage_gate(gate: dict) -> dict:
    """The gate that decides "not covered" (and judges questions naming their paper): a file's "coverage" entry in
    the shape of a gate file, or the file itself when it has none (a gate from before the reader)."""
    cov = gate.get("coverage")
    if not cov:
        return gate
    return {**{k: cov[k] for k in ("features", "mean", "scale", "weights", "bias", "training")},
            "outcomes": {k: cov[k] for k in ("unsure_at", "not_covered_at", "low_confidence", "chosen_on")}}


def coverage_not(before: dict, dx: dict) -> np.ndarray:
    """Where the gate `before` (retrieval features only) says "not covered" as extractive.decide asks it: its
    probability and its formless one (FORM_FEATURES at 0) at its not-covered cut, and no rare name matched."""
    params = (before["mean"], before["scale"], before["weights"], before["bias"])
    x = matrix(dx["all"], before["features"])
    formless = x.copy()
    formless[:, [before["features"].index(n) for n in abstain.FORM_FEATURES]] = 0.0
    cut = float(before["outcomes"]["not_covered_at"])
    named = matrix(dx["all"], ["named_match"])[:, 0] > 0
    return (predict(params, x) >= cut) & (predict(params, formless) >= cut) & ~named


def write_gate(names: list[str], rows: list[dict], dx: dict, gen_x: dict, gy: np.ndarray, dec: Decisions,
               before: dict) -> None:
    """`make model` on the recorded retrievals: train_abstain's fit (generated + every dev row weighted
    SHIPPED_DEV_WEIGHT; the two-outcome threshold from 20% of the generated held back) and tune_outcomes' cut points
    on gate_cv oof's probabilities (5 folds by paper, mean of 3 fold assignments)."""
    import train_abstain
    from gate_cv import folds_of

    x, gx = matrix(dx["all"], names), matrix(gen_x["all"], names)
    dy = np.array([0.0 if r["answerable"] else 1.0 for r in rows])
    has = dec.fits
    dw = np.full(int(has.sum()), SHIPPED_DEV_WEIGHT)
    order = np.random.default_rng(train_abstain.SEED).permutation(len(gy))
    cut = int(0.8 * len(gy))
    train, val = order[:cut], order[cut:]
    model = fit(np.vstack([gx[train], x[has]]), np.concatenate([gy[train], dy[has]]),
                np.concatenate([np.ones(len(train)), dw]))
    p_val = predict(model, gx[val])
    answerable = np.sort(p_val[gy[val] == 0])
    threshold = float(answerable[int(np.ceil((1 - train_abstain.MAX_TRAIN_FALSE_REFUSAL) * len(answerable))) - 1])
    threshold += 1e-6
    val_auc = train_abstain.auc(p_val, gy[val])
    mean, scale, w, b = fit(np.vstack([gx, x[has]]), np.concatenate([gy, dy[has]]),
                            np.concatenate([np.ones(len(gy)), dw]))
    oof = []
    for seed in range(3):
        folds, p = folds_of(rows, 5, seed), np.zeros(len(rows))
        for f in range(5):
            tr, te = (folds != f) & has, folds == f
            p[te] = predict(fit(np.vstack([gx, x[tr]]), np.concatenate([gy, dy[tr]]),
                                np.concatenate([np.ones(len(gy)), np.full(int(tr.sum()), SHIPPED_DEV_WEIGHT)])),
                            x[te])
        oof.append(p)
    p_oof = np.mean(oof, axis=0)
    everything = np.arange(len(rows))
    u, n, low = dec.choose(p_oof, everything)
    got = dec.outcomes(p_oof, u, n, low, everything)
    figure = {name: {o: round(float((got[dec.answerable == a] == CODE[o]).mean()), 3) for o in OUTCOMES}
              for a, name in ((True, "answerable"), (False, "unanswerable"))}
    sets = ", ".join(dict.fromkeys(r["set"] for r in rows))
    gate = {"about": "The learned abstention gate (rag/answering/abstain.py): a logistic regression over "
                     "standardized retrieval features. Written by eval/train_abstain.py (make model); do not edit "
                     "by hand.",
            "features": list(names), "mean": [round(float(v), 6) for v in mean],
            "scale": [round(float(v), 6) for v in scale], "weights": [round(float(v), 6) for v in w],
            "bias": round(float(b), 6), "threshold": round(threshold, 4),
            "training": f"{len(gy)} generated questions (seed {train_abstain.SEED}) + {int(has.sum())} dev questions "
                        f"({sets}) each weighted {SHIPPED_DEV_WEIGHT:g}, eval/reader_lso.py --write (train_abstain's "
                        f"fit on the recorded retrievals); validation AUC {val_auc:.3f} (20% of the generated held "
                        "back)",
            "outcomes": {"unsure_at": u, "low_confidence": low,
                         "not_covered_at": n if dec.covered_not is None else before["outcomes"]["not_covered_at"],
                         "chosen_on": f"{len(rows)} dev questions: {sets} (tune_outcomes' choice; no held-out set); "
                                      "probabilities out of fold (5 folds by paper, mean of 3 fold assignments)",
                         "costs": "answerable: unsure 1, not covered 3; absent topic: answered 3, unsure 0.5; near "
                                  "miss: answered 3, not covered 1 (tune_outcomes.cost)",
                         "figure": figure}}
    # An unsure question is read by an LLM (where one is set) only below this: from it the reader's gate is sure
    # enough that no paper says what is asked (the dev rows, in sample: p >= 0.9 held 10 answerable of 477
    # described questions; 0.8-0.9, 20 of 103; 0.6-0.8, 61 of 133), and a small LLM grants a premise the papers
    # do not state (issue 51: Qwen2.5-Coder-1.5B answered 7 of 12 absent topics).
    gate["outcomes"]["llm_reads_below"] = 0.9
    gate["coverage"] = {
        "about": "Whether any paper is about the question (not covered from not_covered_at): the gate before the "
                 "reader joined, retrieval features alone (abstain.coverage)",
        "features": before["features"], "mean": before["mean"], "scale": before["scale"],
        "weights": before["weights"], "bias": before["bias"],
        "not_covered_at": before["outcomes"]["not_covered_at"], "unsure_at": before["outcomes"]["unsure_at"],
        "low_confidence": before["outcomes"]["low_confidence"],
        "named": "a question naming its paper's rare name (Retrieval.named_match) is judged by this model at its "
                 "unsure_at and low_confidence, as before the reader; the reader's gate judges described questions",
        "training": before["training"], "chosen_on": before["outcomes"]["chosen_on"]}
    text = json.dumps(gate, indent=1) + "\n"
    abstain.load_gate(text)
    (ROOT / "rag" / "answering" / abstain.GATE_FILE).write_text(text, encoding="utf-8")
    print(f"wrote rag/answering/{abstain.GATE_FILE}: AUC {val_auc:.3f}, threshold {threshold:.3f}, cuts {u} / {n} "
          f"({low}); out of fold {figure}")


def markdown(results: dict, sets: list[str]) -> str:
    def cell(v: float | None) -> str:
        return "–" if v is None else f"{v:.3f}"
    lines = ["# Leave-one-set-out: the gate with and without the reader (eval/reader_lso.py)", "",
             f"Reader cost: {results['reader_cpu_ms']}", "",
             "Pooled over the dev sets, each predicted by a gate fitted and cut without it:", "",
             "| candidate | cost | unans. answered | absent answered | near answered | ans. unsure | "
             "ans. not covered |",
             "|---|---|---|---|---|---|---|"]
    for name, per in results["candidates"].items():
        a = per["pooled"]
        lines.append(f"| {name} | {a['cost']:.1f} | {cell(a['unanswerable_answered'])} | {cell(a['absent_answered'])}"
                     f" | {cell(a['near_answered'])} | {cell(a['answerable_unsure'])} | "
                     f"{cell(a['answerable_not_covered'])} |")
    for name, per in results["candidates"].items():
        lines += ["", f"## {name}", "", "| set | n ans/unans | cost | unans. answered | absent | near | ans. unsure | "
                  "ans. not covered |", "|---|---|---|---|---|---|---|---|"]
        for s in [*sets, "pooled"]:
            e = per[s]
            lines.append(f"| {s} | {e['n_answerable']}/{e['n_unanswerable']} | {e['cost']:.1f} | "
                         f"{cell(e['unanswerable_answered'])} | {cell(e['absent_answered'])} | "
                         f"{cell(e['near_answered'])} | {cell(e['answerable_unsure'])} | "
                         f"{cell(e['answerable_not_covered'])} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
