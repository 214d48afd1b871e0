"""LLM: chat completions from any OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, llama.cpp server).

The `openai` client does the HTTP, the streaming (SSE) and the retries with backoff on connection errors,
429 and 5xx (honouring Retry-After). What it lacks is a bound on the *whole* wait: retries and Retry-After
sleeps can add up far past the read timeout. So each call runs in a worker thread that hands its chunks over
a queue, and the caller waits at most `llm_timeout` for the first chunk and between two chunks, and at most
`llm_deadline` in all, counted from the request's start and covering the retries (the caller counts its own
checks of the answer inside it too): a server that drips a token just inside the timeout would otherwise hold
the answer for as long as it likes. Past either, or on any fault (refused, timeout, HTTP error, a stream cut
mid-way, malformed data, more text than `max_tokens` allows), the caller gets an `LLMError` with a one-line
reason, and the stream is closed at once (a llama.cpp server stops computing an answer when its client hangs
up). Error bodies come in every shape (OpenAI's `{"error": {"message": ...}}`, a bare string, a list, an HTML
page); only a short string is quoted, and
describing a fault never raises, so no body can turn a fallback into a crash.

The API key is never put in a message: every error text is scrubbed of it, and of the base URL's credentials in
every form a server may quote them (its password, user:password, the base64 of a Basic header, query secrets).
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast
from collections.abc import Iterator

from rag.config import Settings
from rag.errors import RagError, redact_library_logs, redact_url, scrub, split_credentials, split_query, url_secrets

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessageParam

_MAX_DETAIL = 200  # characters of the server's own error text worth quoting; longer is a page, not a reason


class LLMError(RagError, RuntimeError):
    """The endpoint could not give an answer; `str(exc)` is a one-line reason for the user."""


@dataclass
class Usage:
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


@dataclass
class Completion:
    """Filled in while a stream runs: what the server reported, and when the first token arrived."""

    usage: Usage = field(default_factory=Usage)
    first_token_at: float | None = None
    chunks: int = 0  # text deltas received: llama.cpp's server streams one token a delta and reports no usage
    finish_reason: str | None = None  # "stop", or "length" when the answer ran into max_tokens


class ChatClient:
    def __init__(self, settings: Settings) -> None:
        import httpx
        import openai

        self.settings = settings
        self.model = settings.llm_model or ""
        self._key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else ""
        # What an error text is scrubbed of: the key, the URL's password, user:password and its base64, the values
        # of its credential-like query parameters, in every form a server may quote them (`scrub`).
        self._secrets = url_secrets(settings.llm_base_url, self._key)
        redact_library_logs()  # the libraries log each request's URL, with the base URL's query
        url, login = split_credentials(settings.llm_base_url or "https://api.openai.com/v1")
        url, query = split_query(url)
        self.base_url = redact_url(settings.llm_base_url or url)  # what messages name: no credentials in it
        self._client = openai.OpenAI(
            base_url=url,  # a URL's user-info goes as basic auth, so no library logs it with the URL
            default_query=query or None,  # the base URL's query goes after each request's path, not before it
            http_client=openai.DefaultHttpxClient(auth=login) if login else None,
            api_key=self._key or "not-needed",  # local servers ignore it; the client insists on one
            timeout=httpx.Timeout(settings.llm_timeout, connect=settings.llm_connect_timeout),
            max_retries=settings.llm_max_retries,
        )
        self._client.chat.completions  # noqa: B018  imports its modules now (~0.5 s), not inside the timed first request

    def close(self) -> None:
        """Close the pooled HTTP connections to the endpoint (the client is not used after)."""
        self._client.close()

    def complete(self, messages: list[dict[str, str]], max_tokens: int = 128, stream: bool = False) -> str:
        """One answer as a whole (used for rewriting questions). `stream`: received as a stream all the same, so
        that giving up at the deadline closes it and a llama.cpp server stops generating; a plain request it
        would finish first, and the question's answer would queue behind it."""
        if stream:
            result = self._run(lambda: self._client.chat.completions.create(
                model=self.model, messages=cast("list[ChatCompletionMessageParam]", messages),
                temperature=self.settings.llm_temperature, max_tokens=max_tokens, stream=True,
            ), streamed=True, completion=Completion(), max_tokens=max_tokens)
        else:
            result = self._run(lambda: self._client.chat.completions.create(
                model=self.model, messages=cast("list[ChatCompletionMessageParam]", messages),
                temperature=self.settings.llm_temperature, max_tokens=max_tokens,
            ), streamed=False, max_tokens=max_tokens)
        text = "".join(result)
        if not text.strip():
            raise LLMError("the LLM endpoint returned an empty answer")
        return text.strip()

    def stream(self, messages: list[dict[str, str]], completion: Completion) -> Iterator[str]:
        """Yield the answer's text deltas as they arrive; `completion` gets usage and timing."""
        return self._run(lambda: self._client.chat.completions.create(
            model=self.model, messages=cast("list[ChatCompletionMessageParam]", messages),
            temperature=self.settings.llm_temperature, max_tokens=self.settings.llm_max_tokens,
            stream=True, stream_options={"include_usage": True},
        ), streamed=True, completion=completion, max_tokens=self.settings.llm_max_tokens)

    # ---- the worker / queue pump -------------------------------------------------------------------

    def _run(self, request, streamed: bool, completion: Completion | None = None,
             max_tokens: int = 512) -> Iterator[str]:
        deadline = time.monotonic() + self.settings.llm_deadline
        items: queue.Queue = queue.Queue()
        cancel = threading.Event()
        held: list = []  # the open stream, so the caller can close it when it gives up (see `_drain`)

        def work() -> None:
            response = None
            try:
                response = request()
                held.append(response)
                if cancel.is_set():
                    return
                if not streamed:
                    if not getattr(response, "choices", None):
                        raise LLMError("the LLM endpoint sent a malformed response (no choices)")
                    items.put(("usage", getattr(response, "usage", None)))
                    items.put(("text", response.choices[0].message.content or ""))
                else:
                    finished = False
                    for chunk in response:
                        if cancel.is_set():
                            return
                        if getattr(chunk, "usage", None):
                            items.put(("usage", chunk.usage))
                        for choice in chunk.choices or []:
                            if choice.delta and choice.delta.content:
                                items.put(("text", choice.delta.content))
                            if choice.finish_reason:
                                finished = True
                                items.put(("finish", choice.finish_reason))
                    if not finished:  # every OpenAI-compatible server ends a complete stream with a finish_reason
                        raise LLMError("the LLM stream broke off before the answer was complete")
                items.put(("end", None))
            except BaseException as exc:  # handed to the caller, who turns it into one line
                items.put(("error", exc))
            finally:
                if response is not None and streamed:
                    with contextlib.suppress(Exception):
                        response.close()

        threading.Thread(target=work, name="llm-request", daemon=True).start()
        return self._drain(items, cancel, completion, deadline, max_tokens * self.settings.llm_max_chars_per_token,
                           held)

    def _drain(self, items: queue.Queue, cancel: threading.Event, completion: Completion | None,
               deadline: float, max_chars: int, held: list) -> Iterator[str]:
        wait = self.settings.llm_timeout
        late = f"the LLM endpoint did not finish its answer within {self.settings.llm_deadline:g} s"
        read = 0
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise LLMError(late)
                try:
                    kind, value = items.get(timeout=min(wait, left))
                except queue.Empty:
                    if left < wait:
                        raise LLMError(late) from None
                    raise LLMError(f"the LLM endpoint at {self.base_url} did not answer within {wait:g} s") from None
                if kind == "text":
                    if completion is not None and completion.first_token_at is None:
                        completion.first_token_at = time.perf_counter()
                    read += len(value)
                    if completion is not None:
                        completion.chunks += 1
                    if read > max_chars:  # the server ignores max_tokens: stop reading (the worker is told to close)
                        raise LLMError(f"the LLM endpoint sent more text than max_tokens allows "
                                       f"({max_chars:,} characters)")
                    yield value
                elif kind == "finish" and completion is not None:
                    completion.finish_reason = str(value)
                elif kind == "usage" and value is not None and completion is not None:
                    completion.usage = Usage(getattr(value, "prompt_tokens", None),
                                             getattr(value, "completion_tokens", None))
                elif kind == "error":
                    raise LLMError(self._describe(value)) from None
                elif kind == "end":
                    return
        finally:
            cancel.set()
            # Close the connection now, not when the worker next hears from the server: a llama.cpp server
            # stops computing an abandoned answer only when its client hangs up, and the next question waits
            # behind it until then.
            for response in held:
                with contextlib.suppress(Exception):
                    response.close()

    def _describe(self, exc: BaseException) -> str:
        """One line for the user about `exc`, scrubbed of the key; never raises, whatever `exc` holds."""
        try:
            reason = self._reason(exc)
        except Exception:  # e.g. a str() that fails: the fault must still become a fallback, not a crash
            reason = f"the LLM request failed ({type(exc).__name__})"
        return self.scrub(" ".join(reason.split()))[:300]

    def _reason(self, exc: BaseException) -> str:
        import httpx
        import openai

        if isinstance(exc, LLMError):
            reason = str(exc)
        elif isinstance(exc, openai.APITimeoutError):
            reason = f"the LLM endpoint at {self.base_url} timed out"
        elif isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__ or exc.__context__
            if isinstance(cause, (httpx.RemoteProtocolError, httpx.ReadError)):
                reason = "the LLM stream broke off before the answer was complete"
            else:
                reason = f"could not connect to the LLM endpoint at {self.base_url}"
        elif isinstance(exc, openai.RateLimitError):
            reason = "the LLM endpoint is rate-limiting requests (HTTP 429); try again later"
        elif isinstance(exc, openai.APIStatusError):
            detail = _detail(exc.body)
            reason = f"the LLM endpoint answered HTTP {exc.status_code}" + (f": {detail}" if detail else "")
        elif isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError)):
            reason = "the LLM stream broke off before the answer was complete"
        elif isinstance(exc, (ValueError, openai.APIResponseValidationError)):
            reason = "the LLM endpoint sent a malformed response"
        else:
            reason = f"the LLM request failed: {type(exc).__name__}: {exc}"
        return reason

    def scrub(self, text: str) -> str:
        """`text` without any secret of the endpoint (`rag.errors.url_secrets`: the API key, the base URL's
        password, user:password and its base64, its query's credentials) or the credentials of any URL in it."""
        return scrub(text, self._secrets)


def _detail(body: object, depth: int = 0) -> str:
    """The server's own words in an error body if they are a short string, else "". The client has already
    unwrapped OpenAI's `{"error": ...}`; what is left may be `{"message": ...}`, `{"error": "..."}` (some proxies),
    `{"detail": "..."}` (FastAPI), plain text or HTML, a list, a number, or nothing."""
    if isinstance(body, str):
        text = " ".join(body.split())
        return text if len(text) <= _MAX_DETAIL else ""
    if isinstance(body, dict) and depth < 2:
        for key in ("message", "error", "detail"):
            text = _detail(body.get(key), depth + 1)
            if text:
                return text
    return ""
