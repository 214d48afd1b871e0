"""Compose: the one answer step. Retrieved sources -> the text of an `Answer`, streamed.

The policy, in one place:
1. the retrieval says the collection does not cover the question (`decide`: "not_covered") -> the abstention
   text; it says no paper clearly answers but some are close ("unsure") -> the closest papers, cited, the first
   with a passage of its abstract, the others with their sentence nearest the question (`unsure_text`,
   `passage`); with an LLM, the LLM reads them first (`_unsure`), and its cited answer stands, followed by
   the other closest papers (`_also_close`);
2. an LLM is configured (and the follow-up rewrite did not already fail) -> its answer, streamed through
   `StreamFilter` (citation styles normalized, numbers it was not given removed and counted), accepted only if
   it passes three checks: it is not empty; it cites a source or *is* "the sources do not answer"; and at least
   one of its cited sentences is supported by the abstracts it cites (the support check). A failed check, or
   the endpoint failing, falls back to step 3 with a `fallback_reason` (and a `Restart` if text was shown);
3. otherwise the extractive answer for the question's type (`rag.query.intent`, `rag.answering.extractive.extractive`):
the record for who/decision/link, a list or count with its bar, one line per paper for a comparison, else the best
   sentences of the top papers, each cited.
Step 1 differs for a comparison whose every side is found among the top papers (`rag.answering.compare.side_papers`):
the question named both papers and the collection has them, so neither gate refuses it (they were made for
questions about one paper); its answer has one line per side's paper. It also differs for a follow-up about the
previous answer's papers (`Answer.focus`): the user chose the papers, so only a near-zero match is refused
(FOCUS_FLOOR), and for a filter with no topic ("papers by X"), which lists every paper the filter lets through.

Doubtful sentences of an accepted LLM answer are kept and listed in `Answer.unsupported`: an answer is discarded
only when it is not from the sources at all. The engine owns everything around this step (input checks,
retrieval, timings); the shells render what it yields.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator

from rag.config import DEFAULT_POLICY, Settings
from rag.query.intent import Intent, without_glue
from rag.search.retrieve import Retrieval
from rag.generation import prompts
from rag.generation.citations import (Cleaned, EchoedTags, StreamFilter, cited_sentences, clean, finished_part,
                                      without_citations)
from rag.generation.llm import ChatClient, Completion, LLMError
from rag.generation.support import Checker
from rag.answering.compare import side_papers
from rag.answering.context import reader_sources
from rag.answering.abstain import asked_beyond
from rag.answering.extractive import (BEYOND_DOUBT, RECORD_TYPES, abstention_text, closest, decide, extractive,
                                      passage, reader_doubt, unsure_text)
from rag.answering.records import Answer, Delta, Restart, Source
from rag.answering.wording import language, say
from rag.text import quotes_unbracketed, split_sentences, tokenize

# A follow-up about the previous answer's papers is answered from them unless its best sentence is below
# FOCUS_FLOOR: `AnswerPolicy.focus_floor` (rag/config.py). How many words beside the refusal phrase still make an
# abstention: `AnswerPolicy.refusal_extra_words`.

def compose(answer: Answer, retrieval: Retrieval, settings: Settings, llm: ChatClient | None,
            templates: dict[str, str], checker: Checker, started: float, intent: Intent | None = None,
            already_said: str = "", standalone: str = "", limit: int | None = None, doubted: bool = False
            ) -> Iterator[Delta | Restart]:
    """Fill `answer` (created with its question, sources, type and filters) and yield its text as it is
    written. `already_said`: the previous answer, whose sentences a follow-up about its papers does not repeat.
    `standalone`: a follow-up rewritten to stand alone ("How do they evaluate them?" -> "How are sparse
    autoencoders evaluated?"), which the LLM is asked instead of the bare follow-up it could not resolve. `limit`: how
    many of a list's papers to show (None: `AnswerPolicy.list_shown`, 0: all). `doubted`: a follow-up leaning on the
    papers of an unsure answer, which is at most unsure itself."""
    intent = intent or Intent()
    focused = bool(answer.focus)  # a follow-up answered from the previous answer's papers
    whole_list = not intent.has_topic and bool(answer.filters.decisions or answer.filters.author)
    # the papers a comparison's sides name (hit indexes), when all are found
    sides = side_papers(retrieval, intent.sides, settings.policy) if answer.answer_type == "compare" and not focused \
        else []
    outcome = _coverage(answer, retrieval, settings, focused, whole_list or bool(sides), already_said)
    if focused and doubted and outcome == "answered":  # the previous answer was unsure these papers answer
        outcome = "unsure"
    lang = language(answer.question)  # the frame around quotes follows the question (`rag.answering.wording`)

    def quote(source: Source) -> list[str]:  # what an unsure answer or a kept LLM answer quotes of a paper
        return passage(retrieval, source, settings, intent.asks)

    reader = (lambda: _llm_answer(answer, reader_sources(retrieval, answer.sources, settings), llm, templates, checker,
                                  started, standalone, settings.policy.refusal_extra_words)) \
        if llm is not None and not answer.fallback_reason else None
    if answer.listed:  # a topic's list is the papers decided to belong, every one shown; a reader would pick a few
        reader = None
    # A follow-up is unsure only when it asks beyond its papers (`_coverage`): the same doubt as `reader_doubt`'s
    doubt = ((BEYOND_DOUBT if focused else reader_doubt(retrieval, settings)) if outcome == "unsure"
             and reader is not None else "")
    if doubt:  # the abstract decides: a small reader grants what the question supposes (`reader_doubt`)
        reader = None
        answer.notices.append(doubt)
    if outcome == "unsure" and answer.sources:
        yield from _unsure(answer, reader, llm.model if llm else "", settings.llm_quote, quote, lang)
    elif not retrieval.hits or outcome != "answered":
        answer.answer = (say("not_in_abstract", lang, title=answer.sources[0].title)
                         if focused and answer.sources else abstention_text(answer.sources, lang))
        answer.conclude("not_covered")
        yield Delta(answer.answer)
    else:
        if reader is not None and llm is not None:
            yield from reader()
            if settings.policy.lead_check_answered and not (focused or whole_list or sides):
                # A lead the cited papers do not support grants the question ("Yes, there is ..."), here as where
                # the gate was unsure: the closest papers are shown instead, unsure.
                yield from _lead_unsupported(answer)
                if answer.fallback_reason == LEAD_UNSUPPORTED:
                    _closest_instead(answer)
                    yield from _unsure(answer, None, llm.model, settings.llm_quote,
                                       quote, lang)
                    return
            # A reader's "no answer" beside a retrieval the gate found answerable is not final: a small model gives
            # up on descriptions it cannot link (Qwen2.5-1.5B did on 21% of answerable questions, the right paper
            # often at rank 2-5). The extractive answer is shown instead, marked unsure.
            yield from _reader_found_nothing(answer, llm.model)
            if answer.mode == "llm" and answer.outcome == "answered":
                yield from _quoted(answer, settings.llm_quote, quote, lang)
        if not answer.answer:  # extractive: the default, and the fallback when the LLM failed
            yield from _extractive_answer(answer, retrieval, settings, intent, whole_list, focused, sides, lang, limit)
            if answer.listed and llm is not None and not answer.fallback_reason and answer.outcome == "answered":
                yield from _synthesis(answer, llm, templates, settings, lang)


def unbracket_quotes(events: Iterator[Delta | Restart], answer: Answer) -> Iterator[Delta | Restart]:
    """`events` (what `compose` yields for `answer`) with the bracketed reference numbers of every quoted title or
    abstract sentence written "(ref. 2)" (`rag.text.quotes_unbracketed`), in the streamed text and in the answer,
    so no output (CLI, `--json`, exports, MCP) shows a quoted abstract's "[2]" beside the answer's own citations.
    An extractive answer streams whole quotes, rewritten as they go; an LLM streams tokens, so when a quote it
    streamed changes, a `Restart` shows the answer again. The answer's citations are then the numbers its text
    still cites (an LLM's copy of "[2]" from a quote is no citation of source 2)."""
    quoted = [t for s in answer.sources for t in [s.title, s.snippet, *(split_sentences(s.text) if "[" in s.text
                                                                        else [])] if t and "[" in t]
    if not quoted:
        yield from events
        return
    shown = ""
    for event in events:
        if isinstance(event, Delta):
            event = Delta(quotes_unbracketed(event.text, quoted)[0])
            shown += event.text
        elif isinstance(event, Restart):
            shown = ""
        yield event
    text, changed = quotes_unbracketed(answer.answer, quoted)
    if not changed:
        return
    answer.answer = text
    answer.unsupported = [quotes_unbracketed(s, quoted)[0] for s in answer.unsupported]
    still = {int(n) for marker in _MARKER.findall(text) for n in marker.split(", ")}
    answer.citations = [c for c in answer.citations if c.n in still] or answer.citations
    if quotes_unbracketed(shown, quoted)[1]:  # what was streamed still shows a quote's own "[2]"
        yield Restart("numbers in brackets quoted from an abstract are its own references: shown as (ref. n)",
                      failed=False)
        yield Delta(text)


_MARKER = re.compile(r"\[(\d+(?:, \d+)*)\]")  # the app's citation markers ("[1]", "[1, 2]")


def _coverage(answer: Answer, retrieval: Retrieval, settings: Settings, focused: bool, chosen: bool,
              already_said: str) -> str:
    """Whether the papers answer the question: "answered", "unsure" or "not_covered" (`decide`). A follow-up about
    the previous answer's papers is not read by the collection-wide gate: the user chose the papers, and its question
    ("What data did they use?") is too vague for it, so only a near-zero match is refused; it is unsure when it asks
    whether they went further and their abstracts lack what it names (`abstain.asked_beyond`: "Has that approach
    also been tested on audio?"). `chosen`: a filter
    with no topic, or a comparison whose sides were all found, names its papers and is answered."""
    if not focused:
        return "answered" if chosen else decide(retrieval, settings)
    fresh = [s for s in retrieval.sentences if s.text not in already_said]
    retrieval.sentences = fresh or retrieval.sentences
    covered = answer.answer_type in RECORD_TYPES or (
        bool(retrieval.sentences) and retrieval.sentences[0].score >= settings.policy.focus_floor)
    if covered and asked_beyond(retrieval) >= settings.policy.focus_beyond:  # "also tested on audio?": never said
        return "unsure"
    return "answered" if covered else "not_covered"


def _unsure(answer: Answer, reader: Callable[[], Iterator[Delta | Restart]] | None, model: str,
            quote: bool = True, passage: Callable[[Source], list[str]] | None = None, lang: str = "en"
            ) -> Iterator[Delta | Restart]:
    """Near the gate's cut point the reader decides (issue 28): an LLM, when one is set, reads the papers and may
    answer with citations; if it finds no answer, or fails, the closest papers are shown, unsure. `lang`: the
    question's, for the app's own words (`rag.answering.wording`)."""
    if reader is not None:
        yield from reader()
        yield from _lead_unsupported(answer)
        if answer.mode == "llm" and answer.outcome == "answered":
            yield from _quoted(answer, quote, passage, lang)
            yield from _also_close(answer, lang)
            return
        yield from _reader_found_nothing(answer, model)
        if answer.fallback_reason:
            _closest_instead(answer)
    first = answer.sources[0]
    texts = passage(first) if passage else []
    text, cited = unsure_text(answer.sources, {first.n: " ".join(texts)} if texts else {}, lang)
    by_n = {s.n: s for s in answer.sources}
    answer.answer, answer.citations = text, [by_n[n] for n in cited]
    answer.conclude("unsure")
    yield Delta(answer.answer)


def _closest_instead(answer: Answer) -> None:
    """The notice of an LLM answer that fell back to the closest papers, naming why."""
    answer.notices.append(f"The LLM could not answer ({answer.fallback_reason}); showing the closest papers instead.")


LEAD_UNSUPPORTED = "its first sentence is not supported by the sources it cites"


def _lead_unsupported(answer: Answer) -> Iterator[Restart]:
    """Where the gate is unsure, the reader's answer stands only if its first sentence, the direct answer, is
    supported by what it cites; else it is taken back (its text was streamed) and the closest papers are shown,
    unsure. A small reader asked about a topic no paper covers opens by granting the question ("Yes, there are
    retrieval methods or LLMs for prior-art search when examining patent applications.", Qwen2.5-Coder-1.5B on
    describe_final7, then a copied abstract about query search with RL [1]): the rest is supported, so the answer
    passed, and the lead that is no claim of any paper was the answer. An answer with a supported lead keeps the
    reader's word against the gate's unsure, as before (issue 28 item 3)."""
    if answer.mode != "llm" or answer.outcome != "answered" or not answer.unsupported:
        return
    lead = next(iter(cited_sentences(answer.answer)), None)
    if lead is None or lead[0] not in answer.unsupported:
        return
    answer.fallback_reason = LEAD_UNSUPPORTED
    answer.mode, answer.answer, answer.citations, answer.unsupported = "extractive", "", [], []
    yield Restart(LEAD_UNSUPPORTED)


ALSO_CLOSE = say("also_close")
QUOTED = say("quoted")


def _quoted(answer: Answer, on: bool = True, passage: Callable[[Source], list[str]] | None = None,
            lang: str = "en") -> Iterator[Delta]:
    """After an LLM's accepted answer, its first cited paper's passage (`extractive.passage`: what a one-paper
    explanation of it quotes, with its sentence nearest the question), verbatim and cited, on a line of its own,
    less the sentences the answer already says most of; without `passage`, the nearest sentence alone.
    A small reader paraphrases: it names the paper but leaves out the figure or the method's name the question
    asked for, and the researcher checks a claim against the paper's own words. On the describe_final5 LLM
    subset Qwen2.5-Coder-1.5B's answers followed by the one nearest sentence stated 0.577 of the asked facts, the
    extractive answers of the same run 0.692 (eval/DECISIONS.md, "The LLM answer's quoted passage"). The line is the
    app's, from the record."""
    first = answer.citations[0] if answer.citations and on else None
    if first is None or not first.has_abstract or not first.snippet.strip():
        return
    sentences = (passage(first) if passage else []) or [" ".join(first.snippet.split())]
    unsaid = [s for s in sentences if not _mostly_said(s, answer.answer)]
    if not unsaid:
        return
    line = f"\n\n{say('quoted', lang)} “{' '.join(unsaid)}” [{first.n}]"
    answer.answer += line
    yield Delta(line)


def _mostly_said(sentence: str, text: str, share: float = 0.6) -> bool:
    """Whether `text` already holds `share` of the sentence's distinct words (BM25's stemmed terms)."""
    words, said = tokenize([sentence, text])
    wanted = set(words)
    return not wanted or len(wanted & set(said)) >= share * len(wanted)


def _also_close(answer: Answer, lang: str = "en") -> Iterator[Delta]:
    """After an LLM's answer to a question the gate was unsure of, the other `closest` papers (those the unsure
    answer would cite) are named on a line of their own: the reader picked one paper of several close ones, and a
    small one often picks the wrong one (on the held-out LLM subset Qwen2.5-Coder-1.5B cited the right
    paper for 0.615 of the answerable questions, the unsure extractive answer, which cites the three closest, 0.692).
    The line is the app's, from the records, not the model's claim: it carries titles only."""
    cited = {s.n for s in answer.citations}
    extra = [s for s in closest(answer.sources) if s.n not in cited]
    if not extra:
        return
    titles = ("；" if lang == "zh" else "; ").join(f"“{s.title}” [{s.n}]" for s in extra)
    line = f"\n\n{say('also_close', lang)} {titles}" + ("。" if lang == "zh" else ".")
    answer.answer += line
    answer.citations = [*answer.citations, *extra]
    yield Delta(line)


def _extractive_answer(answer: Answer, retrieval: Retrieval, settings: Settings, intent: Intent, whole_list: bool,
                       focused: bool, sides: list[int], lang: str = "en", limit: int | None = None
                       ) -> Iterator[Delta]:
    """The extractive answer for the question's type, marked unsure after an LLM's "no answer"."""
    if answer.fallback_reason:
        answer.notices.append(f"The LLM could not answer ({answer.fallback_reason}); "
                              "showing sentences quoted from the abstracts instead.")
    text, cited = extractive(retrieval, settings, answer.sources, answer.answer_type, intent.asked_decision,
                             whole_list, single_paper=focused or bool(retrieval.named_match), compared=sides,
                             follow_up=focused, asks=intent.asks, lang=lang, topic=list_topic(intent, lang),
                             shown=limit, kinds=tuple(answer.filters.decisions)
                             if answer.listed and "decisions" not in answer.filters.widened else (),
                             topic_verb=intent.topic_verb)
    by_n = {s.n: s for s in answer.sources}
    if answer.llm_no_answer and cited:
        answer.conclude("unsure")
        text = f"{say('unsure_reader', lang)}\n{text}"
    else:
        answer.conclude("answered" if cited else "not_covered")
    answer.answer = text if cited else abstention_text(answer.sources, lang)
    answer.citations = [by_n[n] for n in cited]
    yield Delta(answer.answer)


UNSURE_READER = say("unsure_reader")


def _reader_found_nothing(answer: Answer, model: str) -> Iterator[Restart]:
    """If the LLM's answer was "the sources do not answer", take it back (its text was streamed) and record it:
    the caller shows the quoted passages instead, marked unsure, with a notice naming the model."""
    if answer.mode != "llm" or answer.outcome != "not_covered":
        return
    answer.llm_no_answer = True
    answer.mode, answer.answer, answer.citations = "extractive", "", []
    answer.notices.append(f"The LLM ({model}) read these papers and found no answer in them; below are the "
                          "passages closest to the question, which may not answer it.")
    yield Restart("the LLM found no answer in the papers")


def is_refusal(text: str, extra_words: int = DEFAULT_POLICY.refusal_extra_words) -> bool:
    """True if the answer *is* "the sources do not answer": the phrase, give or take a few words ("I'm sorry, but
    ..."). SmolLM2 writes the phrase inside junk, once after echoing the whole prompt: that is not an abstention."""
    match = prompts.NO_ANSWER.search(text)
    if match is None:
        return False
    rest = without_citations(text[:match.start()] + " " + text[match.end():])
    return len(re.findall(r"\w+", rest)) <= extra_words


def _llm_answer(answer: Answer, read: list[Source], llm: ChatClient, templates: dict[str, str],
                checker: Checker, started: float, standalone: str = "",
                refusal_extra_words: int = DEFAULT_POLICY.refusal_extra_words) -> Iterator[Delta | Restart]:
    """The LLM's answer from `read` (the sources it is shown: `rag.answering.context`), if it passes the checks;
    else `answer.fallback_reason` says why and the text is empty. A number it cites but was not shown counts as
    fabricated; the support check reads the whole abstracts of the cited papers (`answer.sources`), English sentences
    by meaning, numbers and names, Chinese, Japanese or Korean ones by their numbers and names (`support.check`)."""
    completion = Completion()
    stream = StreamFilter({s.n for s in read})
    streamed = False
    asked = standalone if standalone and standalone != answer.question else answer.question
    begun = time.monotonic()
    try:
        messages = [{"role": "system", "content": templates["system"]},
                    {"role": "user", "content": prompts.fill(
                        templates["answer"], sources=prompts.render_sources(read),
                        question=asked, language=prompts.answer_language(answer.question))}]
        tags = EchoedTags()  # a model echoing the prompt's <source n="k"> fences cites k with them
        for delta in llm.stream(messages, completion):
            text = stream.feed(tags.feed(delta))
            if text:
                streamed = True
                yield Delta(text)
        tail = stream.feed(tags.finish())
        end, cleaned = stream.finish()
        if tail + end:
            yield Delta(tail + end)
        if not cleaned.text.strip():
            raise LLMError("the LLM endpoint returned an empty answer")
        if completion.finish_reason == "length":
            cleaned = _whole_sentences(answer, cleaned, {s.n for s in read}, llm.settings.llm_max_tokens)
            if streamed:  # the cut-off sentence was shown: show the answer again without it
                yield Restart("the unfinished last sentence left out", failed=False)
                yield Delta(cleaned.text)
        refused = not cleaned.cited and is_refusal(cleaned.text, refusal_extra_words)
        if not cleaned.cited and not refused:
            cleaned = _repaired(answer, cleaned, read, checker, asked)
            if streamed:  # show the text again, with its citations
                yield Restart("citations added where the abstracts support the sentences", failed=False)
            streamed = True
            yield Delta(cleaned.text)
        unsupported, checked = ([], 0) if refused else checker.unsupported(cleaned.text, answer.sources, asked)
        if time.monotonic() - begun > llm.settings.llm_deadline:  # the check counts inside the deadline
            raise LLMError(f"the LLM endpoint did not finish its answer within {llm.settings.llm_deadline:g} s")
        if checked and len(unsupported) == checked:
            # Citations on text that none of the cited abstracts supports (e.g. an injected instruction obeyed
            # and given a [1]): not an answer from the sources.
            raise LLMError("no sentence of the LLM's answer is supported by the sources it cites")
    except LLMError as exc:
        answer.fallback_reason = str(exc)
        answer.fabricated = stream.result.fabricated  # what the model wrote is counted even when it is not shown
        _record_usage(answer, completion, started)
        if streamed:
            yield Restart(answer.fallback_reason)
        return
    answer.mode, answer.model, answer.answer = "llm", llm.model, cleaned.text.strip()
    answer.fabricated = cleaned.fabricated
    answer.citations = [s for n in cleaned.cited for s in answer.sources if s.n == n]
    answer.conclude("answered" if cleaned.cited else "not_covered")
    answer.unsupported = unsupported
    language = prompts.language_of(cleaned.text)
    if language and checked:
        answer.notices.append(f"The answer is in {language}: its sentences were checked for the numbers and names "
                              "they state, which must be in the abstracts they cite, not for their meaning.")
    _record_usage(answer, completion, started)


def _whole_sentences(answer: Answer, cleaned: Cleaned, valid: set[int], max_tokens: int) -> Cleaned:
    """An answer that ran into max_tokens ends mid-sentence: it is kept up to its last finished sentence, with a
    notice, since a claim cut in half can say the opposite of the paper ("improves ... by" / "does not"). Nothing
    finished is not an answer (`LLMError`)."""
    whole = finished_part(cleaned.text)
    if whole == cleaned.text.strip():
        return cleaned
    if not whole:
        raise LLMError(f"the LLM's answer reached the length limit (llm_max_tokens = {max_tokens}) before its "
                       "first sentence ended")
    result = clean(whole, valid)
    result.fabricated = cleaned.fabricated  # what the model wrote is counted, shown or not
    answer.notices.append(f"The model's answer reached the length limit (llm_max_tokens = {max_tokens}); its "
                          "unfinished last sentence is left out.")
    return result


def _repaired(answer: Answer, cleaned: Cleaned, read: list[Source], checker: Checker, asked: str) -> Cleaned:
    """Every claim must carry a citation. An answer citing nothing gets one repair: each sentence an abstract the
    model was shown supports is given that paper's number (`support.attribute`); if none is supported (a model
    that ignored the prompt, or obeyed instructions hidden in an abstract), it is not an answer (`LLMError`)."""
    by_n = {s.n: s for s in answer.sources}
    repaired, added = checker.attribute(cleaned.text, [by_n[s.n] for s in read], asked)
    if not added:
        raise LLMError("the LLM's answer cited none of the sources")
    result = clean(repaired, {s.n for s in read})
    result.fabricated = cleaned.fabricated
    answer.attributed = len(added)
    answer.notices.append("The model cited no source: each citation was added by the app where the cited abstract "
                          "supports the sentence.")
    return result


def _record_usage(answer: Answer, completion: Completion, started: float) -> None:
    """Tokens as the server reported them (None each when it did not: llama.cpp's server sends no usage in a
    stream), and the time to the first token; kept on a fallback too, which cost the same."""
    answer.usage = {"prompt_tokens": completion.usage.prompt_tokens,
                    "completion_tokens": completion.usage.completion_tokens}
    if completion.usage.completion_tokens is None and completion.chunks:
        answer.usage["completion_chunks"] = completion.chunks  # ≈ tokens on llama.cpp (one a delta)
    if completion.first_token_at is not None:
        answer.timings["ttft_ms"] = round((completion.first_token_at - started) * 1000, 1)


def list_topic(intent: Intent, lang: str) -> str:
    """The topic a list's first line names: the question's words without its list words (`Intent.query`); for a
    Chinese question, its words without the question glue."""
    if lang == "zh":
        return without_glue(intent.query).replace("篇", "").strip()
    return intent.query


SYNTHESIS_ASK = ("What do these papers, found for the question “{question}”, have in common and how do they differ? "
                 "Answer in two to four sentences and cite each paper you mention.")


def _synthesis(answer: Answer, llm: ChatClient, templates: dict[str, str], settings: Settings, lang: str
               ) -> Iterator[Delta]:
    """With an LLM, a topic's list gets a few sentences over its shown papers, after the list: the model writes
    what they share and how they differ, citing them. The list itself is the extractive one, so no listed paper is
    ever dropped by the model; citations to papers not shown are removed and counted (`fabricated`), and a
    synthesis that cites none of them is left out. If the model fails, the list stands alone with a notice."""
    shown = answer.citations
    messages = [{"role": "system", "content": templates["system"]},
                {"role": "user", "content": prompts.fill(
                    templates["answer"], sources=prompts.render_sources(shown),
                    question=SYNTHESIS_ASK.format(question=answer.question),
                    language=prompts.answer_language(answer.question))}]
    try:
        text = llm.complete(messages, max_tokens=settings.llm_max_tokens, stream=True)
    except LLMError as exc:
        answer.notices.append(f"The LLM could not write a summary of the list ({exc}); the list is as found.")
        return
    cleaned = clean(" ".join(text.split()), {s.n for s in shown})
    answer.fabricated += cleaned.fabricated
    if not cleaned.cited:
        return
    added = f"\n\n{say('synthesis', lang)} {cleaned.text.strip()}"
    answer.answer += added
    answer.mode, answer.model = "llm", llm.model
    yield Delta(added)
