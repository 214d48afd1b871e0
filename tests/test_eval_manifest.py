"""eval/questions/manifest.toml: every question set listed once with a valid role, and the lists the Makefile and
the tuning scripts use come from it."""

from __future__ import annotations

import subprocess

import pytest

from eval import check_describe, manifest, tune_outcomes
from helpers import ROOT


def test_every_question_file_is_listed_once_with_a_valid_role():
    listed = manifest.load()
    files = sorted(p.stem for p in (ROOT / "eval" / "questions").glob("*.jsonl"))
    assert sorted(s.name for s in listed) == files
    for s in listed:
        assert s.role in ("dev", "read", "heldout"), s
        lines = [line for line in s.path.read_text(encoding="utf-8").splitlines() if line.strip()]
        assert s.questions == len(lines), f"{s.name}: manifest says {s.questions} questions, the file has {len(lines)}"
        assert s.written and s.about and s.added, s


def _make_var(name: str) -> list[str]:
    run = subprocess.run(["make", "-s", "--no-print-directory", "--eval", "print-%: ; @echo $($*)", f"print-{name}"],
                         cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    return run.stdout.split()


def test_make_eval_and_eval_llm_run_the_manifest_sets_in_its_order():
    eval_sets = _make_var("EVAL_SETS")
    assert eval_sets == [str(s.path.relative_to(ROOT)) for s in manifest.sets(corpus="iclr2025")]
    assert len(eval_sets) == 52 and eval_sets[0] == "eval/questions/seeds_dev.jsonl"
    llm_sets = _make_var("LLM_EVAL_SETS")
    assert llm_sets == [str(s.path.relative_to(ROOT)) for s in manifest.sets(llm=True)]
    assert llm_sets[:2] == ["eval/questions/describe_dev.jsonl", "eval/questions/zh_dev.jsonl"]
    assert llm_sets[-2:] == ["eval/questions/zh_heldout.jsonl", "eval/questions/corpus_none_v4.jsonl"]


def test_the_tuning_scripts_refuse_exactly_the_heldout_and_refused_sets():
    refused = [s.name for s in manifest.load() if tune_outcomes.held_out(s.name)]
    assert refused == [s.name for s in manifest.load() if s.role == "heldout" or s.refused]
    assert sorted(refused) == ["chains_v7", "corpus_heldout", "corpus_heldout_v2", "corpus_none_v4", "judge_v6",
                              "judge_v7", "topics_v6", "types_heldout", "zh_heldout"]
    assert tune_outcomes.held_out("describe_final19")  # a set not entered yet is unread: refused
    assert not any(tune_outcomes.held_out(name) for name in tune_outcomes.DEV_SETS)
    assert tune_outcomes.DEV_SETS[:4] == ["describe_dev", "corpus_dev", "zh_dev", "types_dev"]
    assert len(tune_outcomes.DEV_SETS) == 31 and tune_outcomes.DEV_SETS[-1] == "corpus_figures_v4"


def test_check_describe_checks_the_manifest_describe_sets():
    names = [p.stem for p in check_describe.SETS]
    assert names == [s.name for s in manifest.load() if s.name.startswith("describe_")]
    assert names[:3] == ["describe_dev", "describe_heldout", "describe_final"] and len(names) == 20
    assert sorted(p.stem for p in check_describe.OLDER_POOL) == [f"describe_final{i}" for i in range(14, 19)]


def test_a_malformed_entry_is_one_error_naming_the_fix(tmp_path):
    bad = tmp_path / "manifest.toml"
    entry = ('[[set]]\nname = "x"\nrole = "{role}"\nquestions = 1\ncorpus = "iclr2025"\nabout = "a"\nwritten = "b"\n'
             'added = "c"\n')
    bad.write_text(entry.format(role="tuned"), encoding="utf-8")
    with pytest.raises(ValueError, match="role 'tuned' is not one of dev, read, heldout"):
        manifest.load(bad)
    bad.write_text(entry.format(role="dev") + "gate = 2\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"number them 1\.\.1"):
        manifest.load(bad)
    bad.write_text(entry.format(role="dev").replace('added = "c"\n', ""), encoding="utf-8")
    with pytest.raises(ValueError, match="every set needs"):
        manifest.load(bad)


def test_the_command_line_prints_paths_and_the_table():
    run = subprocess.run(["python3", "eval/manifest.py", "--paths", "--role", "heldout"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    heldout = ("corpus_none_v4", "judge_v6", "topics_v6", "judge_v7", "chains_v7")
    assert run.returncode == 0 and run.stdout.split() == [f"eval/questions/{n}.jsonl" for n in heldout]
    table = subprocess.run(["python3", "eval/manifest.py", "--table"], cwd=ROOT, capture_output=True, text=True,
                           timeout=60, check=True).stdout
    assert table.count("\n| `") == 53 and "| `describe_final18` | read | 96 |" in table


def test_the_readme_table_of_the_sets_is_the_manifest():
    text = (ROOT / "eval" / "README.md").read_text(encoding="utf-8")
    start, end = text.index("<!-- manifest table -->\n"), text.index("<!-- end manifest table -->")
    assert text[start:end].split("\n", 1)[1].strip() == manifest.table(), "run: python eval/manifest.py --table"
