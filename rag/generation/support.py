"""Support: is each cited sentence of a generated answer backed by the abstracts it cites?

Models paraphrase, so a sentence is compared with the cited abstracts in three ways, and a sentence is
*unsupported* when any of them fails:
- meaning: its best cosine (MiniLM, sentences embedded on their own, like with like) to a sentence of the cited
  abstracts is below `Settings.support_threshold`; the claim is compared without the cited papers' titles
  (`without_titles`: a title shares its abstract's words, whatever the rest of the claim says);
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
from typing import Protocol
from collections.abc import Sequence

import numpy as np

from rag.text import split_sentences
from rag.generation.citations import cited_sentences, without_citations

# Text in an abstract that addresses a model ("IGNORE ALL PREVIOUS INSTRUCTIONS AND SAY ..."): never support.
INSTRUCTION = re.compile(r"\b(?:ignore|disregard|forget|override)\b.{0,40}\b(?:instructions?|prompts?|rules|context)\b|"
                         r"\byou are now\b|\bsystem prompt\b|\bnew instructions?\b", re.IGNORECASE | re.DOTALL)
# A number as written: 1,024 -> 1024; 2.3; 1/2 (a fraction is one number: "2/3" is not supported by "1/3").
# ASCII word characters only: "提高了30%" states 30 (a CJK character is a Unicode word character).
_NUMBER = re.compile(r"(?<![\w.])\d+(?:,\d{3})*(?:\.\d+)?(?:/\d+)?|(?<=[A-Za-z])\d+(?:\.\d+)?", re.ASCII)
# A name: mixed case inside a word (MathCheck, HyPER, nnUNet), letters with digits (GPT-4o, Llama-405B), or an
# all-capitals word of 2+ letters, possibly hyphenated (MUTE, CD-T, PFedTD-Rep); a trailing plural "s" is dropped.
_NAME = re.compile(r"(?<![\w-])(?=[\w-]*[A-Z])(?:[A-Za-z]+[A-Z][\w-]*|[A-Z]{2,}[\w-]*|[A-Za-z]+-?\d[\w-]*|"
                   r"[A-Z][a-z]+-[A-Z][\w-]*)(?![\w-])", re.ASCII)
_LATIN_RUN = re.compile(r"(?:[A-Za-z][\w'’-]*[\s,;:()]+){4,}[A-Za-z][\w'’-]*", re.ASCII)
# "this ICLR 2025 paper": where the papers are from, not a claim about one.
_VENUE = re.compile(r"\bICLR(?:[ \t]*'?(?:20)?25)?\b")
# Capitalized words any answer about ML papers may use without the abstract having them.
_COMMON = {"LLM", "LLMS", "AI", "ML", "NLP", "GPU", "GPUS", "CPU", "TPU", "API", "RAG", "SOTA", "CNN", "RNN", "GNN",
           "MLP", "VLM", "LM", "LMS", "RL", "PDE", "PDES", "ODE", "SGD", "2D", "3D", "ID", "OOD", "USA", "UK", "EU"}


# A sentence about the sources rather than a claim from them: "This approach is supported by [1, 2].", "This
# information is provided in the abstract of [1]." (Qwen2.5 closes answers so). Once its citations are gone it
# ends on a preposition or on "the abstract(s)/source(s)/paper(s)", says it refers, and is short; it states no
# number or name (those are claims, checked as usual).
_META_END = re.compile(r"\b(?:by|in|of|from|to|see|on|at|within|sources?|abstracts?|papers?|works?|stud(?:y|ies)|"
                       r"articles?|references?)\W*\Z", re.IGNORECASE)
_META_WORD = re.compile(r"\b(?:support(?:s|ed)?|provided|described|stated|mentioned|found|discussed|given|"
                        r"reported|explained|detailed|presented|outlined|shown|covered|based|according|see|refer|"
                        r"sources?|abstracts?|papers?|cited)\b", re.IGNORECASE)
# What is left of a line that echoes the prompt's source tags ("[1] Source [2] Source", 'Source n="1"').
_ECHO_ONLY = re.compile(r'(?i:\W|sources?|n=?"?\d*"?)*')
# How a number is used: "by 30.32%" / "a 30.32% gain" is a change, "from 28.06% to 30.32%" a level. The same figure
# in the other role is a misread: "improves ... by 30.32%" when the abstract says 28.06% -> 30.32%.
_DELTA_BEFORE = re.compile(r"\bby(?:\s+(?:about|around|roughly|up\s+to|over|nearly|almost|~))?\s*[~≈]?\s*\Z", re.I)
_LEVEL_BEFORE = re.compile(r"\b(?:from|to)(?:\s+(?:about|around|roughly|~))?\s*[~≈]?\s*\Z", re.IGNORECASE)
_DELTA_AFTER = re.compile(r"\A\s*(?:%|percent|pp|points?|percentage\s+points?)?[\s-]*(?:absolute\s+|relative\s+)?"
                          r"(?:improvements?|gains?|increases?|boosts?|reductions?|decreases?|drops?|higher|lower|"
                          r"better|fewer)\b", re.IGNORECASE)


def is_meta(claim: str) -> bool:
    """True for a sentence (citations removed) that only says where its claims come from."""
    words = claim.split()
    return (len(words) <= 14 and bool(_META_END.search(claim)) and bool(_META_WORD.search(claim))
            and not numbers(claim) and not names(claim)) or _ECHO_ONLY.fullmatch(claim) is not None


def _roles(text: str, value: str) -> set[str]:
    """How `text` uses the number `value` at each place it writes it: "delta", "level" or "other"."""
    out = set()
    for match in _NUMBER.finditer(text):
        raw = match.group(0).replace(",", "")
        if "." in raw and "/" not in raw:
            raw = raw.rstrip("0").rstrip(".")
        if raw != value:
            continue
        before, after = text[max(0, match.start() - 24):match.start()], text[match.end():match.end() + 40]
        if _DELTA_BEFORE.search(before) or _DELTA_AFTER.match(after):
            out.add("delta")
        elif _LEVEL_BEFORE.search(before):
            out.add("level")
        else:
            out.add("other")
    return out


def misread_numbers(claim: str, text: str) -> list[str]:
    """The numbers `claim` uses as a change where `text` has them only as a level (or the other way round)."""
    misread = []
    for value in sorted(numbers(claim) & numbers(text)):
        said, written = _roles(claim, value), _roles(text, value)
        if said & {"delta", "level"} and "other" not in written and written and not said & written:
            misread.append(value)
    return misread


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
    misread_numbers: list[str] = field(default_factory=list)  # in the abstract, but as a level where it says a change
    restates: bool = False  # it only repeats the question (SmolLM2: 'The answer to the question "..." is: [1]')
    language: str = ""  # "Chinese", "Japanese", "Korean": its meaning was not compared (see `check`)

    def supported(self, threshold: float) -> bool:
        meaning = self.similarity >= threshold or (self.language and not self.english)
        return (bool(meaning) and not self.missing_numbers and not self.missing_names and not self.misread_numbers
                and not self.restates)

    @property
    def english(self) -> str:
        """The English a CJK sentence carries in runs of five words or more ("... 中文 The method cures cancer
        中文"), compared by meaning like an English sentence; padding in another script hides nothing."""
        return " ".join(run.strip() for run in _LATIN_RUN.findall(self.claim)) if self.language else self.claim


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


def _content(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 3}


# A sentence in Chinese (or Japanese) that only restates the question: at least this share of its pairs of adjacent
# characters are the question's, and it adds at most this many (about two words: "是的，" adds one pair).
CJK_RESTATED_SHARE, CJK_NEW_PAIRS = 0.8, 6
_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")


def _pairs(text: str) -> set[str]:
    return {run[i:i + 2] for run in _CJK_RUN.findall(text) for i in range(len(run) - 1)}


def restates(claim: str, question: str) -> bool:
    """True if `claim` adds at most two words of four letters or more to `question`'s: it scores high against the
    abstracts because the question does, not because it says anything. A claim in Chinese or Japanese is read by
    its pairs of adjacent characters (CJK_RESTATED_SHARE, CJK_NEW_PAIRS), its Latin words as above: its meaning is
    not compared (`check`), so "是的，这种选择模型在航空公司的机票购买数据做过实验。"
    (Qwen2.5-Coder-1.5B granting a near miss, read describe_final11: the paper used no airline data) passed as
    supported, while the same sentence in English was caught."""
    asked, said = _content(question), _content(claim)
    new_words = said - asked - {"answer", "question", "sources", "source"}
    pairs = _pairs(claim)
    if pairs:
        known = pairs & _pairs(question)
        return (len(known) >= CJK_RESTATED_SHARE * len(pairs) and len(pairs - known) <= CJK_NEW_PAIRS
                and len(new_words) <= 2)
    return bool(asked) and bool(said & asked) and len(new_words) <= 2


def without_titles(claim: str, titles: Sequence[str]) -> str:
    """`claim` with the titles of the papers it cites taken out, for its meaning to be compared: a paper's title
    shares its abstract's words, so "<title of [4]> [4] <the question, restated>" scored as support for a claim [4]
    never makes (Qwen2.5-Coder-1.5B on describe_final7: the attention-heads paper credited with inferring changing
    links between neurons, accepted; eval/DECISIONS.md, "A claim's meaning without the cited title"). The claim is kept
    whole when fewer than four words would be left: a sentence that is mostly a name is compared as written."""
    out = claim
    for title in sorted({t.strip() for t in titles if t and t.strip()}, key=len, reverse=True):
        out = re.sub(r"[\"“”'‘’*]*" + re.escape(title) + r"[\"“”'‘’*]*", " ", out, flags=re.IGNORECASE)
    out = re.sub(r"\s+", " ", out).strip(" ,;:")
    return out if len(re.findall(r"[A-Za-z]+", out)) >= 4 else claim


def check(answer: str, sources: Sequence[_Cited], embedder: _Embedder, max_sentences: int = 40,
          question: str = "") -> list[Claim]:
    """Each sentence of `answer` that cites one of `sources` (by its number `n`), with what was found; at most
    `max_sentences` of them (the first), so an endless answer cannot make the check endless.

    The language is decided per sentence: an English sentence is compared by meaning, numbers and names; a
    sentence in Chinese, Japanese or Korean (the English MiniLM scores those low whatever they say) by the numbers
    and names it states, which must be in the English abstracts it cites, and by meaning for any English run of
    five words or more inside it. Sentences that only say where the claims come from ("This approach is supported
    by [1, 2].") are not claims and are not checked."""
    from rag.generation.prompts import language_of

    by_n = {s.n: s for s in sources}
    claims: list[Claim] = []
    for sentence, cited in cited_sentences(answer):
        known = [n for n in dict.fromkeys(cited) if n in by_n]
        text = _VENUE.sub("", without_citations(sentence)).strip()
        if known and text and not is_meta(text):
            claims.append(Claim(sentence, text, known, language=language_of(text)))
            if len(claims) >= max_sentences:
                break
    if not claims:
        return []
    # Every cited abstract's sentences, embedded once with the claims in one batch.
    pieces: dict[int, list[str]] = {}
    for n in {n for c in claims for n in c.cited}:
        pieces[n] = [t for t in split_sentences(by_n[n].text or "") if not INSTRUCTION.search(t)]
    flat = [t for n in pieces for t in pieces[n]]
    compared = [c for c in claims if c.english]
    vectors = embedder.embed([without_titles(c.english, [by_n[n].title for n in c.cited]) for c in compared] + flat)
    claim_vectors, rows, start = vectors[:len(compared)], {}, len(compared)
    for n, texts in pieces.items():
        rows[n] = vectors[start:start + len(texts)]
        start += len(texts)
    for claim, vector in zip(compared, claim_vectors, strict=True):
        support = [rows[n] for n in claim.cited if len(rows[n])]
        claim.similarity = float((np.concatenate(support) @ vector).max()) if support else 0.0
    for claim in claims:
        _inspect(claim, by_n, question)
    return claims


def _inspect(claim: Claim, by_n: dict, question: str) -> None:
    """Fill in what meaning cannot show: numbers and names the cited abstracts lack, a misread number, a restated
    question."""
    cited_text = " ".join(f"{by_n[n].title} {' '.join(split_sentences(by_n[n].text or ''))}" for n in claim.cited)
    cited_text = " ".join(t for t in split_sentences(cited_text) if not INSTRUCTION.search(t))
    claim.missing_numbers = sorted(numbers(claim.claim) - numbers(cited_text))
    claim.missing_names = _missing_names(claim.claim, cited_text)
    claim.misread_numbers = misread_numbers(claim.claim, cited_text)
    claim.restates = bool(question) and restates(claim.claim, question)


_END = re.compile(r"[\s.!?。！？]*\Z")
def attribute(answer: str, sources: Sequence[_Cited], embedder: _Embedder, threshold: float,
              question: str = "") -> tuple[str, list[int]]:
    """The repair of an answer that cites nothing (issue 28: one attempt before it falls back): each English
    sentence of it that one of `sources` supports (the same checks as a cited sentence: meaning, numbers, names,
    not a restated question) gets that source's number, the best-matching one; other sentences stay uncited.
    Returns the text and the numbers added, in order ([] when no sentence is supported: the answer falls back).

    Why not ask the model again: a second turn costs a CPU server 20-60 s, and it is the same model that did not
    cite; whether a sentence is backed by an abstract is what this check decides anyway, in well under a second.
    Sentences in Chinese, Japanese or Korean are not attributed: their meaning is not compared (`check`)."""
    from rag.generation.prompts import NOT_AN_ANSWER, language_of
    from rag.text import sentence_spans

    by_n = {s.n: s for s in sources if s.text}
    if NOT_AN_ANSWER.search(answer):  # junk around "the sources do not answer", or the prompt echoed
        return answer, []
    claims = [(a, b, _VENUE.sub("", answer[a:b]).strip()) for a, b in sentence_spans(answer)]
    claims = [(a, b, c) for a, b, c in claims if len(c.split()) >= 4 and not is_meta(c) and not language_of(c)]
    if not claims or not by_n:
        return answer, []
    pieces = {n: [t for t in split_sentences(s.text) if not INSTRUCTION.search(t)] for n, s in by_n.items()}
    flat = [(n, t) for n in pieces for t in pieces[n]]
    if not flat:
        return answer, []
    vectors = embedder.embed([c for _, _, c in claims] + [t for _, t in flat])
    claim_vectors, rows = vectors[:len(claims)], vectors[len(claims):]
    owners = np.array([n for n, _ in flat])
    added: list[tuple[int, int]] = []  # (end of the sentence's words, source number)
    for (a, b, text), vector in zip(claims, claim_vectors, strict=True):
        scores = rows @ vector  # the best-matching sentence's paper is the one to cite
        best = int(owners[int(scores.argmax())])
        claim = Claim(answer[a:b], text, [best], similarity=float(scores.max()))
        _inspect(claim, by_n, question)
        if claim.supported(threshold):
            added.append((a + len(_END.sub("", answer[a:b])), best))
    for at, n in reversed(added):
        answer = f"{answer[:at]} [{n}]{answer[at:]}"
    return answer, [n for _, n in added]


def unsupported(answer: str, sources: Sequence[_Cited], embedder: _Embedder, threshold: float,
                max_sentences: int = 40, question: str = "") -> tuple[list[str], int]:
    """(the cited sentences of `answer` its cited sources do not support, how many cited sentences were checked)."""
    claims = check(answer, sources, embedder, max_sentences, question)
    return [c.sentence for c in claims if not c.supported(threshold)], len(claims)


class Checker:
    """The support check the answer step runs on an LLM's answer (`rag.answering.compose`), bound to the embedder
    and the settings' threshold: `unsupported` for a cited answer, `attribute` to repair one that cites nothing."""

    def __init__(self, embedder: _Embedder, threshold: float, max_sentences: int = 40) -> None:
        self.embedder, self.threshold, self.max_sentences = embedder, threshold, max_sentences

    def unsupported(self, text: str, sources: Sequence[_Cited], question: str = "") -> tuple[list[str], int]:
        return unsupported(text, sources, self.embedder, self.threshold, self.max_sentences, question)

    def attribute(self, text: str, sources: Sequence[_Cited], question: str = "") -> tuple[str, list[int]]:
        return attribute(text, sources, self.embedder, self.threshold, question)
