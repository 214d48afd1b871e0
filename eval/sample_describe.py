"""The paper order the describe sets were written from (issue 29): ids no other set uses, shuffled with a seed.

    python eval/sample_describe.py [--seed 2929] [--show N] [--pool fresh|older]

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

The second order (`--pool older`, from the fourteenth session; 973 papers, positions 1141-2113): once the first ran
out, a describe set may take the papers the older sets use (corpus_*, types_*, zh_*, seeds_dev ...: questions that
name the paper or reuse its words), never a describe set's. Those ids with an abstract, sorted, are shuffled with
the same seed; positions continue from the first order's end (1141 onwards), so a question's `position` still names
one paper. The team has read named questions about these papers, never a question describing them in other words;
the gate's generated questions never used them (eval/train_abstain.py leaves every set's papers out).
describe_final14 is the first set on it: positions 1141-1204 (answerable) and 1205-1220 (near misses);
describe_final15 (fifteenth session) the second: 1221-1284 (answerable) and 1285-1300 (near misses), none skipped;
describe_final16 (sixteenth session) the third: 1301-1364 (answerable) and 1365-1380 (near misses), none skipped;
describe_final17 (seventeenth session) the fourth: 1381-1444 (answerable) and 1445-1460 (near misses), none skipped;
describe_final18 (seventeenth session) the fifth: 1461-1524 (answerable) and 1525-1540 (near misses), none skipped;
the next set starts at 1541.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from eval.check_describe import LATER, ROOT, SETS, Corpus, used_elsewhere  # noqa: E402

SEED = 2929


def order(corpus: Corpus, seed: int = SEED, pool: str = "fresh") -> list[str]:
    """The papers in writing order: `fresh`, those no other set uses; `older`, those only the older sets use."""
    used = used_elsewhere({p.resolve() for p in SETS} | LATER, corpus)  # sets written after every describe set: out
    fresh = pool == "fresh"
    ids = sorted(pid for pid, rec in corpus.records.items()
                 if (pid not in used) == fresh and rec.get("abstract", "").strip())
    random.Random(seed).shuffle(ids)
    return ids


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--show", type=int, default=150)
    parser.add_argument("--pool", choices=("fresh", "older"), default="fresh",
                        help="older: the second order, on the older sets' papers (positions from 1141)")
    parser.add_argument("--corpus", type=Path, default=ROOT / "rag" / "data" / "iclr2025.jsonl")
    args = parser.parse_args()
    corpus = Corpus(args.corpus)
    ids = order(corpus, args.seed, args.pool)
    start = 0 if args.pool == "fresh" else len(order(corpus, args.seed))
    print(f"{len(ids)} eligible of {corpus.n}")
    for i, pid in enumerate(ids[: args.show]):
        print(start + i, pid, corpus.records[pid]["title"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
