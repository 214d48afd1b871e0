"""Rendering: pure functions from an `Answer` (as its JSON dict) to what the page and the export show.

Everything a paper, a model or a user wrote passes through `inert` (chat Markdown, exports) or `html.escape`
(the source cards, plain HTML) and is shown as text, never as live markup; the app adds its own few links after
escaping. TeX and emphasis from titles and abstracts (`$\\texttt{X}$`, `**T**raining`) are turned into plain
readable text by `plain` for display only; the JSON keeps the text as stored.

Why the dict and not the `Answer` object: the page keeps each session's answers as the records it exports
(`Answer.to_dict()` plus the session's `cost_usd`) in `gr.State`, and the exports, the feedback file, the map
and the session totals read those same records; rendering from them means what the page shows and what the JSON
export holds cannot drift apart, and the state stays plain JSON.
"""

from __future__ import annotations

import html
import re

from rag.answering.wording import KINDS_ZH, say
from rag.config import DEFAULT_POLICY
from rag.query import framing
from rag.generation.cost import money
from rag.text import BIDI_CONTROLS, first_sentence, link_label, readable, split_sentences, strip_bidi, tokenize
from rag.web.i18n import words

CSS = """
.src-card {border: 1px solid var(--border-color-primary); border-radius: 8px; padding: 10px 12px; margin: 0 0 10px 0;}
.src-card:target {outline: 2px solid var(--color-accent); }
.src-head {display: flex; gap: 8px; align-items: baseline;}
.src-n {font-weight: 700;}
.src-title {font-weight: 600;}
.searched {font-size: 0.85em; opacity: 0.75;}
.src-preview {font-style: italic; font-size: 0.9em; margin-top: 2px;}
.src-meta {font-size: 0.85em; opacity: 0.8; margin: 2px 0 6px 0;}
.badge, .rel-badge {font-size: 0.75em; padding: 1px 6px; border-radius: 10px; border: 1px solid currentColor;
                    white-space: nowrap;}
.badge-oral {color: #b45309;} .badge-spotlight {color: #7c3aed;} .badge-poster {color: #2563eb;}
.src-snippet mark {background: #fde68a; color: inherit; padding: 0 1px;}
.src-abstract {font-size: 0.9em; margin-top: 6px;}
.turn-sources > summary {cursor: pointer; margin: 8px 0;}
.src-more > summary {cursor: pointer; margin: 0 0 10px 0; font-weight: 600;}
.src-list {margin: 4px 0 10px 0; padding-left: 1.2em; font-size: 0.9em;}
.src-more[open] > summary {display: none;}
.src-authors > summary {cursor: pointer; display: inline;}
.src-note {font-size: 0.85em; font-style: italic; opacity: 0.8;}
sup.unsupported {font-size: 0.7em; opacity: 0.65; font-style: italic;}
.nearest {margin: 4px 0 0 0; padding-left: 1.2em;}
.src-related {margin: -6px 0 10px 12px;}
.src-related > summary {cursor: pointer; font-size: 0.85em;}
.rel-card {border: 1px solid var(--border-color-primary); border-radius: 8px; margin: 6px 0; padding: 6px 8px;
           font-size: 0.92em;}
/* The outcome of an answer (rag.web.render.outcome_badge): one look each, so "unsure" and "not covered" are
   never mistaken for an answer. */
.outcome {display: inline-block; font-size: 0.8em; font-weight: 600; padding: 1px 8px; border-radius: 10px;
          border: 1px solid currentColor;}
.outcome-answered {color: #047857; opacity: 0.8;}
.outcome-unsure {color: #92400e; background: #fef3c7;}
.outcome-not_covered {color: #991b1b; background: #fee2e2;}
.src-score {font-style: italic;}
/* A phone (390 px wide): one column, the question box first, above the 560 px chat, so it is on the first screen;
   then the chat and the sources of its answers, and only then the examples, the buttons, the filters (the sources
   were below all of them, 1,500 px down a 4,700 px page). The two columns give their parts to the row. */
@media (max-width: 640px) {
  #main-row {flex-direction: column !important; flex-wrap: nowrap !important;}
  #chat-col, #side-col {display: contents;}
  #main-row > * {width: 100%; min-width: 0 !important;}
  #ask-row {order: -4;} #chat {order: -3;} #chips {order: -2;} #sources {order: -1;}
}
/* The chat's label ("Conversation", 对话) has a row of its own: floating over the chat, it covered the outcome badge
   of an answer scrolled to the top. */
#chat [data-testid="block-label"] {position: static;}
/* Toasts ("feedback saved") at the bottom left, away from the source cards on the right. */
.toast-wrap {top: auto !important; bottom: var(--size-4) !important; left: var(--size-3) !important;
             right: auto !important; align-items: flex-start !important;}
"""


# ---- rendering (pure functions of an Answer) ------------------------------------------------------------

# Text from papers, models and users reaches the page only through `inert`: every character that HTML or
# Markdown (with GitHub's autolinks) gives a meaning to becomes a numeric character reference, which both show
# as the character itself and never as markup. So `[x](http://...)`, `![x](...)`, `<img onerror>`, `**bold**`,
# bare `https://...` / `www.` / `a@b.c` autolinks in an abstract or an answer are shown as typed, not made live.
# The app's own markup (links from [n] to the source cards, italics for notices) is added after escaping.
# Bidi embeddings, overrides and isolates are dropped: a title with U+202E would reverse the app's own words after
# it; right-to-left letters still show right to left without them.
_BIDI: dict[int, str | None] = dict(BIDI_CONTROLS)
_INERT = str.maketrans({c: f"&#{ord(c)};" for c in "&<>\"'`[](){}!*_~|#\\:@+-=^"}) | _BIDI
_WWW = re.compile(r"(?i)\bwww\.")
_CITED = re.compile(r"&#91;(\d+(?:, \d+)*)&#93;")


def inert(text: str) -> str:
    """`text` as Markdown/HTML source that renders exactly as `text`, with nothing live in it."""
    return _WWW.sub(lambda m: m.group(0)[:3] + "&#46;", str(text).translate(_INERT))


def _esc(text: str) -> str:
    """Text for the cards' HTML: escaped, and without bidi controls (a title with U+202E would otherwise reverse
    the card's own words after it)."""
    return html.escape(strip_bidi(str(text)))


def highlight(text: str, question: str) -> str:
    """HTML-escaped `text` with the words that share a stem with the question's content terms in <mark>."""
    terms = set(tokenize([question])[0]) - framing.NOT_HIGHLIGHTED
    out = []
    for piece in re.split(r"(\w[\w-]*)", text):
        if piece and re.match(r"\w", piece) and set(tokenize([piece])[0]) & terms:
            out.append(f"<mark>{html.escape(piece)}</mark>")
        else:
            out.append(html.escape(piece))
    return "".join(out).translate(_BIDI)


def _badge(decision: str, cls: str = "badge") -> str:
    kind = next((k for k in ("Oral", "Spotlight", "Poster") if k in decision), "")
    label = kind or decision
    return f'<span class="{cls} badge-{kind.lower()}">{_esc(label)}</span>' if label else ""


CARDS_PER_PAGE = 5  # source cards shown at first; each "Show more" shows this many more


def source_cards(answer: dict, turn: int, related: dict[str, list[dict]] | None = None, lang: str = "en") -> str:
    """The cards of one answer's sources: cited ones first, then the rest of what was retrieved. The first
    CARDS_PER_PAGE are shown; the others come CARDS_PER_PAGE at a time behind nested "Show more" <details> (no
    script: a [n] link to a card not yet shown opens its <details>, as browsers do for a fragment inside one).
    `related`: each paper's nearest papers (`rag.explore.related`), listed under its card's "Related". The cards'
    own words are in `lang`; the papers' text stays as written."""
    cited = {c["n"] for c in answer["citations"]}
    ordered = sorted(answer["sources"], key=lambda s: (s["n"] not in cited, s["n"]))
    outcome = answer.get("outcome") or ("not_covered" if answer.get("abstained") else "answered")
    cards = [_card(s, turn, answer["question"], s["n"] in cited, (related or {}).get(s["paper_id"]), outcome,
                   lang) for s in ordered]
    html_out = ""
    for start in reversed(range(CARDS_PER_PAGE, len(cards), CARDS_PER_PAGE)):  # innermost page first
        end = min(start + CARDS_PER_PAGE, len(cards))
        more = words("show_more", lang, n=end - start, first=start + 1, last=end, total=len(cards))
        html_out = (f'<details class="src-more"><summary>{more}</summary>' + "\n".join(cards[start:end]) + html_out
                    + "</details>")
    return "\n".join(cards[:CARDS_PER_PAGE] + ([html_out] if html_out else []))


def related_list(related: list[dict] | None, lang: str = "en") -> str:
    """The "Related" control under a card (after it, so a card's own links and badges stay its own): the nearest
    papers (`rag.explore.related.Related.to_dict()["related"]`), each as a small card of its own, shown on expand.
    Escaped like every card."""
    if not related:
        return ""
    return (f'<details class="src-related"><summary>{words("related", lang, n=len(related))}</summary>'
            + "".join(paper_card(r, lang=lang) for r in related) + "</details>")


def paper_card(p: dict, related: list[dict] | None = None, lang: str = "en") -> str:
    """A paper's card outside an answer (a related paper, a point of the map): title, decision, authors, link,
    similarity and whether it is close or loosely related (`rag.explore.related`), first sentence, the abstract on
    expand, and its own related papers when given."""
    link = _openreview(p.get("url") or "")
    score = (" · " + words("similarity", lang, score=f'{p["score"]:.2f}')
             + " · " + words("related_loose" if p.get("loose") else "related_close", lang)
             if isinstance(p.get("score"), (int, float)) else "")
    if p.get("has_abstract", True) and p.get("abstract"):
        body = _preview(p["abstract"]) + _abstract(p["abstract"], lang)
    else:
        body = title_only(lang)
    return (f'<div class="rel-card" data-paper="{html.escape(p["paper_id"], quote=True)}">'
            f'<div class="src-head"><span class="src-title">{_esc(readable(p["title"]))}</span>'
            f'{_badge(p.get("decision") or "", "rel-badge")}</div>'
            f'<div class="src-meta">{_authors(p, lang)}{link}{score}</div>{body}</div>{related_list(related, lang)}')


def _score(score: float, outcome: str, lang: str = "en") -> str:
    """What a card says of its paper's score: the fused retrieval score, scaled so that the best paper of every
    search has 1.00. Next to an answer that is unsure or not covered a bare "1.00" read as certainty (issue 29), so
    there it says what the number is."""
    if outcome == "answered":
        return words("score", lang, score=f"{score:.2f}")
    return (f'<span class="src-score" title="{html.escape(words("match_title", lang), quote=True)}">'
            f'{words("match", lang, score=f"{score:.2f}")}</span>')


def _card(s: dict, turn: int, question: str, cited: bool, related: list[dict] | None = None,
          outcome: str = "answered", lang: str = "en") -> str:
    link = _openreview(s["url"])
    if s.get("has_abstract", True):
        body = (("" if s["has_title"] else _preview(s["text"]))
                + f'<div class="src-snippet">{highlight(readable(s["snippet"]), question)}</div>'
                + _abstract(s["text"], lang))
    else:
        body = title_only(lang)
    return (f'<div class="src-card" id="src-{turn}-{s["n"]}">'
            f'<div class="src-head"><span class="src-n">[{s["n"]}]</span>'
            f'<span class="src-title">{_esc(readable(s["title"]))}</span>{_badge(s["decision"])}</div>'
            f'<div class="src-meta">{_authors(s, lang)}{link} · {_score(s["score"], outcome, lang)}'
            f'{(" · " + words("cited" if outcome == "answered" else "cited_closest", lang)) if cited else ""}</div>'
            f"{body}</div>{related_list(related, lang)}")


def title_only(lang: str = "en") -> str:
    """A card's body for a paper without an abstract."""
    return f'<div class="src-note">{words("title_only", lang)}</div>'


TITLE_ONLY = title_only()


def _openreview(url: str) -> str:
    """" · OpenReview", linking the paper's own page (an http/https URL, see `_link`), or nothing. Only a link to
    openreview.net is called OpenReview; any other shows its host (" · example.org"), so a record cannot pass
    its own site off as the paper's OpenReview page."""
    label = link_label(url) if _link(url) else ""
    return (f' · <a href="{html.escape(url, quote=True)}" target="_blank" rel="noopener noreferrer">'
            f'{_esc(label)}</a>' if label else "")


def _preview(abstract: str) -> str:
    return f'<div class="src-preview">{_esc(readable(first_sentence(abstract)))}</div>'


def _abstract(abstract: str, lang: str = "en") -> str:
    return (f'<details class="src-abstract"><summary>{words("abstract", lang)}</summary>{_esc(readable(abstract))}'
            "</details>")


# A card shows at most this many authors (the first 8, the rest on expand), each cut to NAME_CHARS: a record with
# 2,500 two-kilobyte "authors" made a 5 MB sources panel per answer. The bundled ICLR 2025 list's longest has 83
# names, its longest name 40 characters; the JSON export keeps every name.
AUTHORS_SHOWN, NAME_CHARS = 100, 120


def _authors(s: dict, lang: str = "en") -> str:
    """The authors: the first 8 shown, the rest (up to AUTHORS_SHOWN) on expand. The bundled ICLR 2025 list does not
    know the papers' author order (its source lists names partly alphabetically), so its cards say so."""
    every = s["authors"]
    names = [_esc(a if len(a) <= NAME_CHARS else a[:NAME_CHARS - 1] + "…") for a in every[:AUTHORS_SHOWN]]
    if not names:
        return words("authors_unknown", lang)
    unordered = bool(s.get("enriched_from")) or str(s.get("venue", "")).startswith("ICLR 2025")
    label = words("authors_unordered", lang) if unordered else ""
    if len(names) <= 8:
        return label + ", ".join(names)
    rest = ", ".join(names[8:]) + (words("and_more", lang, n=len(every) - len(names)) if len(every) > len(names)
                                   else "")
    return (f'<details class="src-authors"><summary>{label}{", ".join(names[:8])} … '
            f'(+{len(every) - 8})</summary>{rest}</details>')


# The panel keeps a session's page bounded: the latest FULL_TURNS answers' cards in full (the latest, and the one
# before it that a follow-up asks about), the LISTED_TURNS before them as a line per source (its [n] still a link
# target), and older answers only counted. With every earlier answer's cards (and their related papers) re-sent,
# each answer at k=20 added 0.5 MB to every later one: 80 questions made the 80th answer 30 MB and 6.3 s.
FULL_TURNS, LISTED_TURNS = 2, 20


def sources_panel(answers: list[dict], related: dict[str, list[dict]] | None = None, lang: str = "en") -> str:
    """The panel beside the chat: the latest answer's source cards, earlier answers' behind their question (the
    FULL_TURNS latest as cards, the LISTED_TURNS before them as a list of titles, older ones counted: their sources
    are in the export). Its headings in `lang` (`rag.web.i18n`)."""
    if not answers:
        return f'<p class="src-empty">{words("sources_empty", lang)}</p>'
    latest = len(answers) - 1
    parts = [f"<h3>{words('sources_of', lang, n=latest + 1)}</h3>",
             source_cards(answers[latest], latest, related, lang)]
    older = max(latest + 1 - FULL_TURNS - LISTED_TURNS, 0)  # answers only counted
    for turn in range(latest - 1, older - 1, -1):
        listed = turn <= latest - FULL_TURNS
        parts.append(f'<details class="turn-sources"><summary>{words("sources_of", lang, n=turn + 1)}: '
                     f'{_esc(answers[turn]["question"][:80])}</summary>'
                     + (source_list(answers[turn], turn) if listed else source_cards(answers[turn], turn, related,
                                                                                       lang))
                     + "</details>")
    if older:
        parts.append(f'<p class="src-note">{words("sources_older", lang, n=older)}</p>')
    return "\n".join(parts)


def source_list(answer: dict, turn: int) -> str:
    """An earlier answer's sources as one line each, "[n] title · OpenReview", each the target of its [n] links."""
    return '<ul class="src-list">' + "".join(
        f'<li id="src-{turn}-{s["n"]}">[{s["n"]}] {_esc(readable(s["title"]))}{_openreview(s["url"])}</li>'
        for s in answer["sources"]) + "</ul>"


def _without_outcome_line(answer: dict) -> dict:
    """The answer without the sentence of its text that only says its outcome ("Unsure: none of the papers clearly
    answers this.", "Not covered: the collection does not appear to cover this question. The nearest papers are:
    ..."): the page's outcome label says it, and the nearest papers are listed below, linked (with the sentence
    kept, the page would say "Unsure" twice in a row). The CLI and the API keep the text whole."""
    text = answer["answer"]
    for lang in ("en", "zh"):
        if answer.get("outcome") == "unsure" and text.startswith(say("unsure", lang)):
            return {**answer, "answer": text[len(say("unsure", lang)):].lstrip()}
        if answer.get("outcome") == "not_covered" and text.startswith(say("not_covered", lang)):
            return {**answer, "answer": ""}  # the rest names the nearest papers, which the page lists, linked
    return answer


#: Papers of a topic's list shown at first on the page; the rest behind "Show N more" (the page asks for all of them).
LIST_SHOWN = DEFAULT_POLICY.list_shown


def _list_shown(text: str, answer: dict, lang: str = "en") -> str:
    """A topic's list (`listed` papers, every one in the text: the page asks with limit 0) with its first LIST_SHOWN
    lines shown and the others one click away, behind a "Show N more" <details>."""
    lines = text.split("\n")
    items = [i for i, line in enumerate(lines) if line.startswith("• ")]
    if not answer.get("listed") or len(items) <= LIST_SHOWN:
        return text
    first, last = items[LIST_SHOWN], items[-1]
    hidden = "<br>".join(lines[first:last + 1])
    more = (f'<details class="list-more"><summary>{words("list_more", lang, n=last + 1 - first)}</summary>'
            f"{hidden}</details>")
    return "\n".join(lines[:first] + [more] + lines[last + 1:])


def answer_markdown(answer: dict, turn: int, lang: str = "en") -> str:
    """The chat message of a finished answer: escaped text with [n] linked to its card, notices, a footer. A
    refusal lists the nearest papers as links to their cards and to OpenReview. The outcome label and the app's
    headings are in `lang` (`rag.web.i18n`); the answer's text stays as written, less the sentence that only says
    its outcome (`_without_outcome_line`)."""
    answer = _without_outcome_line(answer)
    text = _CITED.sub(lambda m: "[" + ", ".join(
        f'<a href="#src-{turn}-{n}">{n}</a>' for n in m.group(1).split(", ")) + "]",
        _marked(answer["answer"], answer.get("unsupported") or [], _own_markers(answer)))
    text = text.replace(_OPEN, "&#91;").replace(_CLOSE, "&#93;")
    text = _list_shown(text, answer, lang)
    text = text.replace("\n\n", "\x00").replace("\n", "  \n").replace("\x00", "\n\n")  # list lines stay lines
    parts = [outcome_badge(answer, lang)]
    parts += [f"*{inert(n)}*" for n in answer["notices"]]
    parts += [text] if text.strip() else []
    searched = search_line(answer, lang)
    if searched:
        parts.append(f'<span class="searched">{searched}</span>')
    if answer["abstained"] and answer["sources"]:
        parts.append(words("nearest", lang) + "\n\n" + "\n".join(
            f'- <a href="#src-{turn}-{s["n"]}">[{s["n"]}]</a> {inert(readable(s["title"]))}'
            + _openreview(s["url"]) for s in answer["sources"][:5]))
    if answer["fabricated"]:
        parts.append(f"*Removed {answer['fabricated']} citation(s) to papers that were not retrieved.*")
    if answer.get("unsupported"):
        parts.append(f"<sub>{UNSUPPORTED_MARK.strip()} the sources it cites do not clearly support this sentence "
                     "(a number, a name or a claim not found in their abstracts): check it there.</sub>")
    parts.append(f"<sub>{inert(footer(answer, lang))}</sub>")
    return "\n\n".join(parts)


# The outcomes an answer can have (`Answer.outcome`); each one's label is `rag.web.i18n` "outcome_<name>", its look
# the class `outcome-<name>` (CSS above).
OUTCOMES = ("answered", "unsure", "not_covered")


def outcome_badge(answer: dict, lang: str = "en") -> str:
    """The answer's outcome as a label in `lang` with a class of its own (`outcome-answered`, `outcome-unsure`,
    `outcome-not_covered`); an answer recorded before outcomes existed reads as `abstained` said."""
    outcome = answer.get("outcome") or ("not_covered" if answer.get("abstained") else "answered")
    label = words(f"outcome_{outcome}", lang) if outcome in OUTCOMES else html.escape(str(outcome))
    return f'<span class="outcome outcome-{html.escape(str(outcome), quote=True)}">{label}</span>'


def decision_name(decision: str, lang: str = "en") -> str:
    """A decision as the page names it in `lang`: "Accept (Oral)" on an English page, 口头报告（Oral） on a Chinese one
    (`rag.answering.wording.KINDS_ZH`, the answers' own words); a decision of another kind as recorded."""
    kind = next((k for k in KINDS_ZH if k in decision.lower()), "")
    return KINDS_ZH[kind] if lang == "zh" and kind else decision


def search_line(answer: dict, lang: str = "en") -> str:
    """What was searched, when it is not the question as typed: the filters the question's words set, the
    previous answer's papers a follow-up was answered from, the words searched. A Chinese question's words are
    shown as the user wrote them; the English terms they were searched by (a glossary's, which can miss: 一步步
    once read "one-step") only in a closed <details>. Escaped; its own words in `lang`."""
    bits = []
    filters = answer.get("filters") or {}
    if "decisions" in filters.get("from_question", []):
        bits.append(words("only_decisions", lang, decisions=words("or", lang).join(
            inert(decision_name(d, lang)) for d in filters["decisions"]))
                    + (words("widened", lang) if "decisions" in filters.get("widened", []) else ""))
    if "author" in filters.get("from_question", []):
        bits.append(words("only_author", lang, author=inert(filters["author"])))
    if answer.get("focus"):
        n = len(answer["focus"])
        bits.append(words("focus_one", lang) if n == 1 else words("focus_many", lang, n=n))
    terms = ""
    if answer.get("searched_words"):  # a Chinese question: its own words; the glossary's English behind a click
        if answer["searched_words"] != answer.get("question"):
            bits.append(f"“{inert(answer['searched_words'])}”")
        if answer.get("retrieval_query"):
            terms = (f'<details class="search-terms"><summary>{words("english_terms", lang)}</summary>'
                     f"“{inert(answer['retrieval_query'])}”</details>")
    elif answer.get("retrieval_query"):
        bits.append(f"“{inert(answer['retrieval_query'])}”")
    return (words("searched", lang) + words("semicolon", lang).join(bits) if bits else "") + terms


# After each sentence of an LLM answer that the support check (`rag.generation.support`) could not match to its sources:
# a quiet mark, explained once under the answer. The sentence itself stays.
UNSUPPORTED_MARK = ' <sup class="unsupported" title="not clearly supported by the sources it cites">unverified</sup>'


def _marked(text: str, unsupported: list[str], shown: str | None = None) -> str:
    """`shown` (`text` with some characters swapped one for one, by default `text` itself) made inert, with
    UNSUPPORTED_MARK after each of the `unsupported` sentences of `text` (in text order)."""
    shown = text if shown is None else shown
    out, at = [], 0
    for sentence in unsupported:
        start = text.find(sentence, at)
        if start < 0 or not sentence:
            continue
        end = start + len(sentence)
        out += [inert(readable(shown[at:end])), UNSUPPORTED_MARK]
        at = end
    out.append(inert(readable(shown[at:])))
    return "".join(out)


# Only the app's own citation markers become links to cards. A "[2]" inside a quoted abstract (its own reference
# list's numbering) or a number no citation of the answer has stays text: its brackets are swapped, one character
# for one, for these private-use placeholders, which no link pattern matches and which are shown as "[" and "]".
_OPEN, _CLOSE = "\ue000", "\ue001"
_RAW_MARK = re.compile(r"\[(\d+(?:, \d+)*)\]")


def _own_markers(answer: dict) -> str:
    """The answer's text with the brackets of every [n] that is not one of the app's citations swapped for
    placeholders (same length, so positions in the text still hold): a marker is the app's when all its numbers
    are citations of the answer (as its JSON lists them) and it is not part of a paper's text quoted verbatim."""
    text = answer["answer"]
    if "[" not in text:
        return text
    cited = {c["n"] for c in answer.get("citations") or []}
    quoted = _quoted_spans(text, answer.get("sources") or [])

    def swap(m: re.Match) -> str:
        own = {int(n) for n in m.group(1).split(", ")} <= cited
        if own and not any(a <= m.start() and m.end() <= b for a, b in quoted):
            return m.group(0)
        return _OPEN + m.group(1) + _CLOSE

    return _RAW_MARK.sub(swap, text)


def _quoted_spans(text: str, sources: list[dict]) -> list[tuple[int, int]]:
    """Where `text` quotes a source's title or a sentence of its abstract that has a bracketed number of its own
    (the sentence's final punctuation left out: an extractive answer puts its own [n] before it)."""
    spans = []
    for s in sources:
        pieces = [s.get("title") or "", s.get("snippet") or ""]
        if _RAW_MARK.search(s.get("text") or ""):
            pieces += split_sentences(s["text"])
        for piece in pieces:
            piece = piece.strip().rstrip(".!?。！？").rstrip()
            if not _RAW_MARK.search(piece) or len(re.sub(r"[\W\d_]", "", piece)) < 8:
                continue
            start = text.find(piece)
            while start >= 0:
                spans.append((start, start + len(piece)))
                start = text.find(piece, start + 1)
    return spans


def footer(answer: dict, lang: str = "en") -> str:
    """The line under an answer: which mode answered, its times, tokens, cost and (when not answered) its outcome
    in `lang`. The export keeps the English line."""
    t, usage = answer["timings"], answer.get("usage") or {}
    bits = [f"{answer['model']} (LLM)" if answer["mode"] == "llm" else words("footer_extractive", lang)]
    if "ttft_ms" in t:
        bits.append(words("footer_first_token", lang, ms=f"{t['ttft_ms']:.0f}"))
    bits.append(f"{t.get('total_ms', 0):.0f} ms")
    if usage.get("prompt_tokens") is not None:
        bits.append(words("footer_tokens", lang, prompt=usage["prompt_tokens"],
                          completion=usage.get("completion_tokens") or 0))
    elif usage:  # asked of an LLM, which reported no usage (llama.cpp's server in a stream)
        bits.append(words("footer_no_tokens", lang))
    if answer.get("cost_usd") is not None:
        bits.append(money(answer["cost_usd"]))
    if answer["abstained"]:
        bits.append(words("footer_not_covered", lang))
    elif answer.get("outcome") == "unsure":
        bits.append(words("footer_unsure", lang))
    return " · ".join(bits)


# The export is read as text as often as it is rendered (pasted into a mail or a notes app), so it is not `inert`'s
# character references ("Accept &#40;Oral&#41;"): a backslash goes only before what Markdown would read as markup.
# Inline: the characters that open emphasis, code, links, images, raw HTML, entities, strikethrough and table cells
# (backslash, `` ` * _ [ ] < & ~ | ``; `!` is harmless once `[` is escaped); GitHub's autolinks ("https://", "www.",
# "a@b.c"), broken by one backslash each. At a line's start: headings, quotes, lists, rules and setext underlines
# (`# > - + = 1.`); leading spaces, which would make an indented code block, go. CommonMark shows every
# backslash-escaped punctuation character as itself, so the rendered export reads exactly as the text.
_MD_INLINE = re.compile(r"[\\`*_\[\]<~|]|&(?=#?\w+;)")
_MD_AUTOLINK = re.compile(r"(?i)(?<=https)(?=://)|(?<=http)(?=://)|(?<=\bwww)(?=\.)|(?<=\w)(?=@\w)")
_MD_LINE_START = re.compile(r"^[ \t]*(?:([#>+=-])|(\d{1,9})([.)]))", re.MULTILINE)


def md_text(text: str) -> str:
    """`text` as Markdown that renders as `text` and reads as it when not rendered: plain, with a backslash only
    before what Markdown would take for markup, nothing live (no HTML, link, image or autolink)."""
    text = str(text).translate(_BIDI)
    text = _MD_INLINE.sub(lambda m: "\\" + m.group(0), text)
    text = _MD_AUTOLINK.sub(lambda m: "\\", text)
    text = re.sub(r"(?m)^[ \t]+", "", text)
    return _MD_LINE_START.sub(lambda m: "\\" + m.group(1) if m.group(1) else f"{m.group(2)}\\{m.group(3)}", text)


# The app's own [n] markers, as `md_text` escaped them, when what follows cannot make them a link: "[1](url)" is an
# inline link, "[1][x]" a reference, "[1]:" at a line's start a link definition, so those stay escaped.
_MD_CITED = re.compile(r"\\\[(\d+(?:, \d+)*)\\\](?![(\[:]|\\[\[(])")


def export_text(answer: dict) -> str:
    """An answer's text as the export's Markdown: `md_text`, with only the app's own citation markers (`_own_markers`:
    numbers the answer cites, outside a quoted abstract, as the chat links them) unescaped to read "[1]". Any other
    bracketed number, and a marker that text after it would turn into a link, stays escaped, so an answer, an
    abstract or a title quoting "[1](https://...)" or "![1](http://.../pixel.png)" is no link or image."""
    text = md_text(readable(_own_markers(answer)))
    text = _MD_CITED.sub(r"[\1]", text)
    return text.replace(_OPEN, "\\[").replace(_CLOSE, "\\]")


def export_markdown(answers: list[dict]) -> str:
    """The conversation as Markdown, readable as plain text too. Every text from a paper, a model or the user goes
    through `md_text`, so a Markdown viewer shows `<script>` or `[x](http://...)` in an abstract as text; only the
    app's own [n] markers (`export_text`) and the sources' own links are its markup."""
    lines = ["# Conversation", ""]
    for i, a in enumerate(answers, start=1):
        question = " ".join(str(a["question"]).split())  # one heading line
        lines += [f"## Q{i}: {md_text(question)}", "", export_text(a), ""]
        shown = a["sources"] if a["abstained"] else a["citations"]
        if shown:
            lines.append("Nearest papers:" if a["abstained"] else "Sources:")
        for s in shown:
            meta = ", ".join(x for x in (md_text(s["decision"]), _link(s["url"])) if x)
            lines.append(f"- [{s['n']}] {md_text(readable(s['title']))}" + (f" ({meta})" if meta else ""))
        lines += ["", f"_{md_text(footer(a))}_", ""]
    return "\n".join(lines)


def _link(url: str) -> str:
    """A source's own link (ingest only lets http/https URLs in) as a Markdown autolink."""
    return f"<{url}>" if url and re.match(r"^https?://[^\s<>]+$", url) else ""
