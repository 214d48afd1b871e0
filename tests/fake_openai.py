"""A small OpenAI-compatible HTTP server for the tests, on 127.0.0.1 and a free port.

It serves `GET /v1/models` and `POST /v1/embeddings`. Embeddings are deterministic: a hashed bag of lower-cased
words in 64 dimensions, so texts that share words are near each other, which is enough for retrieval tests.
Every request is recorded (path, headers, body) so tests can assert on what the client really sent.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DIM = 64


def bag_of_words(text: str) -> list[float]:
    vector = [0.0] * DIM
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        h = int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "little")
        vector[h % DIM] += 1.0 if h & 1 << 31 else -1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


class FakeOpenAI:
    def __init__(self, model: str = "fake-embed") -> None:
        self.model = model
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def _send(self, status: int, payload: dict) -> None:
                body = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                server.requests.append({"path": self.path, "headers": dict(self.headers), "body": None})
                if self.path.rstrip("/") == "/v1/models":
                    self._send(200, {"object": "list", "data": [{"id": server.model, "object": "model"}]})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                if self.path.rstrip("/") == "/v1/embeddings":
                    inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
                    data = [{"object": "embedding", "index": i, "embedding": bag_of_words(t)}
                            for i, t in enumerate(inputs)]
                    self._send(200, {"object": "list", "data": data, "model": body.get("model"),
                                     "usage": {"prompt_tokens": 0, "total_tokens": 0}})
                else:
                    self._send(404, {"error": {"message": "not found"}})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> "FakeOpenAI":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
