"""Whether a turn leans on the conversation is decided by the evidence (issue 53), over the bundled 2,114 abstracts
where the learned gate speaks: a real engine on a store in a temp dir (`corpus_engine`), the app's own first answer
as the history, as the page and `rag chat` pass it."""

from __future__ import annotations

from rag.engine import NO_PAPER_BEFORE

HEADS = "EytBpUGB1Z"  # Retrieval Head Mechanistically Explains Long-Context Factuality
SAMPLERS = "YcUV5apdlq"  # Multilevel Generative Samplers for Investigating Critical Phenomena
SKEWNESS = "zGzs5SIwT8"  # A Skewness-Based Criterion for Addressing Heteroscedastic Noise in Causal Discovery
POINT_CLOUDS = "ANBuEJesgx"  # MIRACLE 3D: ... Continual Learning on 3D Point Clouds via Shape Model Construction


def turn(engine, question: str, history: list[dict] | None = None):
    """Ask, and the history after it, as `rag chat` keeps it."""
    answer = engine.ask(question, history=history)
    return answer, [*(history or []), {"role": "user", "content": question},
                    {"role": "assistant", "content": answer.answer, "paper_ids": answer.cited_ids,
                     "outcome": answer.outcome}]


def test_a_follow_up_without_a_pronoun_is_answered_from_the_first_answers_paper(corpus_engine):
    """"What share of the heads are like that?" names no paper and says no "they": read by its words it was a new
    question, and the page answered it from an avatar paper and a mouse "head-fixed" one."""
    first, history = turn(corpus_engine, "Which paper finds the attention heads that retrieve facts from a long "
                                         "context?")
    assert first.cited_ids[0] == HEADS
    answer, _ = turn(corpus_engine, "What share of the heads are like that?", history)
    assert answer.focus == [HEADS] and [c.paper_id for c in answer.citations] == [HEADS]
    assert answer.outcome == "answered"
    # ... and in Chinese, "那个方法" (that method) as much as "它" (it)
    first, history = turn(corpus_engine, "有没有基于分数偏度来处理异方差噪声的因果发现方法？")
    assert first.cited_ids[0] == SKEWNESS
    for question in ("那个方法需要什么假设？", "它是谁写的？"):
        answer, _ = turn(corpus_engine, question, history)
        assert answer.focus == [SKEWNESS] and answer.citations[0].paper_id == SKEWNESS, question


def test_a_new_question_ending_which_one_was_it_finds_its_own_paper(corpus_engine):
    """After an answer about Ising samplers, a description of another paper ending "Which one was it?" was read as
    about the samplers ("it") and answered "Not covered: the abstract of 'Multilevel Generative Samplers...' does not
    appear to say"; its own search finds its paper first, so it stays a new question."""
    question = ("I read about a continual learning method for 3D point clouds that keeps only a mean shape and a few "
                "modes of variation per class. Which one was it?")
    alone = corpus_engine.ask(question)
    assert alone.sources[0].paper_id == POINT_CLOUDS
    first, history = turn(corpus_engine, "Which paper builds multilevel generative samplers for the critical "
                                         "phenomena of Ising models?")
    assert first.cited_ids[0] == SAMPLERS
    answer, history = turn(corpus_engine, question, history)
    assert answer.focus == [] and answer.sources[0].paper_id == POINT_CLOUDS
    assert answer.outcome == "answered" and answer.citations[0].paper_id == POINT_CLOUDS
    # A topic no paper covers, after that answer: its rare words ("volcanic", "seismic") are in no paper of the
    # answer, so it is new too, and not answered from the point-cloud paper.
    answer, _ = turn(corpus_engine, "Which papers forecast volcanic eruptions from seismic data?", history)
    assert answer.focus == [] and answer.outcome != "answered"


def test_a_follow_up_after_not_covered_has_no_paper_to_lean_on(corpus_engine):
    """After "Not covered" on volcano forecasting, "How many volcanoes did they train on?" was answered from an
    unrelated sentence holding "N=200": it is a new question, not answered here, and the answer says why it was
    searched alone."""
    first, history = turn(corpus_engine, "Which papers forecast volcanic eruptions from seismic data?")
    assert first.outcome != "answered"
    answer, _ = turn(corpus_engine, "How many volcanoes did they train on?", history)
    assert answer.focus == [] and answer.retrieval_query == "" and answer.outcome != "answered"
    assert NO_PAPER_BEFORE in answer.notices
    # A history without outcomes (written by hand) says it by the answer's opening words.
    bare = [{k: v for k, v in t.items() if k != "outcome"} for t in history]
    answer = corpus_engine.ask("How many volcanoes did they train on?", history=bare)
    assert answer.focus == [] and answer.outcome != "answered" and NO_PAPER_BEFORE in answer.notices


def test_a_follow_up_after_an_unsure_answer_leans_on_its_closest_paper_and_stays_unsure(corpus_engine):
    """An unsure answer quotes the closest papers, the right one first most of the time: the next turn, which names
    no paper, is about it (after "unsure" it was searched alone and lost it), and is at most unsure itself, since
    the first answer was unsure those papers answer."""
    from helpers import NEAR_MISS

    first, history = turn(corpus_engine, NEAR_MISS)
    assert first.outcome == "unsure" and first.citations[0].title.startswith("CatVTON")
    answer, _ = turn(corpus_engine, "What datasets were used to evaluate it?", history)
    assert answer.focus and answer.focus[0] == first.cited_ids[0] and NO_PAPER_BEFORE not in answer.notices
    assert answer.outcome == "unsure" and answer.citations[0].title.startswith("CatVTON")
    # A history without outcomes says it by the answer's opening words.
    bare = [{k: v for k, v in t.items() if k != "outcome"} for t in history]
    assert corpus_engine.ask("What datasets were used to evaluate it?", history=bare).outcome == "unsure"
