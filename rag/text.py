"""Text: the plain-text helpers every layer shares, so the UI never reaches into ingest or retrieval for them.

- Sentences: where the sentences of a text start and end. Shared by indexing (which stores each abstract's
  sentences with their vectors), answering (which checks each sentence of a generated answer) and display.
- `tokenize`: BM25's tokenizer (bm25s, English stop words, Snowball stemming), also used to highlight the
  question's terms in a snippet exactly as the search matched them.
- `first_sentence`: the short preview of an untitled abstract.
- `is_boilerplate`: "Code is available at https://...", which says nothing about the paper's content (3% of the
  bundled abstracts' sentences); retrieval scores such sentences lower so no answer quotes them for content.
- `strip_bidi`: the bidi controls taken out of text shown on the page (cards, map), so no paper reorders it.

NLTK's Punkt sentence tokenizer, as llama-index's `split_by_sentence_tokenizer` uses it (untrained parameters, so
no data files), but called directly: it gives character spans, which the index needs to pool each sentence's
token states, and importing nltk alone takes a fraction of importing llama-index at question time.
"""

from __future__ import annotations

import re
import threading
from typing import Any

import bm25s
import Stemmer

_STEMMER = Stemmer.Stemmer("english")
# Characters that draw nothing yet change what text is or how a terminal shows it: control characters (C0 but tab,
# line feed and carriage return; DEL; C1, whose U+009B is a terminal's CSI) and Unicode format characters
# (category Cf: zero-width spaces and joiners, bidi embeddings, overrides and isolates, soft hyphen, BOM, the
# interlinear annotations and tag characters); the rest of Unicode's default-ignorable code points (combining
# grapheme joiner U+034F, Hangul fillers U+115F U+1160 U+3164 U+FFA0, Khmer inherent vowels U+17B4 U+17B5,
# Mongolian and other variation selectors, the unassigned U+FFF0-U+FFF8 and U+E0000-U+E0FFF) and the blank Braille
# pattern U+2800, which render as nothing or as a blank without being whitespace. Listed by hand because building
# the class from `unicodedata` at import costs a pass over 1.1M code points (and it has no default-ignorable
# property); tests/store/test_ingest.py checks it against `unicodedata` and Unicode's list for all of them.
INVISIBLE = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\xad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2"
    "\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u2800"
    "\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb\U000110bd"
    "\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]")
# A full stop, then a capital: cheap and good enough for a one-line preview (Punkt is for the index).
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")


def tokenize(texts: list[str]) -> list[list[str]]:
    """Stemmed, stop-word-free terms of each text, as BM25 indexes and searches them."""
    return bm25s.tokenize(texts, stopwords="en", stemmer=_STEMMER, return_ids=False, show_progress=False)


# A terminal escape sequence as a whole (CSI "ESC [ 31 m", its one-byte form U+009B, OSC "ESC ] ... BEL"), so that
# dropping its ESC does not leave "[31m" behind as text. Each part is a single character class: linear time.
ESCAPES = re.compile(r"(?:\x1b\[|\x9b)[0-?]{0,64}[ -/]{0,8}[@-~]|\x1b\][^\x07\x1b\x9c]{0,4096}(?:\x07|\x1b\\|\x9c)?")


def visible(text: str) -> str:
    """`text` without terminal escape sequences (ESCAPES) and INVISIBLE characters (a space for those that are
    whitespace): what a reader sees. So "same\u200b sentence" is the same sentence, and an abstract cannot reorder,
    hide or smuggle text past the eye (or an escape sequence past `rag ask` to the terminal)."""
    return INVISIBLE.sub(_dropped, ESCAPES.sub("", text))


def _dropped(match: re.Match) -> str:
    return " " if match.group().isspace() else ""  # a vertical tab, form feed or NEL still parts two words


def terminal_safe(text: str) -> str:
    """Text for a terminal: INVISIBLE characters dropped (ESC, CSI and OSC never reach it, so text from a paper or
    a model cannot clear the screen, set the window title or write the clipboard) and a carriage return, which
    would let a line overwrite what was printed before it, shown as a line break."""
    return visible(text.replace("\r\n", "\n").replace("\r", "\n"))


_CONSOLE_UNSAFE = re.compile(f"{INVISIBLE.pattern}|\r")


def _console_escape(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def console_escaped(text: str) -> str:
    """`text` for a server's console: every INVISIBLE character and carriage return written as its escape
    (`\\x1b`, `\\u202e`), so a log line or a traceback quoting a client's input (an uploaded file's path) shows
    what it held and cannot clear the screen, set the clipboard (OSC 52) or overwrite a line. Tab and line feed
    stay."""
    return _CONSOLE_UNSAFE.sub(_console_escape, text)


class ConsoleStream:
    """A text stream (`sys.stderr`, `sys.stdout`) whose writes are `console_escaped`. `rag serve` puts its console
    behind it: Gradio prints a failed event's traceback with `traceback.print_exc()`, not through logging, and
    uvicorn's and the app's log handlers write to the streams the process has when they are made, so wrapping the
    streams reaches every line whoever prints it."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(console_escaped(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, fileno, encoding, ...: the stream's own
        return getattr(self._stream, name)


def escape_console() -> None:
    """Put `sys.stdout` and `sys.stderr` behind `ConsoleStream` (once)."""
    import sys

    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, ConsoleStream):
            setattr(sys, name, ConsoleStream(stream))


def json_safe(dumped: str) -> str:
    """JSON text (`json.dumps(..., ensure_ascii=False)`, which escapes only C0 controls) with every other INVISIBLE
    character escaped as `\\uXXXX` too: the data stays exact for a program, and a terminal shown the line sees
    no C1 control (U+009B is CSI) or bidi override."""
    return INVISIBLE.sub(_escaped, dumped)


def _escaped(match: re.Match) -> str:
    code = ord(match.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xd800 + (code >> 10):04x}\\u{0xdc00 + (code & 0x3ff):04x}"  # a surrogate pair, as JSON spells it


def plain(text: str) -> str:
    """Lower-case words and numbers only, one space apart: how a title typed by a user is compared with one."""
    return " ".join(re.findall(r"\w+", text.casefold()))


def first_sentence(text: str, limit: int = 240) -> str:
    sentence = _SENTENCE_END.split(text.strip(), maxsplit=1)[0]
    return sentence if len(sentence) <= limit else sentence[: limit - 1].rstrip() + "…"


# Abbreviations that end in a full stop inside a sentence of a paper ("reconstruction vs. sparsity", "Smith et
# al. (2020)", "e.g. images", "Fig. 3"): untrained Punkt would cut the sentence there, and a quoted half-sentence
# reads as nonsense. ("etc." is left out: it ends sentences as often as not.)
ABBREVIATIONS = {"vs", "e.g", "i.e", "al", "cf", "fig", "figs", "eq", "eqs", "approx", "resp", "w.r.t", "sec",
                 "ref", "refs", "viz", "wrt"}


_PUNKT: Any = None
_PUNKT_LOCK = threading.Lock()


def load_sentence_splitter() -> Any:
    """The Punkt splitter, built once. Servers call it on their main thread before starting others.

    nltk's package imports itself in a circle (nltk.tokenize -> nltk -> nltk.text -> nltk.tokenize); two threads
    importing it at once make one of them fail with "cannot import name 'sent_tokenize' from partially
    initialized module 'nltk.tokenize'". It happened in `rag serve`: the first question's support check and the
    background indexing of the bundled list both reached here first. The lock covers our two callers; importing
    on the main thread before any worker starts also covers llama-index, which imports nltk on its own."""
    global _PUNKT
    if _PUNKT is None:
        with _PUNKT_LOCK:
            if _PUNKT is None:
                from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

                params = PunktParameters()
                params.abbrev_types = set(ABBREVIATIONS)
                _PUNKT = PunktSentenceTokenizer(params)
    return _PUNKT


# A CJK full stop ends a sentence with or without a space after it (Punkt splits only at "." and a space):
# "第一句[1]。第二句[2]。" is two sentences, each checked against its own citation.
_CJK_END = re.compile(r"[。！？]+[”」』）)]*(?=\S)")


# A list's number, which Punkt takes for a sentence end ("two key challenges: 1." | "The memory ..."): the number
# alone, or after a colon or semicolon ("... inference costs; 2."). "We improve accuracy by 12." still ends there.
_LIST_NUMBER = re.compile(r"(?:^|[:;])\s*\(?(?:\d{1,2}|[ivx]{1,4})[.)]$")


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of `text`, outer whitespace excluded; empty sentences dropped. A list's number
    ("challenges: 1. The memory ...; 2. The ...") belongs to the item it numbers, not to the sentence before it."""
    out: list[tuple[int, int]] = []
    starts = [a for a, _ in load_sentence_splitter().span_tokenize(text)]
    starts = sorted(set(starts) | {m.end() for m in _CJK_END.finditer(text)})
    glued = False  # the previous piece ended with a list number: this one continues it
    for a, b in zip(starts, starts[1:] + [len(text)], strict=False):
        piece = text[a:b]
        stripped = piece.strip()
        if stripped:
            lead = len(piece) - len(piece.lstrip())
            if glued and out:
                out[-1] = (out[-1][0], a + lead + len(stripped))
            else:
                out.append((a + lead, a + lead + len(stripped)))
            glued = bool(_LIST_NUMBER.search(stripped))
    return out


def split_sentences(text: str) -> list[str]:
    return [text[a:b] for a, b in sentence_spans(text)]


# A paper's own reference numbers in its text ("As shown in [2]", "[3, 4]", "[5-7]"): in an answer that quotes the
# sentence they read as the answer's citations, so a quote shows them as "(ref. 2)" (`quotes_unbracketed`).
_OWN_REFERENCE = re.compile(r"\[(\d{1,4}(?:\s*[,\u2013-]\s*\d{1,4})*)\]")
_SEVERAL = re.compile("[,\u2013-]")


def unbracketed(text: str) -> str:
    """`text` with each bracketed reference number written "(ref. 2)", "(refs. 3, 4)": not an answer's "[n]"."""
    return _OWN_REFERENCE.sub(lambda m: ("(refs. " if _SEVERAL.search(m.group(1)) else "(ref. ") + m.group(1) + ")",
                              text)


def quotes_unbracketed(text: str, quoted: list[str]) -> tuple[str, list[str]]:
    """`text` with every quote of one of `quoted` (a paper's title or a sentence of its abstract, whitespace aside,
    without its final punctuation, where an extractive answer puts its citation) that has bracketed reference
    numbers `unbracketed`. A citation an answer merged into a quote's last bracket ("unstable [3, 1]": the LLM's
    [1] after the quote's [3]) stays a citation: "unstable (ref. 3) [1]". Returns the text and the quotes it
    changed, as they were."""
    changed = []
    for piece in sorted({" ".join(q.split()).rstrip(".!?。！？").rstrip() for q in quoted}, key=len, reverse=True):
        parts = _OWN_REFERENCE.split(piece)  # text, reference, text, ...
        if len(parts) < 3 or len(re.sub(r"[\W\d_]", "", piece)) < 8:
            continue
        pattern = re.compile("".join(
            r"\s+".join(map(re.escape, part.split(" "))) if i % 2 == 0
            else r"\[" + re.escape(part) + r"((?:,\s*\d+)*)\]" for i, part in enumerate(parts)))

        def inert(m: re.Match, parts: list[str] = parts) -> str:
            out = []
            for i, part in enumerate(parts):
                if i % 2 == 0:
                    out.append(part)
                else:
                    extra = m.group((i + 1) // 2).lstrip(", ")
                    out.append(unbracketed(f"[{part}]") + (f" [{extra}]" if extra else ""))
            return "".join(out)

        text, n = pattern.subn(inert, text)
        if n:
            changed.append(piece)
    return text, changed


_BOILERPLATE = re.compile(
    r"https?://|github\.com|\bavailable at\b|\bproject page\b|\b(?:code|codes|data|dataset|datasets|models?|"
    r"implementation|benchmark|weights|checkpoints)\b[^.]{0,60}\b(?:is|are|will be|have been|has been)\s+"
    r"(?:publicly\s+|openly\s+|freely\s+)?(?:available|released|open-sourced|accessible)", re.IGNORECASE)


def is_boilerplate(sentence: str) -> bool:
    """A sentence that points at code, data or a web page ("Our code is available at https://...")."""
    return bool(_BOILERPLATE.search(sentence))


# Bidi embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069): a name with U+202E reverses the text
# after it ("Alice \u202eecilA" reads "Alice Alice"), so a paper's text could make the app's own words around it
# read otherwise. Right-to-left letters still show right to left without them (the Unicode bidi algorithm orders
# them by their own direction); only the invisible controls go.
BIDI_CONTROLS: dict[int, None] = dict.fromkeys([*range(0x202A, 0x202F), *range(0x2066, 0x206A)])


def strip_bidi(text: str) -> str:
    """`text` without bidi embedding, override and isolate controls (for display: never changes what is stored)."""
    return text.translate(BIDI_CONTROLS)


# What a browser's URL parser (the WHATWG URL standard) does before it finds the host, and Python's `urlsplit` does
# not: it drops leading and trailing C0 controls and spaces, every tab and line break, and in an http(s) URL reads
# a backslash as a slash. So `https://evil.example\@openreview.net/` goes to evil.example, which urlsplit reads as
# user "evil.example\" at openreview.net.
_URL_EDGES = re.compile(r"^[\x00-\x20]+|[\x00-\x20]+$")
_URL_BREAKS = re.compile(r"[\t\n\r]")


def browser_url(url: str) -> str:
    """`url` as a browser reads it up to its host: C0 controls and spaces at its ends and tabs and line breaks
    anywhere dropped, a backslash in an http(s) URL read as "/"."""
    url = _URL_BREAKS.sub("", _URL_EDGES.sub("", url))
    if re.match(r"(?i)^https?:", url):
        url = url.replace("\\", "/")
    return url


def link_label(url: str) -> str:
    """What a paper's link is called: "OpenReview" for openreview.net only, else the link's host (in its ASCII
    form, so a look-alike such as "openrevіew.net" with a Cyrillic і reads "xn--openrevew-…"), "" for no host.
    The host is the one a browser opens (`browser_url`), not the one Python's parser sees."""
    from urllib.parse import urlsplit

    try:
        host = (urlsplit(browser_url(url)).hostname or "").rstrip(".")
    except ValueError:  # an unbalanced "[" in the host part
        return ""
    if host == "openreview.net" or host.endswith(".openreview.net"):
        return "OpenReview"
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        return strip_bidi(host)


# ---- TeX and emphasis as plain text -------------------------------------------------------------------------

_TEX_SYMBOLS = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "varepsilon": "ε", "zeta": "ζ",
    "eta": "η", "theta": "θ", "kappa": "κ", "lambda": "λ", "mu": "μ", "nu": "ν", "xi": "ξ", "pi": "π",
    "rho": "ρ", "sigma": "σ", "tau": "τ", "phi": "φ", "varphi": "φ", "chi": "χ", "psi": "ψ", "omega": "ω",
    "Gamma": "Γ", "Delta": "Δ", "Theta": "Θ", "Lambda": "Λ", "Sigma": "Σ", "Phi": "Φ", "Psi": "Ψ", "Omega": "Ω",
    "ell": "ℓ", "infty": "∞", "times": "×", "cdot": "·", "leq": "≤", "le": "≤", "geq": "≥", "ge": "≥",
    "neq": "≠", "approx": "≈", "sim": "~", "pm": "±", "to": "→", "rightarrow": "→", "leftarrow": "←",
    "in": "∈", "sum": "Σ", "prod": "Π", "partial": "∂", "nabla": "∇", "log": "log", "sqrt": "√",
    "mathbb{R}": "ℝ", "mathbb{E}": "𝔼", "%": "%", "&": "&", "_": "_", "#": "#", "$": "$",
    "cup": "∪", "cap": "∩", "setminus": "∖", "subset": "⊂", "subseteq": "⊆", "forall": "∀", "exists": "∃",
    "mid": "|", "ldots": "…", "dots": "…", "cdots": "⋯", "langle": "⟨", "rangle": "⟩", "circ": "∘", "star": "⋆",
    "propto": "∝", "ll": "≪", "gg": "≫", "Rightarrow": "⇒", "mapsto": "↦", "top": "⊤", "emptyset": "∅",
    "quad": " ", "qquad": " ", ",": " ", ";": " ", "!": "",
}
# An accent over one letter becomes the letter with the combining accent (\bar{X} -> X̄); over more, the letters.
_ACCENTS = {"bar": "\u0304", "overline": "\u0304", "hat": "\u0302", "widehat": "\u0302", "tilde": "\u0303",
            "widetilde": "\u0303", "vec": "\u20d7", "dot": "\u0307", "ddot": "\u0308"}
_ACCENT = re.compile(r"\\(" + "|".join(_ACCENTS) + r")\s*(?:\{([^{}]*)\}|([A-Za-z]))")
_TEX_COMMAND = re.compile(r"\\(mathbb\{[A-Z]\}|[A-Za-z]+|[%&_#$,;!])")
_TEX_WRAPPER = re.compile(r"\\(?:text(?:tt|bf|it|rm|sc|sf)?|math(?:rm|bf|it|tt|sf|cal|frak)|emph|bm|boldsymbol|"
                          r"operatorname|underline|textsc)\s*\{([^{}]*)\}")
_MATH = re.compile(r"\$\$?((?:[^$\\]|\\.)+?)\$\$?")
_EMPHASIS = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*|(?<!\w)__(?=\S)(.+?)(?<=\S)__(?!\w)|"
                       r"(?<![\w*])\*(?=[^\s*])([^*]+?)(?<=\S)\*(?![\w*])")
_TEX_ESCAPED = re.compile(r"\\([%&_#$])")
# What makes $...$ math rather than two prices: TeX's marks, one letter, or a letter's function ("O(n)", "f(x)").
_TEXISH = re.compile(r"[\\^_{}]|^[A-Za-z]$|^[A-Za-z]{1,3}\([^()$]*\)$")


def readable(text: str) -> str:
    """Titles and abstracts as readable text: `$\\texttt{BRAID}$` -> BRAID, `$\\ell_p$` -> ℓ_p, `**T**raining` ->
    Training, `9.6\\%` -> 9.6%. For display (web cards, answers and exports, the CLI's answers and sources); never
    changes what is stored or searched."""
    if "$" in text or "\\" in text:
        text = _MATH.sub(lambda m: _detex(m.group(1)) if _TEXISH.search(m.group(1).strip()) else m.group(0), text)
        text = _TEX_ESCAPED.sub(r"\1", text)  # prose escapes outside math: "9.6\%", "H\&E"
    if "*" in text or "__" in text:
        text = _EMPHASIS.sub(lambda m: next(g for g in m.groups() if g is not None), text)
    return text


def _detex(math: str) -> str:
    math = math.replace("\\{", "\x01").replace("\\}", "\x02")  # escaped braces are the set's, kept
    for _ in range(3):  # nested wrappers: \mathbf{\textit{x}}, \bar{\mathcal{G}}
        math = _TEX_WRAPPER.sub(r"\1", math)
        math = _ACCENT.sub(_accented, math)
    math = _TEX_COMMAND.sub(lambda m: _TEX_SYMBOLS.get(m.group(1), m.group(1)), math)
    math = re.sub(r"([_^])\{([^{}]*)\}", r"\1\2", math)
    return math.replace("{", "").replace("}", "").replace("\x01", "{").replace("\x02", "}").strip()


def _accented(match: re.Match) -> str:
    body = match.group(2) if match.group(2) is not None else match.group(3)
    return body + _ACCENTS[match.group(1)] if len(body) == 1 else body
