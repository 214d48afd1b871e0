"""Chinese questions -> English search terms, without a multilingual model.

The retrievers are English (BM25 with English stemming, the English MiniLM), and the abstracts are English, so a
question written in Chinese finds nothing as it is (1 of 16 in the top 5 over 2,114 papers, issue 14). This module
owns the one step that fixes that offline: a question containing Chinese characters is segmented with jieba (its
dictionary ships inside the PyPI package) with the terms of `rag/data/zh_terms.tsv` added as user words, and each
segment found in that glossary becomes its English term; Latin words in the question (acronyms such as GNN, RAG,
SQL, names such as Lean 4) are kept as they are; other segments (question words, particles, 论文 ...) are dropped.
The English terms, in question order, are what BM25 and the dense retriever search (`retrieval_query`, called by
the engine where the query is formed; the answer shows it as `retrieval_query`).

The glossary (1,500+ Chinese renderings of the corpus's frequent words and noun phrases, written and reviewed by
hand) is the data that matters here: a Chinese word missing from it is simply not searched. jieba is imported
only when a question contains Chinese (0.4 s the first time in a process: the common words of its dictionary and
the glossary); without jieba installed, the glossary is matched longest-first instead.
English questions pass through unchanged.
"""

from __future__ import annotations

import io
import logging
import re
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

GLOSSARY = Path(__file__).parents[1] / "data" / "zh_terms.tsv"
CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*|[0-9]+[A-Za-z]*")
_RUNS = re.compile(r"[^\W\d_a-zA-Z]+|[A-Za-z0-9.+-]+")  # without jieba: runs of Chinese, runs of Latin letters
_USER_WORD_FREQ = 200_000  # high enough that a glossary term is kept whole rather than split by jieba's own words
COMMON_WORD_FREQ = 100  # jieba dictionary words kept for segmenting around the glossary terms
_lock = threading.Lock()


@dataclass(frozen=True)
class Translation:
    query: str  # the English terms to search, or the question itself when it has no Chinese
    covered: float  # share of the question's Chinese characters inside a glossary term (1.0 without Chinese)
    terms: tuple[str, ...] = ()


def has_chinese(text: str) -> bool:
    return bool(CJK.search(text))


@lru_cache(maxsize=1)
def glossary() -> dict[str, tuple[str, ...]]:
    """Chinese term -> its English renderings (usually one), from `rag/data/zh_terms.tsv`."""
    out: dict[str, list[str]] = {}
    for line in GLOSSARY.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        chinese, _, english = line.partition("\t")
        if chinese.strip() and english.strip():
            out.setdefault(chinese.strip(), []).append(english.strip())
    return {k: tuple(dict.fromkeys(v)) for k, v in out.items()}


@lru_cache(maxsize=1)
def _tokenizer():
    """jieba's tokenizer over the common words of its own dictionary (the package's dict.txt, words seen at least
    COMMON_WORD_FREQ times: 4 s -> 0.4 s to load, and segmenting the question's glue words is all they are for)
    with the glossary as user words; None if jieba is not installed (an environment made before it was a
    dependency), in which case the glossary is matched longest-first without it."""
    try:
        import jieba  # noqa: PLC0415 - loaded only for Chinese questions
    except ImportError:
        return None
    jieba.setLogLevel(logging.WARNING)
    words = (Path(jieba.__file__).parent / "dict.txt").read_bytes().split(b"\n")
    common = b"\n".join(w for w in words if w.count(b" ") >= 1 and int(w.split(b" ", 2)[1]) >= COMMON_WORD_FREQ)
    tokenizer = jieba.Tokenizer()
    with _lock:
        tokenizer.FREQ, tokenizer.total = tokenizer.gen_pfdict(io.BytesIO(common))
        tokenizer.initialized = True  # jieba's own initialize() would load the whole dictionary instead
        for term in glossary():
            tokenizer.add_word(term, freq=_USER_WORD_FREQ)
    return tokenizer


def _longest_matches(segment: str, terms: dict[str, tuple[str, ...]]) -> list[tuple[str, str]]:
    """Glossary terms inside a segment jieba kept whole (greedy, longest first): (Chinese, English)."""
    out: list[tuple[str, str]] = []
    i, longest = 0, max(map(len, terms), default=1)
    while i < len(segment):
        for size in range(min(longest, len(segment) - i), 0, -1):
            piece = segment[i:i + size]
            if piece in terms:
                out.extend((piece, english) for english in terms[piece])
                i += size
                break
        else:
            i += 1
    return out


def translate(question: str) -> Translation:
    """The English search terms for a question with Chinese in it; the question itself otherwise."""
    if not has_chinese(question):
        return Translation(question, 1.0)
    terms = glossary()
    found: list[str] = []
    covered = 0
    tokenizer = _tokenizer()
    segments = tokenizer.cut(question, HMM=False) if tokenizer else _RUNS.findall(question)
    for segment in segments:
        segment = segment.strip()
        if not segment:
            continue
        if segment in terms:
            found.extend(terms[segment])
            covered += len(segment)
        elif not has_chinese(segment):
            found.extend(_LATIN.findall(segment))
        else:
            for chinese, english in _longest_matches(segment, terms):
                found.append(english)
                covered += len(chinese)
    chinese_chars = len(CJK.findall(question))
    unique = tuple(dict.fromkeys(found))
    return Translation(" ".join(unique) or question, covered / chinese_chars if chinese_chars else 1.0, unique)


def retrieval_query(question: str) -> str:
    """What to search for this question: its English terms if it is written in Chinese, else itself."""
    return translate(question).query
