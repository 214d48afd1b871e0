"""Extractive answers: retrieved papers -> the text of an `Answer` (`rag.answering.records`) without an LLM, and
the abstention bar.

Extractive mode (the default, used when no LLM is configured) answers by question type (`rag.query.intent`): the
record's authors, decision or link; a list or a count of the papers that pass the relevance bar, the bar stated;
one line per paper for a comparison; otherwise the sentences of the top papers that best match the question,
each followed by its [n], each paper's title named once.

A title-only paper (`has_abstract` false: the bundled ICLR 2025 papers no source had an abstract for) is a source
like any other, listed with its title, authors and link, but its `text` and `snippet` are empty: no answer quotes
it, the confidence never comes from it (`rag.search.retrieve`), and the LLM is told it has no abstract
(`rag.generation.prompts`).

LLM mode (`Settings.llm_model` set): the sources go to the model numbered as here, its citations are checked
(`rag.generation.citations`: numbers it was not given are removed and counted as `fabricated`), each cited sentence is
checked against the abstracts it cites (`unsupported`), and "the sources do not contain an answer" maps to
`abstained`. If the endpoint fails, the answer falls back to extractive mode with a `fallback_reason`.

Abstention: the retrieval confidence is the score of the best sentence among the top papers (its cosine to the
question plus the term-overlap bonus of `rag.search.retrieve`). Below `Settings.abstain_threshold` the collection most
likely does not cover the question, so the answer says so, lists the nearest papers and cites nothing, unless
the question names something (a rare, name-like word such as "Scylla" or "BirdSet") that the top paper contains.
Calibration (`python eval/calibrate.py`, eval/questions/seeds_dev.jsonl over the 38 seed abstracts, named after
their ICLR 2025 papers by `rag.store.catalog`: 85 answerable questions, 16 near-miss questions no abstract answers),
with the stored late-chunked sentence vectors: at 0.47, 12/16 (0.75) unanswerable questions abstain and 3/85
(3.5%) answerable ones are refused; 0.45 refuses 1.2% but abstains on 0.62; 0.50 abstains on 0.81 but refuses
5.9%. (The value was chosen on an earlier seed set, 12 of whose 38 abstracts were not the user's: 0.69 at 4.7%
there.) Confirmed over the 2,114-paper corpus (65 answerable, 20 unanswerable corpus questions): 0.65 abstention
at 4.6% false refusals (the per-query sentence embeddings used before gave 0.45 at 3.1% there). The best chunk
cosine alone separated worse. The same kind of set chose the value, so treat these as dev numbers; re-run after
changing the embedder or chunking.

A second, learned gate (`rag.answering.abstain`) also refuses when a logistic regression over retrieval features (a
question term no paper contains, the share of the question's terms the top papers contain, BM25 and dense scores and
margins, a figure asked for that no sentence with a number supports) gives at least its fitted threshold. It is
fitted on questions generated from the papers (`make model`), not on the question sets; its fitted threshold and
the trade-off it gives on each set are in abstain_gate.json and eval/DECISIONS.md (`python eval/abstain_curve.py`);
the figures are not repeated here, where they went stale. `RAG_ABSTAIN_MODEL_THRESHOLD` moves or disables it; it is
used over collections of 1,000+ papers only (fitted at that scale).
"""

from __future__ import annotations

from dataclasses import replace

from rag.config import Settings
from rag.text import is_boilerplate
from rag.search.retrieve import Hit, Retrieval, ScoredSentence
from rag.text import link_label
from rag.answering import abstain, explain as explain_order
from rag.answering.records import Outcome, Source
from rag.answering.wording import kind_name, say

# How many sentences from which papers (MAX_PER_PAPER, RELATIVE_FLOOR, LEAD, ONE_PAPER_*): `Settings.policy`
# (`AnswerPolicy`, rag/config.py), each with the set and figure that chose it. Which of a one-paper answer's
# sentences: its contribution sentence and the two after it when it has one (`rag.answering.explain.passage`).


def decide(retrieval: Retrieval, settings: Settings) -> Outcome:
    """Which of the three outcomes the retrieval supports, before any answer is written.

    Over a collection the learned gate applies to (`abstain.applies`, 1,000+ papers): "not_covered" when its
    coverage model (`abstain.coverage`: retrieval features alone, nearness) reaches the higher cut point; else its
    probability that the papers do not answer (retrieval and reader features) from the lower one "unsure", else
    "answered"; a best sentence below `abstain_threshold` (no rare name of the
    question matched) is at least "unsure" (`abstain.LOW_CONFIDENCE` says whether it is "not_covered"). Over a
    smaller collection the confidence bar alone decides, as before the gate: below it, "not_covered".

    A question whose rare name the top paper contains (`Retrieval.named_match`: "Why is LaMPlace better than
    earlier methods?") is at most "unsure": a paper it names is there, so "not covered" would be false (issue 29:
    "not covered" only when nothing in the list is close), whatever the gate makes of its other words. So is one
    that reaches the not-covered cut only by its form (`abstain.FORM_FEATURES`: without them the probability stays
    under it), even with a weak best sentence (a Chinese question's noisy English terms): it asks whether a close
    paper's work went further ("Are there ML weather forecasters tested on typhoon tracks?"), so a paper is close.
    Over the 1,879 dev questions this moved 5 answerable and 24 near-miss questions from not covered to unsure, and
    10 absent topics (outcome cost 574.5 against 567.5, which prices an unanswerable question unsure at 0.5;
    eval/DECISIONS.md, "Not covered only on the evidence")."""
    if not retrieval.hits:
        return "not_covered"
    if retrieval.decided:  # a topic's list, decided over its whole pool before the pool was cut (`rag.engine`)
        return retrieval.decided  # type: ignore[return-value]
    weak = retrieval.confidence < settings.abstain_threshold and not retrieval.named_match
    if not abstain.applies(retrieval):
        return "not_covered" if weak else "answered"
    not_covered_at = abstain.cut_points(settings.abstain_model_threshold)[1]
    cover, formless = abstain.coverage(retrieval)
    if cover >= not_covered_at and not retrieval.named_match and formless >= not_covered_at:
        # not covered, unless only the form takes it there (`reader_doubt`) or the question names the top paper's
        # rare name
        return "not_covered"
    p, _, unsure_at, low = abstain.judgement(retrieval, settings.abstain_model_threshold)
    if weak:
        return low  # type: ignore[return-value]
    return "unsure" if p >= unsure_at else "answered"


READER_SURE = ("No sentence of the closest papers says what the question asks: they are quoted, and the LLM was "
               "not asked.")
BEYOND_DOUBT = ("The question asks whether a paper did something its abstract may not say: the closest papers are "
                "quoted, and the LLM was not asked.")


def reader_doubt(retrieval: Retrieval, settings: Settings) -> str:
    """Why an unsure question's papers are quoted without asking a reader (rag.answering.compose), as the notice
    that says so; "" when the reader may read them. Three cases, from one reading of the gate:

    - the gate is sure (`abstain.LLM_READS_BELOW`): its reader finds no sentence saying what is asked, and a small
      LLM would grant what the papers never state;

    - the question's form alone moves it from "answered": the gate's probability without `abstain.FORM_FEATURES`
      is under the unsure cut, and the question asks whether a close paper's work went further ("Has the try-on
      model ... been used for video try-on of dancers?"). A small reader grants the premise and answers as if the
      paper did it (Qwen2.5-Coder-1.5B answered 0.8 of the unanswerable questions of two held-out LLM subsets, most
      of them near misses). Such a question is never not covered either (`decide`): a paper is close.
    - only its name keeps it from "not_covered" (`decide`): the probability reaches the not-covered cut and the top
      paper holds the rare name the question uses. What it asks of that paper ("What learning rate was used to
      fine-tune ... in 'Teaching Human Behavior ...'?", 58 of the read sets' unanswerable questions) is what the
      gate finds missing, and a small reader grants it too."""
    if not (retrieval.hits and abstain.applies(retrieval)):
        return ""
    _, not_covered_at = abstain.cut_points(settings.abstain_model_threshold)
    p, formless, unsure_at, _ = abstain.judgement(retrieval, settings.abstain_model_threshold)
    if p >= unsure_at > formless:
        return BEYOND_DOUBT
    if p >= max(unsure_at, abstain.LLM_READS_BELOW):
        return READER_SURE
    if retrieval.named_match and abstain.coverage(retrieval)[0] >= not_covered_at:
        return ("The papers may not say what the question asks of the paper it names: that paper is quoted, and the "
                "LLM was not asked.")
    return ""


def should_abstain(retrieval: Retrieval, settings: Settings) -> bool:
    """Whether the papers do not clearly answer (`decide` says anything but "answered")."""
    return decide(retrieval, settings) != "answered"


NOT_COVERED = say("not_covered")
UNSURE = say("unsure")
# An unsure answer cites the top paper and, up to CLOSEST in all, those whose retrieval score is at least
# CLOSEST_SHARE of its: the fused score falls to ~0.5 by the third rank on the dev near misses, where it reaches
# papers that share one word with the question ("Grounding by Trying" for a try-on question).
CLOSEST, CLOSEST_SHARE = 3, 0.6


def abstention_text(sources: list[Source], lang: str = "en") -> str:
    text = say("not_covered", lang)
    if sources:
        text += say("nearest", lang, titles="; ".join(f'"{s.title}"' for s in sources[:3]))
    return text


def closest(sources: list[Source]) -> list[Source]:
    """The papers close to a question no paper clearly answers: the top one and, up to CLOSEST in all, those
    scoring at least CLOSEST_SHARE of it."""
    return [s for i, s in enumerate(sources[:CLOSEST]) if i == 0 or s.score >= CLOSEST_SHARE * sources[0].score]


def unsure_text(sources: list[Source], lead: dict[int, str] | None = None, lang: str = "en") -> tuple[str, list[int]]:
    """The answer when no paper clearly answers but some are close: the `closest` papers, each cited with the
    sentence of its abstract nearest the question (a title-only paper by its title, saying so), or with its
    passage in `lead` (source number -> text: the first paper's `passage`). Returns (text, cited)."""
    papers = closest(sources)
    lines = [say("unsure", lang) + say("closest_are", lang)]
    for s in papers:
        text = (lead or {}).get(s.n) or (s.snippet.strip() if s.has_abstract else "")
        # a title-only paper says so, as in a list (a bare "“CircuitFusion: …” [2]" reads as unfinished)
        said = f": {text}" if text else " " + say("title_only", lang)
        lines.append(f"{BULLET} “{s.title}” [{s.n}]{said}")
    return "\n".join(lines), [s.n for s in papers]


def passage(retrieval: Retrieval, source: Source, settings: Settings, asks: str = "") -> list[str]:
    """The sentences of `source`'s abstract a one-paper explanation of it quotes (`explained`: its contribution,
    what follows, the sentence giving an asked figure or list), with its sentence nearest the question (its
    snippet) among them, in abstract order, whitespace collapsed; [] for a title-only paper. A source's number
    is its hit's rank (`Source.n` = hit index + 1). An unsure answer quotes it for its first paper, an accepted LLM
    answer for its first cited one (rag/answering/compose.py).

    Why more than the one nearest sentence: on the four read description sets, an unsure answer whose first paper
    was the right one stated 0.40 of the asked facts, an answered one 0.70 (eval/DECISIONS.md, "The gate refit on
    the read description sets"): a description in other words is often unsure, and one sentence rarely carries
    what was asked. The label still says that no paper clearly answers. `asks`: as for `explained` (a Chinese
    question's `Intent.asks`)."""
    index = source.n - 1
    if not source.has_abstract or not 0 <= index < len(retrieval.hits):
        return []
    texts = [" ".join(s.text.split()) for s in explained(retrieval, settings, paper=index, asks=asks)]
    snippet = " ".join(source.snippet.split())
    if snippet and snippet not in texts:
        texts.append(snippet)
    abstract = " ".join(retrieval.hits[index].paper.abstract.split())
    texts.sort(key=lambda t: abstract.find(t) % (len(abstract) + 1))  # in abstract order; not found (-1): last
    return texts


def extractive(retrieval: Retrieval, settings: Settings, sources: list[Source], answer_type: str = "explain",
               asked_decision: str = "", whole_list: bool = False, single_paper: bool = False,
               compared: list[int] | None = None, follow_up: bool = False, asks: str = "",
               lang: str = "en", topic: str = "", shown: int | None = None, kinds: tuple[str, ...] = (),
               topic_verb: bool = False) -> tuple[str, list[int]]:
    """The answer the records and abstracts give, by question type (`rag.query.intent`), framed in `lang`
    (`rag.answering.wording`). Returns (text, cited numbers).

    - authors / decision / link: from the record of the top paper (the one the question names);
    - list / count / compare: one line per paper about the topic (`members`), the first `shown` of them, the
      first line saying how many in plain words;
      `whole_list` (a filter with no topic: "papers by X") lists every paper found; a comparison whose sides were
      found (`compared`: their hit indexes, `rag.answering.compare`) lists those papers;
    - explain: the best sentences of the top papers, grouped by paper in abstract order, each paper's title
      named once; only the top paper's when the question is about one paper (`single_paper`)."""
    if not retrieval.hits:
        return "", []
    if answer_type in RECORD_TYPES:  # a follow-up's papers each ("Which of them is an oral?"), else the top one
        about = sources if follow_up else sources[:1]
        if answer_type == "decision" and asked_decision and len(about) > 1:
            return which_decision(about, asked_decision, lang)
        return "\n".join(record_answer(answer_type, s, asked_decision, lang) for s in about), [s.n for s in about]
    if answer_type in ("list", "count", "compare"):
        listed = listing(answer_type, retrieval, sources, settings, whole_list, compared, lang, topic, shown, kinds,
                         topic_verb)
        if listed[1]:
            return listed
        # The collection covers the question (the gate let it through) but no single paper passes the bar on its
        # own: quote the best sentences rather than refuse.
    return explain(retrieval, sources, settings, single_paper, follow_up, asks)


RECORD_TYPES = ("authors", "decision", "link")
# Which papers a list or count names: `members`, with the numbers of `AnswerPolicy` (rag/config.py).
MAX_LISTED = 50  # papers a question can ask for, and a count checks at most (`rag.engine.MAX_K`)
BULLET = "•"


def record_answer(answer_type: str, source: Source, asked_decision: str = "", lang: str = "en") -> str:
    """Who wrote it, how it was accepted, where to read it: the record's own fields, cited."""
    title = f"“{source.title}” [{source.n}]"
    if answer_type == "authors":
        if not source.authors:
            return say("no_authors", lang, title=title)
        return say("authors", lang, title=title, names=_names(source.authors, lang))
    if answer_type == "link":
        if not source.url:
            return say("no_link", lang, title=title)
        where = link_label(source.url)  # "OpenReview" for openreview.net only, else the link's host
        return say("on_openreview" if where == "OpenReview" else "at_url", lang, title=title, url=source.url)
    kind = _decision_kind(source.decision)
    if not kind:
        return say("no_decision", lang, title=title)
    values = dict(title=title, kind=kind_name(kind, lang), article="an" if kind == "oral" else "a",
                  decision=source.decision)
    if asked_decision:
        asked = _decision_kind(asked_decision)
        if asked == kind:
            return say("accepted_yes", lang, **values)
        return say("accepted_no", lang, **values, asked=kind_name(asked, lang),
                   asked_article="an" if asked == "oral" else "a")
    return say("accepted", lang, **values)


def which_decision(about: list[Source], asked_decision: str, lang: str = "en") -> tuple[str, list[int]]:
    """ "Which of them is an oral?" over several papers: those that are, each with its decision, or "none of them"
    and what each one is. Five "No: ... not as an oral." lines would answer a "which" question without
    saying which (none)."""
    asked = _decision_kind(asked_decision)
    matching = [s for s in about if _decision_kind(s.decision) == asked]
    shown = matching or about
    values = dict(n=len(matching), total=len(about), kind=kind_name(asked, lang), kinds=kind_name(asked, lang) + "s",
                  article_kind=("an " if asked == "oral" else "a ") + asked)
    if not matching:
        head = say("which_none", lang, **values)
    elif len(matching) == 1:
        head = say("which_one", lang, **values)
    else:
        head = say("which_some", lang, **values)
    lines = [head] + [f"{BULLET} " + record_answer("decision", s, "", lang) for s in shown]
    return "\n".join(lines), [s.n for s in shown]


def _relevance(hit: Hit) -> float:
    return hit.snippet_score if hit.paper.has_abstract else (hit.dense or 0.0)


def _pool(retrieval: Retrieval) -> list:
    """The hits a list's bar is relative to: its own and, for a filtered list, those of the same search without
    filters (`Retrieval.reference`): the best paper near the question in the whole collection sets the bar, else
    "spotlights on X" would name the spotlights merely nearest to X."""
    return retrieval.hits + (retrieval.reference.hits if retrieval.reference is not None else [])


def sentence_bar(retrieval: Retrieval, settings: Settings) -> float:
    """The score a listed paper's best sentence (a title-only paper: its title) must reach when the key term is not in
    its title: `abstain_threshold`, or `member_sentence_share` of the best paper's, whichever is higher."""
    best = max((_relevance(hit) for hit in _pool(retrieval)), default=0.0)
    return max(settings.abstain_threshold, settings.policy.member_sentence_share * best)


def members(retrieval: Retrieval, settings: Settings, whole_list: bool = False) -> list[int]:
    """The hits (indexes, in rank order) a list or count names: the papers ABOUT the topic, not merely near it.

    A paper belongs when its title holds every distinctive word of the topic (`Hit.title_topic`: "diffusion" of
    "diffusion models"); or the topic's key term (`Hit.key_in_title`: its rarest word, such as "unlearning" or
    "KV") and its best sentence scores `key_sentence_share` of the best paper's; or its first two sentences hold
    the key term and its best sentence reaches `sentence_bar`; or when the fused search ranks
    it close to the best paper (`member_score_share` of its fused score) and its best sentence reaches
    `sentence_bar`. All but the first also need their text to hold `topic_bar` of the topic the best-covered paper
    holds (a title-only paper, whose title is all it shows, `title_topic_bar`). The cuts are relative to the best
    paper of the pool, for a filtered list ("orals on X") of the same search without filters
    (`Retrieval.reference`), whose ranks it is scored by: ranked among orals alone, a docking oral whose title
    says "Unbalanced" was near the top of "orals on optimal transport". The
    numbers and the sets that chose them: `AnswerPolicy` (rag/config.py). `whole_list` (a filter with no topic:
    "papers by X") names every hit."""
    if whole_list:
        return list(range(len(retrieval.hits)))
    policy = settings.policy
    pool = _pool(retrieval)
    best = max((_relevance(hit) for hit in pool), default=0.0)
    # A filtered list's fused scores are ranks among the filter's papers alone: a paper is scored as the search
    # without filters ranks it (0 beyond its pool), against that search's best.
    unfiltered = ({hit.paper.paper_id: hit.score for hit in retrieval.reference.hits}
                  if retrieval.reference is not None else None)
    best_score = max((hit.score for hit in (retrieval.reference or retrieval).hits), default=0.0)
    cutoff = sentence_bar(retrieval, settings)
    titled = policy.key_sentence_share * best  # a title naming the topic is the surest sign: no absolute bar
    covered = max((hit.topical for hit in pool if _relevance(hit) >= cutoff), default=0.0)

    def holds_topic(hit: Hit) -> bool:
        return hit.topical >= covered * (policy.topic_bar if hit.paper.has_abstract else policy.title_topic_bar)

    return [i for i, hit in enumerate(retrieval.hits)
            if hit.title_topic
            or (hit.key_in_title and _relevance(hit) >= titled and holds_topic(hit))
            or (hit.key_in_lead and _relevance(hit) >= cutoff and holds_topic(hit))
            or ((hit.score if unfiltered is None else unfiltered.get(hit.paper.paper_id, 0.0))
                >= policy.member_score_share * best_score and _relevance(hit) >= cutoff and holds_topic(hit))]


passes_bar = members  # the engine's name for it where a filter is widened (`rag.engine.Engine._retrieve`)

def kinds_named(decisions: tuple[str, ...], n: int, lang: str = "en") -> str:
    """A filtered list's papers as its first line names them: "orals", "oral or spotlight papers"; "" unfiltered."""
    names = [kind_name(_decision_kind(d), lang) for d in decisions if _decision_kind(d)]
    if not names or lang == "zh":
        return ""
    if len(names) == 1:
        return names[0] + ("s" if n != 1 else "")
    return " or ".join(names) + (" papers" if n != 1 else " paper")


def topic_phrase(topic: str, lang: str = "en", verb: bool = False) -> str:
    """How a list's first line names its topic: "on KV cache compression", "that reduce the memory of ..." (`verb`:
    the topic opens with a verb, `Intent.topic_verb`)."""
    topic = " ".join(topic.split()).strip(" ?.!,;:？。")
    if lang == "zh":
        return f"“{topic}”" if topic else ""
    if not topic:
        return ""
    return f" that {topic}" if verb else f" on {topic}"


def listing(answer_type: str, retrieval: Retrieval, sources: list[Source], settings: Settings,
            whole_list: bool = False, compared: list[int] | None = None, lang: str = "en", topic: str = "",
            shown: int | None = None, kinds: tuple[str, ...] = (), topic_verb: bool = False) -> tuple[str, list[int]]:
    """One line per paper of the list: "• Title: the sentence that shows it belongs [n]." ("• Title [n] (oral)" for
    a count), the first `shown` of them (None: `list_shown`; 0: all) and then how many more there are; for a
    comparison, the papers its sides name (`compared`) if found. The first line says what was found in plain words
    ("8 papers on KV cache compression:", "12 papers on X, 3 of them orals:"). Empty when no paper belongs."""
    if retrieval.members is not None:  # decided by the engine over the deep pool, the members first
        indexes = list(range(retrieval.members))
    else:
        indexes = members(retrieval, settings, whole_list)
    passing = [sources[i] for i in indexes]
    if answer_type == "compare":
        passing = [sources[i] for i in compared] if compared else passing[:3]
    if not passing:
        return "", []
    n = len(passing)
    limit = settings.policy.list_shown if shown is None else shown
    visible = passing if answer_type == "compare" or not limit else passing[:limit]
    lines = []
    for s in visible:
        kind = _decision_kind(s.decision)
        if answer_type == "count":
            lines.append(f"{BULLET} {s.title} [{s.n}]" + (f" ({kind_name(kind, lang)})" if kind else ""))
        elif s.has_abstract and s.snippet:
            lines.append(f"{BULLET} {s.title}: {_cite(s.snippet, s.n)}")
        else:
            lines.append(f"{BULLET} {s.title} [{s.n}] {say('title_only', lang)}")
    papers = "paper" if n == 1 else "papers"
    if answer_type == "compare":
        head = say("side_by_side", lang)
    elif whole_list:
        head = say("found", lang, n=n, papers=papers)
    else:
        head = say("on_topic", lang, n=n, papers=kinds_named(kinds, n, lang) or papers,
                   topic=topic_phrase(topic, lang, topic_verb))
        orals = sum(_decision_kind(s.decision) == "oral" for s in passing)
        if answer_type == "count" and orals and orals < n and not kinds:
            head = head.rstrip(":：") + say("of_them", lang, k=orals, kinds=kind_name("oral", lang)
                                           + ("s" if orals != 1 and lang == "en" else ""))
    lines = [head] + lines
    if len(visible) < n:
        lines.append(say("more_shown", lang, more=n - len(visible)))
    if (answer_type != "compare" and not whole_list and retrieval.members is not None
            and retrieval.pool_full):
        lines.append(say("more_narrower", lang, checked=retrieval.pool))
    return "\n".join(lines), [s.n for s in visible]


def explain(retrieval: Retrieval, sources: list[Source], settings: Settings, single_paper: bool = False,
            follow_up: bool = False, asks: str = "") -> tuple[str, list[int]]:
    """The best sentences of the top papers (at most MAX_PER_PAPER each, none below RELATIVE_FLOOR of the best),
    grouped by paper in rank order, in each abstract's own order, the paper's title named once; or, when one paper
    answers (the question names it, it clearly leads (LEAD), or only its sentences pass), its contribution
    sentence and the ones after it (`rag.answering.explain.passage`), unless the question is a `follow_up` about the
    previous answer's paper ("What data did they use?"): that asks for something specific, and the passage would
    restate what the first answer said.

    The paper the retrieval ranks first is always quoted, and first: a sentence of a lower paper can outscore all of
    its sentences (by LEAD, even), and would be quoted alone. Read sets at 2,114 papers (2,261 questions, sixteenth
    session): the gold paper cited on 34 more questions, none fewer; facts 0.751 -> 0.761 (26 up, 8 down: a lower
    gold paper that led is quoted second, with two sentences instead of its passage); hit@1 unchanged."""
    chosen = explained(retrieval, settings, single_paper, follow_up, asks=asks)
    paragraphs = []
    for paper_index in dict.fromkeys(s.paper_index for s in chosen):
        mine = [s for s in chosen if s.paper_index == paper_index]
        source = sources[paper_index]
        quoted = " ".join(_cite(s.text, paper_index + 1) for s in mine)
        paragraphs.append(f"{source.title}: {quoted}" if source.has_title else quoted)
    cited = list(dict.fromkeys(s.paper_index + 1 for s in chosen))
    return "\n\n".join(paragraphs), cited


def explained(retrieval: Retrieval, settings: Settings, single_paper: bool = False,
              follow_up: bool = False, paper: int | None = None, asks: str = "") -> list[ScoredSentence]:
    """The sentences `explain` quotes (see there), each paper's in its abstract's order, papers in rank order;
    `paper` (a hit index): those of that paper alone, as a one-paper explanation of it would quote them (none
    when it has no sentence among the top papers'). `asks`: what a question in Chinese asks for, in English
    question words (`Intent.asks`), read with its English search terms where the sentence holding the asked figure,
    cause or remedy is chosen."""
    ranked = retrieval.sentences  # the best sentences of the top papers, best first
    if not retrieval.wording.asks_code:  # "Code is available at ..." answers only a question for it
        ranked = [s for s in ranked if not is_boilerplate(s.text)] or ranked
    quotable = ranked
    if not ranked or (paper is not None and not any(s.paper_index == paper for s in ranked)):
        return []
    one = paper  # the paper the answer quotes alone, if any
    top = next((i for i, hit in enumerate(retrieval.hits) if hit.paper.has_abstract), None)
    if one is None and retrieval.named_match:  # the question names it ("What is CURIE?"): the paper containing it
        one = top
    elif one is None and (single_paper or (leads(ranked, settings.policy.lead) and ranked[0].paper_index == top)):
        # only the paper the retrieval ranks first is quoted alone (`explain`: the first paper always quoted)
        one = ranked[0].paper_index
    single_paper = one is not None and any(s.paper_index == one for s in ranked)
    policy = settings.policy
    if single_paper:
        ranked = [s for s in ranked if s.paper_index == one]
    elif paper is None and not follow_up and top is not None:
        # several papers: only those the retrieval ranks near the first (`AnswerPolicy.paper_share`), as an unsure
        # answer's closest papers; a sentence alone, from a paper far down, pads the answer
        bar = policy.paper_share * retrieval.hits[top].score
        ranked = [s for s in ranked if retrieval.hits[s.paper_index].score >= bar] or ranked
    per_paper_limit = policy.one_paper_sentences if single_paper else policy.max_per_paper
    floor = (policy.one_paper_floor if single_paper else policy.relative_floor) * ranked[0].score
    chosen: list[ScoredSentence] = []
    per_paper: dict[int, int] = {}
    for sentence in ranked:
        if len(chosen) >= settings.max_answer_sentences or sentence.score < floor:
            break
        if per_paper.get(sentence.paper_index, 0) >= per_paper_limit:
            continue
        per_paper[sentence.paper_index] = per_paper.get(sentence.paper_index, 0) + 1
        chosen.append(sentence)
    if not single_paper and chosen and top not in per_paper and paper is None:
        # several papers: the one ranked first among them too, by its best sentence, whatever its score (`explain`)
        best_top = next((s for s in ranked if s.paper_index == top), None)
        if best_top is not None:
            chosen = [*chosen[:settings.max_answer_sentences - 1], best_top]
    # one paper: its contribution and what follows; several: each one's sentences that say what it did
    # (rag.answering.explain)
    one_paper = len({s.paper_index for s in chosen}) == 1 and not follow_up
    window = explain_order.passage(retrieval, chosen[0].paper_index, quotable) if one_paper else []
    chosen = window[:settings.max_answer_sentences] or explain_order.within_papers(retrieval, chosen, quotable)
    # With a Chinese question's English question words: what it asks as `rag.query.wording` read it with them.
    asking = replace(retrieval, wording=replace(retrieval.wording, asks=retrieval.wording.asks_in_english)
                     ) if asks else retrieval
    if one_paper:  # ... and the sentence holding the figure or result the question asks for, if not quoted yet
        chosen = explain_order.with_asked(asking, chosen, quotable)
    if not follow_up:  # the best-ranked paper's sentence giving an asked figure, cause or remedy
        chosen = explain_order.with_top_asked(asking, chosen, quotable)
    # ... and the sentence listing or naming what a "which (three) X" question asks for, if none quoted does
    chosen = explain_order.with_named(retrieval, chosen, quotable)
    # A sentence is quoted once: two papers can share one (a user's file and the bundled list holding the same
    # abstract under two ids), and the steps above may pick one sentence twice.
    chosen = _once(chosen)
    # Papers in rank order, not in the order of their best sentence's score: the paper read first is the one the
    # retrieval ranks first, which is the right one more often (read sets, 709 answered questions: the first cited
    # paper was the gold one for 0.777 in score order, 0.870 in rank order; thirteenth session).
    return [s for paper_index in sorted({s.paper_index for s in chosen})
            for s in sorted((s for s in chosen if s.paper_index == paper_index),
                            key=lambda s: _sentence_position(retrieval, s))]


def leads(ranked: list[ScoredSentence], lead: float) -> bool:
    """Whether the paper of the best sentence answers alone: its best sentence beats every other paper's best by
    LEAD (the question is about that paper, so other papers' sentences would only dilute the answer)."""
    others = [s.score for s in ranked if s.paper_index != ranked[0].paper_index]
    return bool(ranked) and (not others or ranked[0].score - max(others) >= lead)


def _names(authors: list[str], lang: str = "en") -> str:
    if lang == "zh":
        return "、".join(authors)
    return authors[0] if len(authors) == 1 else ", ".join(authors[:-1]) + " and " + authors[-1]


def _decision_kind(decision: str) -> str:
    return next((k.lower() for k in ("Oral", "Spotlight", "Poster") if k.lower() in decision.lower()), "")


def _once(sentences: list[ScoredSentence]) -> list[ScoredSentence]:
    """`sentences` without repeats of a text (spacing ignored), the first of each kept, in order."""
    seen: set[str] = set()
    out = []
    for s in sentences:
        key = " ".join(s.text.split())
        if key not in seen:
            seen.add(key)
            out.append(s)
    return out


def _sentence_position(retrieval: Retrieval, sentence: ScoredSentence) -> int:
    return retrieval.hits[sentence.paper_index].paper.abstract.find(sentence.text)


def _cite(sentence: str, n: int) -> str:
    """'X does Y.' -> 'X does Y [n].' so the citation sits inside the sentence it supports."""
    sentence = sentence.rstrip()
    if sentence.endswith((".", "!", "?")):
        return f"{sentence[:-1]} [{n}]{sentence[-1]}"
    return f"{sentence} [{n}]"
