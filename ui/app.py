"""The web chat: Gradio Blocks over `Engine.stream`, a thin shell that only renders what the library returns.

- The answer streams into the chat; each [n] links to a source card (title or label, authors, decision badge,
  OpenReview link, the best-matching snippet with the question's terms highlighted, the score, and the whole
  abstract on expand). Latency, tokens and which mode answered show under each answer.
- Filters (decision, author), the number of papers, example questions, export (Markdown, JSON), feedback
  (stored as JSON lines in the data dir), and a named API endpoint `/ask` returning the `Answer` as JSON.
- Per-session state only: Gradio hands each browser session its own history; the engine keeps none.
- Safety: binds 127.0.0.1 unless RAG_HOST says otherwise, optional login (RAG_AUTH=user:password), never
  `share`, analytics off (rag/__init__.py). Every piece of paper text is HTML-escaped before it is rendered.
"""

from __future__ import annotations

import html
import json
import logging
import re
import secrets
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import rag  # noqa: F401  (switches telemetry off before gradio is imported)
import gradio as gr

from rag.answer import Answer, Delta, Restart
from rag.config import ConfigError
from rag.embeddings import EmbeddingError
from rag.engine import Engine, QuestionError
from rag.index import StoreError
from rag.ingest import first_sentence
from rag.retrieve import tokenize
from ui.guard import Guard

log = logging.getLogger("rag.ui")

EXAMPLES = [
    "Is there work on making sparse autoencoders cheaper to train?",
    "Which papers use diffusion models for image restoration?",
    "How can language models evaluate their own answers without looking at the output?",
    "Which papers propose benchmarks for multilingual language models?",
]
# Errors whose message is for the user (empty question, store or embedder unavailable): shown, not raised.
USER_ERRORS = (QuestionError, StoreError, EmbeddingError)
DECISIONS = ["Accept (Oral)", "Accept (Spotlight)", "Accept (Poster)"]

CSS = """
.src-card {border: 1px solid var(--border-color-primary); border-radius: 8px; padding: 10px 12px; margin: 0 0 10px 0;}
.src-card:target {outline: 2px solid var(--color-accent); }
.src-head {display: flex; gap: 8px; align-items: baseline;}
.src-n {font-weight: 700;}
.src-title {font-weight: 600;}
.src-preview {font-style: italic; font-size: 0.9em; margin-top: 2px;}
.src-meta {font-size: 0.85em; opacity: 0.8; margin: 2px 0 6px 0;}
.badge {font-size: 0.75em; padding: 1px 6px; border-radius: 10px; border: 1px solid currentColor; white-space: nowrap;}
.badge-oral {color: #b45309;} .badge-spotlight {color: #7c3aed;} .badge-poster {color: #2563eb;}
.src-snippet mark {background: #fde68a; color: inherit; padding: 0 1px;}
.src-abstract {font-size: 0.9em; margin-top: 6px;}
.turn-sources > summary {cursor: pointer; margin: 8px 0;}
"""


# ---- rendering (pure functions of an Answer) ------------------------------------------------------------

# Text from papers, models and users reaches the page only through `inert`: every character that HTML or
# Markdown (with GitHub's autolinks) gives a meaning to becomes a numeric character reference, which both show
# as the character itself and never as markup. So `[x](http://...)`, `![x](...)`, `<img onerror>`, `**bold**`,
# bare `https://...` / `www.` / `a@b.c` autolinks in an abstract or an answer are shown as typed, not made live.
# The app's own markup (links from [n] to the source cards, italics for notices) is added after escaping.
_INERT = str.maketrans({c: f"&#{ord(c)};" for c in "&<>\"'`[](){}!*_~|#\\:@+-=^"})
_WWW = re.compile(r"(?i)\bwww\.")
_CITED = re.compile(r"&#91;(\d+(?:, \d+)*)&#93;")


def inert(text: str) -> str:
    """`text` as Markdown/HTML source that renders exactly as `text`, with nothing live in it."""
    return _WWW.sub(lambda m: m.group(0)[:3] + "&#46;", str(text).translate(_INERT))

_GENERIC = set(tokenize(["paper papers work works use used using make made method methods approach propose "
                          "proposed study new show shown way there"])[0])


def highlight(text: str, question: str) -> str:
    """HTML-escaped `text` with the words that share a stem with the question's content terms in <mark>."""
    terms = set(tokenize([question])[0]) - _GENERIC
    out = []
    for piece in re.split(r"(\w[\w-]*)", text):
        if piece and re.match(r"\w", piece) and set(tokenize([piece])[0]) & terms:
            out.append(f"<mark>{html.escape(piece)}</mark>")
        else:
            out.append(html.escape(piece))
    return "".join(out)


def _badge(decision: str) -> str:
    kind = next((k for k in ("Oral", "Spotlight", "Poster") if k in decision), "")
    label = kind or decision
    return f'<span class="badge badge-{kind.lower()}">{html.escape(label)}</span>' if label else ""


def source_cards(answer: dict, turn: int) -> str:
    """The cards of one answer's sources: cited ones first, then the rest of what was retrieved."""
    cited = {c["n"] for c in answer["citations"]}
    ordered = sorted(answer["sources"], key=lambda s: (s["n"] not in cited, s["n"]))
    cards = []
    for s in ordered:
        title = html.escape(s["title"])
        link = (f' · <a href="{html.escape(s["url"], quote=True)}" target="_blank" rel="noopener noreferrer">'
                "OpenReview</a>") if s["url"] else ""
        authors = html.escape(", ".join(s["authors"][:8]) + (" …" if len(s["authors"]) > 8 else ""))
        cards.append(
            f'<div class="src-card" id="src-{turn}-{s["n"]}">'
            f'<div class="src-head"><span class="src-n">[{s["n"]}]</span>'
            f'<span class="src-title">{title}</span>{_badge(s["decision"])}</div>'
            + ("" if s["has_title"] else f'<div class="src-preview">{html.escape(first_sentence(s["text"]))}</div>') +
            f'<div class="src-meta">{authors or "authors unknown"}{link} · score {s["score"]:.2f}'
            f'{" · cited" if s["n"] in cited else ""}</div>'
            f'<div class="src-snippet">{highlight(s["snippet"], answer["question"])}</div>'
            f'<details class="src-abstract"><summary>Abstract</summary>{html.escape(s["text"])}</details>'
            "</div>")
    return "\n".join(cards)


def sources_panel(answers: list[dict]) -> str:
    if not answers:
        return '<p class="src-empty">Sources of the latest answer appear here.</p>'
    latest = len(answers) - 1
    parts = [f"<h3>Sources of answer {latest + 1}</h3>", source_cards(answers[latest], latest)]
    for turn in range(latest - 1, -1, -1):
        parts.append(f'<details class="turn-sources"><summary>Sources of answer {turn + 1}: '
                     f'{html.escape(answers[turn]["question"][:80])}</summary>{source_cards(answers[turn], turn)}'
                     "</details>")
    return "\n".join(parts)


def answer_markdown(answer: dict, turn: int) -> str:
    """The chat message of a finished answer: escaped text with [n] linked to its card, notices, a footer."""
    text = _CITED.sub(lambda m: "[" + ", ".join(
        f'<a href="#src-{turn}-{n}">{n}</a>' for n in m.group(1).split(", ")) + "]", inert(answer["answer"]))
    parts = [f"*{inert(n)}*" for n in answer["notices"]]
    parts.append(text)
    if answer["fabricated"]:
        parts.append(f"*Removed {answer['fabricated']} citation(s) to papers that were not retrieved.*")
    if answer["unsupported"]:
        parts.append("*Weakly supported by the cited abstracts:* " + " ".join(
            f"“{inert(u)}”" for u in answer["unsupported"]))
    parts.append(f"<sub>{inert(footer(answer))}</sub>")
    return "\n\n".join(parts)


def footer(answer: dict) -> str:
    t, usage = answer["timings"], answer.get("usage") or {}
    bits = [f"{answer['model']} (LLM)" if answer["mode"] == "llm" else "extractive"]
    if "ttft_ms" in t:
        bits.append(f"first token {t['ttft_ms']:.0f} ms")
    bits.append(f"{t.get('total_ms', 0):.0f} ms")
    if usage.get("prompt_tokens") is not None:
        bits.append(f"{usage['prompt_tokens']} + {usage.get('completion_tokens') or 0} tokens")
    if answer["abstained"]:
        bits.append("not covered by the collection")
    return " · ".join(bits)


def export_markdown(answers: list[dict]) -> str:
    """The conversation as Markdown. Every text from a paper, a model or the user goes through `inert`, so a
    Markdown viewer shows `<script>` or `[x](http://...)` in an abstract as text; only the sources' own
    OpenReview links are live."""
    lines = ["# Conversation", ""]
    for i, a in enumerate(answers, start=1):
        lines += [f"## Q{i}: {inert(a['question'])}", "", _CITED.sub(r"[\1]", inert(a["answer"])), ""]
        shown = a["sources"] if a["abstained"] else a["citations"]
        if shown:
            lines.append("Nearest papers:" if a["abstained"] else "Sources:")
        for s in shown:
            meta = ", ".join(x for x in (inert(s["decision"]), _link(s["url"])) if x)
            lines.append(f"- [{s['n']}] {inert(s['title'])}" + (f" ({meta})" if meta else ""))
        lines += ["", f"_{inert(footer(a))}_", ""]
    return "\n".join(lines)


def _link(url: str) -> str:
    """A source's own link (ingest only lets http/https URLs in) as a Markdown autolink."""
    return f"<{url}>" if url and re.match(r"^https?://[^\s<>]+$", url) else ""


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # Gradio 6 content parts
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    if isinstance(content, dict):
        return str(content.get("text", ""))
    return ""


# ---- the app ----------------------------------------------------------------------------------------------

EXPORT_MAX_AGE = 3600  # seconds an export folder (and Gradio's cached copy of it) is kept
MAX_UPLOAD = "50mb"


def public_message(exc: BaseException, settings) -> str:
    """What a web user is told about an error: the library's one-line message for expected errors, with the
    server's paths taken out (they are for whoever runs the server, whose console and CLI show them); a generic
    line for anything unexpected, whose traceback goes to the server log only."""
    if isinstance(exc, USER_ERRORS + (ConfigError,)):
        text = str(exc)
        for path in sorted({str(settings.data_dir), str(Path(settings.data_dir).resolve()),
                            str(settings.chroma_path), str(Path(settings.chroma_path).resolve())}, key=len, reverse=True):
            text = text.replace(path, "<data dir>")
        return re.sub(r"(?<![\w.])/(?:[\w.-]+/)+[\w.-]*", "<path>", text)
    log.error("unexpected error while answering", exc_info=exc)
    return "Something went wrong while answering; the server's log has the details. Please try again."


def _sweep(root: Path, max_age: float) -> None:
    """Remove the folders under `root` not written for `max_age` seconds (other sessions' old exports)."""
    now = time.time()
    for folder in root.iterdir():
        try:
            if now - folder.stat().st_mtime > max_age:
                shutil.rmtree(folder, ignore_errors=True)
        except OSError:
            pass


def build(engine: Engine) -> gr.Blocks:
    settings = engine.settings
    feedback_path = Path(settings.data_dir) / "feedback.jsonl"
    feedback_lock = threading.Lock()
    export_root = Path(tempfile.mkdtemp(prefix="rag-export-")).resolve()
    mode = (f"Answers written by **{inert(settings.llm_model)}** from the retrieved abstracts"
            if settings.llm_enabled else "**Extractive — no LLM configured**: answers quote the retrieved abstracts")

    def stream_answer(message: str, history: list[dict], answers: list[dict], decisions: list[str],
                      author: str, k: float, export_id: str):
        answers = list(answers or [])
        history = list(history or [])
        # Earlier turns come from the answers kept server-side, not from the chat's rendered Markdown.
        turns = [t for a in answers for t in ({"role": "user", "content": a["question"]},
                                              {"role": "assistant", "content": a["answer"]})]
        export_id = export_id or secrets.token_urlsafe(16)  # the export folder's name: the server's, not the client's
        history.append({"role": "user", "content": inert(message)})
        history.append({"role": "assistant", "content": ""})
        text = ""
        try:
            for event in engine.stream(message, history=turns, k=k, decision=decisions or None,
                                       author=author or None):
                if isinstance(event, Delta):
                    text += event.text
                    history[-1] = {"role": "assistant", "content": inert(text)}
                    yield history, answers, gr.skip(), gr.skip(), gr.skip(), "", export_id
                elif isinstance(event, Restart):
                    text = ""
                elif isinstance(event, Answer):
                    record = event.to_dict()
                    answers.append(record)
                    history[-1] = {"role": "assistant", "content": answer_markdown(record, len(answers) - 1)}
                    md, js = _write_exports(answers, export_id)
                    yield history, answers, sources_panel(answers), md, js, "", export_id
        except Exception as exc:  # the message says what to do; the question stays in the conversation
            history[-1] = {"role": "assistant", "content": inert(public_message(exc, settings))}
            yield history, answers, gr.skip(), gr.skip(), gr.skip(), "", export_id

    def _write_exports(answers: list[dict], export_id: str) -> tuple[str, str]:
        """The session's conversation as files for the export buttons, rewritten after each answer in one folder
        per browser session. The folder's name is a random id the server made (never the client's session hash),
        and folders untouched for an hour are removed; Gradio's cached copies go by `delete_cache`."""
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", export_id):
            raise ValueError("bad export id")
        folder = (export_root / export_id).resolve()
        if folder.parent != export_root.resolve():
            raise ValueError("bad export id")
        _sweep(export_root, max_age=EXPORT_MAX_AGE)
        folder.mkdir(exist_ok=True)
        md = folder / "conversation.md"
        md.write_text(export_markdown(answers), encoding="utf-8")
        js = folder / "conversation.json"
        js.write_text(json.dumps({"exported": time.strftime("%Y-%m-%dT%H:%M:%S"), "answers": answers},
                                 ensure_ascii=False, indent=1), encoding="utf-8")
        return str(md), str(js)

    def on_feedback(answers: list[dict], data: gr.LikeData, request: gr.Request):
        turn = data.index if isinstance(data.index, int) else data.index[0]
        number = turn // 2  # messages alternate: question, answer
        if not answers or number >= len(answers):
            return
        answer = answers[number]
        liked = data.liked if isinstance(data.liked, bool) else str(data.liked).lower() in ("like", "true")
        line = {"time": time.strftime("%Y-%m-%dT%H:%M:%S"), "session": getattr(request, "session_hash", None),
                "helpful": liked, "question": answer["question"], "answer": answer["answer"],
                "mode": answer["mode"], "model": answer["model"],
                "cited": [c["paper_id"] for c in answer["citations"]]}
        with feedback_lock, feedback_path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
        gr.Info("Thanks, feedback saved.")

    def ask_api(question: str, history: list[dict] | None = None, k: int = 5,
                decisions: list[str] | None = None, author: str = "") -> dict:
        """Answer a question from the indexed abstracts. history: [{"role": "user"|"assistant", "content": ...}];
        k: papers to retrieve (1-50); decisions: e.g. ["Accept (Oral)"] or ["oral"]; author: part of a name.
        Returns the Answer as JSON: answer, mode, abstained, citations, sources, timings."""
        try:
            return engine.ask(question, history=history, k=k, decision=decisions or None,
                              author=author or None).to_dict()
        except Exception as exc:
            raise gr.Error(public_message(exc, settings), print_exception=False) from None

    with gr.Blocks(title="Ask the ICLR 2025 abstracts", analytics_enabled=False,
                   delete_cache=(EXPORT_MAX_AGE // 2, EXPORT_MAX_AGE)) as demo:
        answers = gr.State([])
        export_id = gr.State("")
        gr.Markdown(f"## Ask the ICLR 2025 abstracts\n{mode}. Every claim cites a retrieved paper as [n].",
                    elem_id="header")
        with gr.Row():
            with gr.Column(scale=3):
                chatbot = gr.Chatbot(label="Conversation", height=560, elem_id="chat", sanitize_html=True,
                                     feedback_options=("Like", "Dislike"), buttons=["copy"])
                with gr.Row():
                    box = gr.Textbox(placeholder="Ask about the papers…", show_label=False, scale=6,
                                     elem_id="question", max_length=100_000, submit_btn=False)
                    send = gr.Button("Ask", variant="primary", scale=1, elem_id="ask")
                gr.Examples(EXAMPLES, inputs=box, label="Examples")
                with gr.Row():
                    export_md = gr.DownloadButton("Export Markdown", elem_id="export-md", size="sm")
                    export_json = gr.DownloadButton("Export JSON", elem_id="export-json", size="sm")
                    clear = gr.Button("New conversation", size="sm", elem_id="clear")
            with gr.Column(scale=2):
                with gr.Accordion("Filters", open=True):
                    decisions = gr.CheckboxGroup(DECISIONS, label="Decision (none = all)", elem_id="decision")
                    author = gr.Textbox(label="Author name contains", elem_id="author")
                    k = gr.Slider(1, 20, value=settings.k, step=1, label="Papers to retrieve", elem_id="k")
                cards = gr.HTML(sources_panel([]), elem_id="sources")

        inputs = [box, chatbot, answers, decisions, author, k, export_id]
        outputs = [chatbot, answers, cards, export_md, export_json, box, export_id]
        for trigger in (send.click, box.submit):
            trigger(stream_answer, inputs, outputs, api_visibility="private",
                    concurrency_limit=settings.concurrency, concurrency_id="ask")
        chatbot.like(on_feedback, [answers], None, api_visibility="private")
        reset = (lambda: ([], [], sources_panel([]), None, None), None,
                 [chatbot, answers, cards, export_md, export_json])
        clear.click(*reset, api_visibility="private")
        chatbot.clear(*reset, api_visibility="private")  # the chat's own trash icon resets everything too
        gr.api(ask_api, api_name="ask", concurrency_limit=settings.concurrency, concurrency_id="ask")
    return demo


def launch(engine: Engine, block: bool = True) -> gr.Blocks:
    """Load the index, then serve. `block=False` returns at once (tests)."""
    engine.retriever  # load the embedder and index now, not on the first question
    demo = build(engine)
    auth = None
    if engine.settings.auth:
        user, _, password = engine.settings.auth.get_secret_value().partition(":")
        auth = (user, password)
    demo.queue(default_concurrency_limit=engine.settings.concurrency)
    from starlette.middleware import Middleware

    demo.launch(server_name=engine.settings.host, server_port=engine.settings.port, share=False, auth=auth,
                prevent_thread_lock=True, ssr_mode=False, mcp_server=False, quiet=True, css=CSS,
                footer_links=["api"], max_file_size=MAX_UPLOAD, app_kwargs={"middleware": [Middleware(Guard)]})
    if block:
        print(f"Serving on http://{engine.settings.host}:{engine.settings.port} (Ctrl-C to stop)", flush=True)
        demo.block_thread()
    return demo
