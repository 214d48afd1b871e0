"""The README and the docs pages (issue 27 item 6, issue 50 item 6): the command list, `make help` and the settings
tables in docs/ are written by cog from the code (tools/readme_tables.py), and a page that no longer matches the code
fails `cog --check`; README.md stays a short page for users, and every relative link of README.md and docs/ leads to
a file (and a heading) that exists."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from helpers import ROOT

COG = str(Path(sys.executable).parent / "cog")
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
# Where each generated block lives: one page each, so `make docs` has one place to write it.
BLOCK_PAGES = {"commands": DOCS / "cli.md", "make_help": DOCS / "development.md",
               "settings_table": DOCS / "configuration.md", "nested_tables": DOCS / "configuration.md"}
README_MAX_LINES = 350


def _cog_check(*paths: Path) -> subprocess.CompletedProcess:
    return subprocess.run([COG, "-I", str(ROOT / "tools"), "--check", *map(str, paths)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def _rows(text: str) -> list[list[str]]:
    """The cells of every Markdown table row of `text`."""
    return [[c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            for line in text.splitlines() if line.startswith("|") and not line.startswith("|---")]


def _shown(value: object) -> str:
    """How a default reads in a table cell, thousands separators left out: 0.47, 60 (for 60.0), true."""
    return f"{value:g}" if isinstance(value, float) else str(value).lower() if isinstance(value, bool) else str(value)


def test_the_generated_blocks_are_current_and_a_stale_one_fails(tmp_path):
    found = {}
    for page in PAGES:
        for block in re.findall(r"\[\[\[cog import readme_tables as t; cog\.outl\(t\.(\w+)\(\)\) \]\]\]",
                                page.read_text(encoding="utf-8")):
            assert block not in found, f"{block} is generated in both {found.get(block)} and {page}"
            found[block] = page
    assert found == BLOCK_PAGES
    check = _cog_check(*PAGES)
    assert check.returncode == 0, "README.md or docs/ is stale; run `make docs`:\n" + check.stdout + check.stderr
    # The check is the one `make lint` runs, and it does catch a hand edit of a generated line.
    text = BLOCK_PAGES["settings_table"].read_text(encoding="utf-8")
    stale = tmp_path / "configuration.md"
    stale.write_text(text.replace("| `RAG_K` | `5` |", "| `RAG_K` | `6` |", 1), encoding="utf-8")
    assert stale.read_text(encoding="utf-8") != text
    failed = _cog_check(stale)
    assert failed.returncode != 0 and "changed" in (failed.stdout + failed.stderr).lower()
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "cog -I tools --check README.md docs/*.md" in makefile and "cog -I tools -r README.md docs/*.md" in makefile


def test_every_setting_appears_in_the_docs_with_its_variable_default_and_description():
    from rag.config import ENV_VARS, LIMITS, AnswerPolicy, Limits, Settings

    page = BLOCK_PAGES["settings_table"]
    rows = _rows(page.read_text(encoding="utf-8"))
    by_var = {r[1].strip("`"): r for r in rows if len(r) == 4 and r[1].startswith("`")}
    for name, field in Settings.model_fields.items():
        if name == "policy":
            continue
        assert field.description, f"Settings.{name} has no description for {page.name}"
        row = by_var.get(ENV_VARS[name])
        assert row, f"{page.name}'s settings table has no row for {name} ({ENV_VARS[name]})"
        assert " ".join(field.description.split()).replace("|", "\\|") == row[3]
        if field.default is not None:
            assert _shown(field.default) in row[2].replace(",", ""), (name, row[2])
    nested = {r[0].strip("`"): r for r in rows if len(r) == 3}
    for prefix, model, values in (("policy", AnswerPolicy, AnswerPolicy()), ("limits", Limits, LIMITS)):
        for name, field in model.model_fields.items():
            assert field.description, f"{model.__name__}.{name} has no description for {page.name}"
            assert f"{prefix}.{name}" in nested, f"{page.name} lists no {prefix}.{name}"
            assert _shown(getattr(values, name)) in nested[f"{prefix}.{name}"][1].replace(",", "")
    # The gate's cut points are read from its data file, not copied (its threshold had drifted: 0.79 against 0.8152).
    from rag.answering import abstain

    shown = by_var["RAG_ABSTAIN_MODEL_THRESHOLD"][2]
    assert f"unsure from {abstain.UNSURE_AT:g} for a question the reader reads" in shown
    assert f"{abstain.COVERAGE['unsure_at']:g} for a named or Chinese one" in shown
    assert f"not covered from {abstain.NOT_COVERED_AT:g}" in shown


def test_the_docs_list_every_command_with_its_help_and_every_make_target():
    from rag.cli import main

    rows = {r[0]: r[1] for r in _rows(BLOCK_PAGES["commands"].read_text(encoding="utf-8")) if len(r) == 2}
    for name, command in main.commands.items():
        assert rows.get(f"`rag {name}`") == command.get_short_help_str(limit=200), name
    text = BLOCK_PAGES["make_help"].read_text(encoding="utf-8")
    for target in re.findall(r"^([a-z-]+):.*## ", (ROOT / "Makefile").read_text(encoding="utf-8"), re.M):
        assert re.search(rf"^  make {re.escape(target)} +\S", text, re.M), target


def _unfenced(text: str) -> str:
    """`text` without its fenced code blocks, where `#` and brackets are not Markdown."""
    return re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)


def _anchors(page: Path) -> set[str]:
    """The anchors GitHub gives the headings of `page`: lower case, punctuation dropped, spaces as hyphens, a
    repeated one numbered (-1, -2, ...)."""
    anchors, counts = set(), {}
    for heading in re.findall(r"^#{1,6} +(.+?) *#*$", _unfenced(page.read_text(encoding="utf-8")), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        n = counts.get(slug, 0)
        anchors.add(f"{slug}-{n}" if n else slug)
        counts[slug] = n + 1
    return anchors


def _broken_links(page: Path, root: Path = ROOT) -> list[str]:
    """Each relative link of `page` whose file is not in `root`, or whose anchor is no heading of a linked page."""
    root, broken = root.resolve(), []
    prose = re.sub(r"`[^`\n]*`", "", _unfenced(page.read_text(encoding="utf-8")))  # inline code is no link either
    for target in re.findall(r"!?\[[^\]]*\]\(([^)\s]+)\)", prose):
        if re.match(r"[a-z][a-z+.-]*:", target):  # http:, https:, mailto: ... are not files here
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page.resolve()
        if not linked.exists() or root not in linked.parents:
            broken.append(f"{page.name}: {target} (no such file)")
        elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
            broken.append(f"{page.name}: {target} (no such heading in {linked.relative_to(root)})")
    return broken


def test_the_readme_is_short_and_every_link_of_it_and_the_docs_leads_somewhere(tmp_path):
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move detail to a docs/ page"
    assert {p.name for p in PAGES} >= {"README.md", "web.md", "cli.md", "configuration.md", "llm.md", "api.md",
                                        "how-it-works.md", "evaluation.md", "security.md", "development.md"}
    links = re.findall(r"\]\(docs/([\w.-]+)", README.read_text(encoding="utf-8"))
    assert {p.name for p in PAGES if p.parent == DOCS} <= set(links), "README links every docs page"
    assert [broken for page in PAGES for broken in _broken_links(page)] == []
    # The check sees a missing file, a link out of the tree and a missing heading, and no link inside code.
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    (tmp_path / "outside.md").write_text("# Outside\n")
    (repo / "docs" / "there.md").write_text("# There\n\n## `rag ask`: the answer, as JSON\n\n## Again\n\n## Again\n")
    bad = repo / "docs" / "bad.md"
    bad.write_text("# A page\n\n[a](nowhere.md) [b](../../outside.md) [c](#no-such-part) [d](#a-page) `[e](gone.md)`\n"
                   "[f](there.md#rag-ask-the-answer-as-json) ![g](there.md) [h](there.md#again-1) [i](there.md#gone)\n"
                   "```\n[j](gone.md)\n```\nhttps://example.org [k](https://example.org/x.md)\n", encoding="utf-8")
    assert _anchors(repo / "docs" / "there.md") == {"there", "rag-ask-the-answer-as-json", "again", "again-1"}
    assert [line.split(": ")[1].split(" ")[0] for line in _broken_links(bad, repo)] == [
        "nowhere.md", "../../outside.md", "#no-such-part", "there.md#gone"]


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
