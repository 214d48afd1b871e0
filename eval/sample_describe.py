"""The paper order the describe sets were written from (issue 29): ids no other set uses, shuffled with a seed.

    python eval/sample_describe.py [--seed 2929] [--show N]

Every id any set in eval/questions/ other than the describe sets uses (gold, about, cited, relevant, pid;
abstract-prefix gold resolved) is excluded; the remaining ids, sorted, are shuffled with random.Random(seed).
describe_dev takes positions 0-59 (answerable) and 60-74 (near misses); describe_heldout 75-132, 134 and 150
(answerable: 133, LaMPlace, was skipped because issue 29 itself quotes a question about it, so the team has read
one) and 135-149 (near misses); describe_final 151-214 (answerable) and 215-230 (near misses), describe_final2
231-294 (answerable) and 295-310 (near misses), describe_final3 311-374 (answerable) and 375-390 (near misses),
describe_final4 391-454 (answerable) and 455-470 (near misses), describe_final5 471-534 (answerable) and 535-550
(near misses), describe_final6 551-614 (answerable) and 615-630 (near misses), describe_final7 631-694 (answerable)
and 695-710 (near misses), describe_final8 711-774 (answerable) and 775-790 (near misses), describe_final9 791-854
(answerable) and 855-870 (near misses), describe_final10 871-934 (answerable) and 935-950 (near misses),
describe_final11 951-1014 (answerable) and 1015-1030 (near misses), describe_final12 1031-1094 (answerable) and
1095-1110 (near misses), describe_final13 1111-1134 (answerable) and 1135-1140 (near misses), none skipped in any
of the thirteen. 1,141 papers are eligible, so the order ends at position 1140: describe_final13 took its last 30
papers and is smaller for it (24 answerable, 6 near misses). The describe sets' own papers are not excluded (`SETS`
is skipped), so adding a describe set leaves the order unchanged. Each question records its `position`. Prints
position, id and title.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from eval.check_describe import ROOT, SETS, Corpus, used_elsewhere  # noqa: E402

SEED = 2929


def order(corpus: Corpus, seed: int = SEED) -> list[str]:
    used = used_elsewhere({p.resolve() for p in SETS}, corpus)
    ids = sorted(pid for pid, rec in corpus.records.items() if pid not in used and rec.get("abstract", "").strip())
    random.Random(seed).shuffle(ids)
    return ids


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--show", type=int, default=150)
    parser.add_argument("--corpus", type=Path, default=ROOT / "rag" / "data" / "iclr2025.jsonl")
    args = parser.parse_args()
    corpus = Corpus(args.corpus)
    ids = order(corpus, args.seed)
    print(f"{len(ids)} eligible of {corpus.n}")
    for i, pid in enumerate(ids[: args.show]):
        print(i, pid, corpus.records[pid]["title"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
