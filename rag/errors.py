"""Errors: the one base class of every error whose message is meant for the user.

Each layer raises its own subclass (ConfigError, StoreError, EmbeddingError, LLMError, QuestionError,
StoreBusyError, QuestionSetError), whose message names the fix. The shells catch `RagError` alone and show
`one_line(exc)`; anything else is a bug, logged with its traceback and shown as a generic line.
"""

from __future__ import annotations

import re
from typing import Any

class RagError(Exception):
    """An expected failure; `str(exc)` says what happened and what to do."""


# The user-info of a URL (`http://user:secret@host/`) and the value of a query parameter named like a credential
# (`?api_key=...`, `&token=...`, `&sig=...`): what an OPENAI_BASE_URL, RAG_EMBED_BASE_URL or RAG_CHROMA_URL may
# carry, and what no message, notice, log line or page may show.
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/?#@]*@")
_SECRET_QUERY = re.compile(r"(?i)([?&;][\w.-]*(?:key|token|secret|passw(?:or)?d|pwd|auth|sig(?:nature)?|credential)"
                           r"[\w.-]*=)[^&;#\s]*")


def redact_url(text: str) -> str:
    """`text` with every URL's user-info and credential-like query values replaced by `***`, so a message that
    names an endpoint names its host and path, never its password."""
    return _SECRET_QUERY.sub(r"\1***", _USERINFO.sub(r"\1***@", text))


def split_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """`url` without its user-info, and that user-info as (user, password) for HTTP basic auth (what httpx does
    with a URL's user-info anyway). A client given the bare URL never logs the password with it."""
    from urllib.parse import unquote, urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None
    netloc = parts.hostname or ""
    netloc = f"[{netloc}]" if ":" in netloc else netloc
    netloc += f":{parts.port}" if parts.port else ""
    return (urlunsplit(parts._replace(netloc=netloc)),
            (unquote(parts.username or ""), unquote(parts.password or "")))


def one_line(exc: BaseException, limit: int | None = None) -> str:
    """The error's message on one line (whitespace collapsed, URL credentials redacted: `redact_url`), cut at
    `limit` characters if given (by default not: a message ends with its fix, e.g. the command to run)."""
    text = redact_url(" ".join(str(exc).split())) or type(exc).__name__
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
