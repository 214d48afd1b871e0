"""Sentences: where the sentences of a text start and end. Shared by indexing (which stores each abstract's
sentences with their vectors) and answering (which checks each sentence of a generated answer).

NLTK's Punkt sentence tokenizer, as llama-index's `split_by_sentence_tokenizer` uses it (untrained parameters, so
no data files), but called directly: it gives character spans, which the index needs to pool each sentence's
token states, and importing nltk alone takes a fraction of importing llama-index at question time.
"""

from __future__ import annotations

import functools


@functools.lru_cache(maxsize=1)
def _punkt():
    from nltk.tokenize.punkt import PunktSentenceTokenizer

    return PunktSentenceTokenizer()


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of `text`, outer whitespace excluded; empty sentences dropped."""
    out = []
    starts = [a for a, _ in _punkt().span_tokenize(text)]
    for a, b in zip(starts, starts[1:] + [len(text)]):
        piece = text[a:b]
        stripped = piece.strip()
        if stripped:
            lead = len(piece) - len(piece.lstrip())
            out.append((a + lead, a + lead + len(stripped)))
    return out


def split_sentences(text: str) -> list[str]:
    return [text[a:b] for a, b in sentence_spans(text)]
