"""Prompt templates: the bundled ones load from the package, and RAG_PROMPTS_DIR overrides them file by file."""

from __future__ import annotations

import pytest
from helpers import ROOT

from rag import prompts
from rag.config import ConfigError, Settings


def test_the_bundled_templates_are_the_top_level_prompts_directory(tmp_path):
    templates = prompts.load(Settings.load(data_dir=tmp_path))
    for name in prompts.NAMES:
        assert templates[name] == (ROOT / "prompts" / f"{name}.txt").read_text(encoding="utf-8").strip()


def test_a_prompts_dir_overrides_the_files_it_has_and_the_rest_stay_bundled(tmp_path):
    (tmp_path / "system.txt").write_text("Be brief.\n")
    templates = prompts.load(Settings.load(data_dir=tmp_path / "index", prompts_dir=tmp_path))
    assert templates["system"] == "Be brief."
    assert templates["answer"] == (ROOT / "prompts" / "answer.txt").read_text(encoding="utf-8").strip()


def test_an_override_without_a_placeholder_is_a_clear_error(tmp_path):
    (tmp_path / "answer.txt").write_text("Answer {question} from nothing.")
    with pytest.raises(ConfigError, match=r"answer.txt lacks \{sources\}"):
        prompts.load(Settings.load(data_dir=tmp_path / "index", prompts_dir=tmp_path))
