"""Errors: the one base class of every error whose message is meant for the user.

Each layer raises its own subclass (ConfigError, StoreError, EmbeddingError, LLMError, QuestionError,
StoreBusyError, QuestionSetError), whose message names the fix. The shells catch `RagError` alone and show
`one_line(exc)`; anything else is a bug, logged with its traceback and shown as a generic line.
"""

from __future__ import annotations

import logging
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


def split_query(url: str) -> tuple[str, dict[str, str]]:
    """`url` without its query and fragment, and the query as a dict: what an HTTP client given a base URL must
    add to each request's URL (the openai client's `default_query`). Left in the base URL, a query ends up before
    the path the client appends (`/v1?api_key=…/chat/completions`)."""
    from urllib.parse import parse_qsl, urlsplit, urlunsplit

    parts = urlsplit(url)
    if not parts.query and not parts.fragment:
        return url, {}
    return urlunsplit(parts._replace(query="", fragment="")), dict(parse_qsl(parts.query, keep_blank_values=True))


_SECRET_NAME = re.compile(r"(?i)key|token|secret|passw(?:or)?d|pwd|auth|sig(?:nature)?|credential")
# A bare password or query value shorter than this is not looked for in free text: "ab" would blank every "ab"
# of a message. The forms that carry it with the user name (user:password, its base64) are looked for at any length.
_MIN_SECRET = 4


def url_secrets(url: str | None, key: str = "") -> list[str]:
    """Every form in which the secrets of a configured endpoint can come back in a server's error text: the API
    key, the URL's password, "user:password" and its base64 (a `Basic` Authorization header, as a server may
    quote it), each as written in the URL and percent-decoded, and the values of credential-like query parameters
    (`?api_key=`). Longest first, so a text is scrubbed of the longest match (`scrub`)."""
    import base64
    from urllib.parse import parse_qsl, unquote, urlsplit

    found: set[str] = {key} if key else set()
    if url:
        try:
            parts = urlsplit(url)
        except ValueError:
            parts = None
        if parts is not None and parts.password is not None:
            raw_user, _, raw_password = parts.netloc.rpartition("@")[0].partition(":")
            for user, password in {(raw_user, raw_password), (unquote(raw_user), unquote(raw_password))}:
                pair = f"{user}:{password}".encode()
                found |= {pair.decode(), base64.b64encode(pair).decode(), base64.urlsafe_b64encode(pair).decode()}
                found |= {base64.b64encode(pair).decode().rstrip("=")}
                found |= {password} if len(password) >= _MIN_SECRET else set()
        if parts is not None:
            for name, value in parse_qsl(parts.query, keep_blank_values=True):
                if _SECRET_NAME.search(name) and len(value) >= _MIN_SECRET:
                    found |= {value, quote_value(value)}
    return sorted((s for s in found if s), key=len, reverse=True)


def quote_value(value: str) -> str:
    """`value` percent-encoded as a query value (how it appears in a request line a server quotes)."""
    from urllib.parse import quote

    return quote(value, safe="")


def scrub(text: str, secrets: list[str]) -> str:
    """`text` with each of `secrets` (`url_secrets`) replaced by `***` and every URL's credentials redacted
    (`redact_url`)."""
    for secret in secrets:
        text = text.replace(secret, "***")
    return redact_url(text)


class RedactingFilter(logging.Filter):
    """A log record's message and traceback with every URL's credentials redacted (`redact_url`). The HTTP
    libraries log each request's URL (httpx at INFO, openai at DEBUG), and a base URL's query secret
    (`?api_key=`) must stay in the URL it is sent with."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a record whose arguments do not fit its format: left for logging to report
            return True
        if redact_url(message) != message:
            record.msg, record.args = redact_url(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = redact_url(logging.Formatter().formatException(record.exc_info))
        return True


_REDACTED_LOGGERS = ("httpx", "openai", "openai._base_client", "httpcore")


def redact_library_logs() -> None:
    """Put `RedactingFilter` on the loggers of the HTTP libraries the LLM and embedding clients use (a logger's
    filters do not apply to its children's records, hence each by name). Idempotent."""
    for name in _REDACTED_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactingFilter) for f in logger.filters):
            logger.addFilter(RedactingFilter())


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
