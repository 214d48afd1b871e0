"""Measure where `rag related`'s neighbours stop being related: the similarity of each paper's 5 nearest papers over
an index, and how often a neighbour at each similarity shares the paper's topic cluster (`rag.explore.topicmap`).
Chose `AnswerPolicy.related_floor` (the similarity under which a neighbour is shown as "loosely related"): the 10th
percentile of the nearest neighbour's similarity, rounded (0.549 -> 0.55), where the same-topic share is also near
its crossing of one half (0.516).

    python eval/related_floor.py --data-dir DIR   # an index of the bundled list (rag ingest rag/data/*.jsonl)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rag.config import Settings  # noqa: E402
from rag.engine import Engine  # noqa: E402
from rag.explore.related import explorer  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--paper", default="LaMPlace", help="a paper whose neighbours to print with their topics")
    args = parser.parse_args()
    engine = Engine(Settings(data_dir=args.data_dir))
    papers, vectors = explorer(engine.retriever).matrix()
    tmap = engine.topics()
    topic_of = dict(zip(tmap.paper_ids, tmap.topic, strict=False))
    topic = np.array([topic_of[p.paper_id] for p in papers])
    scores = vectors @ vectors.T
    np.fill_diagonal(scores, -np.inf)
    near = np.argsort(-scores, axis=1)[:, :args.k]
    sims = np.take_along_axis(scores, near, axis=1)
    same = topic[near] == topic[:, None]
    print(f"{len(papers)} papers, {len(tmap.topics)} topics; the {args.k} nearest of each:")
    for rank in range(args.k):
        p = np.percentile(sims[:, rank], [5, 10, 25, 50])
        print(f"  neighbour {rank + 1}: similarity p5 {p[0]:.3f} p10 {p[1]:.3f} p25 {p[2]:.3f} median {p[3]:.3f}; "
              f"same topic {same[:, rank].mean():.3f}")
    flat, agree = sims.ravel(), same.ravel()
    print("similarity bucket: neighbours, share in the same topic")
    for low in np.arange(0.30, 0.90, 0.05):
        inside = (flat >= low) & (flat < low + 0.05)
        if inside.any():
            print(f"  {low:.2f}-{low + 0.05:.2f}: {inside.sum():5d}  {agree[inside].mean():.3f}")
    # The floor: where a neighbour stops being more often than not in the paper's own topic cluster (a rolling
    # window of 0.02 over the neighbours sorted by similarity).
    order = np.argsort(flat)
    rolling = [(flat[order][i], agree[order][max(0, i - 500):i + 500].mean()) for i in range(0, len(flat), 250)]
    crossing = next((sim for sim, share in rolling if share >= 0.5), None)
    print("same-topic share around each similarity (1,000 neighbours each):",
          " ".join(f"{sim:.3f}:{share:.2f}" for sim, share in rolling if 0.45 <= sim <= 0.62))
    print(f"the share first reaches one half at similarity {crossing:.3f}")
    floor = engine.settings.policy.related_floor
    below = flat < floor
    print(f"under the floor {floor}: {below.mean():.3f} of neighbours ({below.sum()}), same topic "
          f"{agree[below].mean():.3f}; at or above it: same topic {agree[~below].mean():.3f}; papers with a loose "
          f"first neighbour: {(sims[:, 0] < floor).mean():.3f}")
    found = engine.related(args.paper, args.k)
    print(f"{found.paper.title} (topic {topic_of[found.paper.paper_id]}):")
    for n in found.related:
        print(f"  {n.score:.3f} topic {topic_of[n.paper.paper_id]:>2} {'loose' if n.loose else 'close'}  "
              f"{n.paper.title[:80]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
