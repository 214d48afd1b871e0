"""Optional API arguments over raw HTTP: a call's `data` list shorter than its function's parameters is filled
with nulls (each parameter's default) before Gradio reads it.

Gradio's HTTP API is positional and checks the count before the app sees the call: left to Gradio,
`{"data": ["What is X?"]}` to `/gradio_api/call/ask` is answered `event: error` with `"error": null` (no reason a
user can act on), and the server console prints a traceback for it. The Python client fills the defaults in from
the API's description; curl and other languages would have to list all five values. Every API function here takes
null for each optional parameter (`ChatApp.ask_api`, `related_api`, `topics_api`), so the short list means what it
says. A list that is too long, or a body that is not a JSON object with a `data` list, passes on unchanged: Gradio
answers it itself.

Written by hand because Gradio has no setting for it. A pure ASGI middleware like `rag.web.guard.Guard`, inside
it (so the guard's body caps apply first); it reads only POST bodies of the API routes named in `arity`.
"""

from __future__ import annotations

import inspect
import json
from typing import Any
from collections.abc import Callable

from rag.web.guard import ASGIApp, Message, Receive, Scope, Send, replaying

ROUTES = ("/gradio_api/call/", "/gradio_api/run/", "/gradio_api/api/")


def arity(functions: dict[str, Callable[..., Any]]) -> dict[str, int]:
    """API name -> how many values its `data` list takes (the function's parameters, `self` excluded)."""
    return {name: len([p for p in inspect.signature(fn).parameters if p != "self"]) for name, fn in functions.items()}


def padded(body: bytes, wanted: int) -> bytes | None:
    """The body with its `data` list filled with nulls up to `wanted` values, or None to leave it unchanged."""
    try:
        payload = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(payload, dict) or not isinstance(payload.get("data"), list) or len(payload["data"]) >= wanted:
        return None
    payload["data"] = payload["data"] + [None] * (wanted - len(payload["data"]))
    return json.dumps(payload).encode()


class ApiDefaults:
    """Fill a short `data` list of a call to one of `apis` (name -> number of values) with nulls."""

    def __init__(self, app: ASGIApp, apis: dict[str, int]) -> None:
        self.app, self.apis = app, apis

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        wanted = self._wanted(scope)
        if wanted is None:
            await self.app(scope, receive, send)
            return
        chunks, more = [], True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the client went away (or the guard cut the body off)
                await self.app(scope, _gone(message), send)
                return
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        filled = padded(body, wanted)
        if filled is not None:
            headers = [(k, v) for k, v in scope.get("headers", []) if k.lower() != b"content-length"]
            scope = {**scope, "headers": [*headers, (b"content-length", str(len(filled)).encode())]}
            body = filled
        await self.app(scope, replaying(body, receive), send)

    def _wanted(self, scope: Scope) -> int | None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            return None
        path = scope.get("path", "")
        route = next((r for r in ROUTES if path.startswith(r)), None)
        if route is None:
            return None
        return self.apis.get(path[len(route):].strip("/"))


def _gone(message: Message) -> Receive:
    """A `receive` for a client that went away before its body was whole: the app sees only that."""
    async def gone() -> Message:
        return message

    return gone
