"""Context: what the LLM reads of the retrieved papers (its prompt's sources), chosen from the retrieval.

Why not every retrieved abstract whole: on the CPUs most users run a local model on, the prompt *is* the latency.
Qwen2.5-Coder-1.5B prefills ~96 tokens/s on 2 idle cores (33 under load); ten whole abstracts and the
instructions are ~3,000 tokens, so every answer of the first measured run waited past its 60 s first-token
timeout (eval/reports/llm-qwen2.5-coder-1.5b.md, 2026-12-02). Two cuts, each a setting:

- `llm_papers`: the reader gets the top papers only (the rest still show as cards, and the extractive fallback
  still reads them). A small reader also does better with fewer distractors.
- `llm_context = "passages"`: of each paper, its title and a passage: the contribution sentence ("we propose /
  introduce ...", `rag.answering.explain.PROPOSE`), the sentences that best match the question (the retriever's
  own sentence scores: cosine to the question plus term overlap) and, for a paper ranked first, the sentence after
  the contribution, in abstract order with "…" where sentences were left out. An abstract of at most
  `AnswerPolicy.llm_passage_sentences` + 1 sentences is sent whole (cutting one sentence saves little).
  "abstracts" sends each paper's whole abstract (the choice for a large remote model, whose prefill is cheap).

The support check still reads each cited paper's *whole* abstract: a claim the passage left out but the abstract
states is not a fabrication.
"""

from __future__ import annotations

from dataclasses import replace

from rag.config import Settings
from rag.search.retrieve import Retrieval
from rag.answering.explain import PROPOSE
from rag.answering.records import Source

GAP = " … "  # between two sentences of a passage that are not next to each other in the abstract


def reader_sources(retrieval: Retrieval, sources: list[Source], settings: Settings) -> list[Source]:
    """The sources the LLM reads: the first `llm_papers` of `sources`, each with `text` cut to its passage when
    `llm_context` is "passages". Their numbers `n` are the answer's own, so a citation needs no renumbering."""
    chosen = sources[:settings.llm_papers]
    if settings.llm_context == "abstracts":
        return chosen
    return [replace(s, text=passage_text(retrieval, s.n - 1, settings.policy.llm_passage_sentences))
            if s.has_abstract else s for s in chosen]


def passage_text(retrieval: Retrieval, index: int, most: int) -> str:
    """Hit `index`'s passage for the question (see the module docstring): at most `most` sentences."""
    if index >= len(retrieval.hits):
        return ""
    hit = retrieval.hits[index]
    stored = retrieval.scored.get(index, [])  # this paper's sentences, best first (Retrieval.scored)
    abstract = hit.paper.abstract
    if not stored or len(stored) <= most + 1:
        return abstract
    order = sorted(stored, key=lambda s: abstract.find(s.text))  # abstract order
    picked: list[str] = []
    contribution = next((i for i, s in enumerate(order) if PROPOSE.search(s.text)), None)
    if contribution is not None:
        picked.append(order[contribution].text)
        if index == 0 and contribution + 1 < len(order):  # the leading paper: how the contribution works, too
            picked.append(order[contribution + 1].text)
    for sentence in stored:  # best first
        if len(picked) >= most:
            break
        if sentence.text not in picked:
            picked.append(sentence.text)
    kept = [at for at, s in enumerate(order) if s.text in picked]
    out = GAP.lstrip() if kept[0] > 0 else ""  # "… " when the abstract's opening was left out
    for i, at in enumerate(kept):
        out += ("" if i == 0 else " " if at == kept[i - 1] + 1 else GAP) + order[at].text
    return out + (GAP.rstrip() if kept[-1] < len(order) - 1 else "")
