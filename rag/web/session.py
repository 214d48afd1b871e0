"""Per-session choices and totals of the web chat: which model answers, and what the session has used so far.

- `ModelMenu`: the models the LLM endpoint lists (`rag.generation.endpoints.list_models`, once, when the page is built).
  When there are several, the page shows a menu; each browser session's pick travels with its questions and
  selects an engine derived from the server's (`Engine.derive(llm_model=...)`: same index, another model), made
  once per model and shared by the sessions that picked it. A pick the endpoint did not list is never used.
  Ids with "embed" in them (embedding models, which endpoints list next to chat models) are left out.
- `session_line`: the running totals of a session's answers (tokens in/out, time, and the cost when
  RAG_LLM_PRICE_IN / RAG_LLM_PRICE_OUT are set), computed from the answers the session keeps (`rag.generation.cost`).
"""

from __future__ import annotations

import logging
import threading

from rag.generation.cost import money, totals
from rag.generation.llm import LLMError
from rag.engine import Engine
from rag.web.i18n import words

log = logging.getLogger("rag.web")


class ModelMenu:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.default = engine.settings.llm_model or ""
        self.choices = [self.default] if self.default else []
        self.problem = ""
        self._engines: dict[str, Engine] = {self.default: engine}
        self._lock = threading.Lock()
        if not engine.settings.llm_enabled:
            return
        from rag.generation.endpoints import list_models

        try:
            listed = [m for m in list_models(engine.settings) if "embed" not in m.lower()]
        except LLMError as exc:  # the page still answers with the configured model
            self.problem = str(exc)
            log.warning("could not list the endpoint's models: %s", exc)
            return
        self.choices = [self.default] + [m for m in listed if m != self.default]

    @property
    def several(self) -> bool:
        return len(self.choices) > 1

    def engine_for(self, model: str | None) -> Engine:
        """The engine answering with `model` (one the endpoint listed), else the server's own."""
        if not model or model not in self.choices or model == self.default:
            return self.engine
        with self._lock:
            if model not in self._engines:
                self.engine.retriever  # noqa: B018  loaded first, so that the derived engine shares it (and the index)
                derived = self.engine.derive(llm_model=model)
                derived.indexing = self.engine.indexing  # answers say so while the collection is being indexed
                self._engines[model] = derived
            return self._engines[model]


def session_line(answers: list[dict], settings, lang: str = "en") -> str:
    """'This session: 3 answers · 4,210 tokens in + 380 out · 12.3 s · $0.0012' (Markdown, no user text in it), in
    `lang` (`rag.web.i18n`)."""
    if not answers:
        return ""
    t = totals(answers, settings)
    bits = [words("session_answers", lang, n=t["answers"], s="s" if t["answers"] != 1 else "")]
    if t["llm_answers"]:
        bits.append(words("session_tokens", lang, i=f"{t['prompt_tokens']:,}", o=f"{t['completion_tokens']:,}"))
    bits.append(f"{t['seconds']:.1f} s")
    if t["cost_usd"] is not None:
        bits.append(money(t["cost_usd"]))
    return "<sub>" + words("session", lang) + " · ".join(bits) + "</sub>"
