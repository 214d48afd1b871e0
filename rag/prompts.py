"""Prompts: the text templates in prompts/ (or a `prompts_dir` override), filled in for each request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rag.config import ConfigError, Settings

DEFAULT_DIR = Path(__file__).resolve().parent.parent / "prompts"
NAMES = ("system", "answer", "condense")


def load(settings: Settings) -> dict[str, str]:
    """Every template, from `prompts_dir` where it has the file, else from the project's prompts/."""
    templates = {}
    for name in NAMES:
        candidates = ([settings.prompts_dir / f"{name}.txt"] if settings.prompts_dir else []) + \
                     [DEFAULT_DIR / f"{name}.txt"]
        path = next((p for p in candidates if p.is_file()), None)
        if path is None:
            raise ConfigError(f"prompt template {name}.txt not found in {', '.join(map(str, candidates))}")
        templates[name] = path.read_text(encoding="utf-8").strip()
    for name, fields in (("answer", ("{sources}", "{question}")), ("condense", ("{history}", "{question}"))):
        missing = [f for f in fields if f not in templates[name]]
        if missing:
            raise ConfigError(f"prompt template {name}.txt lacks {', '.join(missing)}")
    return templates


def render_sources(sources: list[Any]) -> str:
    """Numbered sources as the answer prompt shows them. Angle brackets in paper text are escaped so an
    abstract cannot close its own <source> tag."""
    blocks = []
    for s in sources:
        title = s.title if s.has_title else "(untitled)"
        body = f"Title: {title}\nAbstract: {s.text}".replace("<", "&lt;").replace(">", "&gt;")
        blocks.append(f'<source n="{s.n}">\n{body}\n</source>')
    return "\n\n".join(blocks)


def fill(template: str, **values: str) -> str:
    # str.replace, not str.format: abstracts and questions are full of braces (LaTeX).
    for key, value in values.items():
        template = template.replace("{" + key + "}", value)
    return template
