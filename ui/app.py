"""The web chat: Gradio Blocks over `Engine.stream`, a thin shell that only renders what the library returns
(the rendering itself is `rag.ui.render`; the HTTP-level protections are `rag.ui.guard`).

- The answer streams into the chat; each [n] links to a source card (title or label, authors, decision badge,
  OpenReview link, the best-matching snippet with the question's terms highlighted, the score, and the whole
  abstract on expand). Latency, tokens and which mode answered show under each answer.
- Filters (decision, author), the number of papers, example questions, export (Markdown, JSON), feedback
  (stored as JSON lines in the data dir), "Add papers" (upload, ingested like `rag ingest`), the progress of a
  background ingest, and a named API endpoint `/ask` returning the `Answer` as JSON.
- Per-session state only: Gradio hands each browser session its own history and answers; the engine keeps none.
- Safety: binds 127.0.0.1 unless RAG_HOST says otherwise, optional login (RAG_AUTH=user:password), never
  `share`, analytics off (rag/__init__.py). Paper, model and user text is shown as text, never as live markup
  (`rag.ui.render.inert`); errors shown to users never carry server paths (`public_message`).
"""

from __future__ import annotations

import json
import logging
import re
import secrets
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

import rag  # noqa: F401  (switches telemetry off before gradio is imported)
import gradio as gr

from rag.answer import Answer, Delta, Restart
from rag.engine import Engine, check_k
from rag.errors import RagError, one_line
from rag.ingest import SUPPORTED_SUFFIXES
from rag.cost import answer_cost
from rag.ui.guard import Guard
from rag.ui.render import CSS, answer_markdown, export_markdown, inert, sources_panel
from rag.ui.session import ModelMenu, session_line

log = logging.getLogger("rag.ui")

EXAMPLES = [
    "Is there work on making sparse autoencoders cheaper to train?",
    "Which papers use diffusion models for image restoration?",
    "How can language models evaluate their own answers without looking at the output?",
    "Which papers propose benchmarks for multilingual language models?",
]
DECISIONS = ["Accept (Oral)", "Accept (Spotlight)", "Accept (Poster)"]

# ---- the app ----------------------------------------------------------------------------------------------

EXPORT_MAX_AGE = 3600  # seconds an export folder (and Gradio's cached copy of it) is kept
MAX_UPLOAD = "50mb"


def public_message(exc: BaseException, settings) -> str:
    """What a web user is told about an error: the library's one-line message for expected errors, with the
    server's paths taken out (they are for whoever runs the server, whose console and CLI show them); a generic
    line for anything unexpected, whose traceback goes to the server log only."""
    if isinstance(exc, RagError):
        return _without_paths(one_line(exc), settings)
    log.error("unexpected error while answering", exc_info=exc)
    return "Something went wrong while answering; the server's log has the details. Please try again."


def _without_paths(text: str, settings) -> str:
    for path in sorted({str(settings.data_dir), str(Path(settings.data_dir).resolve()),
                        str(settings.chroma_path), str(Path(settings.chroma_path).resolve())}, key=len, reverse=True):
        text = text.replace(path, "<data dir>")
    return re.sub(r"(?<![\w.])/(?:[\w.-]+/)+[\w.-]*", "<path>", text)


def indexing_line(engine: Engine) -> str:
    """The line above the chat while the collection is indexed in the background, and once it is done."""
    state = engine.indexing
    if state.running and state.total:
        searchable = len(engine.retriever.state.papers)
        return (f"*Indexing the collection: {searchable:,} of {state.total:,} papers indexed; answers meanwhile "
                "search those indexed so far.*")
    if state.running:
        return "*Reading the collection to index…*"
    if state.failed:
        return f"*{inert(_without_paths(state.summary, engine.settings))}*"
    if state.summary:
        return f"*{len(engine.retriever.state.papers):,} papers indexed.*"
    return ""


def _sweep(root: Path, max_age: float, only: Path | None = None) -> None:
    """Remove the folders under `root` (or just `only`) not written for `max_age` seconds: other sessions' old
    exports, or the export folders of earlier server processes."""
    now = time.time()
    for folder in [only] if only else root.iterdir():
        try:
            if now - folder.stat().st_mtime > max_age:
                shutil.rmtree(folder, ignore_errors=True)
        except OSError:
            pass


def build(engine: Engine) -> gr.Blocks:
    settings = engine.settings
    feedback_path = Path(settings.data_dir) / "feedback.jsonl"
    feedback_lock = threading.Lock()
    for old in Path(tempfile.gettempdir()).glob("rag-export-*"):  # export folders of servers long gone
        _sweep(old.parent, EXPORT_MAX_AGE, only=old)
    export_root = Path(tempfile.mkdtemp(prefix="rag-export-")).resolve()
    menu = ModelMenu(engine)
    mode = (f"Answers written by **{inert(settings.llm_model or '')}** from the retrieved abstracts"
            + (" (another model can be chosen under Model)" if menu.several else "")
            if settings.llm_enabled else "**Extractive — no LLM configured**: answers quote the retrieved abstracts")

    def stream_answer(message: str, history: list[dict], answers: list[dict], decisions: list[str],
                      author: str, k: float, export_id: str, model: str | None = None):
        answers = list(answers or [])
        history = list(history or [])
        # Earlier turns come from the answers kept server-side, not from the chat's rendered Markdown.
        turns = [t for a in answers for t in ({"role": "user", "content": a["question"]},
                                              {"role": "assistant", "content": a["answer"],
                                               "paper_ids": [c["paper_id"] for c in a["citations"]]})]
        export_id = export_id or secrets.token_urlsafe(16)  # the export folder's name: the server's, not the client's
        history.append({"role": "user", "content": inert(message)})
        history.append({"role": "assistant", "content": ""})
        text = ""
        try:
            for event in menu.engine_for(model).stream(message, history=turns, k=check_k(k),
                                                       decision=decisions or None,
                                       author=author or None):
                if isinstance(event, Delta):
                    text += event.text
                    history[-1] = {"role": "assistant", "content": inert(text)}
                    yield history, answers, gr.skip(), gr.skip(), gr.skip(), "", export_id
                elif isinstance(event, Restart):
                    text = ""
                elif isinstance(event, Answer):
                    record = event.to_dict()
                    record["cost_usd"] = answer_cost(record["usage"], settings)
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
        gr.Info("Thanks, feedback saved.", duration=3)

    def add_papers(files: list | None):
        """Ingest uploaded files like `rag ingest`; the report names the uploaded files, not server paths."""
        paths = [Path(getattr(f, "name", f)) for f in files or []]
        if not paths:
            return "", indexing_line(engine)
        if engine.indexing.running:
            return ("The collection is still being indexed; add your papers when that has finished (the line "
                    "above shows the progress).", indexing_line(engine))
        try:
            stats = engine.ingest(paths)
        except Exception as exc:
            return inert(public_message(exc, settings)), indexing_line(engine)
        names = {str(p): p.name for p in paths}
        lines = [f"**Added papers** from {inert(', '.join(p.name for p in paths))}: {inert(stats.summary())}."]
        for problem in stats.problems:
            for path, name in names.items():
                problem = problem.replace(path, name)
            lines.append(f"- skipped {inert(problem)}")
        return "\n".join(lines), indexing_line(engine)

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
        progress = gr.Markdown(indexing_line(engine), elem_id="indexing")
        with gr.Row():
            with gr.Column(scale=3):
                # latex_delimiters=[]: TeX from papers is shown as plain text (`rag.ui.render.plain`), never typeset
                # by KaTeX from a paper's own `$$...$$` (which could draw over the page).
                chatbot = gr.Chatbot(label="Conversation", height=560, elem_id="chat", sanitize_html=True,
                                     latex_delimiters=[],
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
                    upload = gr.UploadButton("Add papers", size="sm", elem_id="add-papers", file_count="multiple",
                                             file_types=sorted(SUPPORTED_SUFFIXES))
                spent = gr.Markdown("", elem_id="session-totals")
                added = gr.Markdown("", elem_id="added")
            with gr.Column(scale=2):
                model = gr.Dropdown(menu.choices, value=menu.default or None, label="Model", elem_id="model",
                                    visible=menu.several, interactive=True)
                with gr.Accordion("Filters", open=True):
                    decisions = gr.CheckboxGroup(DECISIONS, label="Decision (none = all)", elem_id="decision")
                    author = gr.Textbox(label="Author name contains", elem_id="author")
                    k = gr.Slider(1, 20, value=settings.k, step=1, label="Papers to retrieve", elem_id="k")
                cards = gr.HTML(sources_panel([]), elem_id="sources")

        inputs = [box, chatbot, answers, decisions, author, k, export_id, model]
        outputs = [chatbot, answers, cards, export_md, export_json, box, export_id]
        for trigger in (send.click, box.submit):
            trigger(stream_answer, inputs, outputs, api_visibility="private",
                    concurrency_limit=settings.concurrency, concurrency_id="ask"
                    ).then(lambda a: session_line(a, settings), answers, spent, api_visibility="private")
        chatbot.like(on_feedback, [answers], None, api_visibility="private")
        reset: tuple[Callable[[], tuple], None, list] = (
            lambda: ([], [], sources_panel([]), None, None, ""), None,
            [chatbot, answers, cards, export_md, export_json, spent])
        clear.click(*reset, api_visibility="private")
        chatbot.clear(*reset, api_visibility="private")  # the chat's own trash icon resets everything too
        gr.api(ask_api, api_name="ask", concurrency_limit=settings.concurrency, concurrency_id="ask")
        upload.upload(add_papers, [upload], [added, progress], api_visibility="private", concurrency_limit=1)
        timer = gr.Timer(2.0, active=engine.indexing.running)
        timer.tick(lambda: (indexing_line(engine), gr.Timer(active=engine.indexing.running)), None,
                   [progress, timer], api_visibility="private", show_progress="hidden")
    return demo


def launch(engine: Engine, block: bool = True, background: list | None = None) -> gr.Blocks:
    """Load the index, then serve; `background` files are indexed while serving (the bundled list).
    `block=False` returns at once (tests)."""
    engine.retriever  # load the embedder and index now, not on the first question
    if background:
        engine.index_in_background(background)
    elif engine.is_empty():
        print(f"warning: the index in {engine.settings.data_dir} is empty; run `rag ingest PATH` first, or add "
              "papers on the page", flush=True)
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
