"""Cited answers from the real seed index: the right papers, faithful quotes, abstention, follow-ups, bad input."""

from __future__ import annotations

import json
import re

import pytest
from helpers import DATA, ROOT, seed_paragraphs

from rag.config import Settings
from rag.generation.prompts import render_sources
from rag.engine import MAX_QUESTION_CHARS, Engine, QuestionError

DEV = [json.loads(line) for line in (ROOT / "eval" / "questions" / "seeds_dev.jsonl").read_text().splitlines()]
SEED_003 = seed_paragraphs("003_ca1cb07fa40ffbf8.txt")
SEED_000 = seed_paragraphs("000_99312b63f56aee43.txt")


def _is(source, abstract: str) -> bool:
    return source.text == abstract


@pytest.mark.parametrize("question, abstract", [
    ("Is there work on making sparse autoencoders cheaper to train?", SEED_000[2]),
    ("Which papers use diffusion models for image restoration?", SEED_000[12]),
    ("Can we speed up LLM decoding by zeroing small hidden-state values without any extra training?", SEED_003[16]),
    ("Given many trained networks, how can we tell which one was fine-tuned from which?", SEED_000[9]),
    ("Is there a large benchmark for classifying recordings of bird sounds?", SEED_003[14]),
    ("How can low-rank adapters be made to behave more like full fine-tuning of a foundation model?", SEED_003[1]),
])
def test_questions_written_from_the_abstracts_cite_the_right_paper(seed_engine, question, abstract):
    answer = seed_engine.ask(question)
    assert not answer.abstained
    assert _is(answer.sources[0], abstract), [s.title for s in answer.sources]
    assert any(_is(c, abstract) for c in answer.citations)


def test_the_dev_set_is_answered_from_the_right_papers(seed_engine):
    singles = [q for q in DEV if q["kind"] == "single"]
    assert len(singles) == 76
    top1 = cited = 0
    for q in singles:
        answer = seed_engine.ask(q["question"])
        gold = lambda s, q=q: s.text.startswith(q["gold"][0])  # noqa: E731
        top1 += gold(answer.sources[0])
        cited += any(gold(c) for c in answer.citations)
    assert top1 / len(singles) >= 0.95
    assert cited / len(singles) >= 0.90


def test_a_how_question_is_answered_by_what_the_authors_did_not_by_the_abstracts_opening(embedded_seed_engine):
    answer = embedded_seed_engine.ask("How do switch sparse autoencoders reduce the cost of training?")
    assert answer.answer_type == "explain" and answer.citations[0].title.endswith("Switch Sparse Autoencoders")
    # The opening scores highest against the question by cosine, and says nothing of how.
    assert "Sparse autoencoders (SAEs) are a recent technique" not in answer.answer
    assert "we introduce Switch Sparse Autoencoders, a novel SAE architecture aimed at reducing the compute cost" \
        in answer.answer


def test_a_question_naming_a_paper_is_answered_from_it_alone_and_never_with_its_code_link(embedded_seed_engine):
    from rag.text import is_boilerplate

    engine = embedded_seed_engine
    # "benchmark" draws a sentence of another paper above CURIE's own; the name decides which paper answers.
    curie = engine.ask("What is the CURIE benchmark?")
    assert [c.title.split(":")[0] for c in curie.citations] == ["CURIE"]
    assert "We introduce CURIE, a scientific long-Context Understanding" in curie.answer
    # Time-MoE's "Code is available at https://github.com/Time-MoE/Time-MoE" shares the name twice: not quoted.
    time_moe = engine.ask("What is Time-MoE?")
    assert "github" not in time_moe.answer and "we introduce Time-MoE, a scalable" in time_moe.answer
    assert 2 <= time_moe.answer.count("[1]") <= 3  # one paper's sentences, the title named once
    assert time_moe.answer.count("Time-MoE: Billion-Scale") == 1
    assert is_boilerplate("Our code is publicly available at https://github.com/mrflogs/LoRA-Pro.")
    assert is_boilerplate("The OMG dataset is publicly hosted on the Hugging Face Hub at https://huggingface.co/x")
    assert not is_boilerplate("We introduce CURIE, a benchmark to measure LLMs in scientific problem-solving.")


def test_a_how_question_about_one_paper_quotes_its_contribution_and_what_follows_in_order(seed_engine):
    answer = seed_engine.ask("How does Time-MoE scale forecasting models?")
    assert answer.answer_type == "explain" and [c.title for c in answer.citations] == [
        "Time-MoE: Billion-Scale Time Series Foundation Models with Mixture of Experts"]
    said = [answer.answer.find(part) for part in (
        "we introduce Time-MoE, a scalable and unified architecture",  # the contribution sentence
        "By leveraging a sparse mixture-of-experts (MoE) design",  # how: the sentence after it
        "This allows Time-MoE to scale effectively")]
    assert -1 not in said and said == sorted(said), answer.answer
    # The results sentence matches the question's words ("forecasting", "Time-MoE") and says nothing of how.
    assert "state-of-the-art solution" not in answer.answer


def test_a_question_asking_for_a_figure_or_results_also_gets_the_sentence_that_holds_it(seed_engine):
    for question in ("How many training samples was CatVTON trained on?", "What results does CatVTON report?"):
        answer = seed_engine.ask(question)
        assert [c.title for c in answer.citations] == [
            "CatVTON: Concatenation Is All You Need for Virtual Try-On with Diffusion Models"]
        # The contribution and what follows it, then the last sentence of the abstract, which holds the figure.
        assert "we propose CatVTON" in answer.answer and "public datasets with 73K samples" in answer.answer
    # The sentence giving the asked quantity, not merely one with a number in it.
    size = seed_engine.ask("How many parameters does Time-MoE scale to?")
    assert "2.4 billion parameters" in size.answer and "we introduce Time-MoE" in size.answer
    how = seed_engine.ask("How does CatVTON work?")  # asks neither: the passage alone
    assert "we propose CatVTON" in how.answer and "73K samples" not in how.answer


def test_the_paper_a_question_names_answers_even_when_another_has_the_best_sentence():
    import numpy as np

    from rag.answering.extractive import explain
    from rag.answering.records import sources_from
    from rag.config import Settings
    from rag.store.index import StoredPaper
    from rag.search.retrieve import Hit, Retrieval, ScoredSentence

    def paper(pid: str, title: str, abstract: str) -> StoredPaper:
        return StoredPaper(pid, abstract, title, title, (), "Accept (Poster)", "", "", 2025, "", pid)

    named = paper("a", "CURIE", "We introduce CURIE, a benchmark. It has ten tasks.")
    other = paper("b", "Other", "We benchmark many benchmarks.")
    sentences = [ScoredSentence("We benchmark many benchmarks.", 0.60, 1),
                 ScoredSentence("We introduce CURIE, a benchmark.", 0.58, 0),
                 ScoredSentence("It has ten tasks.", 0.50, 0)]
    retrieval = Retrieval("What is the CURIE benchmark?", [Hit(named, 1.0, 0.5, 3.0), Hit(other, 0.9, 0.5, 2.0)],
                          np.zeros(3), sentences=sentences, named_match="CURIE")
    text, cited = explain(retrieval, sources_from(retrieval), Settings())
    assert cited == [1] and text == "CURIE: We introduce CURIE, a benchmark [1]. It has ten tasks [1]."
    retrieval.named_match = ""  # no name, and no lead of 0.05: both papers are quoted, in rank order (the paper
    # ranked first leads the answer even when another has the best sentence)
    text, cited = explain(retrieval, sources_from(retrieval), Settings())
    assert cited == [1, 2] and text.startswith("CURIE: "), text


def test_a_count_whose_pool_ends_in_papers_that_belong_says_there_are_likely_more():
    import numpy as np

    from rag.answering.extractive import listing
    from rag.answering.records import sources_from
    from rag.config import Settings
    from rag.store.index import StoredPaper
    from rag.search.retrieve import Hit, Retrieval

    def hit(i: int, score: float) -> Hit:
        paper = StoredPaper(f"p{i}", f"Paper {i} is on graphs.", f"Graphs {i}", f"Graphs {i}", (), "", "", "",
                            2025, "", f"p{i}")
        return Hit(paper, 1.0 - i / 100, 0.5, 3.0, snippet=f"Paper {i} is on graphs.", snippet_score=score)

    # The engine decided 12 papers belong, the last of them near the end of the 100 it checked (`pool_full`).
    every = Retrieval("graphs", [hit(i, 0.8) for i in range(12)], np.zeros(3), k=12, members=12, pool=100,
                      pool_full=True)
    text, cited = listing("count", every, sources_from(every), Settings(), topic="graphs", shown=0)
    assert text.startswith("12 papers on graphs:\n") and "there are likely more" in text and len(cited) == 12
    # The first 10 shown, and how many more there are.
    text, cited = listing("count", every, sources_from(every), Settings(), topic="graphs")
    assert cited == list(range(1, 11)) and "… and 2 more (Show more on the page" in text
    # The papers belonging stop well before the last checked: an exact count.
    some = Retrieval("graphs", [hit(i, 0.8) for i in range(4)], np.zeros(3), k=4, members=4, pool=100)
    text, cited = listing("count", some, sources_from(some), Settings(), topic="graphs")
    assert text.startswith("4 papers on graphs:") and "likely more" not in text and len(cited) == 4


def test_text_from_papers_cannot_reorder_the_page_with_bidi_controls():
    from rag.web.render import highlight, inert

    title = "Evil \u202eTitle\u202c, \u2067end\u2069 \u05e9\u05dc\u05d5\u05dd"  # RLO ... PDF, RLI ... PDI, Hebrew
    for shown in (inert(title), highlight(title, "title")):
        assert not any(0x202A <= ord(c) <= 0x202E or 0x2066 <= ord(c) <= 0x2069 for c in shown)
        assert "\u05e9\u05dc\u05d5\u05dd" in shown  # right-to-left letters stay


def test_every_citation_marks_a_verbatim_sentence_of_the_cited_abstract(seed_engine):
    for question in ["How does gradient clipping affect SGD in high dimensions?",
                     "Which papers make large language models cheaper to train or run?",
                     "What benchmarks evaluate large language models?"]:
        answer = seed_engine.ask(question)
        assert answer.citations, question
        by_n = {s.n: s for s in answer.sources}
        # Each paper's lines start with its title ("Title: ..." or "• Title: ..."), named once; then its sentences.
        text = answer.answer
        for s in answer.sources:
            text = re.sub(rf"(?m)^(?:• )?{re.escape(s.title)}: ", "", text)
        pieces = re.findall(r"(.+?) \[(\d+)\]([.!?]?)\s*", text)
        assert pieces and "".join(p[0] for p in pieces)
        if answer.answer_type == "list":  # a first line (no citation) says in plain words what was found
            assert re.match(rf"{answer.listed} papers? (?:on|that) [^\n]+:\n", answer.answer)
        for sentence, n, end in pieces:
            source = by_n[int(n)]
            assert (sentence + end) in source.text or sentence in source.text, (sentence, source.title)
        assert [c.n for c in answer.citations] == list(dict.fromkeys(int(n) for _, n, _ in pieces))
        assert {c.n for c in answer.citations} <= set(by_n)
        assert [s.n for s in answer.sources] == list(range(1, len(answer.sources) + 1))
        assert all(s.snippet and s.snippet in s.text for s in answer.sources)


@pytest.mark.parametrize("question", [
    "What is the best recipe for chocolate cake?",
    "Which papers study jailbreak attacks on aligned chatbots?",
    "Are there papers on symbolic music generation?",
])
def test_off_topic_questions_abstain_and_list_the_nearest_papers(seed_engine, question):
    answer = seed_engine.ask(question)
    assert answer.abstained
    assert answer.citations == []
    assert "does not appear to cover" in answer.answer
    assert not re.search(r"\[\d+\]", answer.answer)
    assert len(answer.sources) == 5 and answer.sources[0].title in answer.answer


def test_a_follow_up_is_searched_with_the_previous_question(seed_engine):
    first = "Which paper introduces a billion-scale time series foundation model?"
    said = "It scales a time series model to 2.4 billion parameters [1]."  # an LLM's answer: no title in it
    history = [{"role": "user", "content": first}, {"role": "assistant", "content": said}]
    alone = seed_engine.ask("What data did they pre-train it on?")
    follow = seed_engine.ask("What data did they pre-train it on?", history=history)
    # Without paper ids in the history (an API caller's plain turns) and no title in the answer, a pronoun glues
    # the previous question on.
    assert follow.retrieval_query == "Which paper introduces a billion-scale time series foundation model? What " \
        "data did they pre-train it on?" and follow.focus == []
    assert _is(follow.sources[0], SEED_003[12])  # Time-MoE
    assert follow.question == "What data did they pre-train it on?"
    assert alone.retrieval_query == ""
    # An answer naming the paper's title (every extractive answer does): the follow-up is about that paper.
    history[1]["content"] = seed_engine.ask(first).answer
    named = seed_engine.ask("What data did they pre-train it on?", history=history)
    assert named.focus == [named.citations[0].paper_id] and _is(named.citations[0], SEED_003[12])


def test_a_follow_up_to_a_huge_previous_question_is_searched_within_the_question_cap(seed_engine):
    """Issue 49 #10: a follow-up was searched joined to the whole previous user turn of the history, 20,000
    characters (6.5 s instead of 0.3 s); a question is cut to MAX_QUESTION_CHARS, and so is text taken from history."""
    from rag.engine import MAX_QUESTION_CHARS, check_history

    first = "Which paper introduces a billion-scale time series foundation model? " + "Time series. " * 1_600
    assert len(first) > 20_000
    history = [{"role": "user", "content": first}, {"role": "assistant", "content": "It scales a model [1]."}]
    assert len(check_history(history)[0]["content"]) == MAX_QUESTION_CHARS
    follow = seed_engine.ask("What data did they pre-train it on?", history=history)
    assert follow.retrieval_query.startswith("Which paper introduces a billion-scale time series foundation model?")
    assert len(follow.retrieval_query) <= MAX_QUESTION_CHARS and _is(follow.sources[0], SEED_003[12])  # Time-MoE


def test_empty_and_huge_questions(seed_engine):
    for empty in ["", "   \n\t ", "\x00\x07"]:
        with pytest.raises(QuestionError, match="empty"):
            seed_engine.ask(empty)
    huge = "sparse autoencoders " * 10_000
    answer = seed_engine.ask(huge)
    assert len(answer.question) == MAX_QUESTION_CHARS
    assert "only the first 2,000 were used" in answer.notices[0]
    assert _is(answer.sources[0], SEED_000[2])


def test_terminal_escapes_pasted_into_a_question_go_whole(seed_engine):
    """A question copied from a terminal keeps its colour codes: dropping only their ESC byte left "[1m" and "[0m"
    in the search, and a newcomer's "graph neural networks" in bold was not covered."""
    plain = seed_engine.ask("Which papers study watermarking?")
    for pasted in ("\x1b[1mWhich papers study watermarking?\x1b[0m", "\x1b]0;pwned\x07Which papers study \x9b31m"
                   "watermarking?"):
        answer = seed_engine.ask(pasted)
        assert answer.question == "Which papers study watermarking?", answer.question
        assert answer.cited_ids == plain.cited_ids


def test_markup_pasted_into_a_question_is_left_out_of_the_search(seed_engine):
    plain = seed_engine.ask("Which papers study watermarking?")
    for pasted in ("<script>alert(1)</script> Which papers study watermarking?",
                   "Which papers study <b>watermarking</b>? <img src=x onerror=alert(1)>",
                   "<svg/onload=alert(1)> Which papers study watermarking?",
                   "&lt;script&gt;alert(1)&lt;/script&gt; Which papers study watermarking?",
                   """<img src=x onerror="alert('>')"> Which papers study watermarking?""",
                   "<!-- note --> Which papers study watermarking? ![x](http://evil.example/x.png)",
                   "[Which papers](javascript:alert(1)) study watermarking?"):
        answer = seed_engine.ask(pasted)
        assert answer.question == "Which papers study watermarking?" and not answer.abstained, pasted
        assert answer.cited_ids == plain.cited_ids
        assert "Markup in the question was left out of the search." in answer.notices
    with pytest.raises(QuestionError, match="empty once its markup is left out"):
        seed_engine.ask("<script>alert(1)</script>")
    # Not markup: kept as written.
    for text in ("Is p < 0.05 and q > 1 a good threshold?", "Which papers show accuracy<baseline and loss>0?",
                 "Is List<String> slower than R&D budgets?"):
        kept = seed_engine.ask(text)
        assert kept.question == text and not any("Markup" in n for n in kept.notices)
    # A huge paste of unclosed tags is cut to the question limit before the markup is looked at.
    flood = seed_engine.ask("<script " * 500_000 + "Which papers study watermarking?")
    assert "only the first 2,000 were used" in flood.notices[0]


def test_k_and_the_decision_filter(tmp_path):
    engine = Engine(Settings.load(data_dir=tmp_path / "index", k=3))
    engine.ingest([DATA / "papers_small.jsonl"])
    assert len(engine.ask("How are generative models evaluated?").sources) == 3
    assert len(engine.ask("How are generative models evaluated?", k=6).sources) == 6
    orals = engine.ask("protein structure generation and agents for machine learning engineering", k=5,
                       decision="Accept (Oral)")
    assert orals.sources and {s.decision for s in orals.sources} == {"Accept (Oral)"}
    assert {s.title for s in orals.sources} == {
        "ProtComposer: Compositional Protein Structure Generation with 3D Ellipsoids",
        "MLE-bench: Evaluating Machine Learning Agents on Machine Learning Engineering"}
    top = engine.ask("speculative decoding for visual autoregressive image generation").sources[0]
    assert top.title.startswith("LANTERN") and top.url == "https://openreview.net/forum?id=98d7DLMGdt"
    assert top.decision == "Accept (Poster)" and top.authors and top.has_title


def test_author_and_several_decisions_filter_the_papers(tmp_path):
    records = [json.loads(line) for line in (DATA / "papers_small.jsonl").read_text().splitlines()]
    lantern = next(r for r in records if r["title"].startswith("LANTERN"))
    author = lantern["authors"][0]
    engine = Engine(Settings.load(data_dir=tmp_path / "index"))
    engine.ingest([DATA / "papers_small.jsonl"])
    by_author = engine.ask("generative models", author=author.upper()[1:-1])
    assert by_author.sources and all(any(author[1:-1].lower() in a.lower() for a in s.authors)
                                     for s in by_author.sources)
    assert by_author.sources[0].title == lantern["title"]
    nobody = engine.ask("generative models", author="No Such Person")
    assert nobody.sources == [] and nobody.abstained
    both = engine.ask("generation", decision=["Accept (Oral)", "Accept (Spotlight)"], k=8)
    assert len(both.sources) == 4 and {s.decision for s in both.sources} == {"Accept (Oral)", "Accept (Spotlight)"}


# ---- title-only papers: found and listed, never quoted -----------------------------------------------------------

SPECULATIVE = "Which papers use speculative decoding to accelerate autoregressive image generation?"
JACOBI = "LZfjxvqw0N"  # in tests/data/papers_title_only.jsonl: an accepted paper known by title and authors only


@pytest.fixture(scope="module")
def titles_engine(tmp_path_factory):
    """A real store of 8 corpus papers with abstracts and 2 title-only papers on speculative decoding."""
    engine = Engine(Settings.load(data_dir=tmp_path_factory.mktemp("titles") / "index"))
    stats = engine.ingest([DATA / "papers_small.jsonl", DATA / "papers_title_only.jsonl"])
    assert (stats.added, stats.problems) == (10, [])
    return engine


def test_a_title_only_paper_is_found_by_its_title_and_never_quoted(titles_engine):
    answer = titles_engine.ask(SPECULATIVE)
    jacobi = next(s for s in answer.sources if s.paper_id == JACOBI)
    assert jacobi.title.startswith("Accelerating Auto-regressive Text-to-Image Generation with Training-free "
                                   "Speculative Jacobi Decoding")
    assert (jacobi.has_abstract, jacobi.text, jacobi.snippet) == (False, "", "")
    assert jacobi.url == f"https://openreview.net/forum?id={JACOBI}" and jacobi.authors
    # The answer quotes LANTERN's abstract, the one that has text; the title-only paper is listed, never quoted.
    assert answer.answer_type == "list" and not answer.abstained
    assert answer.citations[0].title.startswith("LANTERN")
    assert f"{jacobi.title} [{jacobi.n}] (title only: the list has no abstract for it)" in answer.answer
    assert f"[{jacobi.n}]." not in answer.answer and f"{jacobi.title}:" not in answer.answer
    explained = titles_engine.ask("How does speculative decoding accelerate autoregressive image generation?")
    assert explained.answer_type == "explain" and explained.citations
    assert all(c.has_abstract for c in explained.citations) and f"[{jacobi.n}]" not in explained.answer
    assert answer.retrieval_query == "speculative decoding to accelerate autoregressive image generation"
    retrieval = titles_engine.retriever.retrieve(answer.retrieval_query)
    assert retrieval.sentences and all(retrieval.hits[s.paper_index].paper.has_abstract for s in retrieval.sentences)
    assert answer.confidence == round(retrieval.sentences[0].score, 4)  # the confidence is an abstract's sentence
    assert (f'<source n="{jacobi.n}">\nTitle: {jacobi.title}\nAbstract: (not available: title and authors only)\n'
            '</source>') in render_sources(answer.sources)


def test_a_title_only_paper_ranked_first_has_no_say_in_the_answer(titles_engine):
    answer = titles_engine.ask("PEARL: Parallel Speculative Decoding with Adaptive Draft Length")
    assert answer.sources[0].paper_id == "QOXrVMiHGK" and not answer.sources[0].has_abstract
    retrieval = titles_engine.retriever.retrieve("PEARL: Parallel Speculative Decoding with Adaptive Draft Length")
    assert all(retrieval.hits[s.paper_index].paper.has_abstract for s in retrieval.sentences)
    assert retrieval.named_match == ""  # "PEARL" is in the title-only paper alone: no name match to lean on
    assert "[1]" not in answer.answer


def test_a_title_only_paper_is_found_by_its_authors_and_listed(titles_engine):
    answer = titles_engine.ask("speculative decoding", author="guohao dai")
    assert [s.paper_id for s in answer.sources] == [JACOBI]
    assert answer.abstained and answer.citations == [] and answer.confidence == 0.0
    assert answer.sources[0].title in answer.answer  # listed among the nearest papers, not quoted


def test_title_only_papers_ranked_first_leave_room_for_abstracts_to_answer(tmp_path):
    """Over the 3,706 papers `make run` serves, "Are there papers on graph neural networks?" had five title-only
    papers as its top five: nothing to quote, so it came back unsure. Six title-only papers on speculative decoding
    (tests/data/papers_title_only.jsonl, papers_speculative_titles.jsonl: real ICLR 2025 titles no source had an
    abstract for) beside eight abstracts do the same here. The top five keep three places for papers with
    abstracts, the best title-only papers keep the others, and none is dropped from a longer list."""
    from rag.search.retrieve import RetrievalParams

    engine = Engine(Settings.load(data_dir=tmp_path / "index"))
    engine.ingest([DATA / "papers_small.jsonl", DATA / "papers_title_only.jsonl",
                   DATA / "papers_speculative_titles.jsonl"])
    question = "Are there papers on speculative decoding?"
    answer = engine.ask(question)
    assert answer.outcome == "answered" and answer.answer_type == "list", answer.answer
    top = engine.search(question, k=5).sources
    assert [s.has_abstract for s in top].count(True) == 3 and len(top) == 5
    lantern = next(s for s in answer.sources if s.title.startswith("LANTERN"))
    assert f"[{lantern.n}]" in answer.answer and lantern in answer.citations
    assert any(not s.has_abstract for s in answer.citations)  # titles naming the topic are listed beside it
    titles = [h.paper.paper_id for h in engine.retriever.retrieve(question, RetrievalParams(k=10)).hits
              if not h.paper.has_abstract]
    assert len(titles) == 6  # all six in a longer list
    assert [h.paper.paper_id for h in engine.retriever.retrieve(question).hits if not h.paper.has_abstract] \
        == titles[:2]  # the best two of them, in their order


def test_a_title_only_paper_is_listed_only_when_its_title_holds_most_of_the_topic():
    """At 3,706 papers "Which papers study oversmoothing in graph neural networks?" listed two titles saying only
    "Graph Neural Networks": half the topic's weight, enough for an abstract (TOPIC_BAR) but all a title-only paper
    shows. A title-only paper needs `title_topic_bar` of the best-covered paper's share."""
    import numpy as np

    from rag.answering.extractive import passes_bar
    from rag.search.retrieve import Hit, Retrieval
    from rag.store.index import StoredPaper

    def paper(pid: str, abstract: str) -> StoredPaper:
        return StoredPaper(pid, abstract, f"Title {pid}", f"Title {pid}", (), "Accept (Poster)", "", "", 2025, "", pid,
                           has_abstract=bool(abstract))

    hits = [Hit(paper("a", "We prove residual connections prevent oversmoothing."), 1.0, 0.7, 3.0),
            Hit(paper("half", ""), 0.9, 0.72, 2.0), Hit(paper("most", ""), 0.8, 0.71, 2.0),
            Hit(paper("b", "Graph neural networks, in general."), 0.7, 0.7, 1.0)]
    for hit, topical in zip(hits, (1.0, 0.5, 0.8, 0.5), strict=False):
        hit.snippet_score, hit.topical = (0.8 if hit.paper.abstract else 0.0), topical
    retrieval = Retrieval("oversmoothing in graph neural networks", hits, np.zeros(3))
    settings = Settings()
    assert settings.policy.topic_bar <= 0.5 < settings.policy.title_topic_bar <= 0.8
    assert passes_bar(retrieval, settings) == [0, 2, 3]  # the half-topic title is left out, the abstract kept
    # Lists are decided over the fused ranking: a paper ranked far below the best is out whatever its sentence.
    hits[3].score = 0.3
    assert passes_bar(retrieval, settings) == [0, 2]


def test_an_answer_says_when_no_paper_mentions_a_name_the_question_uses(seed_engine):
    unknown = seed_engine.ask("How does ZephyrineNet improve virtual try-on with diffusion models?")
    assert not unknown.abstained and unknown.citations  # answered from the nearest paper (CatVTON) ...
    assert "No paper in the list mentions “ZephyrineNet”: the answer is from the nearest papers." in unknown.notices
    for known in ("How does CatVTON improve virtual try-on with diffusion models?",
                  "Are there CatVTON-like methods for virtual try-on?"):  # "-like": the papers say "CatVTON"
        assert not any("No paper in the list mentions" in n for n in seed_engine.ask(known).notices), known
    refused = seed_engine.ask("What is the best recipe for ZephyrineNet sourdough bread?")
    assert refused.abstained and "No paper in the list mentions “ZephyrineNet”." in refused.notices


def _one_paper(abstract: str, scored: list[tuple[str, float]], question: str):
    import numpy as np

    from rag.answering.records import sources_from
    from rag.search.retrieve import Hit, Retrieval, ScoredSentence
    from rag.store.index import StoredPaper

    paper = StoredPaper("p", abstract, "Paper", "Paper", (), "Accept (Poster)", "", "", 2025, "", "p")
    retrieval = Retrieval(question, [Hit(paper, 1.0, 0.5, 3.0)], np.zeros(3),
                          sentences=[ScoredSentence(text, score, 0) for text, score in scored])
    return retrieval, sources_from(retrieval)


def test_a_sentence_is_quoted_once_in_an_answer():
    """A one-paper answer with no "we propose" sentence is its best sentences re-scored (`explain.ranked`), then
    the sentence holding the asked result joins them: it was compared with its re-scored copy, found "missing",
    and quoted a second time."""
    from rag.answering.extractive import explain

    sentences = ["Sparse autoencoders are costly to train.", "Our experiments show training is 5x faster.",
                 "The dictionary has 1M features."]
    retrieval, sources = _one_paper(" ".join(sentences), [(sentences[1], 0.62), (sentences[0], 0.40),
                                                          (sentences[2], 0.35)], "What results does it report?")
    text, cited = explain(retrieval, sources, Settings())
    assert cited == [1] and text.count("Our experiments show training is 5x faster [1].") == 1, text


def test_a_list_number_is_not_taken_for_a_sentence_end():
    """AutoG's abstract (bundled) lists "two critical challenges: 1. The absence of ..., and 2. Existing ...": its
    stored sentences, and so an answer quoting them, once ended at "challenges: 1." ("... challenges: 1 [1].")."""
    from rag.answering.extractive import explain
    from rag.store.catalog import BUNDLED
    from rag.store.ingest import read_paths
    from rag.text import split_sentences

    autog = next(p for p in read_paths(BUNDLED[:1]).papers if p.paper_id == "hovDbX4Gh6")
    sentences = split_sentences(autog.abstract)
    challenge = next(s for s in sentences if "two critical challenges" in s)
    assert challenge.startswith("We identify two critical challenges to achieve this goal: 1. The absence of")
    assert not any(re.search(r"(?:^|[:;])\s*\d\.$", s) for s in sentences), sentences
    # A sentence that ends with a number still ends there.
    assert split_sentences("We improve accuracy by 12. The method is simple.") == [
        "We improve accuracy by 12.", "The method is simple."]
    retrieval, sources = _one_paper(autog.abstract, [(challenge, 0.7)], "What challenges does AutoG identify?")
    text, _ = explain(retrieval, sources, Settings())
    assert "challenges to achieve this goal: 1. The absence of" in text and ": 1 [1]" not in text, text


def test_how_many_words_beside_the_refusal_phrase_still_refuse_is_the_policys():
    """`AnswerPolicy.refusal_extra_words` (12) decides whether an uncited LLM answer holding the refusal phrase is an
    abstention: a polite sentence around it is, SmolLM2's junk around it is not."""
    from rag.answering.compose import is_refusal
    from rag.config import DEFAULT_POLICY, Settings

    polite = "I'm sorry, but the sources do not contain an answer to this question."
    junk = "Sure " * 12 + "the sources do not contain an answer."  # 13 words besides the phrase
    assert DEFAULT_POLICY.refusal_extra_words == Settings.load().policy.refusal_extra_words == 12
    assert is_refusal(polite) and not is_refusal(junk)
    assert is_refusal(junk, extra_words=13) and not is_refusal(polite, extra_words=3)


def test_an_unsure_answer_says_a_closest_paper_is_known_by_its_title_only():
    # A newcomer read an unsure answer's bare bullet "“CircuitFusion: ...” [2]" (a title-only paper) as unfinished.
    from rag.answering.extractive import unsure_text
    from rag.answering.records import Source

    def source(n: int, has_abstract: bool) -> Source:
        return Source(n=n, paper_id=f"p{n}", title=f"Paper {n}", authors=["A"], decision="Accept (Poster)", url="",
                      text="Its abstract." if has_abstract else "", snippet="Its nearest sentence." if has_abstract
                      else "", score=1.0, has_abstract=has_abstract)

    notes = {"en": "(title only: the list has no abstract for it)", "zh": "（只有标题：列表中没有它的摘要）"}
    for lang, note in notes.items():
        text, cited = unsure_text([source(1, True), source(2, False)], lang=lang)
        assert cited == [1, 2] and "“Paper 1” [1]: Its nearest sentence." in text
        assert f"“Paper 2” [2] {note}" in text.splitlines()[-1]
