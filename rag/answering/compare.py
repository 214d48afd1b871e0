"""Compare: which retrieved papers are the sides of a comparison the question names, and why that overrides the
abstention gates.

"How do Palu and MatryoshkaKV differ?" names its sides (`rag.query.intent.comparison_sides`). The gates of
`rag.answering.extractive.should_abstain` were made for questions about one paper: the learned one
(`rag.answering.abstain`) reads, among others, the share of the question's terms the *top* paper contains and the
question's rare terms missing from it, and a comparison spreads its terms over two papers by design, so it looks like a
question the collection does not answer (3 held-out comparisons were refused with both papers ranked first and second).
So the answer step (`rag.answering.compose`) asks `side_papers` first: when every side is found among the SIDE_DEPTH
best hits, each in a paper of its own, the question is answered (one line per side's paper) whatever the gates say. A
side is found in a paper when
- most of its content terms (TITLE_COVER) are in the paper's title ("the HOPE parameterization of long-memory state
  space models" -> "HOPE for a Robust Parameterization of Long-memory State Space Models"), or
- one of its terms is rare in the collection (a name such as LinOSS: in at most max(2, 0.5%) of the papers, as
  `rag.search.retrieve` judges a named match) and the paper's title and abstract contain all of its terms, or
- the side is a description of two or more content terms, and one of the STRONG_DEPTH best hits (strong retrieval)
  contains them all.
A side with a term no paper contains is not found ("How does GPT-5 differ from Claude Opus?": no paper says
"Opus"); a comparison with a side the collection does not have is judged by the gates as before (over
eval/questions/compare_none.jsonl, 12 comparisons with a side no paper has, the gates refuse 10, as without
this module).
"""

from __future__ import annotations

from collections.abc import Sequence

from rag.config import AnswerPolicy
from rag.query import framing
from rag.text import tokenize
from rag.search.retrieve import Retrieval

# SIDE_DEPTH, TITLE_COVER, STRONG_DEPTH and what a rare name is: `AnswerPolicy` (rag/config.py).


def side_papers(retrieval: Retrieval, sides: Sequence[str], policy: AnswerPolicy) -> list[int]:
    """Index into `retrieval.hits` of the paper each side names, in the order of `sides`; [] unless there are two
    or more sides and every one is found in a paper of its own among the top SIDE_DEPTH hits."""
    if len(sides) < 2 or not retrieval.hits:
        return []
    hits = retrieval.hits[:policy.side_depth]
    titles = [set(t) for t in tokenize([h.paper.title for h in hits])]
    texts = [set(t) for t in tokenize([h.paper.search_text for h in hits])]
    rare_limit = policy.rare_limit(retrieval.corpus_size)
    chosen: list[int] = []
    for terms in tokenize(list(sides)):
        content = set(terms) - framing.SIDE_GENERIC
        if not content or any(retrieval.term_df.get(t) == 0 for t in content):
            return []  # a term no paper contains ("the Brackenridge reward model"): the collection lacks that side
        rare = {t for t in content if 0 < retrieval.term_df.get(t, 0) <= rare_limit}

        # 0 is the strongest; None: this paper is not that side. Bound now: it is called in this iteration only.
        def evidence(i: int, rare: set[str] = rare, content: set[str] = content) -> int | None:
            if rare & titles[i]:
                return 0
            if len(content & titles[i]) >= policy.title_cover * len(content):
                return 1
            if content <= texts[i] and (rare or (len(content) >= 2 and i < policy.strong_depth)):
                return 2
            return None

        found = min(((evidence(i), i) for i in range(len(hits)) if i not in chosen and evidence(i) is not None),
                    default=(None, None))[1]
        if found is None:
            return []
        chosen.append(found)
    return chosen
