"""Citations in generated text: parse [n], [n, m] and [n–m]; drop numbers that were never given as sources.

`clean` works on a whole answer; `StreamFilter` does the same on a stream of deltas, holding back only the
few characters of a citation that is still open, so the text a user watches is the text that is kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_CITATION = re.compile(r"\s?\[(\s*\d+(?:\s*(?:,|;|–|—|-|to)\s*\d+)*\s*)\]")
_OPEN = re.compile(r"\s?\[[\d\s,;–—\-to]*$")  # what a citation looks like before its closing bracket
MAX_RANGE = 20


@dataclass
class Cleaned:
    text: str
    cited: list[int] = field(default_factory=list)  # valid numbers, in order of first use
    fabricated: int = 0  # citations to numbers that were not given


def _numbers(inner: str) -> list[int]:
    out: list[int] = []
    for part in re.split(r"\s*[,;]\s*", inner.strip()):
        bounds = re.split(r"\s*(?:–|—|-|to)\s*", part)
        if len(bounds) == 2 and bounds[0].isdigit() and bounds[1].isdigit():
            lo, hi = int(bounds[0]), int(bounds[1])
            out.extend(range(lo, hi + 1) if 0 <= hi - lo <= MAX_RANGE else [lo, hi])
        else:
            out.extend(int(b) for b in bounds if b.isdigit())
    return out


def clean(text: str, valid: set[int], state: Cleaned | None = None) -> Cleaned:
    """Keep citations of valid numbers (normalized to [1, 2]), remove the others and count them."""
    result = state or Cleaned("")

    def replace(match: re.Match) -> str:
        numbers = _numbers(match.group(1))
        kept = list(dict.fromkeys(n for n in numbers if n in valid))
        result.fabricated += sum(1 for n in numbers if n not in valid)
        for n in kept:
            if n not in result.cited:
                result.cited.append(n)
        if not kept:
            return ""
        space = " " if match.group(0).startswith((" ", "\t", "\n")) else ""
        return f"{space}[{', '.join(map(str, kept))}]"

    result.text += _CITATION.sub(replace, text)
    return result


def cited_in(text: str) -> list[int]:
    """The source numbers `text` cites, in order, repeats kept."""
    return [n for match in _CITATION.finditer(text) for n in _numbers(match.group(1))]


def without_citations(text: str) -> str:
    return _CITATION.sub("", text).strip()


class StreamFilter:
    """Feed deltas in, get cleaned text out; `finish()` returns what is left and the final `Cleaned`."""

    def __init__(self, valid: set[int]) -> None:
        self.valid = valid
        self.result = Cleaned("")
        self._pending = ""

    def feed(self, delta: str) -> str:
        text = self._pending + delta
        open_at = _OPEN.search(text)
        self._pending = text[open_at.start():] if open_at else ""
        ready = text[: open_at.start()] if open_at else text
        before = len(self.result.text)
        clean(ready, self.valid, self.result)
        return self.result.text[before:]

    def finish(self) -> tuple[str, Cleaned]:
        before = len(self.result.text)
        clean(self._pending, self.valid, self.result)
        self._pending = ""
        self.result.text = re.sub(r"[ \t]+([.,;:!?])", r"\1", self.result.text)
        return self.result.text[before:], self.result
