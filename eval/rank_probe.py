"""Ranking probes over recorded retrievals: is the app's fusion the limit on description-style questions? (issue 29)

    python eval/rank_probe.py record --out ranks.pkl     # each dev (and read) question's two rankings, once
    python eval/rank_probe.py fusion --rec ranks.pkl     # fixed and per-question fusion rules, hit@1 / hit@5
    python eval/rank_probe.py rerank --rec ranks.pkl     # a learned reranker of the top 20 (pairwise logistic)
    python eval/rank_probe.py pick --base-url URL --model M [SET.jsonl ...]   # the LLM reader picks among the top 5

A measurement, not a feature: nothing in the app uses it. `record` searches every single-paper question of
DEV_SETS and READ_SETS the way the app does (`Engine._plan`: its search text, a Chinese question's English terms,
its decision and author filters) over the 2,114 bundled papers and keeps the dense and BM25 rankings (50 candidates
each) and, for the fused top 20, content features the fusion does not see: the best and mean-of-two sentence
cosines of the question to the paper's stored sentence vectors, the title's cosine, and the IDF-weighted share of
the question's terms in the paper's text and title. The probes then re-fuse and re-rank offline, in milliseconds.

`fusion` prints hit@1 / hit@5 of weighted RRF at fixed (rrf_k, BM25 weight) pairs and of per-question rules (the
app's weight when the question has a name the corpus knows or a rare term, a flatter one otherwise). `rerank`
fits a pairwise logistic regression (gold minus each of the top 10 others) on the dev questions: grouped 5-fold
cross-validation over DEV_SETS (3 fold assignments), then a fit on all of DEV_SETS applied to READ_SETS.

`pick` asks an LLM (an OpenAI-compatible endpoint) which of the app's top 5 papers, shown as the answer prompt
shows them (`reader_sources`, `render_sources`), the question is about: "Reply with the number only, or 0 if none of
them is" (4 tokens, temperature 0). It prints one JSON line per question and the tally: how often the pick is the
gold paper against how often the fusion's first is, and how often it says 0 for answerable and unanswerable ones.

The held-out describe_final* sets are refused, like eval/gate_cv.py refuses them: nothing is chosen on them.
"""

from __future__ import annotations

import argparse
import json
import math
import pickle
import sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = ROOT / "eval" / "questions"
DEV_SETS = ("describe_dev", "zh_dev", "types_dev", "types_dev2", "types_dev3", "corpus_dev")
# Sets the team has read (run before): reported beside the dev figures, never tuned on, no decision rests on them.
READ_SETS = ("describe_heldout", "zh_heldout", "types_heldout", "corpus_heldout", "corpus_heldout_v2", "types_fresh",
             "corpus_answerable_v4")
APP = (5, 1.5)  # the app's rrf_k and BM25 weight (rag.config: rrf_k, bm25_weight)
CONTENT = ("s1", "s2", "title", "cov", "tcov")


def record(out: Path, corpus: Path) -> None:
    from rag.config import Settings
    from rag.engine import Engine
    from rag.search.retrieve import Query, RetrievalParams, _word_forms, name_words
    from rag.text import tokenize

    with Engine(Settings.load(data_dir=ROOT / ".rag-eval" / corpus.stem)) as engine:
        if engine.index.count() == 0:
            engine.ingest([corpus])
        retriever = engine.retriever
        state, embedder = retriever.state, engine.index.embedder
        papers, position = state.papers, state.position
        titles = embedder.embed([p.title or "" for p in papers])
        doc_terms = [set(t) for t in tokenize([f"{p.title} {p.abstract}" for p in papers])]
        title_terms = [set(t) for t in tokenize([p.title or "" for p in papers])]
        rows = []
        for name in DEV_SETS + READ_SETS:
            for line in (QUESTIONS / f"{name}.jsonl").read_text().splitlines():
                q = json.loads(line)
                if q.get("kind") != "single" or not q.get("gold"):
                    continue
                plan = engine._plan(q["question"], [], None, [], None, ("decisions", "author"))
                vector = embedder.embed([plan.search])[0]
                query = Query(plan.search, vector, tokenize([plan.search])[0])
                params = RetrievalParams(k=10, decisions=plan.filters.decisions, author=plan.filters.author)
                rankings = retriever.candidates(query, params, state)
                df = {t: state.stem_df[t] for t in query.terms}
                idf = {t: math.log(1 + len(papers) / (1 + df.get(t, 0))) for t in query.terms}
                total = sum(idf.values()) or 1.0
                top = fuse(rankings, *APP)[:20]
                sentences = retriever.sentences([papers[position[p]] for p in top])
                content = {}
                for pid in top:
                    i, vectors = position[pid], sentences[pid].vectors
                    cos = np.sort(vectors @ vector)[::-1] if len(vectors) else np.zeros(1)
                    content[pid] = {"s1": float(cos[0]), "s2": float(cos[:2].mean()),
                                    "title": float(titles[i] @ vector),
                                    "cov": sum(idf[t] for t in set(query.terms) if t in doc_terms[i]) / total,
                                    "tcov": sum(idf[t] for t in set(query.terms) if t in title_terms[i]) / total}
                known = [w for w in name_words(plan.search) if any(state.df.get(f) for f in _word_forms(w))]
                rows.append({"set": name, "qid": q["qid"], "gold": q["gold"], "rankings": rankings, "df": df,
                             "terms": query.terms, "known_names": known, "cand": top, "content": content})
    out.write_bytes(pickle.dumps(rows))
    print(f"{len(rows)} questions -> {out}", Counter(r["set"] for r in rows))


def fused(rankings: dict[str, dict[str, float]], rrf_k: int, bm25_weight: float) -> list[tuple[str, float]]:
    """The app's fusion (`rag.search.retrieve.fuse`) at these settings: (paper id, score), best first."""
    from rag.search.retrieve import fuse as rrf

    return rrf([(w, rankings[name]) for name, w in (("dense", 1.0), ("bm25", bm25_weight)) if name in rankings],
               rrf_k)


def fuse(rankings: dict[str, dict[str, float]], rrf_k: int, bm25_weight: float) -> list[str]:
    return [pid for pid, _ in fused(rankings, rrf_k, bm25_weight)]


def _hits(rows: list[dict], order_of) -> dict[str, list[int]]:
    by: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for row in rows:
        order, gold = order_of(row), set(row["gold"])
        tally = by[row["set"]]
        tally[0] += 1
        tally[1] += bool(order) and order[0] in gold
        tally[2] += bool(gold & set(order[:5]))
    return by


def _line(label: str, by: dict[str, list[int]]) -> str:
    def pooled(names) -> str:
        got = [by[s] for s in by if s in names]
        n = sum(t[0] for t in got) or 1
        return f"{sum(t[1] for t in got) / n:.3f} / {sum(t[2] for t in got) / n:.3f}"
    describe = [s for s in by if s.startswith("describe")]
    return (f"| {label} | {pooled(DEV_SETS)} | {pooled(['describe_dev'])} | {pooled(READ_SETS)} | "
            f"{pooled([s for s in READ_SETS if s in describe])} |")


HEADER = ("| fusion | dev (all) hit@1 / hit@5 | describe_dev | read sets (all) | describe_heldout |\n"
          "|---|---|---|---|---|")


def fusion(rows: list[dict]) -> None:
    print(HEADER)
    for rrf_k, weight in ((5, 1.5), (60, 1.0), (5, 1.0), (10, 1.0), (20, 1.5), (5, 0.7)):
        print(_line(f"rrf_k {rrf_k}, BM25 weight {weight}" + (" (the app)" if (rrf_k, weight) == APP else ""),
                    _hits(rows, lambda r, k=rrf_k, w=weight: fuse(r["rankings"], k, w))))

    def rarest(row: dict) -> int:
        return min((row["df"][t] for t in row["terms"] if row["df"].get(t)), default=10 ** 9)

    for high, low in ((1.5, 1.0), (2.0, 1.0), (1.5, 0.7)):
        print(_line(f"{high} if a known name, else {low}", _hits(
            rows, lambda r, h=high, lo=low: fuse(r["rankings"], 5, h if r["known_names"] else lo))))
        for cut in (5, 20):
            print(_line(f"{high} if a term in <= {cut} papers, else {low}", _hits(
                rows, lambda r, h=high, lo=low, c=cut: fuse(r["rankings"], 5, h if rarest(r) <= c else lo))))


def _features(row: dict) -> np.ndarray:
    score = dict(fused(row["rankings"], *APP))
    best = score[row["cand"][0]]
    return np.array([[score[p] / best, 1 / (i + 1)] + [row["content"][p][c] for c in CONTENT]
                     for i, p in enumerate(row["cand"])])


def rerank(rows: list[dict], C: float) -> None:
    from sklearn.linear_model import LogisticRegression

    data = [(r, _features(r), np.array([p in set(r["gold"]) for p in r["cand"]], float)) for r in rows]
    dev = [d for d in data if d[0]["set"] in DEV_SETS]

    def fit(train):
        pairs, labels = [], []
        for _, X, y in train:
            for g in np.where(y == 1)[0]:
                for j in np.where(y[:10] == 0)[0]:
                    pairs += [X[g] - X[j], X[j] - X[g]]
                    labels += [1, 0]
        return LogisticRegression(C=C, max_iter=5000, fit_intercept=False).fit(np.array(pairs), labels).coef_[0]

    def order(X: np.ndarray, w: np.ndarray, r: dict) -> list[str]:
        return [r["cand"][i] for i in np.argsort(-(X @ w), kind="stable")]

    folds_hits: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for seed in range(3):
        index = np.random.RandomState(seed).permutation(len(dev))
        for fold in np.array_split(index, 5):
            held = set(fold.tolist())
            w = fit([dev[i] for i in index if i not in held])
            for i in held:
                r, X, _ = dev[i]
                for key, tally in _hits([r], lambda row, X=X, w=w: order(X, w, row)).items():
                    folds_hits[key] = [a + b for a, b in zip(folds_hits[key], tally)]
    w = fit(dev)
    read = {r["qid"]: (X, w) for r, X, _ in data if r["set"] in READ_SETS}
    by = _hits([r for r in rows if r["set"] in READ_SETS], lambda r: order(*read[r["qid"]], r))
    print(HEADER)
    print(_line("the app's fusion", _hits(rows, lambda r: r["cand"])))
    merged = {**folds_hits, **by}
    print(_line(f"reranked (dev: out of fold, x3; read: fit on all dev), C={C}", merged))
    print("weights (fused, 1/rank, " + ", ".join(CONTENT) + "):", np.round(w, 2).tolist())


PICK = """{sources}

Question: {question}

Which one of the numbered sources above is the paper this question is about? The question may describe it in other \
words than the paper uses. Reply with the number only, or 0 if none of them is."""


def pick(sets: list[Path], base_url: str, model: str, corpus: Path) -> None:
    import re
    import time

    import openai

    from rag.answering.context import reader_sources
    from rag.answering.records import sources_from
    from rag.config import Settings
    from rag.engine import Engine
    from rag.generation.prompts import render_sources
    from rag.search.retrieve import RetrievalParams

    refused = [p.name for p in sets if "describe_final" in p.name]
    if refused:
        raise SystemExit(f"held-out set(s) refused: {', '.join(refused)}")
    client = openai.OpenAI(base_url=base_url, api_key="not-needed", timeout=300, max_retries=0)
    rows = []
    with Engine(Settings.load(data_dir=ROOT / ".rag-eval" / corpus.stem)) as engine:
        for path in sets:
            for line in path.read_text().splitlines():
                q = json.loads(line)
                if q.get("kind") not in ("single", "none"):
                    continue
                plan = engine._plan(q["question"], [], None, [], None, ("decisions", "author"))
                retrieval = engine.retriever.retrieve(plan.search, RetrievalParams.from_settings(engine.settings, k=5))
                sources = sources_from(retrieval)
                prompt = PICK.format(sources=render_sources(reader_sources(retrieval, sources, engine.settings)),
                                     question=q["question"])
                started = time.perf_counter()
                reply = client.chat.completions.create(model=model, max_tokens=4, temperature=0,
                                                       messages=[{"role": "user", "content": prompt}])
                digit = re.search(r"\d", reply.choices[0].message.content or "")
                gold = set(q.get("gold", []))
                row = {"qid": q["qid"], "kind": q["kind"], "near_miss": q.get("near_miss"),
                       "gold_rank": next((s.n for s in sources if s.paper_id in gold), None),
                       "pick": int(digit.group()) if digit else -1, "ms": round((time.perf_counter() - started) * 1e3),
                       "prompt_tokens": reply.usage.prompt_tokens if reply.usage else None}
                rows.append(row)
                print(json.dumps(row), flush=True)
    answerable = [r for r in rows if r["kind"] == "single"]
    unanswerable = [r for r in rows if r["kind"] == "none"]
    print(f"answerable {len(answerable)}: fusion's first is gold {sum(r['gold_rank'] == 1 for r in answerable)}, "
          f"the pick is gold {sum(r['gold_rank'] is not None and r['pick'] == r['gold_rank'] for r in answerable)}, "
          f"gold in the top 5 {sum(r['gold_rank'] is not None for r in answerable)}, "
          f"picked 0 {sum(r['pick'] == 0 for r in answerable)}; "
          f"unanswerable {len(unanswerable)}: picked 0 {sum(r['pick'] == 0 for r in unanswerable)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("--out", type=Path, default=ROOT / ".rag-eval" / "rank_probe.pkl")
    rec.add_argument("--corpus", type=Path, default=ROOT / "rag" / "data" / "iclr2025.jsonl")
    reader = sub.add_parser("pick")
    reader.add_argument("sets", nargs="*", type=Path, default=[QUESTIONS / "describe_dev.jsonl"])
    reader.add_argument("--base-url", default="http://127.0.0.1:8080/v1")
    reader.add_argument("--model", default="qwen2.5-coder-1.5b")
    reader.add_argument("--corpus", type=Path, default=ROOT / "rag" / "data" / "iclr2025.jsonl")
    for name in ("fusion", "rerank"):
        p = sub.add_parser(name)
        p.add_argument("--rec", type=Path, default=ROOT / ".rag-eval" / "rank_probe.pkl")
        if name == "rerank":
            p.add_argument("--C", type=float, default=1.0)
    args = parser.parse_args()
    if args.command == "record":
        record(args.out, args.corpus)
        return 0
    if args.command == "pick":
        pick(args.sets, args.base_url, args.model, args.corpus)
        return 0
    rows = pickle.loads(args.rec.read_bytes())
    fusion(rows) if args.command == "fusion" else rerank(rows, args.C)
    return 0


if __name__ == "__main__":
    sys.exit(main())
