"""Chinese questions (rag.query.zh): the real jieba and the bundled glossary map a Chinese question to English terms,
and the engine searches with them over the real seed store."""

from __future__ import annotations

import pytest

from rag.query import zh

jieba = pytest.importorskip("jieba")  # a pinned dependency; rag.query.zh falls back to glossary matching without it


def test_glossary_is_large_and_one_key_per_line():
    terms = zh.glossary()
    assert len(terms) >= 1500
    assert terms["稀疏自编码器"] == ("sparse autoencoder",)
    assert terms["扩散模型"] == ("diffusion model",)
    assert all(zh.has_chinese(key) and values for key, values in terms.items())


def test_chinese_question_becomes_english_terms_and_keeps_acronyms():
    t = zh.translate("有哪些论文用稀疏自编码器解释大语言模型的内部表示？GNN呢")
    assert t.terms[0] == "sparse autoencoder"
    assert {"large language model", "internal representation"} <= set(t.terms)
    assert "GNN" in t.terms and "论文" not in t.query
    assert 0.5 < t.covered <= 1.0


def test_english_question_passes_through_unchanged():
    question = "Which papers use sparse autoencoders?"
    assert zh.translate(question) == zh.Translation(question, 1.0)
    assert zh.retrieval_query(question) == question


def test_unknown_chinese_words_are_not_searched():
    t = zh.translate("关于葡萄酒品鉴的论文")  # wine tasting: no glossary term
    assert t.covered == 0.0 and t.terms == ()


def test_engine_finds_the_seed_paper_from_a_chinese_question(seed_engine):
    answer = seed_engine.ask("如何用稀疏自编码器分解神经网络的激活？")
    assert answer.retrieval_query.startswith("sparse autoencoder")
    assert "sparse autoencoder" in answer.sources[0].text.lower()
