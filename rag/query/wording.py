"""Wording: what the words of a searched question ask for, read once (`read`) into a frozen `Wording` that the gate
(`rag.answering.abstain`, `rag.answering.reader`) and the extractive answer (`rag.answering.explain`,
`rag.answering.extractive`) read instead of the question's text.

It is read from the text the retrieval searched (`Retrieval.question`: the question without its type words, or a
Chinese question's English terms), which is what these patterns were fitted and measured on: the gate's features
(abstain_gate.json is fitted on them) must not move. `rag.engine` reads it once per question (`Plan.wording`) and
sets it on every retrieval it makes; a retrieval made without it (the offline fits, tests) reads its own question
when it is made (`Retrieval.__post_init__`).

What is read:
- for the gate: whether a figure is asked (FIGURE), the asked quantity's words (`asked_quantity`), the details the
  question names (DETAIL), and its form (yes/no, an extension marker, the tail: `rag.answering.abstain.FORM_FEATURES`;
  a Chinese question's from its Chinese, `rag.query.zh.form`);
- for the answer: what the question asks of a paper (`Asks`: a figure, results, a cause, a remedy; the names it
  writes masked first, `masked`), once on the searched words and once with a Chinese question's English question
  words in front (`Intent.asks`), what a which question asks to be named (ASKS_WHICH), and whether it asks for
  code (ASKS_FOR_CODE).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rag.query import zh

# A question asking for a specific figure: "how many", "what learning rate", "which GPU", "exact", ...
FIGURE = re.compile(
    r"\bhow (?:many|much|long|large|big|fast)\b|\bexact(?:ly)?\b|\bprecise(?:ly)?\b|\bwhat (?:was |is |were |are )?"
    r"(?:the )?(?:\w+[ -]){0,3}(?:rate|size|values?|number|count|length|ratio|budget|temperature|score|fid|error|"
    r"cost|time|hours?|seeds?|epochs?|steps?|parameters?|resolution|strength|accuracy|percentage|factor|threshold|"
    r"coefficient|dimension|speedup|latency|throughput|bitrate|auc|miou|psnr|bleu|rmse|perplexity)\b|"
    r"\bwhich (?:\w+[ -]){0,2}(?:gpus?|hardware|scanner|temperature|values?|version|licen[cs]e|checkpoint|"
    r"optimizer|simulator)\b|\bnumber of\b", re.IGNORECASE)
# A detail a question names, which the paper that answers it must mention: a word capitalised in mid-sentence
# ("problems written in Spanish", "on ImageNet", "applied to CT scans") or a word with a digit ("3D", "GPT-4").
# Near misses about a real paper describe it in other words, then ask for such a detail it lacks; an answerable
# description mostly names none (detail_missing on describe_dev: 0.42 near misses, 0.13 answerable). Added to a gate
# fitted with the dev questions, it took the cross-validated cost from 64.7 to 54.2 (eval/DECISIONS.md).
DETAIL = re.compile(r"(?<=[\w,;:] )[A-Z][\w-]*|\b\w*\d[\w.-]*")
# The words of the asked quantity: after the question word, up to the first verb, preposition or conjunction;
# "What is X's RMSE" skips to after the possessive.
_ASK = re.compile(r"\b(?:how (?:many|much|long|large|big|fast)|what|which)\b(.*)", re.IGNORECASE)
_LEAD = {"is", "was", "are", "were", "the", "a", "an", "exact", "exactly", "precise", "precisely", "total", "more",
         "specific", "value", "values", "number", "kind", "type", "of"}
_STOP = {"does", "do", "did", "is", "was", "are", "were", "has", "have", "had", "can", "could", "would", "will",
         "should", "in", "on", "for", "of", "to", "with", "by", "from", "at", "over", "after", "before", "under",
         "across", "per", "when", "and", "or", "that", "than", "it", "they", "this", "its", "their", "the", "use"}
# A word or a number, as the asked quantity and the sentences giving it are read (`rag.answering.abstain`).
WORD = re.compile(r"\d+(?:[.,]\d+)*%?|[^\W\d_][\w'’-]*")
# The gate's FORM_FEATURES' patterns. A search ("Is there work ...", "Has anyone ...") asks whether the work exists,
# so it is no yes/no question about a paper here; an extension marker is a word that takes the described work
# further, or a past participle of trying it somewhere; the tail is what follows such a marker, or an example
# ("such as ...").
YES_NO = re.compile(r"^\W*(?:has|have|does|do|did|were|was|is|are|can|could|would|will)\b", re.IGNORECASE)
SEARCH = re.compile(r"^\W*(?:is there|are there|has anyone|have any|has there|does any|do any|is anyone|are any)\b",
                    re.IGNORECASE)
_EXTENSION = re.compile(r"\b(?:also|still|as well|beyond|carr(?:y|ies) over|holds? (?:for|up)|(?:been|be|was|were|"
                        r"gets?|got) (?:\w+ )?(?:applied|tested|used|tried|evaluated|checked|extended|run|validated|"
                        r"compared|measured|shown|deployed|trained|adapted|ported))\b", re.IGNORECASE)
_TAIL = re.compile(r"\b(?:also|still|applied to|tested on|used (?:on|for|to)|tried on|evaluated on|checked on|"
                   r"extended to|run on|validated on|compared (?:with|to|against)|measured on|deployed (?:on|in)|"
                   r"trained on|adapted to|beyond|such as|for example|like|including|includes?|covers?|holds? for)"
                   r"\b(.*)$", re.IGNORECASE)

# A question asking for what a paper found or how it was evaluated: its best match joins the passage, and results
# sentences are not marked down (`rag.answering.explain`).
ASKS_RESULTS = re.compile(r"\b(?:results?|findings?|find|found|show(?:s|ed|n)?|perform(?:s|ed|ance)?|how\s+well|"
                          r"evaluat\w*|datasets?|benchmarks?|experiments?|outperform\w*|compar\w*|accura\w*|"
                          r"speed-?ups?|improv\w*)\b", re.IGNORECASE)
# Asking for a figure in words the gate's FIGURE (a fitted feature, left as fitted) does not list: "How often does
# it find the best route?", "How small a fraction was enough?", "What attack success does it reach?".
ASKS_FIGURE = re.compile(r"\bhow\s+(?:often|small|low|high|close|good|accurate|far|quickly|few|many\s+fewer)\b|"
                         r"\bby\s+how\s+much\b|\bwhat\s+(?:\w+\s+){0,2}(?:fraction|share|proportion|percent\w*|"
                         r"success|gains?|speed-?ups?|win\s+rate|pass@\w+)\b", re.IGNORECASE)
# A question asking why (the answer quotes the sentence giving a cause, `rag.answering.explain.CAUSE`).
ASKS_WHY = re.compile(r"\bwhy\b|\bwhat\s+(?:causes?|explains?|drives?|makes?)\b|\bthe\s+reason\b", re.IGNORECASE)
# A question asking what fixes or avoids something ("... and what method spreads them out?", "how can that be
# avoided?"): the best-ranked paper's contribution sentence (`rag.answering.explain.PROPOSE`) answers it.
ASKS_REMEDY = re.compile(r"\bwhat\s+(?:\w+\s+){0,2}(?:fix(?:es)?|method|rule|remed\w*|solution|should)\b|"
                         r"\bhow\s+can\s+(?:\w+\s+){0,6}(?:be\s+)?(?:avoided|fixed|changed|cut|reduced|removed|"
                         r"prevented|mitigated|addressed|corrected)\b|"
                         r"\bhow\s+(?:can|could|do|does|did|to|might|would|should|is|are)\b", re.IGNORECASE)
# What a which / what question asks to be named ("Which three sub-tasks does X perform?"): the words after the
# question word up to one that ends them (`rag.answering.explain.with_named`; its docstring has the measurements).
_ENDS_ASKED = (r"(?:does|do|did|is|are|was|were|can|could|has|have|had|will|would|should|of|in|for|to|on|by|with|"
               r"from|that|which|they|it|its|their|the|this|these|used|make|makes|made)\b")
ASKS_WHICH = re.compile(
    r"(?:^|[,;:]\s*)(?:and\s+|so\s+|then\s+)?(?:which\s+(?:(?:are|were|is|was)\s+the\s+)?|what\s+(?:(?:are|were)\s+the\s+"
    r"|(?=(?:kinds?|types?|sorts?|forms?|classes|families|categories)\s+of\s|(?:\d+|two|three|four|five|six|seven|"
    r"eight|nine|ten)\s)))"
    rf"(?!{_ENDS_ASKED})"
    r"(?P<asked>(?:(?:kinds?|types?|sorts?|forms?|classes|families|categories)\s+of\s+)?(?:[\w-]+\s+){0,3}?[\w-]+?)"
    rf"(?=\s+{_ENDS_ASKED})", re.IGNORECASE)
# ... or, when no such word ends them within four words, the verb that does ("Which simple debiasing method reduces
# camera bias?"): taken only then, since "three" in "which three sub-tasks" ends in no verb.
_ASKS_WHICH_VERB = re.compile(ASKS_WHICH.pattern.rsplit("(?=", 1)[0] + r"(?=\s+\w+(?:s|ed)\b)", re.IGNORECASE)
_COUNTING = re.compile(r"(?:(\d+|two|three|four|five|six|seven|eight|nine|ten)|several|main|key|different|"
                       r"(?:kinds?|types?|sorts?|forms?|classes|families|categories)\s+of)\s+", re.IGNORECASE)
# "Code is available at ..." answers only a question asking for code (`rag.answering.extractive.explained`).
ASKS_FOR_CODE = re.compile(r"\b(?:code|github|repo|repository|implementation|website|project\s+page|link|url|"
                           r"download|released?|open[- ]source[ds]?|available)\b", re.IGNORECASE)
# A method or dataset name as users type it: CatVTON, BirdSet, Time-MoE, X-ALMA, TEAL, Scylla (not sentence-initial).
_NAME = re.compile(r"(?<![\w-])(?:[A-Za-z]+[A-Z][\w-]*|[A-Z][A-Z0-9-]{2,}|[A-Z][a-z]+(?:-[A-Za-z0-9]+)*)(?![\w-])")
_SENTENCE_BREAK = re.compile(r"(?<=[.?!])\s+")


def name_words(text: str) -> list[str]:
    """The name-like words of a question as users type them (CatVTON, Time-MoE, TEAL, Scylla), but not its first
    word when that is merely capitalised ("What", "Which")."""
    return [m.group(0) for m in _NAME.finditer(text) if m.start() > 0 or not m.group(0).istitle()]


def masked(question: str) -> str:
    """`question` without the names it writes, sentence by sentence: the capitalised first word of a later
    sentence is not a name ("... code search? What pass rate does it reach?" still asks for a figure)."""
    names = {name for sentence in _SENTENCE_BREAK.split(question) for name in name_words(sentence.strip())}
    for name in sorted(names, key=len, reverse=True):
        question = re.sub(rf"(?<![\w-]){re.escape(name)}(?![\w-])", " ", question)
    return question


def asked_quantity(question: str) -> list[str]:
    """The words naming what a figure question asks for ("What learning rate was used in X?" -> learning, rate;
    "How many GPUs did X need?" -> GPUs); [] when the question asks for none."""
    m = _ASK.search(question)
    if not m:
        return []
    words = [w for w in WORD.findall(m.group(1)) if not w[0].isdigit()]
    while words and words[0].lower() in _LEAD:
        words = words[1:]
    out: list[str] = []
    for w in words:
        if w.lower() in _STOP or (out and w.lower().endswith("ed")):  # "How many annotators labelled ..."
            break
        if w.endswith(("'s", "’s")):  # "What is X's RMSE": the owner is the paper, the quantity follows
            out = []
            continue
        out.append(w)
    return out[:4]


def asked_things(question: str) -> tuple[str, str]:
    """What a which / what question asks to be named, as written after its counting words, and the number it asks
    for ("Which three sub-tasks does X perform?" -> ("sub-tasks", "three")); ("", "") when it asks no such thing."""
    found = ASKS_WHICH.search(question) or _ASKS_WHICH_VERB.search(question)
    if not found:
        return "", ""
    asked, number = found.group("asked"), ""
    while (counted := _COUNTING.match(asked)) is not None:
        number = number or (counted.group(1) or "")
        asked = asked[counted.end():]
    return asked, number.lower()


@dataclass(frozen=True)
class Asks:
    """What a question asks of a paper's sentences (`rag.answering.explain`), its names masked (`masked`)."""

    figure: bool = False  # FIGURE or ASKS_FIGURE
    results: bool = False  # ASKS_RESULTS
    why: bool = False  # ASKS_WHY
    remedy: bool = False  # ASKS_REMEDY
    quantity: tuple[str, ...] = ()  # `asked_quantity` of the question as written (names not masked)


def read_asks(question: str) -> Asks:
    """The `Asks` of one text."""
    hidden = masked(question)
    return Asks(bool(FIGURE.search(hidden) or ASKS_FIGURE.search(hidden)), bool(ASKS_RESULTS.search(hidden)),
                bool(ASKS_WHY.search(hidden)), bool(ASKS_REMEDY.search(hidden)), tuple(asked_quantity(question)))


@dataclass(frozen=True)
class Wording:
    """What the words of one searched question ask for (see the module docstring), read once by `read`."""

    figure: bool = False  # FIGURE: a specific figure is asked (the gate's asks_figure, the reader's reader_number)
    quantity: tuple[str, ...] = ()  # `asked_quantity`: the words naming the asked figure
    details: tuple[str, ...] = ()  # DETAIL: the names and numbers the question writes
    yes_no: bool = False  # a yes/no question about a work, not a search
    extension: bool = False  # an extension marker ("also", "tested on")
    tail: str = ""  # what it asks beyond the work
    asks_code: bool = False  # ASKS_FOR_CODE
    which: str = ""  # `asked_things`: what a which question asks to be named ...
    which_number: str = ""  # ... and how many
    asks: Asks = field(default_factory=Asks)  # of the searched words
    # ... and of the searched words with a Chinese question's English question words in front (`Intent.asks`):
    # what the answer step reads where it chooses the sentence holding an asked figure, cause or remedy.
    asks_in_english: Asks = field(default_factory=Asks)


def read(question: str, asked: str = "", asks: str = "") -> Wording:
    """The `Wording` of `question` (the words searched). `asked`: the Chinese text they translate, whose form the
    gate reads instead (`rag.query.zh.form`); `asks`: a Chinese question's English question words (`Intent.asks`)."""
    if zh.has_chinese(asked):
        chinese = zh.form(asked)
        yes_no, extension, tail = chinese.yes_no, chinese.extension, chinese.tail
    else:
        found = _TAIL.search(question)
        yes_no = bool(YES_NO.search(question)) and not SEARCH.search(question)
        extension, tail = bool(_EXTENSION.search(question)), found.group(1) if found else ""
    which, number = asked_things(question)
    own = read_asks(question)
    return Wording(bool(FIGURE.search(question)), tuple(asked_quantity(question)), tuple(DETAIL.findall(question)),
                   yes_no, extension, tail, bool(ASKS_FOR_CODE.search(question)), which, number, own,
                   read_asks(f"{asks} {question}") if asks else own)


# Follow-ups (`rag.engine.previous_papers`, `Engine._related`): which of the previous answer's papers a turn means.
# "Which of them", "these papers", "both": all the papers of the previous answer, not the first it was about.
_PLURAL = re.compile(r"\b(?:(?:these|those|the)\s+(?:papers|works|methods|approaches|ones|studies)|\w+\s+of\s+them|"
                     r"both|each)\b|它们|这些论文|这些方法|其中|^(?:哪一篇|哪篇|哪几篇)(?=是|被|属于)", re.I)
# "the second one", "the third paper": one of the previous answer's papers, by its place in that answer.
_ORDINAL = re.compile(r"\bthe\s+(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|last)\s+"
                      r"(?:one|paper|work|method|study)\b|第([一二三四五六七八九十])篇", re.I)
_PLACES = {"first": 0, "second": 1, "third": 2, "fourth": 3, "fifth": 4, "sixth": 5, "seventh": 6, "eighth": 7,
           "ninth": 8, "tenth": 9, "last": -1, "一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "七": 6, "八": 7,
           "九": 8, "十": 9}
# "Which papers are related to it?" with no answer before it: a pronoun where a paper's name should be.
_PRONOUN = re.compile(r"(?:it|they|them|this|that|these|those|"
                      r"(?:this|that|the|these|those)\s+(?:paper|papers|work|one)|它|它们|这篇|那篇|该论文)", re.I)


def refers_to_several(question: str) -> bool:
    """Whether a turn means all the papers of the previous answer ("which of them", "these papers", "both")."""
    return bool(_PLURAL.search(question))


def place_named(question: str) -> int | None:
    """The place of the previous answer's paper a turn names ("the second one" -> 1, "the last paper" -> -1,
    "第三篇" -> 2); None when it names none."""
    ordinal = _ORDINAL.search(question)
    return _PLACES[(ordinal.group(1) or ordinal.group(2)).lower()] if ordinal else None


def is_pronoun(name: str) -> bool:
    """Whether the X of "related to X" is only a pronoun ("it", "this paper", "它"), not a paper's name."""
    return bool(_PRONOUN.fullmatch(name))


def written_as_name(name: str) -> bool:
    """Whether the X of "related to X" is written as a name: with a capital or a digit (CatVTON, Time-MoE)."""
    return bool(re.search(r"[A-Z0-9]", name))
