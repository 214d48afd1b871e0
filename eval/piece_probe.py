"""Tried and dropped (ninth session): does the part of a question its top paper supports least tell a near miss?

    python eval/piece_probe.py      # after `make model` (reads .rag-eval/gate/dev.pkl and generated.pkl)

A near miss describes a real paper and asks for something it did not do, so one piece of the question should match
none of the paper's sentences. The question is cut at commas and prepositions; each piece of two or more words gets
its best MiniLM cosine with the top paper's stored sentence vectors and title; the lowest (and the two lowest, the
mean, the last) is added to the gate's features and cross-validated with eval/gate_cv.py's machinery. Result
(reports/gate-cv-form-probe.txt): cost 368.3-375.5 against 373.8 without it, within noise; dropped. The question's
form (abstain.FORM_FEATURES) was kept instead.
"""

from __future__ import annotations

import pickle
import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "eval"))

import gate_cv  # noqa: E402
from rag.answering import abstain  # noqa: E402

SPLIT = re.compile(r",|;|:|\?|\(|\)| such as | for example| e\.g\.| and | or | but | while | when | so that | so | "
                   r"that | which | where | without | with | instead of | rather than | by | to | on | in | for | "
                   r"from | of | into | across | using | via | like ", re.IGNORECASE)
NAMES = ("piece_min", "piece_mean", "piece_last", "piece_min2")


def pieces(question: str) -> list[str]:
    parts = [p.strip() for p in SPLIT.split(question) if p and p.strip()]
    return [p for p in parts if len(re.findall(r"[A-Za-z]{3,}", p)) >= 2] or [question]


def piece_features(retrievals: list, engine) -> dict[int, dict[str, float]]:
    """By id(retrieval): the four piece features of its question against its top paper."""
    texts, owner = [], []
    for j, r in enumerate(retrievals):
        for p in pieces(r.question):
            texts.append(p)
            owner.append(j)
    by: dict[int, list[np.ndarray]] = {}
    for v, j in zip(engine.index.embedder.embed(texts), owner):
        by.setdefault(j, []).append(v)
    out = {}
    for j, r in enumerate(retrievals):
        f = dict.fromkeys(NAMES, 0.0)
        if r.hits and r.hits[0].paper.has_abstract:
            paper = r.hits[0].paper
            stored = engine.retriever.sentences([paper])[paper.paper_id]
            rows = np.vstack([np.asarray(stored.vectors), engine.index.embedder.embed([paper.title])])
            best = np.array([float(np.max(rows @ v)) for v in by[j]])
            f = {"piece_min": float(best.min()), "piece_mean": float(best.mean()), "piece_last": float(best[-1]),
                 "piece_min2": float(np.sort(best)[:2].mean())}
        out[id(r)] = f
    return out


def main() -> int:
    from rag.config import Settings
    from rag.engine import Engine

    rows = pickle.loads((ROOT / ".rag-eval" / "gate" / "dev.pkl").read_bytes())
    gen = gate_cv.generated(ROOT / ".rag-eval" / "gate" / "generated.pkl")
    engine = Engine(Settings.load(data_dir=ROOT / ".rag-eval" / "iclr2025"))
    retrievals = [r["retrieval"] for r in rows if r["retrieval"] is not None] + [r for r, _ in gen]
    feats = piece_features(retrievals, engine)
    original = gate_cv.named_features

    def with_pieces(retrieval) -> dict[str, float]:
        base = original(retrieval)
        if "piece_min" not in base:
            base.update(feats.get(id(retrieval), dict.fromkeys(NAMES, 0.0)))
        return base

    gate_cv.named_features = with_pieces
    shipped = [n for n in abstain.FEATURES if n not in abstain.FORM_FEATURES]  # as before the form features
    cands = [gate_cv.Candidate("none", shipped, gate_cv.SHIPPED_DEV_WEIGHT)]
    cands += [gate_cv.Candidate(f"+{n}", [*shipped, n], gate_cv.SHIPPED_DEV_WEIGHT) for n in NAMES]
    for cand in cands:
        runs = [gate_cv.cross_validate(cand, rows, gen, gate_cv.FOLDS, seed) for seed in range(gate_cv.SEEDS)]
        t = gate_cv.table(rows, runs)
        print(f"{cand.name:<12} cost {t['all']['cost']:6.1f} answerable {gate_cv.fmt(t['all'], 'answerable')} "
              f"unanswerable {gate_cv.fmt(t['all'], 'unanswerable')}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
