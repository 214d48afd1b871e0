"""Errors: the one base class of every error whose message is meant for the user.

Each layer raises its own subclass (ConfigError, StoreError, EmbeddingError, LLMError, QuestionError,
StoreBusyError, QuestionSetError), whose message names the fix. The shells catch `RagError` alone and show
`one_line(exc)`; anything else is a bug, logged with its traceback and shown as a generic line.
"""

from __future__ import annotations

from typing import Any

class RagError(Exception):
    """An expected failure; `str(exc)` says what happened and what to do."""


def one_line(exc: BaseException, limit: int | None = None) -> str:
    """The error's message on one line (whitespace collapsed), cut at `limit` characters if given (by default not:
    a message ends with its fix, e.g. the command to run)."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if limit is None or len(text) <= limit else text[: limit - 1] + "…"


def whole_number(value: Any, maximum: int, what: str, error: type[RagError]) -> int:
    """`value` as a caller gave it (API JSON, a CLI flag, a slider: 5, 5.0 or "5") as a whole number 1..maximum;
    anything else raises `error` saying the range and what the number counts."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= maximum:
        raise error(f"k must be a whole number from 1 to {maximum} ({what}), got {str(value)[:40]!r}.")
    return value
