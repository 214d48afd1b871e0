"""README's generated parts (issue 27 item 6): the command list, `make help` and the settings tables are written by
cog from the code (tools/readme_tables.py), and a README that no longer matches the code fails `cog --check`."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from helpers import ROOT

COG = str(Path(sys.executable).parent / "cog")
README = ROOT / "README.md"


def _cog_check(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([COG, "-I", str(ROOT / "tools"), "--check", str(path)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


def _rows(text: str) -> list[list[str]]:
    """The cells of every Markdown table row of `text`."""
    return [[c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            for line in text.splitlines() if line.startswith("|") and not line.startswith("|---")]


def _shown(value: object) -> str:
    """How a default reads in a table cell, thousands separators left out: 0.47, 60 (for 60.0), true."""
    return f"{value:g}" if isinstance(value, float) else str(value).lower() if isinstance(value, bool) else str(value)


def test_the_readme_generated_blocks_are_current_and_a_stale_one_fails(tmp_path):
    text = README.read_text(encoding="utf-8")
    blocks = re.findall(r"\[\[\[cog import readme_tables as t; cog\.outl\(t\.(\w+)\(\)\) \]\]\]", text)
    assert sorted(blocks) == ["commands", "make_help", "nested_tables", "settings_table"]
    check = _cog_check(README)
    assert check.returncode == 0, "README.md is stale; run `make docs`:\n" + check.stdout + check.stderr
    # The check is the one `make lint` runs, and it does catch a hand edit of a generated line.
    stale = tmp_path / "README.md"
    stale.write_text(text.replace("| `RAG_K` | `5` |", "| `RAG_K` | `6` |", 1), encoding="utf-8")
    assert stale.read_text(encoding="utf-8") != text
    failed = _cog_check(stale)
    assert failed.returncode != 0 and "changed" in (failed.stdout + failed.stderr).lower()
    assert "cog -I tools --check README.md" in (ROOT / "Makefile").read_text(encoding="utf-8")


def test_every_setting_appears_in_the_readme_with_its_variable_default_and_description():
    from rag.config import ENV_VARS, LIMITS, AnswerPolicy, Limits, Settings

    rows = _rows(README.read_text(encoding="utf-8"))
    by_var = {r[1].strip("`"): r for r in rows if len(r) == 4 and r[1].startswith("`")}
    for name, field in Settings.model_fields.items():
        if name == "policy":
            continue
        assert field.description, f"Settings.{name} has no description for the README"
        row = by_var.get(ENV_VARS[name])
        assert row, f"the README's settings table has no row for {name} ({ENV_VARS[name]})"
        assert " ".join(field.description.split()).replace("|", "\\|") == row[3]
        if field.default is not None:
            assert _shown(field.default) in row[2].replace(",", ""), (name, row[2])
    nested = {r[0].strip("`"): r for r in rows if len(r) == 3}
    for prefix, model, values in (("policy", AnswerPolicy, AnswerPolicy()), ("limits", Limits, LIMITS)):
        for name, field in model.model_fields.items():
            assert field.description, f"{model.__name__}.{name} has no description for the README"
            assert f"{prefix}.{name}" in nested, f"the README lists no {prefix}.{name}"
            assert _shown(getattr(values, name)) in nested[f"{prefix}.{name}"][1].replace(",", "")
    # The gate's cut points are read from its data file, not copied (its threshold had drifted: 0.79 against 0.8152).
    from rag.answering import abstain

    assert (f"unsure from {abstain.UNSURE_AT:g}, not covered from {abstain.NOT_COVERED_AT:g}"
            in by_var["RAG_ABSTAIN_MODEL_THRESHOLD"][2])


def test_the_readme_lists_every_command_with_its_help_and_every_make_target():
    from rag.cli import main

    rows = {r[0]: r[1] for r in _rows(README.read_text(encoding="utf-8")) if len(r) == 2}
    for name, command in main.commands.items():
        assert rows.get(f"`rag {name}`") == command.get_short_help_str(limit=200), name
    text = README.read_text(encoding="utf-8")
    for target in re.findall(r"^([a-z-]+):.*## ", (ROOT / "Makefile").read_text(encoding="utf-8"), re.M):
        assert re.search(rf"^  make {re.escape(target)} +\S", text, re.M), target


def test_each_setting_flag_states_the_settings_true_default_and_variable():
    """`rag CMD --help` is the manual: a flag that sets a setting says that setting's default and variable, read
    from `Settings` (the help had written defaults by hand: "(default 5)")."""
    import click

    from rag.cli import main
    from rag.config import ENV_VARS, Settings

    by_var = {var: name for name, var in ENV_VARS.items()}
    seen = set()
    for command in main.commands.values():
        for param in command.params:
            match = re.search(r"\[(?:default (.+?); )?env (\w+)\]$", getattr(param, "help", None) or "")
            if not isinstance(param, click.Option) or not match:
                continue
            name = by_var[match.group(2)]
            default = Settings.model_fields[name].default
            shown = None if default is None else str(default).lower() if isinstance(default, bool) else str(default)
            assert match.group(1) == shown, (command.name, param.opts, match.group(1), shown)
            assert "(default" not in param.help, (command.name, param.opts)
            seen.add(name)
    assert {"data_dir", "k", "llm_timeout", "topics", "port", "mcp_port", "bundled"} <= seen
    assert shutil.which("cog", path=str(Path(sys.executable).parent)), "cogapp is installed with the test extra"
