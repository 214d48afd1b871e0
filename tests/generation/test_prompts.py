"""Prompt templates: the bundled ones load from the package, and RAG_PROMPTS_DIR overrides them file by file."""

from __future__ import annotations

import pytest
from helpers import ROOT

from rag.config import ConfigError, Settings
from rag.generation import prompts


TEMPLATES = ROOT / "rag" / "generation" / "templates"


def test_the_bundled_templates_are_the_one_copy_in_the_package(tmp_path):
    templates = prompts.load(Settings.load(data_dir=tmp_path))
    for name in prompts.NAMES:
        assert templates[name] == (TEMPLATES / f"{name}.txt").read_text(encoding="utf-8").strip()
    # prompts/ is their guide only: no second copy, and no link (a link breaks on Windows checkouts)
    assert not list((ROOT / "prompts").glob("*.txt"))
    assert not [p for p in (ROOT / "rag").rglob("*") if p.is_symlink()]


def test_a_prompts_dir_overrides_the_files_it_has_and_the_rest_stay_bundled(tmp_path):
    (tmp_path / "system.txt").write_text("Be brief.\n")
    templates = prompts.load(Settings.load(data_dir=tmp_path / "index", prompts_dir=tmp_path))
    assert templates["system"] == "Be brief."
    assert templates["answer"] == (TEMPLATES / "answer.txt").read_text(encoding="utf-8").strip()


def test_an_override_without_a_placeholder_is_a_clear_error(tmp_path):
    (tmp_path / "answer.txt").write_text("Answer {question} from nothing.")
    with pytest.raises(ConfigError, match=r"answer.txt lacks \{sources\}"):
        prompts.load(Settings.load(data_dir=tmp_path / "index", prompts_dir=tmp_path))
