"""The asked fact, quoted (issue 29 item 5): a "which three X" / "which method" / "what kinds of X" question over the
bundled 2,114 abstracts gets the sentence of the paper that lists or names them, not only its contribution."""

from __future__ import annotations

import pytest

from rag.answering.explain import asked_things
from rag.query import wording

SUB_TASKS = ("It contains three fundamental sub-tasks: interactive segmentation, panoptic segmentation, and video "
             "instance segmentation")
PREFIXES = ("We consider prefix distributions consisting random token sequences, mixtures of manual jailbreaks, and "
            "perturbations of jailbreaks in LLM's embedding space")


def test_which_three_sub_tasks_quotes_the_sentence_listing_them_and_what_it_refers_to(corpus_engine):
    answer = corpus_engine.ask("Which three sub-tasks does RMP-SAM perform in real time?")
    assert answer.outcome == "answered" and answer.citations[0].title.startswith("RMP-SAM")
    assert SUB_TASKS in answer.answer
    # "It contains ..." names its "it" only after the sentence before it, which is quoted too, in abstract order.
    setting = "this work explores a novel real-time segmentation setting called real-time multi-purpose segmentation"
    assert setting in answer.answer and answer.answer.index(setting) < answer.answer.index(SUB_TASKS)
    # The contribution passage stays: the list joins it.
    assert "we present a novel dynamic convolution-based method, Real-Time Multi-Purpose SAM (RMP-SAM)" in answer.answer


def test_which_simple_method_quotes_the_sentence_naming_it(corpus_engine):
    answer = corpus_engine.ask("Which simple debiasing method reduces the camera bias of person re-identification "
                               "models on unseen domains?")
    assert answer.outcome == "answered"
    assert answer.citations[0].title == "Exploring the Camera Bias of Person Re-identification"
    # "We analyze why this simple method is effective ..." alone does not say which method it is.
    assert "As a debiasing method for unseen domain data, we revisit feature normalization on embedding vectors" \
        in answer.answer


def test_a_follow_up_asking_what_kinds_quotes_the_sentence_listing_them(corpus_engine):
    first = corpus_engine.ask("What does LLMCert-B certify?")
    assert first.citations[0].title == "Certifying Counterfactual Bias in LLMs"
    history = [{"role": "user", "content": "What does LLMCert-B certify?"},
               {"role": "assistant", "content": first.answer, "paper_ids": first.cited_ids}]
    follow_up = "What kinds of prefixes are applied to the prompts?"
    # The gate refit on the dev sets (issue 29 item 4, cut points 0.26 / 0.78) finds this vague follow-up, searched as
    # a question of its own, unsure (p 0.40; the old gate's 0.32 was under its 0.44): the paper is still cited first.
    shipped = corpus_engine.ask(follow_up, history=history)
    assert shipped.outcome in ("answered", "unsure")
    assert shipped.citations[0].title == "Certifying Counterfactual Bias in LLMs"
    # What this test is about is the quoting of an answered one: with the unsure cut above its probability.
    answer = corpus_engine.derive(abstain_model_threshold=0.5).ask(follow_up, history=history)
    assert answer.outcome == "answered" and answer.citations[0].title == "Certifying Counterfactual Bias in LLMs"
    assert PREFIXES in answer.answer
    # Only what asks for things by kind or number adds a sentence: these ask what the passage already says.
    assert asked_things(wording.read("What kinds of prefixes are applied to the prompts?")) == (["prefix"], "")
    for question in ("What does LLMCert-B certify?", "What guarantees does uniINF achieve?",
                     "What is the main idea of StartGrad?", "Which papers use diffusion models?"):
        assert asked_things(wording.read(question)) == ([], ""), question


# The asked figure, cause or remedy of a description-style question (issue 29: facts stated), from describe_dev and
# describe_final2/9 (dev sets): the sentence that holds it joins the answer, beside the others.

def test_a_second_sentence_asking_what_rate_quotes_the_figure(corpus_engine):
    # "... code search? What pass rate ...": the capitalised "What" starting the second sentence is not a name, so
    # the question still asks for a figure once its names are masked.
    answer = corpus_engine.ask("Does having an LLM first brainstorm ideas and plans in plain English, then write code "
                               "from them, help repeated-sampling code search? What pass rate does it reach on a "
                               "leak-free competitive programming set?")
    assert answer.citations[0].title == "Planning in Natural Language Improves LLM Search for Code Generation"
    assert "pass@200 of 77.0% on LiveCodeBench" in answer.answer


def test_a_figure_question_answered_from_several_papers_quotes_the_best_ranked_ones_figure(corpus_engine):
    answer = corpus_engine.ask("How fast does the feed-forward method that builds a drivable 3D human from a few "
                               "photos, mixing a mesh with Gaussian splats, render at high resolution, and how long "
                               "does building it take?")
    assert len(answer.citations) > 1 and answer.citations[0].title.startswith("LIFe-GoM")
    assert "renders views with 95.1FPS" in answer.answer and "in less than 1s" in answer.answer


def test_a_why_question_quotes_the_sentence_giving_the_cause(corpus_engine):
    answer = corpus_engine.ask("Why do pairwise preference-optimization losses for LLM alignment tend to be unstable "
                               "and touchy about settings, particularly on mathematical reasoning data?")
    assert "these issues arise from the unidirectional likelihood-derivative negative feedback" in answer.answer


def test_a_how_can_question_quotes_the_best_ranked_papers_contribution(corpus_engine):
    answer = corpus_engine.ask("How can a deep network that recovers camera positions and 3D structure from many "
                               "photos cope with lots of wrong point matches?")
    assert "multiview inlier/outlier classification module" in answer.answer


@pytest.mark.parametrize("question", [
    "有没有把人读回答时的眼动数据加进奖励模型、用来对齐大语言模型的研究？",
    "Is there any work that feeds eye-tracking signals of people reading answers into a reward model for aligning "
    "LLMs?",
])
def test_an_is_there_question_is_answered_with_the_work_it_describes_and_its_name(corpus_engine, question):
    """"Is there work that ...?" / "有没有…的研究？" asks whether a work fits a description. As a list, its answer
    quoted the paper's opening sentence ("Advancements in NLP have led to ...") and never said what the work is;
    as an explanation, the paper's contribution sentence names it."""
    answer = corpus_engine.ask(question)
    assert answer.answer_type == "explain" and answer.outcome == "answered", (answer.answer_type, answer.outcome)
    assert "we introduce GazeReward" in answer.answer, answer.answer
    assert answer.citations[0].title.startswith("Seeing Eye to AI")


def test_a_chinese_question_asking_how_much_quotes_the_figure(corpus_engine):
    """A Chinese question's search terms are English and drop its question words (多少 "how much"), so the answer
    step reads what it asks from `Intent.asks`: the sentence giving the speed-up joins the passage."""
    answer = corpus_engine.ask("把 Transformer 里的嵌入和隐藏状态都归一化到单位球面上，训练能加速多少倍？")
    assert answer.citations[0].title.startswith("nGPT"), answer.answer
    assert "by a factor of 4 to 20" in answer.answer, answer.answer


def test_a_digit_inside_a_name_is_not_a_figure():
    """"GPT-4o", "3D", "FP16" hold digits but state no figure: the sentence naming them is not the one giving an
    asked quantity ("The advent of real-time LMMs like GPT-4o ..." was quoted for "how much compute does it save?")."""
    from rag.answering.explain import states_figure
    assert not any(states_figure(t) for t in ("models like GPT-4o", "in 3D", "FP16 weights", "Llama-2"))
    assert all(states_figure(t) for t in ("by 77%", "23$\\times$ faster", "2.4 billion", "73K samples"))
    assert not states_figure("1) We directly compress the activations.")


def test_a_numbered_list_item_is_not_the_figure_asked_for(corpus_engine):
    """"1) We directly compress the activations ..." holds a digit but no figure: taken for the sentence giving "how
    much faster", it kept Activation Beacon's "2x acceleration" out of the answer (a newcomer's question)."""
    answer = corpus_engine.ask("用激活信标压缩长上下文的方法，推理能加速多少倍？")
    assert answer.citations[0].title == "Long Context Compression with Activation Beacon", answer.answer
    assert "2x acceleration in inference time" in answer.answer, answer.answer


@pytest.mark.parametrize("question", ["What is SAM 2?", "SAM 2 为什么比以前的方法好？", "Who wrote the SAM 2 paper?"])
def test_a_question_naming_a_papers_coined_title_name_gets_that_paper_first(corpus_engine, question):
    """"SAM 2" is the name the title "SAM 2: Segment Anything in Images and Videos" opens with; a newcomer asking
    "What is SAM 2?" got a paper on sharpness-aware minimization (SAM) first, and answered from it."""
    answer = corpus_engine.ask(question)
    assert answer.sources[0].title.startswith("SAM 2: Segment Anything"), [s.title for s in answer.sources]
    assert answer.citations and answer.citations[0].n == 1 and answer.outcome == "answered"


def test_a_title_name_counts_only_as_written_and_whole():
    from rag.search.retrieve import _Corpus, named_papers

    state = _Corpus([], {}, None, None, None, names={"SAM 2": ["sam2"], "SAM-CP": ["samcp"], "Drama": ["drama"],
                                                      "LaMPlace": ["lamp"]})
    assert named_papers("What is SAM 2 and how does SAM-CP differ?", state.names) == ["sam2", "samcp"]
    assert named_papers("What does SAM do on video?", state.names) == []  # "SAM" names neither
    assert named_papers("Why does Drama use Mamba?", state.names) == ["drama"]
    assert named_papers("Drama generation with LLMs?", state.names) == []  # an English word opening a sentence
    assert named_papers("drama and lamplace", state.names) == []  # as written: case and all
    assert named_papers("LaMPlace 为什么好？", state.names) == ["lamp"]  # a coined name may open the question


def test_a_count_takes_every_paper_whose_title_names_the_topic(corpus_engine):
    """"How many orals are about diffusion models?" counted 9 of the 17 orals whose titles say "Diffusion": the
    others' best sentences scored under the list's bar ("Progressive Compression with Universally Quantized Diffusion
    Models"). A title holding the topic's distinctive word is about it (`rag.search.topical.names_all`)."""
    import json

    from conftest import CORPUS

    orals = {p["title"] for p in map(json.loads, CORPUS.read_text(encoding="utf-8").splitlines())
             if p["decision"] == "Accept (Oral)" and "diffusion" in p["title"].lower()}
    answer = corpus_engine.ask("How many orals are about diffusion models?", limit=0)  # every one counted
    counted = {c.title for c in answer.citations}
    assert len(orals) >= 15 and orals <= counted, sorted(orals - counted)
    assert {c.decision for c in answer.citations} == {"Accept (Oral)"}
    assert answer.answer.startswith(f"{len(counted)} orals on diffusion models:")


@pytest.mark.xfail(strict=True, reason="known miss of the deep-pool lists (issue 52): the key term 'anomaly' is "
                   "broader than the topic, so anomaly-detection papers without graphs are listed; requiring every "
                   "topic word cost the short-topic dev recall 0.97 -> 0.69 (eval/README.md, lists)")
def test_a_title_with_only_the_topics_common_words_is_not_enough(corpus_engine):
    """"graph anomaly detection" needs "graph" too."""
    listed = corpus_engine.ask("Which papers are about graph anomaly detection?").citations
    assert listed and all("graph" in (c.title + c.snippet).lower() for c in listed)
