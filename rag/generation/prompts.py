"""Prompts: the text templates in rag/generation/templates/ (or a `prompts_dir` override), filled in per request.

The templates ship inside the package (pyproject makes them package data), so a checkout, an editable install and
a wheel all read them with `importlib.resources`; prompts/README.md says what each is for.

The answer prompt asks for the answer in the question's language (`answer_language`). Only scripts are told
apart, which takes no model and no guessing: CJK characters make a question Chinese, Japanese (with kana) or
Korean (Hangul); anything else is "the language of the question", which the model reads better than we could.
"""

from __future__ import annotations

import re
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any

from rag.config import ConfigError, Settings

DEFAULT_DIR: Traversable = resources.files("rag.generation") / "templates"
NAMES = ("system", "answer", "condense", "search", "search_followup")

# The system prompt's refusal ("The sources do not contain an answer ..."), as models write it.
_REFUSAL = r"sources? do(?:es)? not contain(?: an answer)?"
# How models say "not in the sources": the prompt's wording and others.
NO_ANSWER = re.compile(
    rf"{_REFUSAL}|(?:sources|abstracts|papers) (?:do|does) not (?:contain|mention|cover|address|discuss|say)|"
    r"not (?:contained|mentioned|covered|addressed) in the (?:sources|abstracts)|"
    r"cannot be answered (?:from|with|using) the (?:sources|abstracts)", re.IGNORECASE)
# What no answer worth repairing with citations holds (`rag.generation.support.attribute`): the prompt's refusal
# (SmolLM2 writes it inside junk), or the prompt's own words echoed back.
NOT_AN_ANSWER = re.compile(rf"{_REFUSAL}|\b(?:Instructions|Question|Sources)\s*:|<source\b", re.IGNORECASE)


def load(settings: Settings) -> dict[str, str]:
    """Every template, from `prompts_dir` where it has the file, else the bundled one (templates/)."""
    templates = {}
    for name in NAMES:
        candidates: list[Traversable] = [settings.prompts_dir / f"{name}.txt"] if settings.prompts_dir else []
        candidates.append(DEFAULT_DIR / f"{name}.txt")
        path = next((p for p in candidates if p.is_file()), None)
        if path is None:
            raise ConfigError(f"prompt template {name}.txt not found in {', '.join(map(str, candidates))}")
        templates[name] = path.read_text(encoding="utf-8").strip()
    for name, fields in (("answer", ("{sources}", "{question}")), ("condense", ("{history}", "{question}")),
                         ("search", ("{question}",)), ("search_followup", ("{history}", "{question}"))):
        missing = [f for f in fields if f not in templates[name]]
        if missing:
            raise ConfigError(f"prompt template {name}.txt lacks {', '.join(missing)}")
    return templates


def render_sources(sources: list[Any]) -> str:
    """Numbered sources as the answer prompt shows them. Angle brackets in paper text are escaped so an
    abstract cannot close its own <source> tag. A title-only paper says it has no abstract, so the model does not
    take its title for its content."""
    blocks = []
    for s in sources:
        title = s.title if s.has_title else "(untitled)"
        abstract = s.text if s.has_abstract else "(not available: title and authors only)"
        body = f"Title: {title}\nAbstract: {abstract}".replace("<", "&lt;").replace(">", "&gt;")
        blocks.append(f'<source n="{s.n}">\n{body}\n</source>')
    return "\n\n".join(blocks)


_SCRIPTS = {"Korean": re.compile(r"[\u1100-\u11ff\u3130-\u318f\uac00-\ud7af]"),
            "Japanese": re.compile(r"[\u3040-\u30ff]"),
            "Chinese": re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")}
_LATIN_WORD = re.compile(r"[A-Za-z]+")


def language_of(text: str) -> str:
    """The language of `text` when its script tells it: "Chinese", "Japanese" or "Korean" if it has more CJK
    characters than words in Latin letters ("SAE 的训练更便宜吗" is Chinese), else "". Hangul make it Korean and
    kana Japanese, whatever Chinese characters come with them."""
    counts = {name: len(pattern.findall(text)) for name, pattern in _SCRIPTS.items()}
    if sum(counts.values()) <= len(_LATIN_WORD.findall(text)):
        return ""
    return next(name for name, count in counts.items() if count)


def answer_language(question: str) -> str:
    """What the answer prompt's {language} says."""
    language = language_of(question)
    return f"{language}, the language of the question" if language else "the language of the question"


def fill(template: str, **values: str) -> str:
    # str.replace, not str.format: abstracts and questions are full of braces (LaTeX).
    for key, value in values.items():
        template = template.replace("{" + key + "}", value)
    return template
