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
