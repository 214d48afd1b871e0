"""The question rewritten by the LLM for retrieval (issue 28 item 4, "let the reader search"), when one is configured.

A researcher describes a paper in their own words ("Is there work on chip floorplanning that optimizes final
timing?") or asks in Chinese, and the abstract uses other words: BM25 and the English MiniLM then miss it. The LLM
that answers knows the field's vocabulary, so one short call (`search.txt`, at most MAX_TOKENS tokens) asks it for
the title and first sentence of a paper that would answer (HyDE: search with a hypothetical document), in English
whatever the question's language. A follow-up that leans on the conversation is rewritten to stand alone in the
same call (`search_followup.txt`: the standalone question, then the title and sentence), so it costs one call,
not two. It is streamed, so a call given up at the deadline stops a llama.cpp server's generation at once (a plain
request runs to its end, and the answer's request would queue behind it).

The rewrite never replaces the question: retrieval searches both and fuses the rankings (`HybridRetriever.retrieve`,
`rewrite=`), so a rewrite that misses (junk, a refusal, the prompt echoed back, a wrong guess) can only add papers
beside the question's own top papers, never take them away. Its text is data: it is searched, and shown only as
plain text (`Answer.rewrite`); markup, the template's own lines and refusals are dropped and it is cut to
MAX_REWRITE_CHARS. A call that fails (endpoint down, timeout, empty reply) gives `Rewrite.fallback`, and the
question is searched alone, as without an LLM.

A question that names a paper or method which retrieval already found (`Retrieval.named_match`, a rare name of the
question in the top paper) skips the call (`needed`): on a CPU server it costs seconds, and such a question is
found by its name (measured in eval/DECISIONS.md, "The LLM's rewrite for retrieval").
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from rag.generation import prompts
from rag.generation.llm import ChatClient, LLMError
from rag.query import zh

MAX_TOKENS = 80  # a title and a sentence: ~40-60 tokens in the dev runs; every token is ~55 ms on a CPU server
MAX_TOKENS_FOLLOWUP = 128  # ... after a follow-up's standalone question (its first line, kept if the rest is cut)
MAX_REWRITE_CHARS = 400  # of the rewrite searched: about a title and a long first sentence
MAX_STANDALONE_CHARS = 500  # of a follow-up's standalone question (the answer prompt asks it)
TRANSCRIPT_TURNS = 6  # turns of the conversation shown to the follow-up rewrite
TURN_CHARS = 1000  # characters of each
# A line's label as the templates ask for it, and as models vary it ("**Title:**", "1. Title -", "标题：").
_LABEL = re.compile(r"^[\s>*#\-\d.)]*(standalone question|question|query|title|first sentence|abstract|sentence|"
                    r"标题|问题)\s*\**\s*[:：\-–]\s*\**\s*", re.IGNORECASE)
_MARKUP = re.compile(r"<[^<>]{0,300}>|!?\[([^\]]{0,300})\]\([^()]{0,300}\)|[*_`#|]+")
_REFUSAL = re.compile(r"^(?:i'?m sorry|i am sorry|sorry|i cannot|i can'?t|i can not|i'?m unable|i am unable|as an ai|"
                      r"unfortunately|there is no|the sources do not)\b", re.IGNORECASE)
_PLACEHOLDER = re.compile(r"\{[a-z_]+\}")
# Control and bidi characters (a terminal escape, text reordering): never part of a search, and shown nowhere.
_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


@dataclass(frozen=True)
class Rewrite:
    """What the rewrite call gave: the paper-like text to search beside the question ("" when it gave nothing
    usable), a follow-up's standalone question ("" when none), why the call failed (else ""), and its time."""

    search: str = ""
    standalone: str = ""
    fallback: str = ""
    ms: float = 0.0
    called: bool = False  # a call was made (what the latency figures count)
    raw: str = ""  # the model's reply as sent (for `eval/rewrite_eval.py`; never searched or shown as it is)


def needed(named_match: str, doubt: float | None = None, confident_below: float = 0.0) -> bool:
    """Whether a fresh question is worth a rewrite call: not when its first retrieval already found a paper by a rare
    name the question gives (`Retrieval.named_match`: "How does CatVTON work?"), nor when the learned gate's `doubt`
    that the retrieval answers it (`rag.answering.abstain.probability`; None where the gate does not apply) is
    below `confident_below` (`AnswerPolicy.rewrite_confident_below`: the call rarely moves a confident top 5, and it
    is a quarter of a small local model's answer time)."""
    return not named_match and (doubt is None or doubt >= confident_below)


def transcript(turns: list[dict]) -> str:
    return "\n".join(f"{t['role']}: {' '.join(str(t['content']).split())[:TURN_CHARS]}"
                     for t in turns[-TRANSCRIPT_TURNS:])


def ask(llm: ChatClient, templates: dict[str, str], question: str, turns: list[dict] | None = None) -> Rewrite:
    """One call: the question (with `turns`, a follow-up: also its standalone form) rewritten for retrieval.
    Never raises for the endpoint's faults: they come back as `Rewrite.fallback`."""
    template = templates["search_followup"] if turns else templates["search"]
    prompt = prompts.fill(template, history=transcript(turns) if turns else "", question=question)
    started = time.perf_counter()
    try:
        text = llm.complete([{"role": "user", "content": prompt}], stream=True,
                            max_tokens=MAX_TOKENS_FOLLOWUP if turns else MAX_TOKENS)
    except LLMError as exc:
        return Rewrite(fallback=str(exc), ms=_ms(started), called=True)
    standalone, search = parse(text, template, followup=bool(turns))
    return Rewrite(search, standalone, "", _ms(started), True, text)


def parse(text: str, template: str = "", followup: bool = False) -> tuple[str, str]:
    """(standalone question, text to search) from a reply. A follow-up's standalone question is its "Question:"
    line, or its first line without a label; the rest, labels left out, is the text to search. Lines of the
    template itself (a small model echoes its prompt) and refusals are dropped; markup is removed; Chinese left in
    the reply is searched by its glossary terms (`rag.query.zh`: the retrievers are English)."""
    echo = _norm(_PLACEHOLDER.sub(" ", template))
    standalone, search = "", list[str]()
    for line in _CONTROL.sub(" ", text.replace("\r", "\n")).split("\n"):
        label = _LABEL.match(line)
        body = " ".join(_MARKUP.sub(lambda m: m.group(1) or " ", line[label.end() if label else 0:]).split())
        body = body.strip(" \"'“”")
        if not body or _REFUSAL.match(body) or (len(_norm(body)) >= 12 and _norm(body) in echo):
            continue
        kind = label.group(1).lower() if label else ""
        if followup and not standalone and (kind in ("question", "standalone question", "query", "问题")
                                            or (not kind and not search)):
            standalone = body[:MAX_STANDALONE_CHARS]
        else:
            search.append(body)
    found = " ".join(search)
    if zh.has_chinese(found):
        found = zh.retrieval_query(found)
    return standalone, found[:MAX_REWRITE_CHARS].strip()


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w]+", " ", text.casefold()).split())


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)
