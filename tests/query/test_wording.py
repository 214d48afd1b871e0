"""What a question's words ask for is read once, in rag.query.wording, and carried by the retrieval
(`Retrieval.wording`): the gate and the extractive answer read its fields, never the question's text."""

from __future__ import annotations

import numpy as np

from rag.answering import abstain
from rag.query import wording, zh
from rag.search.retrieve import Retrieval


def test_the_form_of_an_english_question_is_read_from_its_words():
    found = wording.read("Has that approach also been tested on audio or speech generators?")
    assert (found.yes_no, found.extension) == (True, True)
    assert found.tail.strip() == "been tested on audio or speech generators?"
    # A search asks whether the work exists: no yes/no question about a paper.
    assert not wording.read("Is there work on sparse autoencoders?").yes_no


def test_a_chinese_question_s_form_is_read_from_its_chinese_not_its_english_terms():
    asked = "有没有让稀疏自编码器训练更便宜的方法，在医学影像数据上验证过吗？"
    terms = zh.retrieval_query(asked)
    found = wording.read(terms, asked)
    chinese = zh.form(asked)
    assert (found.yes_no, found.extension, found.tail) == (chinese.yes_no, chinese.extension, chinese.tail)
    assert found.extension and found.tail  # the English terms alone say neither
    assert not wording.read(terms).extension


def test_the_english_question_words_of_a_chinese_question_are_read_beside_its_terms():
    asked = "这个方法能把运行时间减少多少？"
    found = wording.read(zh.retrieval_query(asked), asked, zh.asked_words(asked))
    assert zh.asked_words(asked) == "how much"
    assert not found.asks.figure and found.asks_in_english.figure


def test_figure_quantity_and_details_are_read_for_the_gate():
    found = wording.read("What learning rate was used to fine-tune it on ImageNet with GPT-4?")
    assert found.figure and found.quantity == ("learning", "rate")
    assert found.details == ("ImageNet", "GPT-4")
    assert not wording.read("What does LLMCert-B certify?").figure


def test_a_retrieval_made_without_a_reading_reads_its_own_question_and_the_gate_reads_that():
    retrieval = Retrieval("Has that approach also been tested on audio?", [], np.zeros(3))
    assert retrieval.wording == wording.read("Has that approach also been tested on audio?")
    assert abstain.question_form(retrieval) == (True, True, retrieval.wording.tail)
    given = wording.read("What is CURIE?")
    assert Retrieval("anything", [], np.zeros(3), wording=given).wording is given


def test_which_of_the_previous_papers_a_follow_up_means():
    assert wording.place_named("Who wrote the second one?") == 1
    assert wording.place_named("What did the last paper evaluate on?") == -1
    assert wording.place_named("第三篇用了什么数据集？") == 2
    assert wording.place_named("Who wrote it?") is None
    assert wording.refers_to_several("Which of them is an oral?") and not wording.refers_to_several("Who wrote it?")
    assert wording.is_pronoun("this paper") and not wording.is_pronoun("CatVTON")
