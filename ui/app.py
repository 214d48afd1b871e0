"""The web chat: a Gradio `ChatInterface` over `Engine.ask`, showing the answer and the papers it cites.

Per-session history only (Gradio passes each browser session's own history to `respond`); nothing is shared
between users but the read-only index. Binds 127.0.0.1 unless `RAG_HOST` / `--host` says otherwise; Gradio's
analytics are off (see `rag/__init__.py`) and `share` is never used.
"""

from __future__ import annotations

import html
from typing import Any

import rag  # noqa: F401  (switches telemetry off before gradio is imported)
import gradio as gr

from rag.answer import Answer, Delta, Restart
from rag.engine import Engine, QuestionError

EXAMPLES = [
    "Is there work on making sparse autoencoders cheaper to train?",
    "Which papers use diffusion models for image restoration?",
    "How can language models evaluate their own answers without looking at the output?",
]


def render_markdown(answer: Answer) -> str:
    """The answer, then the cited papers (or, after an abstention, the nearest ones). All paper text is escaped."""
    parts = [html.escape(answer.answer)]
    for notice in answer.notices:
        parts.insert(0, f"*{html.escape(notice)}*")
    if answer.fabricated:
        parts.append(f"*Removed {answer.fabricated} citation(s) to sources that were not retrieved.*")
    shown = answer.sources if answer.abstained else answer.citations
    if shown:
        parts.append("**Nearest papers**" if answer.abstained else "**Sources**")
        for s in shown:
            title = html.escape(s.title)
            line = f"[{s.n}] [{title}]({s.url})" if s.url else f"[{s.n}] {title}"
            if s.decision:
                line += f" — {html.escape(s.decision)}"
            if not s.has_title:
                line += f"<br>*{html.escape(s.snippet[:200])}*"
            parts.append(line)
    mode = f"{answer.model} (LLM)" if answer.mode == "llm" else "extractive"
    parts.append(f"<sub>{html.escape(mode)} · {answer.timings.get('total_ms', 0):.0f} ms</sub>")
    return "\n\n".join(parts)


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # Gradio 6 content parts
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def build(engine: Engine) -> gr.ChatInterface:
    def respond(message: str, history: list[dict[str, Any]]):
        """Stream the answer as it is written (Gradio shows each yielded text), then the cited papers."""
        turns = [{"role": t.get("role"), "content": _text_of(t.get("content"))} for t in history or []]
        text = ""
        try:
            for event in engine.stream(message, history=turns):
                if isinstance(event, Delta):
                    text += event.text
                    yield html.escape(text)
                elif isinstance(event, Restart):
                    text = ""
                elif isinstance(event, Answer):
                    yield render_markdown(event)
        except QuestionError as exc:
            yield str(exc)

    return gr.ChatInterface(
        respond,
        title="Ask the ICLR 2025 abstracts",
        description=("Answers cite the abstracts as [n]. " + (
            f"Written by {engine.settings.llm_model} from the retrieved abstracts." if engine.settings.llm_enabled
            else "Extractive mode (no LLM configured): sentences quoted from the retrieved abstracts.")),
        examples=EXAMPLES,
        cache_examples=False,
        api_name="ask",
        analytics_enabled=False,
        flagging_mode="never",
    )


def launch(engine: Engine, block: bool = True) -> gr.ChatInterface:
    demo = build(engine)
    demo.launch(server_name=engine.settings.host, server_port=engine.settings.port, share=False,
                prevent_thread_lock=not block, ssr_mode=False, mcp_server=False, quiet=not block)
    return demo
