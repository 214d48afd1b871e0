"""Collection answers: questions the collection's structure answers, not a search. "Which papers are related to
X?" from X's nearest papers (`rag.explore.related`), and "which topics have the most orals?" from the topic
clusters (`rag.explore.topicmap`): the topics ranked by the count asked for (orals, spotlights, posters or papers),
each with its counts and one or two example papers cited.
"""

from __future__ import annotations

from rag.answering.extractive import BULLET, _decision_kind
from rag.answering.records import Answer, Source, source_of
from rag.answering.wording import kind_name, language, say
from rag.explore.related import Related
from rag.explore.topicmap import KINDS, TopicMap, kind
from rag.query.filters import Filters
from rag.query.intent import Intent
from rag.store.index import StoredPaper


def related_answer(question: str, related: Related, notices: list[str], filters: Filters = Filters()) -> Answer:
    """ "Which papers are related to X?": X [1] and its nearest papers by whole-paper vector (`rag.explore.related`);
    "Which orals are related to X?": its nearest papers with that decision (`filters.decisions`)."""
    lang = language(question)
    kind = (" 或 " if lang == "zh" else " or ").join(kind_name(_decision_kind(d), lang)
                                                    for d in filters.decisions)  # "oral", "oral or spotlight"
    kinds = f"{kind} " if kind and lang == "en" else kind
    sources = [source_of(related.paper, 1)] + [source_of(nb.paper, i, nb.score)
                                                for i, nb in enumerate(related.related, start=2)]
    lines = [say("nearest_to", lang, kinds=kinds, title=sources[0].title)]
    lines += [f"{BULLET} {s.title} [{s.n}] ({say('similarity', lang)} {s.score:.2f})" for s in sources[1:]]
    if len(sources) == 1:
        lines = [say("none_near", lang, kinds=kinds, title=sources[0].title)]
    return Answer(question=question, answer="\n".join(lines), mode="extractive", abstained=False,
                  citations=list(sources), sources=sources, confidence=1.0, notices=notices, answer_type="related",
                  filters=filters)


# ---- "which topics have the most orals?" ----------------------------------------------------------------------

SHOWN = 5  # topics an answer lists


def answer_topics(question: str, intent: Intent, tmap: TopicMap, papers: list[StoredPaper],
                  notices: list[str] | None = None) -> Answer:
    """The `Answer` to a question about the topics: the SHOWN topics with the most (or fewest) papers of the kind
    the question names (`intent.decisions`, from its words: "orals" -> Accept (Oral)), each with its counts and one
    or two example papers of that kind, cited."""
    decisions = intent.decisions
    wanted = kind(decisions[0]) if len(decisions) == 1 else "papers"
    count = (lambda t: t.size) if wanted == "papers" else (lambda t: t.decisions.get(wanted, 0))
    fewest = intent.fewest
    ranked = sorted(tmap.topics, key=lambda t: (count(t) if fewest else -count(t), t.n))
    if not fewest:  # "the most orals": a topic with none is not among them
        ranked = [t for t in ranked if count(t) > 0]
    ranked = ranked[:SHOWN]
    by_id = {p.paper_id: p for p in papers}
    sources: list[Source] = []
    lines = []
    noun = {"Oral": "orals", "Spotlight": "spotlights", "Poster": "posters"}.get(wanted, "papers")
    for t in ranked:
        cited = []
        for pid in (t.examples.get(wanted) or t.examples.get("all") or [])[:2]:
            paper = by_id.get(pid)
            if paper is None:
                continue
            n = len(sources) + 1
            sources.append(source_of(paper, n))
            cited.append(f"“{sources[-1].title}” [{n}]")
        mix = ", ".join(f"{t.decisions.get(k, 0)} {k.lower()}{'s' if t.decisions.get(k, 0) != 1 else ''}"
                        for k in KINDS)
        lines.append(f"- topic {t.n}, {t.label}: {mix} ({t.size} papers)"
                     + (f"; e.g. {', '.join(cited)}" if cited else ""))
    order = "fewest" if fewest else "most"
    which = (f"The {len(ranked)} with the {order} {noun}:" if len(ranked) == SHOWN or fewest else
             f"Only {len(ranked)} of them have any {noun}:" if ranked else f"None of them has any {noun}.")
    head = (f"The {len(tmap.paper_ids):,} papers fall into {len(tmap.topics)} topics (clusters of their whole-paper "
            "vectors, each named by its most distinctive title and abstract words; `rag topics` lists them all). "
            + which)
    text = "\n".join([head, *lines])
    return Answer(question=question, answer=text, mode="extractive", abstained=not sources, citations=list(sources),
                  sources=sources, confidence=1.0, notices=list(notices or []), answer_type="topics",
                  filters=Filters(sorted_by=noun))
