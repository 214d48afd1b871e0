"""The docs' generated blocks: the command list (`rag --help`, `make help`) and the settings tables (`Settings`).

docs/cli.md (commands), docs/development.md (`make help`) and docs/configuration.md (settings) call these between
cog markers (`[[[cog ... ]]]` ... `[[[end]]]`); `make docs` rewrites the blocks of README.md and docs/*.md, `make
lint` runs `cog --check` over them so a page that no longer matches the code fails (a hand-written table drifts: a
gate threshold of 0.79 against 0.8152 in the code, RAG_EMBED_BATCH_SIZE missing). Everything here is read from the
code: the click commands and their options, the Makefile's `## ` comments, the pydantic fields and their
descriptions, so a change there changes the docs, never the other way round.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import click
from pydantic import BaseModel

ROOT = Path(__file__).resolve().parents[1]


def _cell(text: str) -> str:
    """One Markdown table cell: one line, no bare pipe."""
    return " ".join(str(text).split()).replace("|", "\\|")


def commands() -> str:
    """`rag --help`'s commands with their one-line help, as a Markdown table."""
    from rag.cli import main

    rows = ["| command | what it does |", "|---|---|"]
    for name in sorted(main.commands):
        command = main.commands[name]
        rows.append(f"| `rag {name}` | {_cell(command.get_short_help_str(limit=200))} |")
    return "\n".join(rows)


def make_help() -> str:
    """What `make help` prints (the Makefile's `target: ## text` lines), run for real."""
    out = subprocess.run(["make", "--no-print-directory", "-s", "help"], cwd=ROOT, check=True, capture_output=True,
                         text=True).stdout
    return "```text\n" + out.rstrip() + "\n```"


def setting_flags() -> dict[str, list[tuple[str, str]]]:
    """setting name -> [(flag, the commands that take it)]. A flag names a setting when its help ends with that
    setting's `[env VAR]` (rag.cli's `_setting_option`, and the flags written out by hand such as `--bundled`)."""
    from rag.cli import main
    from rag.config import ENV_VARS

    by_var = {var: name for name, var in ENV_VARS.items()}
    found: dict[tuple[str, str], set[str]] = {}
    for command_name, command in main.commands.items():
        for param in command.params:
            if not isinstance(param, click.Option):
                continue
            match = re.search(r"\benv (\w+)\]\s*$", param.help or "")
            if match and match.group(1) in by_var:
                flag = "/".join(param.opts + param.secondary_opts)
                found.setdefault((by_var[match.group(1)], flag), set()).add(command_name)
    everywhere = set(main.commands)
    flags: dict[str, list[tuple[str, str]]] = {}
    for (name, flag), where in sorted(found.items()):
        missing = everywhere - where
        if not missing:
            scope = "every command"
        elif len(missing) <= 2:
            scope = "all but " + ", ".join(sorted(missing))
        else:
            scope = ", ".join(sorted(where))
        flags.setdefault(name, []).append((flag, scope))
    return flags


def _default(model: type[BaseModel], name: str) -> str:
    field = model.model_fields[name]
    value: Any = field.get_default(call_default_factory=True)
    if name == "abstain_model_threshold" and value is None:
        from rag.answering import abstain

        return (f"the gate's cut points (unsure from {abstain.UNSURE_AT:g} for a question the reader reads, "
                f"{abstain.COVERAGE.get('unsure_at', abstain.UNSURE_AT):g} for a named or Chinese one; not covered "
                f"from {abstain.NOT_COVERED_AT:g}; `rag/answering/abstain_gate.json`)")
    if value is None:
        return "–"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, float):
        return f"`{value:g}`"
    if isinstance(value, int) and name.endswith("_bytes") and value % 1024 == 0:
        unit, size = ("MiB", value // 1024**2) if value % 1024**2 == 0 else ("KiB", value // 1024)
        return f"`{value:,}` ({size} {unit})"
    if isinstance(value, int):
        return f"`{value:,}`" if value >= 10_000 else f"`{value}`"
    return f"`{value}`"


def _nested(model: type[BaseModel]) -> dict[str, type[BaseModel]]:
    """The fields of `model` that are themselves settings models (the answer policy, the limits)."""
    return {name: field.annotation for name, field in model.model_fields.items()
            if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)}


def settings_table() -> str:
    """Every field of `Settings` that a run can set: flag, environment variable, default, description."""
    from rag.config import ENV_VARS, Settings

    flags = setting_flags()
    rows = ["| flag | environment | default | meaning |", "|---|---|---|---|"]
    for name, field in Settings.model_fields.items():
        if name in _nested(Settings):
            continue
        flag = "; ".join(f"`{f}` ({scope})" for f, scope in flags.get(name, [])) or "–"
        rows.append(f"| {flag} | `{ENV_VARS[name]}` | {_default(Settings, name)} | {_cell(field.description or '')} |")
    return "\n".join(rows)


def nested_tables() -> str:
    """The settings no flag or variable sets, one table each: the nested models of `Settings` (the answer policy)
    and the fixed limits (`rag.config.LIMITS`). Each field says what chose its value."""
    from rag.config import Limits, Settings

    groups = [(f"Settings.{name}", name, model) for name, model in _nested(Settings).items()]
    groups.append(("rag.config.LIMITS", "limits", Limits))
    parts = []
    for where, prefix, model in groups:
        doc = " ".join((model.__doc__ or "").split())
        rows = [f"`{where}` ({model.__name__}): {doc}", "", "| field | default | meaning |", "|---|---|---|"]
        for field_name, field in model.model_fields.items():
            meaning = _cell(field.description or "")
            rows.append(f"| `{prefix}.{field_name}` | {_default(model, field_name)} | {meaning} |")
        parts.append("\n".join(rows))
    return "\n\n".join(parts)
