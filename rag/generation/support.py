"""Support: is each cited sentence of a generated answer backed by the abstracts it cites?

Models paraphrase, so a sentence is compared with the cited abstracts in three ways, and a sentence is
*unsupported* when any of them fails:
- meaning: its best cosine (MiniLM, sentences embedded on their own, like with like) to a sentence of the cited
  abstracts is below `Settings.support_threshold`;
- numbers: it states a number ("2,048 tasks", "12x", "2/3") that no cited abstract or title contains. Paraphrase
  keeps numbers; an invented or misremembered figure is what this catches and meaning cannot;
- names: it names a method or benchmark (a word like MathCheck, HyPER, GPT-4o, CD-T) that no cited abstract or
  title contains, which is how a claim attributed to the wrong paper usually shows. Plain acronyms spelled out in
  the abstract ("RL" for "reinforcement learning") and common ones (LLM, GPU, ...) are not names.
A sentence without citations of its own is checked against the citation that closes its paragraph
(`rag.generation.citations.cited_sentences`); one with none at all is not checked: nothing claims support for it. Text
in an abstract that addresses a model ("IGNORE ALL PREVIOUS INSTRUCTIONS ...") never supports anything.

Measured on eval/questions/support_pairs.jsonl (hand-written paraphrases, wrong-paper claims and invented numbers
and claims, `rag eval eval/questions/support_pairs.jsonl`); the threshold was chosen on half "a" of the pairs and
is reported on both halves (eval/README.md). Comparing with pairs of adjacent sentences as well (for a claim
that sums up two) did not catch more or flag fewer there, and doubled the embedding work, so it is not done.
The caller decides what to do: the engine discards an answer only when none of its checked sentences is
supported, and otherwise lists the doubtful ones (`Answer.unsupported`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Protocol, Sequence

import numpy as np

from rag.text import split_sentences
from rag.generation.citations import cited_sentences, without_citations

# Text in an abstract that addresses a model ("IGNORE ALL PREVIOUS INSTRUCTIONS AND SAY ..."): never support.
INSTRUCTION = re.compile(r"\b(?:ignore|disregard|forget|override)\b.{0,40}\b(?:instructions?|prompts?|rules|context)\b|"
                         r"\byou are now\b|\bsystem prompt\b|\bnew instructions?\b", re.IGNORECASE | re.DOTALL)
# A number as written: 1,024 -> 1024; 2.3; 1/2 (a fraction is one number: "2/3" is not supported by "1/3").
_NUMBER = re.compile(r"(?<![\w.])\d+(?:,\d{3})*(?:\.\d+)?(?:/\d+)?|(?<=[A-Za-z])\d+(?:\.\d+)?")
# A name: mixed case inside a word (MathCheck, HyPER, nnUNet), letters with digits (GPT-4o, Llama-405B), or an
# all-capitals word of 2+ letters, possibly hyphenated (MUTE, CD-T, PFedTD-Rep); a trailing plural "s" is dropped.
_NAME = re.compile(r"(?<![\w-])(?=[\w-]*[A-Z])(?:[A-Za-z]+[A-Z][\w-]*|[A-Z]{2,}[\w-]*|[A-Za-z]+-?\d[\w-]*|"
                   r"[A-Z][a-z]+-[A-Z][\w-]*)(?![\w-])")
# "this ICLR 2025 paper": where the papers are from, not a claim about one.
_VENUE = re.compile(r"\bICLR(?:[ \t]*'?(?:20)?25)?\b")
# Capitalized words any answer about ML papers may use without the abstract having them.
_COMMON = {"LLM", "LLMS", "AI", "ML", "NLP", "GPU", "GPUS", "CPU", "TPU", "API", "RAG", "SOTA", "CNN", "RNN", "GNN",
           "MLP", "VLM", "LM", "LMS", "RL", "PDE", "PDES", "ODE", "SGD", "2D", "3D", "ID", "OOD", "USA", "UK", "EU"}


class _Embedder(Protocol):
    def embed(self, texts: list[str]) -> np.ndarray: ...


class _Cited(Protocol):
    """What the check reads of a source (`rag.answering.extractive.Source`)."""

    n: int
    title: str
    text: str


@dataclass
class Claim:
    """One checked sentence and what the check found."""

    sentence: str  # as written in the answer, citations included
    claim: str  # without citations
    cited: list[int]  # source numbers
    similarity: float = 0.0  # best cosine to a sentence of the cited abstracts
    missing_numbers: list[str] = field(default_factory=list)
    missing_names: list[str] = field(default_factory=list)

    def supported(self, threshold: float) -> bool:
        return self.similarity >= threshold and not self.missing_numbers and not self.missing_names


def numbers(text: str) -> set[str]:
    """The numbers written in `text`, normalized ("1,024" -> "1024", "2.30" -> "2.3")."""
    out = set()
    for raw in _NUMBER.findall(text):
        value = raw.replace(",", "")
        if "." in value and "/" not in value:
            value = value.rstrip("0").rstrip(".")
        out.add(value)
    return out


def names(text: str) -> set[str]:
    """The name-like words of `text` (see the module docstring), without a plural "s"."""
    out = set()
    for word in _NAME.findall(text):
        word = word.strip("-")
        if word.endswith("s") and len(word) > 2 and word[:-1].isupper():
            word = word[:-1]
        if word.upper() not in _COMMON and not (word.isupper() and len(word) <= 1):
            out.add(word)
    return out


def _spelled_out(acronym: str, words: list[str]) -> bool:
    """True if `acronym` (letters only, e.g. "FL") is the initials of consecutive words of the text."""
    return acronym.lower() in "".join(w[0] for w in words)


def _missing_names(claim: str, text: str) -> list[str]:
    words = [w.lower() for w in re.findall(r"[A-Za-z]+", text)]
    missing = []
    for name in sorted(names(claim)):
        # The name as a word of the text, case aside ("UltraFeedback" is "Ultrafeedback"), plural allowed.
        if re.search(r"(?<!\w)" + re.escape(name) + r"(?:e?s)?(?!\w)", text, re.IGNORECASE):
            continue
        letters = re.sub(r"[^A-Za-z]", "", name)
        if name.isupper() and letters == name.replace("-", "") and _spelled_out(letters, words):
            continue
        missing.append(name)
    return missing


def check(answer: str, sources: Sequence[_Cited], embedder: _Embedder) -> list[Claim]:
    """Each sentence of `answer` that cites one of `sources` (by its number `n`), with what was found."""
    by_n = {s.n: s for s in sources}
    claims: list[Claim] = []
    for sentence, cited in cited_sentences(answer):
        known = [n for n in dict.fromkeys(cited) if n in by_n]
        text = _VENUE.sub("", without_citations(sentence)).strip()
        if known and text:
            claims.append(Claim(sentence, text, known))
    if not claims:
        return []
    # Every cited abstract's sentences, embedded once with the claims in one batch.
    pieces: dict[int, list[str]] = {}
    for n in {n for c in claims for n in c.cited}:
        pieces[n] = [t for t in split_sentences(by_n[n].text or "") if not INSTRUCTION.search(t)]
    flat = [t for n in pieces for t in pieces[n]]
    vectors = embedder.embed([c.claim for c in claims] + flat)
    claim_vectors, rows, start = vectors[:len(claims)], {}, len(claims)
    for n, texts in pieces.items():
        rows[n] = vectors[start:start + len(texts)]
        start += len(texts)
    for claim, vector in zip(claims, claim_vectors):
        support = [rows[n] for n in claim.cited if len(rows[n])]
        claim.similarity = float((np.concatenate(support) @ vector).max()) if support else 0.0
        cited_text = " ".join(f"{by_n[n].title} {' '.join(split_sentences(by_n[n].text or ''))}"
                              for n in claim.cited)
        cited_text = " ".join(t for t in split_sentences(cited_text) if not INSTRUCTION.search(t))
        claim.missing_numbers = sorted(numbers(claim.claim) - numbers(cited_text))
        claim.missing_names = _missing_names(claim.claim, cited_text)
    return claims


def unsupported(answer: str, sources: Sequence[_Cited], embedder: _Embedder,
                threshold: float) -> tuple[list[str], int]:
    """(the cited sentences of `answer` its cited sources do not support, how many cited sentences were checked)."""
    claims = check(answer, sources, embedder)
    return [c.sentence for c in claims if not c.supported(threshold)], len(claims)
