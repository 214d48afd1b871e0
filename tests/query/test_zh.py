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


def test_a_word_outside_the_glossary_is_searched_by_its_dictionary_senses_and_glue_is_not():
    t = zh.translate("关于葡萄酒品鉴的论文")  # wine tasting: no glossary term; 论文 (paper) frames the question
    assert "wine" in t.terms and not {"paper", "treatise", "thesis"} & set(t.terms)
    # jieba leaves 奶 牛 产 奶 量 single: joined, 奶牛 is found
    assert zh.translate("有没有预测奶牛产奶量的论文？").terms[:3] == ("prediction", "milk cow", "dairy cow")
    assert zh.translate("有没有用夜空摄像头自动检测流星的论文？").query.endswith("meteor shooting star")
    assert zh.translate("有没有研究用扩散模型生成音乐的工作？").terms[:2] == ("study", "diffusion model")  # glossary
    # 便宜 is "cheap" (piányi) here; the dictionary's first entry reads it biànyí, "convenient"
    assert zh.translate("有没有让稀疏自编码器训练更便宜的工作？").terms == ("sparse autoencoder", "training", "cheap")
    # 代理 alone is "agent"; before a metric, a task, a reward or an objective it is "proxy" (a newcomer's question
    # on chip placement that optimizes final timing rather than proxy metrics was searched for "agent metric")
    assert zh.translate("有没有用代理指标之外的最终时序来优化芯片布局的工作？").terms[0] == "proxy metric"


def test_a_dictionary_sense_is_a_few_words_not_an_explanation():
    senses = zh.dictionary()
    assert len(senses) > 90_000 and senses["哮喘"] == ("asthma",) and senses["望远镜"] == ("binoculars", "telescope")
    assert senses["樱花"][0] == "oriental cherry"  # "(Prunus ...), prized for its blossom" dropped
    assert "有没有" not in senses  # "(before a noun) Do (you, they etc) have ...?": no sense of a few words
    assert senses["2019冠状病毒病"][0] == "COVID-19"


def test_without_the_dictionary_package_unknown_words_are_not_searched(monkeypatch):
    monkeypatch.setattr(zh, "dictionary", lambda: {})
    t = zh.translate("关于葡萄酒品鉴的论文")
    assert t.covered == 0.0 and t.terms == ()


def test_an_absent_topic_in_chinese_is_searched_by_its_words_and_not_answered(corpus_engine):
    """Before the dictionary, "drones spraying pesticide over orchards" was searched as "study" (the one glossary
    word) and a diffusion paper came back; now its own words are searched, no paper has them, and it is not
    answered."""
    answer = corpus_engine.ask("有没有用无人机给果园喷洒农药的研究？")
    assert {"drone", "orchard"} <= set(answer.retrieval_query.split()), answer.retrieval_query
    assert answer.outcome == "not_covered", (answer.outcome, answer.confidence)


def test_engine_finds_the_seed_paper_from_a_chinese_question(seed_engine):
    answer = seed_engine.ask("如何用稀疏自编码器分解神经网络的激活？")
    assert answer.retrieval_query.startswith("sparse autoencoder")
    assert "sparse autoencoder" in answer.sources[0].text.lower()


def test_a_question_about_one_described_work_has_its_form_read_from_its_last_clause():
    # A near miss describes a real paper, then asks in its last clause whether it was done on something else; the
    # gate reads that form (rag.answering.abstain.form_features), which the English search terms have lost.
    asked = zh.form("这个只需少量概念标注就能训练出可解释概念策略的强化学习方法，有没有用在自动驾驶上？")
    assert asked.yes_no and asked.extension and asked.tail == zh.translate("有没有用在自动驾驶上").query
    assert "autonomous driving" in asked.tail and "reinforcement" not in asked.tail  # the last clause's terms only
    also = zh.form("有没有一种直接压缩键值缓存的长上下文插件模块，也能用于长视频理解？")
    assert also.extension and not also.yes_no  # "also usable for": the search is the first clause's
    assert "video" in also.tail


def test_a_search_for_work_is_not_a_yes_no_question_about_a_work():
    for search in ("有没有一种神经网络层，能保证输出的矩阵始终是对称正定的？",  # one clause, a search
                   "有没有受大脑突触启发、利用上下文语义信息的形状记忆网络？",  # opens with "is there"
                   "为什么自适应优化器比随机梯度下降好？有没有从光滑性角度给出的理论解释？",  # is there an explanation
                   "文本被反复改写后会朝什么方向漂移？有相关研究吗？",  # "is there research on it"
                   "有没有一个开源预训练框架，把多维并行统一在一起，并在 Llama 系列模型上测过加速效果？"):  # and tested
        form = zh.form(search)
        assert not form.yes_no and not form.extension and form.tail == "", search
    assert not zh.form("训练数据中哪怕只有很少一部分合成数据，也会导致模型崩溃吗？").extension  # even if ... still
    assert zh.form("Has the method also been applied to autonomous driving?") == zh.Form()  # English: read in English


def test_the_glossary_reads_step_by_step_and_x_ray():
    """A newcomer's 一步步 (step by step) was searched as "one-step" (the glossary's 一步, a diffusion term) and X光片
    (an X-ray film) as "X" (光片 dropped)."""
    assert zh.translate("有没有一步步推理的论文？").terms[0] == "step by step"
    assert "one-step" not in zh.translate("有没有一步步推理的论文？").terms
    assert "X-ray" in zh.translate("有没有用X光片诊断肺炎的工作？").terms


def test_the_search_line_shows_the_question_s_own_words_and_the_english_terms_on_demand(seed_engine):
    """The page showed a Chinese question's search as the glossary's English terms ("Searched: “one-step …”"), so a
    miss of the glossary read as what the user asked. It shows the question's words; the English terms are in a
    closed <details>, and `rag ask` prints no English line for a question searched as typed."""
    from rag.cli import render_sources
    from rag.web.render import search_line

    answer = seed_engine.ask("有没有用稀疏自编码器分解激活的论文？")
    assert answer.searched_words and zh.has_chinese(answer.searched_words)
    assert answer.retrieval_query.startswith("sparse autoencoder")
    line = search_line(answer.to_dict(), "zh")
    visible, _, hidden = line.partition('<details class="search-terms">')
    assert "sparse autoencoder" not in visible and "sparse autoencoder" in hidden
    assert hidden.startswith("<summary>英文检索词</summary>")
    assert "sparse autoencoder" not in render_sources(answer)
    # an English question still shows what was searched when it is not the question (a follow-up's words)
    assert search_line({"question": "And them?", "retrieval_query": "sparse autoencoders"}) == \
        "Searched: “sparse autoencoders”"
