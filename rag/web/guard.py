"""HTTP guard: the protections Gradio's server lacks, as one small ASGI middleware around its FastAPI app, and the
login check Gradio calls (`LoginThrottle`).

- **Content-Security-Policy on every response.** Only the app's own scripts run: the inline `<script>` tags of
  Gradio's page template get a fresh nonce per page, and nothing else inline (markup smuggled in through a paper
  or a model's answer, an `onerror=` attribute) may run. Images only from this server or `data:` URLs, and
  fetches only to this server, so a planted `![x](http://elsewhere/?q=...)` can neither load nor leak the
  question. Gradio's page needs inline styles (`style-src 'unsafe-inline'`); styles cannot run code.
- **Host header check.** A request naming another host than the ones served (loopback names, the bound address,
  RAG_ALLOWED_HOSTS) is refused with 421: a web page whose name an attacker points at 127.0.0.1 (DNS rebinding)
  could otherwise ask, upload and read answers of a no-login instance from a visitor's browser. Bound to 0.0.0.0
  (or ::) without RAG_ALLOWED_HOSTS, the names are not known and every host is accepted.
- **Request body caps.** A body larger than `max_body` bytes (by Content-Length, or counted as it streams in) is
  refused with 413 before the app reads it, so a 100 MB "question" costs nothing; the upload route has a cap of
  its own for the whole request (`max_upload`; Gradio's `max_file_size` is per file, up to 1,000 files a request).
- **Upload allowance** (`UploadBudget`). The upload route is under the limits of "Add papers", which uses it: so many
  upload requests an hour from one client address and from all together, and a byte budget an hour for all
  together, counted as the body streams in; past them, 429 with Retry-After. Gradio keeps every upload for an hour
  with or without a login, and 15 POSTs of 10 MB were taken in 2.7 s: a loop filled the disk in minutes.
- **Login form shape.** `/login` takes exactly one `username` and one `password`, form-encoded or multipart (what
  Gradio's login page sends); a repeated field, another content type or a body over 64 KB is refused with 400/415/
  413 before Gradio reads it, so no parser difference can decide which name is checked.
- **Login throttling** (`LoginThrottle`, Gradio's `auth=` callable, so failures are counted for exactly the name
  Gradio compares): after `max_failures` failed logins for one user name within `window` seconds, that name is
  answered 429 with Retry-After until the window has passed, the right password included, so passwords cannot be
  tried hundreds per second; the check and the count happen under one lock, so parallel guesses get no more.
  Counted per user name, not per address: the server trusts `X-Forwarded-For` from loopback (uvicorn's default),
  so an address can be made up, a user name under attack cannot. The price: an attacker can keep that one name
  locked for a minute at a time (docs/security.md says so).

Written by hand because Gradio has no setting for any of these; it is a pure ASGI middleware (not Starlette's
BaseHTTPMiddleware) so that Gradio's streamed (SSE) responses pass through untouched. (Starlette's
TrustedHostMiddleware does the host check, but its bare "Invalid host header" names no fix.)
"""

from __future__ import annotations

import re
import secrets
import threading
import time
from collections import defaultdict, deque
from typing import Any
from collections.abc import Awaitable, Callable, Iterable

from rag.config import LIMITS

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# The caps, each with what chose it: rag/config.py `Limits`.
MAX_BODY = LIMITS.request_bytes
MAX_UPLOAD = LIMITS.upload_bytes  # the whole upload request; also each file's (Gradio's max_file_size, app.py)
MAX_LOGIN_BODY = LIMITS.login_bytes
UPLOADS_PER_CLIENT_HOUR, UPLOADS_PER_HOUR = LIMITS.uploads_per_session_hour, LIMITS.uploads_per_hour
UPLOAD_BYTES_PER_HOUR = LIMITS.upload_bytes_per_hour
UPLOAD_PATHS = ("/gradio_api/upload", "/gradio_api/process_recording")
LOGIN_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")
LOOPBACK = ("localhost", "127.0.0.1", "::1")
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


def allowed_hosts(bind: str, extra: str | None = None) -> frozenset[str] | None:
    """The host names a server bound to `bind` answers to: loopback's, the bound address, and `extra`
    (RAG_ALLOWED_HOSTS: comma-separated names, "*" for any). None means any host (bound to every address, and no
    names given)."""
    names = {n.strip().lower().rstrip(".").strip("[]") for n in (extra or "").split(",") if n.strip()}
    if "*" in names or (bind.strip("[]") in ("0.0.0.0", "::", "") and not names):
        return None
    return frozenset(names | {bind.lower().strip("[]"), *LOOPBACK})


def host_name(header: bytes | None) -> str:
    """The host name of a Host header, without its port: b"[::1]:7860" -> "::1", b"Example.org." -> "example.org"."""
    value = (header or b"").decode("latin-1").strip().lower()
    if value.startswith("["):
        return value[1:value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0].rstrip(".") if value.count(":") == 1 else value.rstrip(".")


class UploadBudget:
    """What the upload route takes in an hour: `per_client` requests from one client address, `per_hour` requests
    and `bytes_per_hour` bytes from all clients together (the module docstring says why). A client address is
    uvicorn's, which a proxy on loopback may set from X-Forwarded-For; the totals hold whatever a client claims.
    Used from the server's event loop only, so it needs no lock."""

    def __init__(self, per_client: int | None = None, per_hour: int | None = None,
                 bytes_per_hour: int | None = None, window: float = 3600.0) -> None:
        self.per_client = UPLOADS_PER_CLIENT_HOUR if per_client is None else per_client
        self.per_hour = UPLOADS_PER_HOUR if per_hour is None else per_hour
        self.bytes_per_hour = UPLOAD_BYTES_PER_HOUR if bytes_per_hour is None else bytes_per_hour
        self.window = window
        self.clients: dict[str, deque[float]] = {}
        self.requests: deque[float] = deque()
        self.received: deque[list[float]] = deque()  # [time, bytes] of each request, its bytes as counted so far
        self.spent = 0

    def admit(self, client: str, declared: int | None) -> tuple[str, float] | None:
        """None when this request may upload now (it is then counted), else (why, seconds to wait)."""
        now = time.monotonic()
        self._forget(now)
        mine = self.clients.setdefault(client, deque())
        for times, limit, whose in ((mine, self.per_client, "This address has"),
                                    (self.requests, self.per_hour, "All clients together have")):
            if len(times) >= limit:
                return (f"{whose} uploaded {limit} times in the last hour; "
                        f"{_try_again(self.window - (now - times[0]))}"), self.window - (now - times[0])
        if self.spent >= self.bytes_per_hour or declared is not None and declared > self.bytes_per_hour - self.spent:
            return self.spent_message(), self.wait()
        mine.append(now)
        self.requests.append(now)
        self.received.append([now, 0])
        return None

    def spend(self, size: int, entry: list[float]) -> bool:
        """Count `size` more bytes of the request `entry` (its [time, bytes] in `received`, the last one right after
        `admit`); False once the hour's bytes are spent."""
        self.spent += size
        entry[1] += size
        return self.spent <= self.bytes_per_hour

    def wait(self) -> float:
        """Seconds until the oldest upload counted leaves the hour."""
        return self.window - (time.monotonic() - self.received[0][0]) if self.received else self.window

    def spent_message(self) -> str:
        return (f"The server has taken {self.bytes_per_hour // 1024 // 1024} MB of uploads in the last hour; "
                f"{_try_again(self.wait())}")

    def _forget(self, now: float) -> None:
        for times in [self.requests, *self.clients.values()]:
            while times and now - times[0] > self.window:
                times.popleft()
        for name in [n for n, t in self.clients.items() if not t]:
            del self.clients[name]
        while self.received and now - self.received[0][0] > self.window:
            self.spent -= int(self.received.popleft()[1])


def _try_again(seconds: float) -> str:
    return (f"try again in {max(1, round(seconds / 60))} min, or ask whoever runs the server to add the papers with "
            "`rag ingest`.")


class Guard:
    """Wrap an ASGI app with the policy, the host check, the body caps, the upload allowance and the login form
    check (see the module docstring)."""

    def __init__(self, app: ASGIApp, max_body: int = MAX_BODY, max_upload: int = MAX_UPLOAD,
                 hosts: Iterable[str] | None = LOOPBACK, uploads: UploadBudget | None = None) -> None:
        self.app, self.max_body, self.max_upload = app, max_body, max_upload
        self.hosts = None if hosts is None else frozenset(hosts)
        self.uploads = uploads or UploadBudget()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        if await self._refused_host(scope, headers, send):
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        cap = self.max_upload if path.startswith(UPLOAD_PATHS) else self.max_body
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > cap:
            await _too_large(send, cap)
            return
        state: dict[str, Any] = {"over": False, "started": False}
        budget: tuple[UploadBudget, list[float]] | None = None
        if scope.get("method") == "POST" and path.startswith(UPLOAD_PATHS):
            client = str((scope.get("client") or ("",))[0])
            over = self.uploads.admit(client, int(declared) if declared is not None and declared.isdigit() else None)
            if over is not None:
                await _plain(send, 429, over[0], [(b"retry-after", str(int(over[1]) + 1).encode())])
                return
            budget = (self.uploads, self.uploads.received[-1])  # this request's entry: admit just added it
        receive = self._capped(receive, cap, state, budget)
        if scope.get("method") == "POST" and path.rstrip("/").endswith("/login"):
            refused, receive = await _check_login(scope, receive, headers)
            if refused:
                await _plain(send, *refused)
                return
        try:
            await self.app(scope, receive, _secured(send, state, cap))
        except Exception:
            if not state["over"]:
                raise
        if state["over"] and not state["started"]:  # the app gave up on the cut-off body without answering
            state["started"] = True
            await _refuse(send, state, cap)

    async def _refused_host(self, scope: Scope, headers: dict[bytes, bytes], send: Send) -> bool:
        """Refuse a request naming a host this server does not answer to (DNS rebinding): a websocket is closed
        (1008), an HTTP request answered 421 naming RAG_ALLOWED_HOSTS. Returns whether it was refused."""
        if self.hosts is None or b"host" not in headers or host_name(headers[b"host"]) in self.hosts:
            return False
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
        else:
            await _plain(send, 421, "This server does not answer to that host name (its operator can allow it "
                                    "with RAG_ALLOWED_HOSTS).")
        return True

    @staticmethod
    def _capped(receive: Receive, cap: int, state: dict[str, Any],
                budget: tuple[UploadBudget, list[float]] | None = None) -> Receive:
        """`receive` counting the body: past `cap`, or past the hour's upload bytes of `budget` (the allowance and
        this request's entry in it), the app sees the client go away and the client gets a 413 (a 429 for the
        budget, `state["refusal"]`)."""
        seen = 0

        async def wrapped() -> Message:
            nonlocal seen
            if state["over"]:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                size = len(message.get("body", b""))
                seen += size
                if seen > cap:
                    state["over"] = True
                    return {"type": "http.disconnect"}
                if budget is not None and not budget[0].spend(size, budget[1]):
                    state["over"] = True
                    state["refusal"] = (429, budget[0].spent_message(),
                                        [(b"retry-after", str(int(budget[0].wait()) + 1).encode())])
                    return {"type": "http.disconnect"}
            return message

        return wrapped


def _secured(send: Send, state: dict[str, Any], cap: int) -> Send:
    """`send` with the policy: every response gets the Content-Security-Policy (with a fresh nonce on each inline
    `<script>` of an HTML page, whose start is held until its body is whole), nosniff and no-referrer; an answer to
    a body cut off at `cap` (`state["over"]`, set by `Guard._capped`) becomes a 413 (or `state["refusal"]`)."""
    nonce = secrets.token_urlsafe(16)

    async def send_wrapped(message: Message) -> None:
        if state["over"] and not state["started"]:  # the app answered a body cut off at the cap: 413 instead
            if message["type"] == "http.response.start":
                state["started"] = True
                await _refuse(send, state, cap)
            return
        if state["over"]:
            return
        if message["type"] == "http.response.start":
            state["started"] = True
            headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"content-security-policy"]
            html = any(k.lower() == b"content-type" and v.startswith(b"text/html") for k, v in headers)
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

    return send_wrapped


async def _too_large(send: Send, cap: int) -> None:
    await _plain(send, 413, f"Request too large (over {cap // 1024 // 1024} MB).")


async def _refuse(send: Send, state: dict[str, Any], cap: int) -> None:
    """The answer to a body cut off by `Guard._capped`: its refusal, or 413 for the cap."""
    if "refusal" in state:
        await _plain(send, *state["refusal"])
    else:
        await _too_large(send, cap)


async def _check_login(scope: Scope, receive: Receive, headers: dict[bytes, bytes]
                       ) -> tuple[tuple[int, str] | None, Receive]:
    """Refuse a login body Gradio's form parser and ours might read differently: another content type than its
    login page sends, a body over MAX_LOGIN_BODY, a repeated or missing `username` / `password`. Parsed by the
    same parser as Gradio's (Starlette's `Request.form`); returns (status, message) or None, and the body to
    hand on unchanged."""
    from starlette.requests import Request

    kind = headers.get(b"content-type", b"").split(b";")[0].strip().lower().decode("latin-1")
    if kind not in LOGIN_TYPES:
        return (415, "A login is a form (application/x-www-form-urlencoded or multipart/form-data)."), receive
    chunks, size, more = [], 0, True
    while more:
        message = await receive()
        if message["type"] != "http.request":
            return (400, "The login form was cut off."), receive
        chunks.append(message.get("body", b""))
        size += len(chunks[-1])
        if size > MAX_LOGIN_BODY:
            return (413, "A login form is a user name and a password (this one is over 64 KB)."), receive
        more = message.get("more_body", False)
    body = b"".join(chunks)
    try:
        form = await Request(scope, replaying(body, receive)).form(max_files=0, max_fields=8)
        counts = (len(form.getlist("username")), len(form.getlist("password")))
        await form.close()
    except Exception:  # Starlette's MultiPartException (a file part, too many fields) or a disconnect
        return (400, "The login form could not be read."), receive
    if counts != (1, 1):
        return (400, "A login form has one username and one password field."), receive
    return None, replaying(body, receive)


def replaying(body: bytes, receive: Receive) -> Receive:
    """A `receive` that gives `body`, already read, whole, then what the client sends next (its disconnect): how a
    middleware that read the body hands it on."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


class LoginThrottle:
    """Gradio's `auth=` callable: checks a user name and password against the accounts, counting failures for the
    very name Gradio compared (see the module docstring). Raises 429 (with Retry-After) for a name that failed
    `max_failures` times within `window` seconds, before comparing anything."""

    def __init__(self, accounts: dict[str, str], max_failures: int = LIMITS.login_failures,
                 window: float = LIMITS.login_window,
                 max_names: int = 10_000) -> None:
        self.accounts = dict(accounts)
        self.max_failures, self.window, self.max_names = max_failures, window, max_names
        self._failures: dict[str, deque[float]] = defaultdict(deque)
        self._lock = threading.Lock()

    def __call__(self, username: str, password: str) -> bool:
        from fastapi import HTTPException

        with self._lock:  # check, compare and count at once: parallel guesses wait their turn
            wait = self._locked_for(username)
            if wait > 0:
                raise HTTPException(status_code=429, detail=f"Too many failed logins; try again in {wait:.0f} s.",
                                    headers={"Retry-After": str(int(wait) + 1)})
            expected = self.accounts.get(username)
            ok = expected is not None and secrets.compare_digest(password.encode(), expected.encode())
            if not ok:
                self._failed(username)
            return ok

    def _locked_for(self, name: str) -> float:
        times = self._failures.get(name)
        now = time.monotonic()
        while times and now - times[0] > self.window:
            times.popleft()
        if not times or len(times) < self.max_failures:
            return 0.0
        return self.window - (now - times[0])

    def _failed(self, name: str) -> None:
        if len(self._failures) >= self.max_names:  # made-up names: forget those with no recent failure, and if
            now = time.monotonic()               # that is not enough, all made-up ones (never the accounts')
            for other in [n for n, t in self._failures.items() if not t or now - t[-1] > self.window]:
                del self._failures[other]
            if len(self._failures) >= self.max_names:
                for other in [n for n in self._failures if n not in self.accounts]:
                    del self._failures[other]
        self._failures[name].append(time.monotonic())


async def _plain(send: Send, status: int, text: str, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    body = text.encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()),
                            (b"content-security-policy", policy(None).encode()),
                            (b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer"),
                            *(extra or [])]})
    await send({"type": "http.response.body", "body": body})
