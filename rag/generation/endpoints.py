"""Endpoints: which models an OpenAI-compatible endpoint offers, and which local LLM servers are running.

- `list_models(settings)`: the model ids of the configured endpoint's `GET /v1/models` (the `openai` client's
  `models.list()`), for `rag models` and the web page's model menu. Any fault is an `LLMError` with one line.
- `probe_local()`: `rag serve` with no model set looks once, at start, on 127.0.0.1 only, at the ports the usual
  local servers listen on (Ollama 11434, llama.cpp 8080, LM Studio 1234, vLLM 8000), with a short timeout, and
  `suggestion` prints what it found and the one line that would use it. Nothing found is used without being
  asked for: the answers stay extractive until the user sets a model.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from rag.config import Settings
from rag.generation.llm import ChatClient, LLMError

#: The local servers `rag serve` looks for, by port (their default ports, on 127.0.0.1 only).
LOCAL_SERVERS = {11434: "Ollama", 8080: "llama.cpp server", 1234: "LM Studio", 8000: "vLLM"}
PROBE_TIMEOUT = 0.5  # seconds per port; the ports are probed in parallel


@dataclass
class LocalServer:
    name: str
    base_url: str
    models: list[str]


def configured(settings: Settings) -> bool:
    """True if an endpoint was chosen: a base URL, or an API key for OpenAI's."""
    return bool(settings.llm_base_url or settings.llm_api_key)


def list_models(settings: Settings) -> list[str]:
    """The ids the endpoint lists, sorted. Raises LLMError (one line) if it is not configured or not reachable."""
    if not configured(settings):
        raise LLMError("no LLM endpoint is configured: set --llm-base-url / OPENAI_BASE_URL (e.g. "
                       "http://127.0.0.1:11434/v1 for Ollama), or OPENAI_API_KEY for OpenAI")
    client = ChatClient(settings.model_copy(update={"llm_max_retries": 0,
                                                    "llm_timeout": min(settings.llm_timeout, 10.0)}))
    try:
        return sorted({model.id for model in client._client.models.list()})
    except Exception as exc:  # whatever it was, one line for the user
        raise LLMError(client._describe(exc)) from None


def _probe(port: int, timeout: float) -> LocalServer | None:
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        with urllib.request.urlopen(base_url + "/models", timeout=timeout) as response:
            data = json.loads(response.read(1_000_000))
        models = sorted({str(m["id"]) for m in data["data"] if isinstance(m, dict) and m.get("id")})
    except (OSError, ValueError, KeyError, TypeError):  # nothing there, or not an OpenAI-compatible server
        return None
    return LocalServer(LOCAL_SERVERS.get(port, f"a server on port {port}"), base_url, models)


def probe_local(ports: dict[int, str] | None = None, timeout: float = PROBE_TIMEOUT) -> list[LocalServer]:
    """The OpenAI-compatible servers answering `GET /v1/models` on 127.0.0.1 at `ports` (default LOCAL_SERVERS)."""
    ports = LOCAL_SERVERS if ports is None else ports
    with ThreadPoolExecutor(len(ports) or 1) as pool:
        found = list(pool.map(lambda port: _probe(port, timeout), ports))
    return [server for server in found if server is not None]


def suggestion(found: list[LocalServer]) -> list[str]:
    """What `rag serve` prints about the local servers it found: each, and the one line that would use it."""
    lines = []
    for server in found:
        listed = ", ".join(server.models[:8]) + (" …" if len(server.models) > 8 else "") or "no models listed"
        lines.append(f"Found {server.name} at {server.base_url} ({listed}); answers stay extractive unless you choose "
                     "it:")
        model = server.models[0] if server.models else "MODEL"
        lines.append(f"  rag serve --llm-base-url {server.base_url} --llm-model {model}"
                     f"    (or OPENAI_BASE_URL={server.base_url} RAG_LLM_MODEL={model})")
    return lines
