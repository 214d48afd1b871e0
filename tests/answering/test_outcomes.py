"""The three outcomes of an answer (`Answer.outcome`: answered / unsure / not_covered) over the bundled 2,114
abstracts, where the learned gate and its two cut points (rag/answering/abstain_gate.json) apply."""

from __future__ import annotations

import json
import re

from helpers import COVERED, NEAR_MISS, ROOT, UNCOVERED

from eval.tune_outcomes import held_out

from rag.answering import abstain
from rag.answering.compose import ALSO_CLOSE, LEAD_UNSUPPORTED, QUOTED
from rag.answering.extractive import NOT_COVERED, UNSURE, unsure_text
from rag.answering.wording import language, say
from rag.query import zh
from rag.text import split_sentences



# describe_final7 (read): an absent topic the gate is unsure of (a paper on learning search queries is close), and
# Qwen2.5-Coder-1.5B's raw answer to it: the question granted, then the top paper's abstract copied and cited.
PATENTS = "Are there retrieval methods or LLMs for prior-art search when examining patent applications?"
PATENTS_QWEN = (
    "Yes, there are retrieval methods or LLMs for prior-art search when examining patent applications. The "
    "hallucinations of large language models (LLMs) are increasingly mitigated by allowing LLMs to search for "
    "information and to ground their answers in real sources. Unfortunately, LLMs often struggle with posing the "
    "right search queries, especially when dealing with complex or otherwise indirect topics. Observing that LLMs "
    "can learn to search for relevant facts by $\\textit{trying}$ different queries and learning to up-weight "
    "queries that successfully produce relevant results, we introduce $\\underline{Le}$arning to "
    "$\\underline{Re}$trieve by $\\underline{T}$rying (LeReT), a reinforcement learning framework that explores "
    "search queries and uses preference-based optimization to improve their quality. LeReT can improve the "
    "absolute retrieval accuracy by up to 29\\% and the downstream generator evaluations by 17\\%. The simplicity "
    "and flexibility of LeReT allows it to be applied to arbitrary off-the-shelf retrievers and makes it a "
    "promising technique for improving general LLM pipelines [1].")


def test_the_cut_points_are_data_with_the_sets_that_chose_them():
    shipped = json.loads((ROOT / "rag" / "answering" / abstain.GATE_FILE).read_text(encoding="utf-8"))
    cuts = shipped["outcomes"]
    assert 0 < abstain.UNSURE_AT == cuts["unsure_at"] <= abstain.NOT_COVERED_AT == cuts["not_covered_at"] <= 1.01
    # Chosen on dev sets only: the read description sets count as dev now (describe_final15 since its run); the other
    # held-out sets are never tuned on.
    chosen = re.findall(r"[a-z]+_[a-z0-9_]+", cuts["chosen_on"].split("(")[0])
    assert "describe_dev" in chosen and "describe_final4" in chosen
    assert not any(held_out(name) for name in chosen)
    assert held_out("describe_final19") and not held_out("describe_final18") and not held_out("describe_final8")
    assert held_out("zh_heldout") and not held_out("describe_final4")
    assert set(cuts["figure"]) >= {"answerable", "unanswerable"}
    assert abstain.cut_points(1.01) == (1.01, 1.01)  # RAG_ABSTAIN_MODEL_THRESHOLD=1.01 still turns the gate off


def test_a_near_miss_is_unsure_and_cites_the_closest_papers(corpus_engine):
    answer = corpus_engine.ask(NEAR_MISS)
    assert answer.outcome == "unsure" and not answer.abstained
    assert answer.answer.startswith(UNSURE) and "The closest are:" in answer.answer
    cited = [int(n) for n in re.findall(r"\[(\d+)\]", answer.answer)]
    assert cited == [c.n for c in answer.citations] == list(range(1, len(cited) + 1)) and 1 <= len(cited) <= 3
    assert [c.paper_id for c in answer.citations] == [s.paper_id for s in answer.sources[:len(cited)]]
    assert answer.citations[0].title.startswith("CatVTON")
    # Only papers near the top one are called closest (a retrieval score of 0.6 of its): not the fifth hit.
    assert all(c.score >= 0.6 * answer.sources[0].score for c in answer.citations)
    for c in answer.citations:  # each cited with its title and the sentence of its abstract nearest the question
        assert f"“{c.title}” [{c.n}]" in answer.answer and c.snippet in answer.answer
    assert answer.to_dict()["outcome"] == "unsure"


def test_an_unsure_answer_quotes_the_closest_papers_passage_not_one_sentence(corpus_engine):
    # One sentence rarely carries what a description asked for (read description sets: facts 0.40 in unsure answers
    # with the right paper first, 0.70 in answered ones): the first paper gets the passage a one-paper explanation
    # quotes (its contribution and what follows), its nearest sentence among it, in the abstract's order.
    answer = corpus_engine.ask(NEAR_MISS)
    first = answer.answer.splitlines()[1]
    assert first.startswith(f"• “{answer.citations[0].title}” [1]: ")
    quoted = first.split("[1]: ", 1)[1]
    abstract = corpus_engine.paper(answer.citations[0].paper_id).abstract
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", abstract) if s and s in quoted]
    assert len(sentences) >= 2 and " ".join(sentences) == quoted  # whole sentences of its abstract, in order
    assert "we propose CatVTON" in quoted and answer.citations[0].snippet in quoted
    assert not answer.answer.startswith(NOT_COVERED) and answer.outcome == "unsure"  # still labelled unsure


def test_an_uncovered_topic_is_not_covered_and_cites_nothing(corpus_engine):
    answer = corpus_engine.ask(UNCOVERED)
    assert answer.outcome == "not_covered" and answer.abstained and answer.citations == []
    assert answer.answer.startswith(NOT_COVERED) and not re.search(r"\[\d+\]", answer.answer)
    covered = corpus_engine.ask(COVERED)
    assert covered.outcome == "answered" and not covered.abstained and covered.citations
    assert not covered.answer.startswith((UNSURE, NOT_COVERED))


def test_with_an_llm_an_unsure_question_is_read_by_it_and_its_cited_answer_stands(corpus_engine):
    # Issue 28 item 3: near the cut point the reader decides. The stand-in answers from the papers with a citation
    # (the support check passes it): answered by the LLM. Told nothing answers, the closest papers show unsure.
    from fake_openai import FakeOpenAI

    with FakeOpenAI() as server:
        engine = corpus_engine.derive(llm_model="fake-chat", llm_base_url=server.base_url, llm_api_key="sk-test",
                                      llm_max_retries=0, llm_rewrite=False,  # the answer step's calls alone
                                      **UNSURE_CUT)
        answer = engine.ask(UNSURE_SEVERAL)
        assert server.chat_requests(), "the LLM was asked"
        assert answer.mode == "llm" and answer.outcome == "answered" and answer.citations
        server.mode = "no_answer"
        answer = engine.ask(UNSURE_SEVERAL)
        assert answer.outcome == "unsure" and answer.llm_no_answer and answer.mode == "extractive"
        assert answer.answer.startswith(UNSURE) and answer.citations
        uncovered = engine.ask(UNCOVERED)
        assert uncovered.outcome == "not_covered" and len(server.chat_requests()) == 2  # not sent: nothing is close
        # A question whose form alone puts it past the cut (does a close paper's work go further?) is unsure, and
        # the reader is not asked: a small one grants the premise (extractive.reader_doubt).
        server.mode = "normal"
        near = corpus_engine.derive(llm_model="fake-chat", llm_base_url=server.base_url, llm_api_key="sk-test",
                                    llm_max_retries=0, llm_rewrite=False).ask(NEAR_MISS)
        assert near.outcome == "unsure" and near.mode == "extractive" and len(server.chat_requests()) == 2
        assert near.answer.startswith(UNSURE) and near.citations[0].title.startswith("CatVTON")
        assert any("the LLM was not asked" in n for n in near.notices)


def test_a_question_naming_a_paper_is_never_not_covered_and_its_reader_is_not_asked(corpus_engine):
    """A question that names a paper the list has (its rare name, its title) is at most unsure, whatever the gate
    makes of its other words: "not covered" beside the paper it names is false (issue 29). What it asks of that
    paper is what the gate finds missing (a figure the abstract leaves out), so no reader is asked either."""
    from fake_openai import FakeOpenAI

    for question, title in (("LaMPlace 为什么比以前的方法好？", "LaMPlace"),  # a newcomer's: "not covered" before
                            ("What learning rate was used to fine-tune the VLMs on receiver-behaviour data in "
                             "'Teaching Human Behavior Improves Content Understanding Abilities Of VLMs'?",
                             "Teaching Human Behavior")):
        answer = corpus_engine.ask(question)
        assert answer.outcome == "unsure" and answer.citations[0].title.startswith(title), answer.answer
        assert answer.answer.startswith(say("unsure", language(question)))  # in the question's language
        assert f"“{answer.citations[0].title}” [1]: " in answer.answer
        with FakeOpenAI() as server:
            read = corpus_engine.derive(llm_model="fake-chat", llm_base_url=server.base_url, llm_api_key="sk-test",
                                        llm_max_retries=0, llm_rewrite=False).ask(question)
            assert not server.chat_requests() and read.mode == "extractive" and read.outcome == "unsure"
            assert any("the LLM was not asked" in n for n in read.notices)
    assert corpus_engine.ask(UNCOVERED).outcome == "not_covered"  # a topic no paper has still is not covered
    # An acronym typed in capitals names only what is written so: FIFA is not FiFA, a data-filtering method.
    fifa = corpus_engine.ask("Who won the 2022 FIFA World Cup?")
    assert fifa.outcome == "not_covered" and "FiFA" in corpus_engine.paper(fifa.sources[0].paper_id).abstract


# describe_dev: three papers are close (the gold one, rank 1, among them); its gate probability (0.041 with the
# reader's gate, 0.28 and 0.26-0.78 with earlier ones) is in the unsure zone once the unsure cut is set below it, which
# the tests of that zone do (UNSURE_CUT: `abstain_model_threshold`, the documented setting), so a refit that moves
# the cut points does not move the question out of the zone they test.
UNSURE_SEVERAL = ("Is there a benchmark for phone-operating agents built on multimodal LLMs, with apps in two "
                  "languages and an automatic scorer?")
UNSURE_CUT = {"abstain_model_threshold": 0.03}


def test_an_llm_answer_to_an_unsure_question_names_the_other_closest_papers(corpus_engine):
    # The reader picks one paper of several close ones (a small one often the wrong one): the others the unsure
    # answer would cite are named after its answer, on the app's line, cited.
    from fake_openai import FakeOpenAI

    assert corpus_engine.derive(**UNSURE_CUT).ask(UNSURE_SEVERAL).outcome == "unsure"
    with FakeOpenAI() as server:
        engine = corpus_engine.derive(llm_model="fake-chat", llm_base_url=server.base_url, llm_api_key="sk-test",
                                      llm_max_retries=0, llm_rewrite=False, **UNSURE_CUT)
        answer = engine.ask(UNSURE_SEVERAL)
    assert answer.mode == "llm" and answer.outcome == "answered"
    _, closest = unsure_text(answer.sources)
    assert len(closest) >= 2  # the top paper and at least one other close to it
    model_text, rest = answer.answer.split(QUOTED)
    quoted, also = rest.split(ALSO_CLOSE)
    assert re.findall(r"\[(\d+)\]", model_text) == ["1"]  # the stand-in cites the top paper alone
    assert _quote_of(quoted, answer.sources[0]) and quoted.strip().endswith("” [1]")  # then [1]'s own passage
    assert [s.n for s in answer.citations] == closest  # the others are cited after it, once
    assert all(f"“{s.title}” [{s.n}]" in also for s in answer.sources if s.n in closest[1:])


def test_where_the_gate_is_unsure_an_llm_answer_whose_first_sentence_is_unsupported_is_taken_back(corpus_engine):
    from fake_openai import FakeOpenAI

    assert corpus_engine.ask(PATENTS).outcome == "unsure"
    with FakeOpenAI() as server:
        engine = corpus_engine.derive(llm_model="fake-chat", llm_base_url=server.base_url, llm_api_key="sk-test",
                                      llm_max_retries=0, llm_rewrite=False)
        server.reply = PATENTS_QWEN
        answer = engine.ask(PATENTS)
        assert answer.sources[0].title.startswith("Grounding by Trying")
        assert answer.outcome == "unsure" and answer.mode == "extractive" and answer.fallback_reason == LEAD_UNSUPPORTED
        assert answer.answer.startswith(UNSURE) and "Yes, there are" not in answer.answer and answer.citations
        assert any(LEAD_UNSUPPORTED in n for n in answer.notices)
        # the same text without the granted question: its lead is the paper's, supported, and the answer stands
        server.reply = PATENTS_QWEN.split(". ", 1)[1]
        kept = engine.ask(PATENTS)
        assert kept.mode == "llm" and kept.outcome == "answered" and kept.answer.startswith("The hallucinations")


def _quote_of(quoted: str, source, nearest: bool = True) -> list[str]:
    """The sentences of a quote line ("“...” [n]"), each checked to be verbatim from `source`'s abstract, and
    (`nearest`) the sentence nearest the question among them."""
    body = quoted.strip().removeprefix("“").rsplit("”", 1)[0]
    sentences = split_sentences(body)
    abstract = " ".join(source.text.split())
    assert sentences and all(s in abstract for s in sentences), sentences
    assert not nearest or " ".join(source.snippet.split()) in body
    return sentences


def test_an_llm_answer_is_followed_by_its_papers_own_passage_less_what_it_says_already(corpus_engine):
    # A small reader paraphrases and drops the asked figure or name: the first cited paper's passage (what a
    # one-paper explanation quotes, with its sentence nearest the question) follows, verbatim and cited, less the
    # sentences the answer already says; nothing when it says them all, nor with llm_quote off.
    from fake_openai import FakeOpenAI

    with FakeOpenAI() as server:
        settings = {"llm_model": "fake-chat", "llm_base_url": server.base_url, "llm_api_key": "sk-test",
                    "llm_max_retries": 0, "llm_rewrite": False}
        answer = corpus_engine.derive(**settings).ask(UNSURE_SEVERAL)
        first = answer.citations[0]
        assert answer.answer.count(QUOTED) == 1
        quoted = answer.answer.split(QUOTED)[1].split(ALSO_CLOSE)[0]
        sentences = _quote_of(quoted, first)
        assert len(sentences) >= 2  # a passage, not the one sentence
        plain = corpus_engine.derive(**settings, llm_quote=False).ask(UNSURE_SEVERAL)
        assert QUOTED not in plain.answer and plain.answer.startswith(answer.answer.split(QUOTED)[0].strip())
        server.reply = f"{sentences[0]} [1]"  # the model quoted one sentence of it itself: the rest is quoted
        said_one = corpus_engine.derive(**settings).ask(UNSURE_SEVERAL)
        rest = _quote_of(said_one.answer.split(QUOTED)[1].split(ALSO_CLOSE)[0], first, nearest=False)
        assert said_one.mode == "llm" and rest == sentences[1:]
        server.reply = " ".join(f"{s} [1]" for s in sentences)  # ... all of it: nothing is quoted
        said = corpus_engine.derive(**settings).ask(UNSURE_SEVERAL)
        assert said.mode == "llm" and said.citations[0].n == first.n and QUOTED not in said.answer


# describe_final10 (read): a near miss, the robot hand's paper is about tracking human hand-object demonstrations,
# not surgery; the gate answers it, and Qwen2.5-Coder-1.5B granted it (its raw text from a dev run, first paragraph).
SURGERY = ("Is there a learned policy that follows human demonstrations of hand-object interaction to let a "
           "many-fingered robot hand perform surgery?")
SURGERY_QWEN = (
    "Yes, there is a learned policy that follows human demonstrations of hand-object interaction to let a "
    "many-fingered robot hand perform surgery. This controller aims to manage a dexterous robot hand to manipulate "
    "diverse objects for various purposes defined by kinematic human-object interactions. The controller uses a data "
    "flywheel to iteratively enhance the controller's performance, as well as the number and quality of successful "
    "tracking demonstrations. The paper introduces an approach that curates large-scale successful robot tracking "
    "demonstrations, comprising pairs of human references and robot actions, to train a neural controller [1].")


def test_where_the_gate_answers_an_llm_answer_granting_the_question_without_support_is_taken_back(corpus_engine):
    from fake_openai import FakeOpenAI

    plain = corpus_engine.ask(SURGERY)
    assert plain.outcome == "answered"  # the gate alone answers this near miss
    # The robot-hand paper Qwen cited, among the papers the reader is shown, by its number here.
    n = next(s.n for s in plain.sources[:corpus_engine.settings.llm_papers] if s.title.startswith("DexTrack"))
    reply = SURGERY_QWEN.replace("[1]", f"[{n}]")
    with FakeOpenAI() as server:
        server.reply = reply
        engine = corpus_engine.derive(llm_model="fake-chat", llm_base_url=server.base_url, llm_api_key="sk-test",
                                      llm_max_retries=0, llm_rewrite=False)
        answer = engine.ask(SURGERY)
        assert answer.outcome == "unsure" and answer.mode == "extractive" and answer.fallback_reason == LEAD_UNSUPPORTED
        assert answer.answer.startswith(UNSURE) and "perform surgery" not in answer.answer and answer.citations
        assert any(LEAD_UNSUPPORTED in n for n in answer.notices)
        # Before (AnswerPolicy.lead_check_answered off): the granted question stood as the answer.
        before = engine.derive(policy=engine.settings.policy.model_copy(update={"lead_check_answered": False}))
        kept = before.ask(SURGERY)
        assert kept.mode == "llm" and kept.outcome == "answered" and kept.answer.startswith("Yes, there is")
        # The paper's own claims without the granted lead: supported, and the answer stands.
        server.reply = reply.split(". ", 1)[1]
        supported = engine.ask(SURGERY)
        assert supported.mode == "llm" and supported.outcome == "answered"
        assert supported.answer.startswith("This controller aims")


def test_a_chinese_near_miss_is_read_by_its_form_as_an_english_one_is(corpus_engine):
    # describe_final15 (read): a real paper described in other words, then "has it been used for autonomous
    # driving?", which its abstract never says. The English terms it is searched by have lost that form; the gate
    # reads it from the Chinese (rag.query.zh.form), as it reads "Has it also been ...?" in English.
    question = "这个只需少量概念标注就能训练出可解释概念策略的强化学习方法，有没有用在自动驾驶上？"
    answer = corpus_engine.ask(question)
    assert answer.outcome == "unsure" and answer.answer.startswith("不确定：")
    assert answer.citations[0].title.startswith("LICORICE")  # the paper it describes, quoted as the closest
    terms_only = corpus_engine.ask(zh.retrieval_query(question))  # the same search without the form: answered
    assert terms_only.outcome == "answered" and terms_only.sources[0].paper_id == answer.sources[0].paper_id


WATERMARK = ("Is there work on hiding a signal in images made by a generative model so that nobody can tell marked "
             "from unmarked images without a secret key?")


def test_a_follow_up_asking_beyond_its_paper_is_unsure_and_one_it_answers_is_answered(corpus_engine):
    # A newcomer's follow-up (seventeenth session): "Has that approach also been tested on audio ...?" was "Answered
    # from the papers" with quotes about image watermarks, read as "yes". The abstract never names audio or speech.
    first = corpus_engine.ask(WATERMARK)
    assert first.outcome == "answered"
    assert first.citations[0].title == "An Undetectable Watermark for Generative Image Models"
    history = [{"role": "user", "content": WATERMARK},
               {"role": "assistant", "content": first.answer, "paper_ids": first.cited_ids}]
    # Its own search finds audio papers the watermark paper matches far worse, so it is read as a new question
    # (issue 53: the evidence decides, not "that approach"); none of them answers it either: unsure, not a "yes".
    beyond = corpus_engine.ask("Has that approach also been tested on audio or speech generators?", history=history)
    assert beyond.outcome == "unsure" and beyond.answer.startswith(UNSURE)
    within = corpus_engine.ask("Does it work for diffusion models?", history=history)  # its abstract says so
    assert within.focus == first.cited_ids and within.outcome == "answered"
    authors = corpus_engine.ask("Who are the authors?", history=history)  # a record, never "not covered"
    assert authors.outcome == "answered" and authors.answer_type == "authors"


def test_a_chinese_question_gets_its_frame_in_chinese_and_its_quotes_as_written(corpus_engine):
    # A newcomer on the Chinese page: "Unsure: none of the papers ..." and "5 papers match ..." in English
    # around English quotes. The frame follows the question (rag.answering.wording); titles and quotes stay as written.
    unsure = corpus_engine.ask("有没有用机器学习预测天气的论文，在台风路径上测试过吗？")
    assert unsure.outcome == "unsure" and unsure.answer.startswith("不确定：没有一篇论文明确回答这个问题。最接近的是：")
    first = unsure.citations[0]
    assert f"“{first.title}” [{first.n}]" in unsure.answer and first.snippet in unsure.answer  # the quote as written
    listed = corpus_engine.ask("有哪些关于扩散模型加速采样的论文？")
    head = listed.answer.splitlines()[0]
    assert listed.outcome == "answered", head
    assert re.fullmatch(r"关于“扩散模型加速采样”的论文有 \d+ 篇：", head), head
    assert all(s.title in listed.answer for s in listed.citations)
    english = corpus_engine.ask("Are there papers on accelerating the sampling of diffusion models?")
    assert re.match(r"\d+ papers on accelerating the sampling of diffusion models:\n", english.answer)  # English
    absent = corpus_engine.ask("有没有研究抢红包策略的论文？")
    assert absent.outcome == "not_covered" and absent.answer.startswith("未涵盖：这个论文集似乎没有涉及这个问题。")


def test_an_explanation_quotes_only_papers_ranked_near_the_first(corpus_engine):
    # A newcomer's "Is there work on ...?" about Neural Phylogeny also quoted two papers on other subjects, each
    # retrieved at about half its score (`AnswerPolicy.paper_share`: 0.6, as an unsure answer's closest papers).
    answer = corpus_engine.ask("Is there work on telling which network was fine-tuned from which, from the weights "
                               "alone?")
    assert answer.outcome == "answered" and answer.citations[0].title.startswith("Neural Phylogeny")
    top = answer.sources[0].score
    cited = {c.n for c in answer.citations}
    assert all(s.score >= 0.6 * top for s in answer.sources if s.n in cited)
    assert any(s.score < 0.6 * top for s in answer.sources)  # there were papers to leave out
    several = corpus_engine.ask("Which papers use diffusion models for image restoration?")  # a list keeps its own bar
    assert several.answer_type == "list" and len(several.citations) >= 3
