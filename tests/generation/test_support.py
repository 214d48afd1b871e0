"""The support check of LLM answers (`rag.generation.support`): paraphrase passes, invented numbers and names of other
papers do not; the hand-written pair set is well formed and `rag eval` reports the check's rates on it."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from types import SimpleNamespace

import pytest
from helpers import ROOT, rag_cmd

from rag.config import Settings
from rag.store.catalog import known_papers
from rag.generation import support

PAIRS = ROOT / "eval" / "questions" / "support_pairs.jsonl"
WILDBENCH = "MKEHCx25xp"
PWM = "hOELrZfg0J"
THRESHOLD = Settings().support_threshold


@pytest.fixture(scope="module")
def papers():
    return {p.paper_id: p for p in known_papers().values()}


@pytest.fixture(scope="module")
def embedder():
    from rag.store.embeddings import make_embedder

    return make_embedder(Settings())


def source(paper, n=1):
    return SimpleNamespace(n=n, title=paper.title, text=paper.abstract)


def test_numbers_and_names_are_read_as_written():
    assert support.numbers("1,024 tasks, 3.30% and 2/3, GPT-4o on QM9, a 9x speedup [sic]") == \
        {"1024", "3.3", "2/3", "4", "9"}
    assert support.names("MathCheck and HyPER beat CD-T, GPT-4o and LLMs with RL on a GPU") == \
        {"MathCheck", "HyPER", "CD-T", "GPT-4o"}


def test_a_paraphrase_passes_and_an_invented_number_or_another_papers_name_does_not(papers, embedder):
    wildbench = [source(papers[WILDBENCH])]
    answer = ("WildBench evaluates LLMs on 1,024 hard tasks drawn from more than a million real conversations "
              "between users and chatbots [1]. WildBench consists of 2,048 tasks selected from real user "
              "conversations [1]. MathCheck evaluates models on over a thousand real user tasks [1].")
    claims = support.check(answer, wildbench, embedder)
    assert [c.missing_numbers for c in claims] == [[], ["2048"], []]
    assert [c.missing_names for c in claims] == [[], [], ["MathCheck"]]
    weak, checked = support.unsupported(answer, wildbench, embedder, THRESHOLD)
    assert checked == 3 and weak == [c.sentence for c in claims[1:]]
    # The same true sentence cited to the wrong paper: its meaning is far from that paper's sentences.
    weak, checked = support.unsupported(answer.split(" [1].")[0] + " [1].", [source(papers[PWM])], embedder, THRESHOLD)
    assert checked == 1 and len(weak) == 1


def test_an_acronym_the_abstract_spells_out_and_the_venue_are_not_names(papers, embedder):
    pwm = [source(papers[PWM])]
    answer = "In this ICLR 2025 paper, PWM extracts RL policies from a world model pretrained on offline data [1]."
    (claim,) = support.check(answer, pwm, embedder)
    assert claim.missing_names == [] and claim.missing_numbers == [] and claim.supported(THRESHOLD)


def test_the_pair_set_is_hand_labelled_balanced_and_cites_bundled_papers(papers):
    pairs = [json.loads(line) for line in PAIRS.read_text().splitlines() if line.strip()]
    assert len(pairs) >= 60 and len({p["pid"] for p in pairs}) == len(pairs)
    kinds = Counter((p["label"], p["why"]) for p in pairs)
    assert kinds[("supported", "paraphrase")] >= 60
    assert kinds[("unsupported", "wrong_paper")] >= 20 and kinds[("unsupported", "invented_number")] >= 20
    assert {p["half"] for p in pairs} == {"a", "b"}
    for pair in pairs:
        assert all(c in papers for c in pair["cited"])
        if pair["label"] == "supported":  # paraphrased, not quoted: no stretch of 8 words copied from the abstract
            words = pair["sentence"].lower().split()
            abstract = " ".join(papers[pair["cited"][0]].abstract.lower().split())
            assert not any(" ".join(words[i:i + 8]) in abstract for i in range(len(words) - 7)), pair["pid"]


@pytest.mark.slow
def test_rag_eval_reports_false_unsupported_and_catch_rates_per_half(tmp_path):
    run = subprocess.run(rag_cmd("eval", str(PAIRS), "--out", str(tmp_path), data_dir=tmp_path / "none"),
                         cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("| half | supported | false_unsupported | unsupported | catch |")
    report = json.loads((tmp_path / "support_pairs.json").read_text())
    summary = report["summary"]
    assert set(summary) == {"a", "b", "all"} and summary["all"]["supported"] >= 60
    assert summary["all"]["false_unsupported"] <= 0.05 and summary["all"]["catch"] >= 0.7
    assert report["meta"]["threshold chosen on half a"] == report["threshold"]
    assert not (tmp_path / "none").exists()  # no index was opened or created


IGDM = "juKVq5dWTR"  # "Indirect Gradient Matching ...": "improves the AutoAttack accuracy from 28.06\% to 30.32\%"


def test_a_figure_the_abstract_gives_as_a_level_is_unsupported_as_a_change(papers, embedder):
    # Qwen2.5-Coder-1.5B's sentence (issue 28): every word is the abstract's, but 30.32% is where accuracy ended up.
    igdm = [source(papers[IGDM])]
    wrong = "Using IGDM on CIFAR-100 improves the AutoAttack accuracy by 30.32% with ResNet-18 [1]."
    right = "Using IGDM on CIFAR-100 improves the AutoAttack accuracy from 28.06% to 30.32% with ResNet-18 [1]."
    (claim,) = support.check(wrong, igdm, embedder)
    assert claim.misread_numbers == ["30.32"] and not claim.supported(THRESHOLD)
    (claim,) = support.check(right, igdm, embedder)
    assert claim.misread_numbers == [] and claim.supported(THRESHOLD)
    assert support.misread_numbers("a 30.32% gain", "accuracy rose from 28.06% to 30.32%") == ["30.32"]
    assert support.misread_numbers("it reaches 30.32%", "accuracy rose to 30.32%") == []  # no role said: not judged


@pytest.mark.parametrize("meta", [
    "This approach is supported by [1, 2].",  # Qwen2.5's closing lines (issue 28), as `clean` leaves them
    "This information is provided in the abstract of [1].",
    "For more details, see [2].",
    "[1] Source [2] Source",
])
def test_a_sentence_that_only_says_where_its_claims_come_from_is_not_checked(papers, embedder, meta):
    sources = [source(papers[WILDBENCH], 1), source(papers[PWM], 2)]
    claim = "WildBench evaluates LLMs on 1,024 hard tasks drawn from real user conversations [1]."
    checked = support.check(f"{claim} {meta}", sources, embedder)
    assert [c.sentence for c in checked] == [claim]
    # A sentence about a source that names something is a claim, and is checked.
    (named,) = support.check("MathCheck is described in [1].", sources, embedder)
    assert named.missing_names == ["MathCheck"]


def test_the_language_is_decided_per_sentence_so_chinese_padding_hides_nothing(papers, embedder):
    wildbench = [source(papers[WILDBENCH])]
    padding = "这是一段很长的中文填充文字，" * 20
    english = "WildBench consists of 2,048 tasks selected from real user conversations [1]."
    # Issue 26 item 7: an English unsupported claim followed by Chinese was never checked (the answer was "Chinese").
    weak, checked = support.unsupported(f"{english} {padding}[1]。", wildbench, embedder, THRESHOLD)
    assert english in weak and checked == 2
    # Padding inside the sentence: its English run is compared by meaning all the same.
    invented = f"The method cures cancer in every patient it is given {padding}[1]。"
    weak, _ = support.unsupported(invented, wildbench, embedder, THRESHOLD)
    assert weak == [invented]


def test_a_chinese_sentence_is_checked_for_the_numbers_and_names_it_states(papers, embedder):
    wildbench = [source(papers[WILDBENCH])]
    right, wrong, other = ("WildBench 包含 1,024 个来自真实用户对话的任务[1]。", "WildBench 包含 2,048 个任务[1]。",
                           "MathCheck 用真实对话评测模型[1]。")
    claims = support.check(right + wrong + other, wildbench, embedder)
    assert [(c.language, c.missing_numbers, c.missing_names) for c in claims] == [
        ("Chinese", [], []), ("Chinese", ["2048"], []), ("Chinese", [], ["MathCheck"])]
    assert [c.supported(THRESHOLD) for c in claims] == [True, False, False]


def test_a_chinese_sentence_that_only_restates_the_question_is_unsupported(papers, embedder):
    """Qwen2.5-Coder-1.5B's raw answer to a near miss of describe_final11 (read): it grants the question ("Yes, this
    choice model was tested on airline ticket data": the paper used none), in Chinese, whose meaning is not compared,
    so only the numbers and names were checked and the grant passed. Read by pairs of characters, it restates the
    question; the next sentence, which says what the paper did with its own names, still passes."""
    question = "这种基于逻辑规则、可解释的选择模型，有没有用航空公司的机票购买数据做过实验？"
    answer = ("是的，这种基于逻辑规则、可解释的选择模型在航空公司的机票购买数据做过实验[1]。"
              "具体来说，在研究中，作者使用了列生成技术与Frank-Wolfe算法来高效地提取偏好模型中的规则[1]。")
    granted, said = support.check(answer, [source(papers["vJgJSrYPe1"])], embedder, question=question)
    assert granted.restates and not granted.supported(THRESHOLD)
    assert not said.restates and said.supported(THRESHOLD)
    # a Japanese or Chinese sentence with new words of its own is not a restatement; an English one still is
    assert not support.restates("该方法把多项选择模型写成逻辑规则的组合，并在电商数据上验证[1]。", question)
    assert support.restates("Yes, the choice model was tested on airline ticket data [1].",
                            "Was the choice model tested on airline ticket data?")


def test_at_most_max_sentences_are_checked(papers, embedder):
    answer = "WildBench evaluates LLMs on hard tasks from real conversations [1]. " * 100
    assert len(support.check(answer, [source(papers[WILDBENCH])], embedder, max_sentences=7)) == 7


def test_a_cited_title_followed_by_the_question_restated_is_unsupported(papers, embedder):
    """Qwen2.5-Coder-1.5B's answer to a describe_final7 question (raw text, its [4] the attention-heads paper): the
    title of the wrong paper shares its abstract's words, and the rest is the question. Compared without the
    cited title, the claim is unsupported; the same claim credited to the paper that makes it still passes."""
    heads, netformer = papers["SUc1UOWndp"], papers["bcTjW5kS4W"]
    claim = ("infers, from recordings of many neurons, how the links between them change over time instead of "
             "assuming they stay fixed")
    wrong = f"{heads.title} [4] {claim}."
    [checked] = support.check(wrong, [source(heads, 4)], embedder)
    whole = support.check(f"{claim} [4].".replace("infers", heads.title + " infers"), [source(heads, 4)], embedder)
    assert support.without_titles(wrong, [heads.title]).startswith("[4] infers")
    assert not checked.supported(THRESHOLD) and checked.similarity < THRESHOLD
    assert whole[0].similarity == pytest.approx(checked.similarity)  # where the citation stands does not matter
    right = support.check(f"{netformer.title} [1] {claim}.", [source(netformer, 1)], embedder)
    assert right[0].supported(THRESHOLD)
    # a sentence that is mostly the title is compared as written
    assert support.without_titles(f"“{heads.title}” [4].", [heads.title]) == f"“{heads.title}” [4]."
