"""`rag eval` end to end: a small question set over a real index of the seeds, three retrieval configurations in
one run, in both answer modes (extractive, and LLM through the project's fake OpenAI-compatible server)."""

from __future__ import annotations

import json
import re
import subprocess

import pytest
from helpers import ROOT, SEEDS, rag_cmd
from fake_openai import FakeOpenAI

QUESTIONS = ROOT / "eval" / "questions" / "seeds_dev.jsonl"


@pytest.fixture(scope="module")
def small_set(tmp_path_factory):
    """4 questions of each kind from the seeds dev set."""
    items = [json.loads(line) for line in QUESTIONS.read_text().splitlines() if line.strip()]
    picked = [q for kind in ("single", "multi", "none", "followup")
              for q in [i for i in items if i["kind"] == kind][:4]]
    path = tmp_path_factory.mktemp("eval") / "small.jsonl"
    path.write_text("".join(json.dumps(q) + "\n" for q in picked))
    return path, picked


@pytest.fixture(scope="module")
def eval_index(tmp_path_factory):
    """One index for both answer modes: the second `rag eval` finds the seeds stored and embeds nothing."""
    return tmp_path_factory.mktemp("eval-index") / "index"


@pytest.mark.parametrize("answers", ["extractive", "llm"])
def test_rag_eval_compares_configurations_in_one_run_and_writes_the_report(small_set, eval_index, tmp_path, answers):
    path, picked = small_set
    args = ["eval", str(path), "--corpus", str(SEEDS), "--out", str(tmp_path / "reports"), "--name", "small"]
    settings = {"data_dir": eval_index}
    configs = ["bm25", "dense", "hybrid-rrf60", "hybrid"] if answers == "extractive" else ["hybrid"]
    args += ["--configs", ",".join(configs)]
    with FakeOpenAI() as llm:
        if answers == "llm":  # the answer path; the retrieval comparison is the same in both modes
            settings.update(llm_model="fake-chat", llm_base_url=llm.base_url, llm_timeout=5)
        run = subprocess.run(rag_cmd(*args, **settings), cwd=ROOT, capture_output=True, text=True, timeout=600)
        chats = len(llm.chat_requests())
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    table = lines[:next(i for i, line in enumerate(lines) if not line.startswith("|"))]  # the first table
    assert table[0].startswith("| config | hit@1 | hit@5 | mrr | ndcg@10 | multi_recall@10 |")
    # In LLM mode each configuration also runs extractive, beside it in the same run.
    rows = ["hybrid LLM", "hybrid extractive"] if answers == "llm" else configs
    assert [line.split("|")[1].strip() for line in table[2:]] == rows
    # ... and the related-papers measure over the multi-paper questions (rag.explore.related), on the line after it.
    assert re.search(r"^related papers: over 4 multi-paper questions, \d\.\d{3} of the other gold papers",
                     run.stdout, re.M), run.stdout
    report = json.loads((tmp_path / "reports" / "small.json").read_text())
    # The metrics table, the outcomes table (answered / unsure / not covered), the lists' and the chains' tables when
    # the set has such questions and, in LLM mode, the LLM table: each has one row for the configuration.
    md = (tmp_path / "reports" / "small.md").read_text()
    tables = [t for t in md.split("\n\n") if t.startswith("| ") and "| config |" in t.splitlines()[0]]
    assert len(tables) >= (3 if answers == "llm" else 2)
    name = "| hybrid LLM |" if answers == "llm" else "| hybrid |"
    assert all(t.count(name) == 1 for t in tables), tables
    assert "| config | answerable_answered | answerable_unsure | answerable_not_covered | none_answered |" in md
    summary = report["results"]["hybrid LLM" if answers == "llm" else "hybrid"]["summary"]
    assert summary["none_not_covered"] == summary["abstention_on_none"]  # over the seeds: no unsure (< 1,000 papers)
    assert summary["answerable_unsure"] == 0.0 and summary["answerable_not_covered"] == summary["false_refusal"]
    assert (tmp_path / "reports" / "small.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert report["meta"]["papers"] == 38 and report["meta"]["questions"] == len(picked) == 16
    hybrid = report["results"]["hybrid LLM" if answers == "llm" else "hybrid"]
    assert len(hybrid["rows"]) == 16 and hybrid["summary"]["single"] == 8 and hybrid["summary"]["none"] == 4
    assert hybrid["summary"]["hit@5"] == 1.0 and hybrid["summary"]["hit@1"] >= 0.875
    assert hybrid["summary"]["multi_recall@10"] >= 0.75
    modes = {row["mode"] for row in hybrid["rows"] if not row["abstained"]}
    if answers == "llm":
        assert modes == {"llm"} and chats > 0 and report["meta"]["answers"] == "LLM fake-chat"
    else:
        assert modes == {"extractive"} and chats == 0
    if answers == "extractive":  # the configurations rank differently: they really are different retrievers
        ranks = {name: [r["ranks"] for r in result["rows"]] for name, result in report["results"].items()}
        assert ranks["bm25"] != ranks["dense"]


def test_a_malformed_question_file_is_one_clear_error(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"qid": "a", "kind": "single", "question": "ok?", "gold": []}\n{"kind": "weird"}\n')
    run = subprocess.run(rag_cmd("eval", str(bad), "--corpus", str(SEEDS / "000_99312b63f56aee43.txt"),
                                 data_dir=tmp_path / "index"), cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 1
    assert run.stderr.strip().splitlines()[-1] == (f"Error: {bad}:2: not a question in the documented format "
                                                   '({"qid", "kind", "question", "gold", ...})')


def test_the_type_table_keeps_a_tuning_set_and_a_held_out_set_apart():
    from rag.evaluation.harness import Report, by_type

    def row(set_name, facts, gold):
        return {"set": set_name, "type": "explain", "kind": "single", "answer_type": "explain", "facts": facts,
                "cited_gold": gold, "cite_precision": 1.0, "searched_alone": None, "expected_alone": None}

    rows = [row("types_dev", 1.0, True), row("types_dev", 0.5, True), row("types_heldout", 0.0, False)]
    table = Report("t", {"hybrid": {"rows": rows, "by_type": by_type(rows)}}, {}).type_table()
    assert "| set | type | questions | answer_facts | cited_gold |" in table
    assert "| types_dev | explain | 2 | 0.750 | 1.000 |" in table
    assert "| types_heldout | explain | 1 | 0.000 | 0.000 |" in table
    one_set = Report("t", {"hybrid": {"rows": rows[:2], "by_type": by_type(rows[:2])}}, {}).type_table()
    assert "| explain | 2 | 0.750 | 1.000 |" in one_set and "| set |" not in one_set
