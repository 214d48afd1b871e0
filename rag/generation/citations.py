"""Citations in generated text: every way models write them, rewritten to the one form the app reads.

Models cite as they were trained to, whatever the prompt says: "[1]" before or after the full stop, "[1][2]",
"[1, 2]", "[1-3]" / "[1–3]", "[Source 1]", "(Source 1)", "[S1]", "【1】", "^1" / "^[1]" / "[^1]", once at the
end of a paragraph for all its sentences, or in a "Sources: [1], [2]" line at the end. The rest of the app (links
to source cards, the support check, exports) reads one form, so `clean` rewrites each style to "[1]" / "[1, 2]"
before the sentence's final punctuation ("One [1]. Two [2]."), keeps the numbers that were given as sources
(others are removed and counted as fabricated), and makes a trailing "Sources:" line the closing citation of the
last paragraph (of the whole answer if it has one), so its numbers count and the sentences they cover are checked.
Numbers that are not citations stay as written: "[0, 1]" (sources count from 1), "top-[5]", "[2024]", "(1)",
"x^2", "10^3", "e^{-1}", "\\ell^2" and carets inside $...$.

`StreamFilter` does the same on a stream of deltas and ends with exactly the text `clean` gives for the whole
answer, however the text was split: it holds back only what may still change (a citation still open, a sentence
end a citation may follow, a line that may be the trailing "Sources:" line) and shows the rest at once.

`cited_sentences` pairs each sentence with the sources it cites, a sentence without citations of its own taking those
that close its paragraph: what the support check (`rag.generation.support`) compares.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rag.text import sentence_spans, split_sentences

MAX_RANGE = 20  # "[1-3]" is 1, 2, 3; a wider "range" is two numbers

_NUM = r"[1-9]\d{0,2}(?!\d)"  # sources count from 1: "[0, 1]" is an interval, "[2024]" a year
_LABEL = r"(?:(?i:sources?)[ \t]*|[Ss][ \t]?)"  # "Source 1", "Sources 1, 2", "S1"
_SEP = r"[ \t]*(?:[,;，、&–—-]|and|to)[ \t]*(?:and[ \t]+)?"
_LIST = rf"{_LABEL}?{_NUM}(?:{_SEP}{_LABEL}?{_NUM})*"
_MARKER = (rf"(?:(?<![-_=+/\\])\[\^?[ \t]*{_LIST}[ \t]*\]"  # [1] [1, 2] [1-3] [Source 1] [S1] [^1], not top-[5]
           rf"|【[ \t]*{_LIST}[ \t]*】"
           rf"|\([ \t]*(?i:sources?)[ \t]*{_NUM}(?:{_SEP}{_LABEL}?{_NUM})*[ \t]*\)"  # "(1)" is an equation
           rf"|\^\[[ \t]*{_LIST}[ \t]*\]"
           # ^1 after a word or a full stop; not an exponent (x^2, 10^3: one letter or digits before the caret)
           rf"|(?:(?<=[.!?。！？,;:\s])|(?<=[A-Za-z]{{2}}))\^{_NUM}(?:,{_NUM})*)")
# Adjacent citations are one ([1][2] -> [1, 2], "[1] and [2]" -> [1, 2]: models write both); atomic, so a run is
# never split to pass a test that it failed. "and" between two citations takes one space each side, as models write
# it, so `_HOLD` can hold exactly what may still become one.
_RUN = rf"(?>{_MARKER}(?:[ \t]*[,;]?[ \t]*{_MARKER}|(?<=[\]】]) and {_MARKER})*)"
_STOP = r"[.!?。！？]"
_NOT_AFTER_A_SENTENCE = r"[ \t]*[a-z),;:]"  # "et al. [1] show": that full stop did not end a sentence
# A run of citations, with one that follows the full stop moved before it ("One. [1] Two" -> "One [1]. Two").
_GROUP = re.compile(rf"(?P<lead>[ \t]*)(?P<a>{_RUN})"
                    rf"(?:[ \t]*(?P<s>{_STOP})[ \t]*(?P<b>{_RUN})(?!{_NOT_AFTER_A_SENTENCE}))?"
                    rf"|(?P<s2>{_STOP})[ \t]*(?P<b2>{_RUN})(?!{_NOT_AFTER_A_SENTENCE})")

_HEADS = ("sources", "source", "references", "reference", "citations", "citation", "refs", "ref",
          "来源", "参考文献", "参考资料", "引用", "出处")
_HEAD = r"(?:[*_#>]+[ \t]*)?(?i:" + "|".join(_HEADS) + r")[*_]*[ \t]*[:：][*_]*"
# The end of an answer when it only lists sources, in the shapes real models write (Qwen2.5, SmolLM2 over
# llama.cpp): a heading and numbers ("Sources: [1], [2]", "**References:** 1, 3"); a heading and one line per source
# with its title ("Sources:\n[1] Switch Sparse Autoencoders\n2. ..."); a last line of bare citations, or of
# citations echoing the prompt's source tags ("[1]", "[1] Source [2] Source", '[1] Source n="1"').
_SOURCES_LINE = re.compile(rf"[ \t]*\n\s*{_HEAD}[ \t]*"
                           rf"(?P<list>(?>{_MARKER}(?:[ \t]*[,;，、]?[ \t]*(?:and[ \t]+)?{_MARKER})*|{_LIST}))"
                           rf"[ \t]*\.?\s*\Z")
_ITEM = rf"[ \t]*(?:[-*•][ \t]*)?(?:{_MARKER}|[1-9]\d{{0,2}}[.)])"  # a line of a list of sources
_ITEM_NUMBER = re.compile(rf"(?m)^{_ITEM}")
_SOURCES_BLOCK = re.compile(rf"[ \t]*\n\s*{_HEAD}[ \t]*\n?(?P<list>(?:{_ITEM}[^\n]*(?:\n\s*|\Z))+)\Z")
_ECHO = r"(?i:sources?)(?:[ \t]+n=[\"']?\d{1,3}[\"']?)?"
_ECHO_LINE = re.compile(rf"[ \t]*\n\s*(?P<list>{_MARKER}(?:[ \t]*(?:{_ECHO})?[ \t]*[,;.]?\s*{_MARKER})*"
                        rf"(?:[ \t]*{_ECHO})?)[ \t]*\.?\s*\Z")

_CANON_LIST = r"[1-9]\d{0,2}(?:,[ \t]*[1-9]\d{0,2})*"
_CANON = re.compile(rf"[ \t]?(?<![-_=+/\\^])\[({_CANON_LIST})\]")  # the app's form, as `clean` writes it
# The citation and full stop that close a cleaned paragraph, either or both possibly missing.
_CLOSING = re.compile(rf"(?:[ \t]*(?<![-_=+/\\^])\[(?P<nums>{_CANON_LIST})\])?(?P<stop>{_STOP}?)[ \t]*\Z")
_PARAGRAPH = re.compile(r"\n[ \t]*\n")
_CJK = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")


def _prefixes(*words: str) -> str:
    """A pattern for any beginning of any of `words`, the empty one included (case-insensitive)."""
    starts = sorted({w[:i] for w in words for i in range(1, len(w) + 1)}, key=len, reverse=True)
    return "(?i:" + "|".join(map(re.escape, starts)) + ")?"


# What may still become (part of) a citation when more text comes: a sentence end and citations that a citation
# may follow, a citation still open, a line that may turn out to be the trailing "Sources:" line. It accepts every
# beginning of everything `_GROUP` and `_SOURCES_LINE` match (with the spaces `_GROUP` looks ahead over), so
# `StreamFilter` never cuts through one; it may accept a little more, which only delays a few characters. The
# first loop is possessive (never gives back what it took), which keeps the search linear in the text held.
_INSIDE = rf"(?:[ \t\d,;，、&–—^-]|(?i:sources?|and|to|(?<![a-z])s))*{_prefixes('sources', 'and', 'to')}"
_OPEN = rf"(?:\[\^?|【|\(|\^\[?){_INSIDE}"
# After a line that starts with a sources heading, everything to the end is held (it may be a list with titles);
# after any other line break, a run of citations and echo words ("[1] Source n=") is.
_SOURCES_SO_FAR = (rf"[ \t]*\n\s*(?:(?:[*_#>]+[ \t]*)?(?i:{'|'.join(_HEADS)})[*_]*[ \t]*[:：](?s:.)*"
                   rf"|(?:[\s\d,;，、.:：&–—^*_#>\[\]【】()\"'=-]|(?i:sources?|and|to|n)(?![A-Za-z])"
                   rf"|(?<![A-Za-z])[Ss](?=[ \t]?\d))*+{_prefixes('sources', 'and', 'to', *_HEADS)})")
# "[1] a", "[1] an", "[1] and": maybe "[1] and [2]".
_AND = r"(?:(?<=[\]】] )and(?= |\Z)|(?<=[\]】] )an?\Z)"
_HOLD = re.compile(rf"(?:{_MARKER}|{_STOP}|[ \t,;]|{_AND})*+(?:{_SOURCES_SO_FAR}|{_OPEN})?\Z")


@dataclass
class Cleaned:
    text: str
    cited: list[int] = field(default_factory=list)  # valid numbers, in order of first use
    fabricated: int = 0  # citations to numbers that were not given


def _numbers(text: str) -> list[int]:
    """The numbers a citation names, in order, ranges expanded ("1-3" -> 1, 2, 3)."""
    out: list[int] = []
    ranged = False
    for token in re.findall(r"\d+|[–—-]|\bto\b", text):
        if not token[0].isdigit():
            ranged = bool(out)
            continue
        n = int(token)
        out.extend(range(out[-1] + 1, n + 1) if ranged and 0 < n - out[-1] <= MAX_RANGE else [n])
        ranged = False
    return out


def _keep(numbers: list[int], valid: set[int], result: Cleaned) -> list[int]:
    """The valid numbers among `numbers`, once each; the others are counted as fabricated."""
    kept = list(dict.fromkeys(n for n in numbers if n in valid))
    result.fabricated += sum(1 for n in numbers if n not in valid)
    result.cited.extend(n for n in kept if n not in result.cited)
    return kept


def _cite(numbers: list[int], before: str) -> str:
    """'[1, 2]', set off by a space unless it starts a line, follows an opening bracket or CJK text."""
    space = "" if not before or before.isspace() or before in "([{（【" or _CJK.match(before) else " "
    return f"{space}[{', '.join(map(str, numbers))}]"


def _in_math(raw: str, caret: int) -> bool:
    """A caret inside $...$ or right after a LaTeX command (\\ell^2) is an exponent, not a citation."""
    line = raw[raw.rfind("\n", 0, caret) + 1:caret]
    return line.count("$") % 2 == 1 or re.search(r"\\[A-Za-z]+\Z", line) is not None


def _replace(raw: str, match: re.Match, valid: set[int], result: Cleaned) -> str:
    text = match.group(0)
    if "^" in text and _in_math(raw, match.start() + text.index("^")):
        return text
    numbers = [n for part in match.group("a", "b", "b2") if part for n in _numbers(part)]
    kept = _keep(numbers, valid, result)
    stop = match.group("s") or match.group("s2") or ""
    return _cite(kept, raw[match.start() - 1] if match.start() else "") + stop if kept else stop


def _close_paragraph(text: str, numbers: list[int]) -> str:
    """`text` with `numbers` added to the citation that closes its last paragraph (made if it has none)."""
    closing = _CLOSING.search(text)
    numbers = list(dict.fromkeys(_numbers(closing.group("nums") or "") + numbers))
    before = text[closing.start() - 1] if closing.start() else ""
    return text[:closing.start()] + _cite(numbers, before) + closing.group("stop")


def _clean(raw: str, start: int, end: int, final: bool, valid: set[int], result: Cleaned) -> None:
    """Append the cleaned `raw[start:end]` to `result`; `raw[:start]` is done and read only as context. `final`:
    `end` is the end of the answer, so a "Sources:" line just before it is the trailing one."""
    sources = None
    if final:
        sources = (_SOURCES_LINE.search(raw, start, end) or _SOURCES_BLOCK.search(raw, start, end)
                   or _ECHO_LINE.search(raw, start, end))
    body_end = sources.start() if sources else end
    pieces, at = [], start
    for match in _GROUP.finditer(raw, start, body_end):
        pieces += [raw[at:match.start()], _replace(raw, match, valid, result)]
        at = match.end()
    result.text += "".join(pieces) + raw[at:body_end]
    if sources:
        listed = sources.group("list")
        if sources.re is _SOURCES_BLOCK:  # only the number that starts each line, not those in its title
            listed = " ".join(m.group(0).strip(" \t-*•.)") for m in _ITEM_NUMBER.finditer(listed))
        elif sources.re is _ECHO_LINE:  # '[1] Source n="1"': the tag's n is not another citation
            listed = re.sub(_ECHO, " ", listed)
        kept = _keep(_numbers(listed), valid, result)
        if kept:
            result.text = _close_paragraph(result.text, kept)


def clean(text: str, valid: set[int]) -> Cleaned:
    """Citations of `text` in the app's form, numbers not in `valid` removed and counted."""
    result = Cleaned("")
    _clean(text, 0, len(text), True, valid, result)
    return result


def cited_in(text: str) -> list[int]:
    """The source numbers cleaned `text` cites, in order, repeats kept."""
    return [n for match in _CANON.finditer(text) for n in _numbers(match.group(1))]


def without_citations(text: str) -> str:
    return _CANON.sub("", text).strip()


def cited_sentences(text: str) -> list[tuple[str, list[int]]]:
    """Each sentence of cleaned `text` with the numbers it cites. A sentence with none of its own takes those that
    close its paragraph: models often cite a paragraph once, at its end. When the only citation of the whole answer
    closes it (Qwen2.5 often ends a few paragraphs with one "[1]" line, or a "Sources:" block), every sentence takes
    it: otherwise none of the answer's claims would be checked."""
    paragraphs = _PARAGRAPH.split(text)
    closings = [_CLOSING.search(p.rstrip()) for p in paragraphs]
    last = closings[-1]
    at_end_only = bool(last.group("nums")) and not cited_in(paragraphs[-1][:last.start()]) and not any(
        cited_in(p) for p in paragraphs[:-1])
    answer_closing = _numbers(last.group("nums") or "") if at_end_only else []
    out = []
    for paragraph, closing in zip(paragraphs, closings, strict=True):
        cites = _numbers(closing.group("nums") or "") or answer_closing
        out += [(sentence, cited_in(sentence) or cites) for sentence in split_sentences(paragraph)]
    return out


# How a finished sentence of cleaned text ends: its full stop, then closing quotes or brackets, then perhaps the
# citation a model put after the stop (`clean` moves most of those before it).
_ENDED = re.compile(rf"(?:{_STOP}[\"'”’)\]]*|^)(?:[ \t]*\[(?:{_CANON_LIST})\])?\Z")


def finished_part(text: str) -> str:
    """Cleaned `text` without its last sentence when that one is unfinished: what a model cut off by max_tokens
    ("finish_reason": "length") said in whole sentences; empty when it finished none. Only the last sentence can
    be unfinished, so only it is looked at: a list item without a full stop earlier in the answer stays."""
    spans = sentence_spans(text)
    if spans and not _ENDED.search(text[spans[-1][0]:spans[-1][1]]):
        spans.pop()
    return text[:spans[-1][1]].rstrip() if spans else ""


class StreamFilter:
    """Feed deltas in, get cleaned text out; `finish()` returns what is left and the final `Cleaned`, whose text is
    `clean` of everything fed."""

    def __init__(self, valid: set[int]) -> None:
        self.valid = valid
        self.result = Cleaned("")
        self._raw = ""
        self._done = 0  # `_raw` up to here is cleaned and shown

    def feed(self, delta: str) -> str:
        self._raw += delta
        return self._show(_HOLD.search(self._raw, self._done).start(), final=False)

    def finish(self) -> tuple[str, Cleaned]:
        return self._show(len(self._raw), final=True), self.result

    def _show(self, end: int, final: bool) -> str:
        before = len(self.result.text)
        _clean(self._raw, self._done, end, final, self.valid, self.result)
        self._done = end
        return self.result.text[before:]


_TAG = re.compile(r"<[ \t]*(?P<close>/)?[ \t]*source\b"
                  r"(?:[ \t]+n[ \t]*=[ \t]*[\"']?(?P<n>\d{1,3})[\"']?)?[^<>\n]{0,40}>", re.IGNORECASE)
_PARTIAL_TAG = re.compile(r"<[^<>\n]{0,50}\Z")


class EchoedTags:
    """The prompt's source fences echoed into an answer, turned into citations: Qwen2.5-Coder-1.5B wraps what it
    takes from a source in them (`<source n="1">LOKI ... </source> introduces ...`; eval/DECISIONS.md, the LLM path).
    An opening tag is dropped and remembered; its closing tag (or the end of the answer, if none comes) becomes
    " [n]", which `StreamFilter`, fed after this, reads like any citation. Runs in front of it on the stream,
    holding back only a "<" that may still become a tag."""

    def __init__(self) -> None:
        self._held = ""
        self._open: list[str] = []  # numbers of tags opened and not yet closed

    def feed(self, delta: str) -> str:
        self._held += delta
        partial = _PARTIAL_TAG.search(self._held)
        cut = partial.start() if partial else len(self._held)
        out, self._held = self._rewrite(self._held[:cut]), self._held[cut:]
        return out

    def finish(self) -> str:
        out = self._rewrite(self._held)
        self._held = ""
        out += "".join(f" [{n}]" for n in reversed(self._open))
        self._open = []
        return out

    def _rewrite(self, text: str) -> str:
        def tag(match: re.Match) -> str:
            if not match.group("close"):
                if match.group("n"):
                    self._open.append(match.group("n"))
                return ""
            return f" [{self._open.pop()}]" if self._open else ""
        return _TAG.sub(tag, text)
