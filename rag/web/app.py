"""The web chat: Gradio Blocks over `Engine.stream`, a thin shell that only renders what the library returns
(the rendering itself is `rag.web.render`; the HTTP-level protections are `rag.web.guard`).

- The answer streams into the chat; each [n] links to a source card (title or label, authors, decision badge,
  OpenReview link, the best-matching snippet with the question's terms highlighted, the score, and the whole
  abstract on expand). Latency, tokens and which mode answered show under each answer.
- Filters (decision, author; those written in the question show as chips above the box, a click asks again
  without), the number of papers, example questions, export (Markdown, JSON; written when clicked), feedback
  (one JSON line per answer in the data dir, the file bounded), "Add papers" (upload, ingested like `rag ingest`,
  so many times an hour per session and in all), the progress of a
  background ingest, and named API endpoints `/ask` returning the `Answer` as JSON and `/related` (a paper's
  nearest papers). Each source card lists its 5 related papers on expand; the map of the collection
  (`rag.web.mapview`) sits under the chat.
- Per-session state only: Gradio hands each browser session its own history and answers; the engine keeps none.
- Safety: binds 127.0.0.1 unless RAG_HOST says otherwise, optional login (RAG_AUTH=user:password), never
  `share`, analytics off (rag/__init__.py). Paper, model and user text is shown as text, never as live markup
  (`rag.web.render.inert`); errors shown to users never carry server paths (`public_message`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import re
import secrets
import shutil
import tempfile
import threading
import time
import weakref
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from collections.abc import Sequence

import rag  # noqa: F401  (switches telemetry off before gradio is imported)
import gradio as gr
from gradio.helpers import Examples
from gradio.utils import get_upload_folder

from rag.config import LIMITS
from rag.errors import RagError, one_line
from rag.store.index import paper_count
from rag.text import load_sentence_splitter
from rag.store.ingest import SUPPORTED_SUFFIXES
from rag.generation.cost import answer_cost
from rag.answering.records import Answer, Delta, Restart
from rag.engine import Engine, Indexing, QuestionError, check_k
from rag.web.api_args import ApiDefaults, arity
from rag.web.guard import Guard, LoginThrottle, allowed_hosts
from rag.web.i18n import LANGUAGES, header, page_i18n, request_language, words
from rag.web.mapview import MapPanel, warm as warm_map
from rag.web.render import CSS, FULL_TURNS, answer_markdown, export_markdown, inert, sources_panel
from rag.web.session import ModelMenu, session_line

log = logging.getLogger("rag.web")

EXAMPLES = [
    "Is there work on making sparse autoencoders cheaper to train?",
    "Which papers use diffusion models for image restoration?",
    "How can language models evaluate their own answers without looking at the output?",
    "Which papers propose benchmarks for multilingual language models?",
    "有哪些关于扩散模型的论文？",  # questions in Chinese are searched by their English terms (rag.query.zh)
]
# What a Chinese browser is shown instead (4 of the 5 above are English, beside the page's Chinese labels); each
# answered over the 3,706 papers `make run` serves (a Chinese "how can language models evaluate their own answers
# without looking at the output?" was not covered there, so it is not among them).
EXAMPLES_ZH = [
    "有没有让稀疏自编码器训练更便宜的工作？",
    "哪些论文用扩散模型做图像复原？",
    "有多少篇口头报告论文是关于图神经网络的？",
    "有哪些提出多语言大模型评测基准的论文？",
    "有哪些关于扩散模型的论文？",
]
DECISIONS = ["Accept (Oral)", "Accept (Spotlight)", "Accept (Poster)"]

# ---- the app ----------------------------------------------------------------------------------------------

# The caps of the page, each with what chose it: rag/config.py `Limits`.
EXPORT_MAX_AGE = LIMITS.export_max_age  # seconds an export folder (and Gradio's cached copy of it) is kept
MAX_UPLOAD = LIMITS.upload_bytes  # per file (Gradio's max_file_size); the whole request has the same cap (guard)
FEEDBACK_MAX_BYTES = LIMITS.feedback_bytes  # the feedback file stops growing at this size
FEEDBACK_TEXT_CHARS = LIMITS.feedback_text_chars  # each text in it is cut to this
# "Add papers": uploads one browser session may make in an hour, and all sessions together.
UPLOADS_PER_SESSION_HOUR, UPLOADS_PER_HOUR = LIMITS.uploads_per_session_hour, LIMITS.uploads_per_hour


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


# Each page's indexing line and its refresh timer, by page, so `publish_status` can write them into its config.
_STATUS: weakref.WeakKeyDictionary[gr.Blocks, tuple[gr.Markdown, gr.Timer]] = weakref.WeakKeyDictionary()
STATUS_KEY = "indexing_now"  # the i18n key of the indexing line in the page's config (`publish_status`)
# Each page's translations of its own words (`rag.web.i18n.page_i18n`), for `launch(i18n=...)`.
_I18N: weakref.WeakKeyDictionary[gr.Blocks, gr.I18n] = weakref.WeakKeyDictionary()


def publish_status(demo: gr.Blocks, engine: Engine) -> None:
    """Write the indexing line as it is now, and whether its timer runs, into the page's config. Gradio serves that
    config, made once at launch, to every page load, so without this each page first showed the line of start-up
    ("Reading the collection to index…") until its timer ticked 2 s later, even long after indexing ended. The page
    load's own event (`build`) then refreshes it within the same second while indexing goes on.

    The line is in every language of the page (`rag.web.i18n`): the config carries its i18n key, and the key's
    translations (which Gradio serves with the config) are the line of now, so a Chinese browser's first paint is
    Chinese too."""
    parts = _STATUS.get(demo)
    config = getattr(demo, "config", None)
    if parts is None or not isinstance(config, dict):
        return
    progress, timer = parts
    wanted: dict[int, dict[str, Any]] = {progress._id: {"value": _translated_status(_I18N.get(demo), engine)},
                                         timer._id: {"active": engine.indexing.running}}
    for component in config.get("components", []):
        for key, value in wanted.get(component.get("id"), {}).items():
            component.setdefault("props", {})[key] = value


def _translated_status(t: gr.I18n | None, engine: Engine) -> str:
    """The indexing line of now as the page's config carries it: its i18n key, the key's translations in `t` set
    to the line in each language; "" when there is no line (an empty translation would show the key)."""
    if t is None:
        return indexing_line(engine)
    lines = {lang: indexing_line(engine, lang) for lang in LANGUAGES}
    for lang, line in lines.items():
        t.translations.setdefault(lang, {})[STATUS_KEY] = line
    return str(t(STATUS_KEY)) if lines["en"] else ""


def keep_status_published(demo: gr.Blocks, engine: Engine, ingest: threading.Thread, every: float = 1.0) -> None:
    """`publish_status` every `every` seconds while the background `ingest` runs, and once when it has ended."""
    def run() -> None:
        while ingest.is_alive():
            publish_status(demo, engine)
            ingest.join(every)
        publish_status(demo, engine)

    threading.Thread(target=run, name="indexing-status", daemon=True).start()


def indexing_line(engine: Engine, lang: str = "en") -> str:
    """The line above the chat while the collection is indexed in the background, and once it is done, in `lang`
    (`rag.web.i18n`; a failure's message is the library's, in English)."""
    state = engine.indexing
    if state.running and state.total:
        searchable = len(engine.retriever.state.papers)
        return f"*{words('indexing_progress', lang, done=f'{searchable:,}', total=f'{state.total:,}')}*"
    if state.running:
        return f"*{words('indexing_reading', lang)}*"
    if state.failed:
        return f"*{inert(_without_paths(state.summary, engine.settings))}*"
    if state.summary:
        papers = engine.retriever.state.papers
        title_only = sum(not p.has_abstract for p in papers)
        return "*" + words("indexed_title_only" if title_only else "indexed", lang, count=paper_count(papers),
                           n=f"{len(papers):,}", t=f"{title_only:,}") + "*"
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


@dataclass
class Page:
    """The components the handlers write to, so they can yield {component: value} and say what changes."""

    chatbot: gr.Chatbot
    answers: gr.State
    cards: gr.HTML
    export_md: gr.DownloadButton
    export_json: gr.DownloadButton
    box: gr.Textbox
    export_id: gr.State
    spent: gr.Markdown
    chips: list[gr.Button]  # one per kind of filter a question can set: "decisions", "author"


QUESTION_FILTERS = ("decisions", "author")


class ChatApp:
    """The page's event handlers and the server-side state they share (exports, feedback file, model menu).
    `build` lays out the components and wires them to these methods; the methods render what the engine returns."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.settings = engine.settings
        self.feedback_path = Path(self.settings.data_dir) / "feedback.jsonl"
        self.feedback_lock = threading.Lock()
        self.rated: set[str] = set()  # answers (by content hash) with feedback saved by this process
        self.upload_lock = threading.Lock()
        self.uploads: dict[str, deque[float]] = {}  # each session's upload times in the last hour
        self.uploads_all: deque[float] = deque()
        # The export folders live in Gradio's upload folder, which it serves without copying: a file handed to a
        # page from anywhere else is copied there, a copy per version (`write_export`).
        cache = Path(get_upload_folder())
        cache.mkdir(parents=True, exist_ok=True)
        for old in [*Path(tempfile.gettempdir()).glob("rag-export-*"), *cache.glob("rag-export-*")]:
            _sweep(old.parent, EXPORT_MAX_AGE, only=old)  # export folders of servers long gone
        self.export_root = Path(tempfile.mkdtemp(prefix="rag-export-", dir=cache)).resolve()
        self.menu = ModelMenu(engine)
        self.page: Page | None = None  # set by `build`

    def stream_answer(self, message: str, history: list[dict], answers: list[dict], decisions: list[str],
                      author: str, k: float, export_id: str, model: str | None = None,
                      question_filters: tuple[str, ...] = QUESTION_FILTERS, request: gr.Request | None = None):
        """Ask, streaming the answer into the chat; then the cards and filter chips of the answer, their labels in
        the browser's language (`request`'s Accept-Language, `rag.web.i18n`)."""
        page = self.page
        assert page is not None
        lang = request_language(request)
        if not isinstance(message, str) or not message.strip():  # an empty box: a hint, nothing added to the chat
            gr.Info(words("type_a_question", lang))
            return
        answers, history = list(answers or []), list(history or [])
        # Earlier turns come from the answers kept server-side, not from the chat's rendered Markdown.
        turns = [t for a in answers for t in ({"role": "user", "content": a["question"]},
                                              {"role": "assistant", "content": a["answer"],
                                               "paper_ids": [c["paper_id"] for c in a["citations"]],
                                               "outcome": a.get("outcome")})]
        export_id = export_id or secrets.token_urlsafe(16)  # the export folder's name: the server's, not the client's
        history += [{"role": "user", "content": inert(message)}, {"role": "assistant", "content": ""}]
        text = ""
        try:
            for event in self.menu.engine_for(model).stream(
                    message, history=turns, k=check_k(k), decision=decisions or None, author=author or None,
                    question_filters=question_filters, limit=0):  # a list whole: the page folds it (Show more)
                if isinstance(event, Delta):
                    text += event.text
                    history[-1] = {"role": "assistant", "content": inert(text)}
                    yield {page.chatbot: history, page.box: "", page.export_id: export_id}
                elif isinstance(event, Restart):
                    text = ""
                elif isinstance(event, Answer):
                    record = event.to_dict()
                    record["cost_usd"] = answer_cost(record["usage"], self.settings)
                    answers.append(record)
                    history[-1] = {"role": "assistant", "content": answer_markdown(record, len(answers) - 1, lang)}
                    yield {page.chatbot: history, page.answers: answers,
                           page.cards: sources_panel(answers, self.related_of(answers[-FULL_TURNS:]), lang),
                           page.box: "", page.export_id: export_id, **self.chip_updates(record, lang)}
        except Exception as exc:  # the message says what to do; the question stays in the conversation
            history[-1] = {"role": "assistant", "content": inert(public_message(exc, self.settings))}
            yield {page.chatbot: history, page.box: "", page.export_id: export_id}

    def chip_updates(self, record: dict | None, lang: str = "en") -> dict:
        """Show a removable chip for each filter the question's words set ("× Accept (Oral)"), hide the others;
        their words in `lang`."""
        assert self.page is not None
        filters = (record or {}).get("filters") or {}
        set_by_question = filters.get("from_question") or []
        labels = {"decisions": "× " + words("or", lang).join(filters.get("decisions") or []),
                  "author": "× " + words("by_author", lang, author=filters.get("author") or "")}
        return {chip: gr.Button(value=labels[kind], visible=kind in set_by_question)
                for chip, kind in zip(self.page.chips, QUESTION_FILTERS, strict=True)}

    def without_filter(self, kind: str):
        """A chip's click handler: ask the last question again without the filter its words set."""
        def handler(history, answers, decisions, author, k, export_id, model, request: gr.Request):
            if not answers:
                return
            keep = tuple(f for f in QUESTION_FILTERS if f != kind)
            yield from self.stream_answer(answers[-1]["question"], history, answers, decisions, author, k,
                                          export_id, model, question_filters=keep, request=request)
        handler.__name__ = f"without_{kind}"
        return handler

    def write_export(self, answers: list[dict], export_id: str, kind: str) -> str:
        """The session's conversation as a file ("md" or "json"), written when its export button is clicked, in
        one folder per browser session. Written on the click, not after each answer (re-exporting the whole
        conversation after each answer filled 519 MB in 103 s), and one file per conversation and kind: a new
        version replaces the one before. The folder is in Gradio's upload folder (`export_root`), which Gradio
        serves as is: a file from anywhere else is copied there, a copy per version kept for an hour, and 60 rounds
        of ask + Export JSON kept 101 MB, quadratic in the rounds. Each version has a folder named by its content,
        so a page never downloads an older one from its cache. A click with no new answer hands out the same file
        again. The session's folder is named by a random id the server made (never the client's session hash),
        and folders untouched for an hour are removed."""
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", export_id):
            raise ValueError("bad export id")
        folder = (self.export_root / export_id).resolve()
        if folder.parent != self.export_root.resolve():
            raise ValueError("bad export id")
        _sweep(self.export_root, max_age=EXPORT_MAX_AGE)
        name = f"conversation.{kind}"
        earlier = sorted(folder.glob(f"*/{name}"))
        if kind == "md":
            text = export_markdown(answers)
        else:
            for path in earlier:  # the same answers as the file written before: keep it (its "exported" time too)
                try:
                    if json.loads(path.read_text(encoding="utf-8"))["answers"] == answers:
                        return str(path)
                except (OSError, ValueError, KeyError, TypeError):
                    pass
            text = json.dumps({"exported": time.strftime("%Y-%m-%dT%H:%M:%S"), "answers": answers},
                              ensure_ascii=False, indent=1)
        path = folder / hashlib.sha256(text.encode("utf-8")).hexdigest()[:16] / name
        for old in earlier:
            if old != path:
                old.unlink(missing_ok=True)
                with contextlib.suppress(OSError):
                    old.parent.rmdir()
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        return str(path)

    def exporter(self, kind: str):
        """An export button's click handler: the file for the hidden download button that the page then clicks."""
        def handler(answers: list[dict], export_id: str, request: gr.Request):
            if not answers:
                gr.Info(words("nothing_to_export", request_language(request)), duration=3)
                return None, export_id
            export_id = export_id or secrets.token_urlsafe(16)
            return self.write_export(answers, export_id, kind), export_id
        handler.__name__ = f"export_{kind}"
        return handler

    def on_feedback(self, answers: list[dict], data: gr.LikeData, request: gr.Request):
        """One line per answer in the feedback file (the first vote on it; later clicks on the same answer add
        nothing), and nothing once the file has reached FEEDBACK_MAX_BYTES: 300 clicks in 3 s appended 300 lines."""
        turn = data.index if isinstance(data.index, int) else data.index[0]
        number = turn // 2  # messages alternate: question, answer
        if not isinstance(number, int) or not answers or not 0 <= number < len(answers):
            return
        answer = answers[number]
        key = hashlib.sha256(json.dumps(answer, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
        liked = data.liked if isinstance(data.liked, bool) else str(data.liked).lower() in ("like", "true")
        line = {"time": time.strftime("%Y-%m-%dT%H:%M:%S"), "session": getattr(request, "session_hash", None),
                "helpful": liked, "question": answer["question"][:FEEDBACK_TEXT_CHARS],
                "answer": answer["answer"][:FEEDBACK_TEXT_CHARS], "mode": answer["mode"], "model": answer["model"],
                "cited": [c["paper_id"] for c in answer["citations"]]}
        lang = request_language(request)
        with self.feedback_lock:
            if key in self.rated:
                gr.Info(words("feedback_again", lang), duration=3)
                return
            try:
                full = self.feedback_path.stat().st_size >= FEEDBACK_MAX_BYTES
            except OSError:
                full = False
            if full:
                log.warning("%s has reached %d MB: feedback is no longer saved (move the file away to go on)",
                            self.feedback_path, FEEDBACK_MAX_BYTES // 1024 // 1024)
                gr.Info(words("feedback_full", lang), duration=5)
                return
            with self.feedback_path.open("a", encoding="utf-8") as f:
                f.write(json.dumps(line, ensure_ascii=False) + "\n")
            self.rated.add(key)
        gr.Info(words("feedback_saved", lang), duration=3)

    def add_papers(self, files: list | None, request: gr.Request | None = None,
                   progress: gr.Progress = gr.Progress()):  # noqa: B008  (Gradio's way to ask for the progress bar)
        """Ingest uploaded files like `rag ingest`; the report names the uploaded files, not server paths. At most
        UPLOADS_PER_SESSION_HOUR uploads per browser session and UPLOADS_PER_HOUR in all per hour. While it runs,
        the report's place shows how far the embedding is, updated per batch ("Embedding 64 of 150 papers")."""
        engine, lang = self.engine, request_language(request)
        paths = [Path(getattr(f, "name", f)) for f in files or []]
        if not paths:
            return "", indexing_line(engine, lang)
        if engine.indexing.running:
            return words("still_indexing", lang), indexing_line(engine, lang)
        wait = self.upload_slot(str(getattr(request, "session_hash", None) or ""))
        if wait:
            return wait, indexing_line(engine, lang)
        try:
            def embedding(done: int, todo: int) -> None:
                if todo:
                    progress(done / todo, desc=words("embedding", lang, done=f"{done:,}", todo=f"{todo:,}"))

            progress(0, desc=words("reading_files", lang))
            stats = engine.ingest(paths, upload=True, progress=embedding)  # its own papers, never others'
            if stats.added or stats.updated or stats.removed:
                engine.share_in_background()  # readers beside the server see them too
        except Exception as exc:
            return inert(public_message(exc, self.settings)), indexing_line(engine, lang)
        names = {str(p): p.name for p in paths}
        lines = [words("added", lang, files=inert(", ".join(p.name for p in paths)), summary=inert(stats.summary()))]
        for problem in stats.problems:
            for path, name in names.items():
                problem = problem.replace(path, name)
            lines.append("- " + words("skipped", lang, problem=inert(problem)))
        return "\n".join(lines), indexing_line(engine, lang)

    def upload_slot(self, session: str) -> str:
        """"" when this session may upload now (the upload is then counted), else what to do instead."""
        now = time.monotonic()
        with self.upload_lock:
            for times in [self.uploads_all, *self.uploads.values()]:
                while times and now - times[0] > 3600:
                    times.popleft()
            for name in [n for n, t in self.uploads.items() if not t]:
                del self.uploads[name]
            mine = self.uploads.setdefault(session, deque())
            for times, limit, whose in ((mine, UPLOADS_PER_SESSION_HOUR, "This session has"),
                                        (self.uploads_all, UPLOADS_PER_HOUR, "All sessions together have")):
                if len(times) >= limit:
                    minutes = max(1, round((3600 - (now - times[0])) / 60))
                    return (f"{whose} added papers {limit} times in the last hour; try again in {minutes} min, "
                            "or ask whoever runs the server to add them with `rag ingest`.")
            mine.append(now)
            self.uploads_all.append(now)
        return ""

    def ask_api(self, question: str, history: list[dict] | None = None, k: int = 5,
                decisions: list[str] | None = None, author: str = "", limit: int | None = None) -> dict:
        """Answer a question from the indexed abstracts. history: [{"role": "user"|"assistant", "content": ...,
        "paper_ids": [...] (optional: the papers that answer cited), "outcome": "answered" | "unsure" | "not_covered"
        (optional: that answer's outcome; after one that found no paper a follow-up has none to lean on)}]; k:
        papers to retrieve (1-50); decisions: e.g. ["Accept (Oral)"] or ["oral"]; author: part of a name. Filters
        written in the question ("orals on X", "papers by Y") apply when these are not given. limit: how many papers
        of a list or count the answer shows (default 10; 0: all; `listed` says how many there are). Returns the
        Answer as JSON: answer, answer_type, listed, filters, mode, abstained, citations, sources, timings."""
        try:
            return self.engine.ask(question, history=history, k=k, decision=decisions or None,
                                   author=author or None, limit=limit).to_dict()
        except Exception as exc:
            raise gr.Error(public_message(exc, self.settings), print_exception=False) from None

    def related_of(self, answers: list[dict]) -> dict[str, list[dict]]:
        """The 5 nearest papers of every source of `answers` (`rag.explore.related`), for the cards' "Related"
        lists: the answers whose cards are shown (`rag.web.render.FULL_TURNS`)."""
        out: dict[str, list[dict]] = {}
        for pid in {s["paper_id"] for a in answers for s in a["sources"]}:
            with contextlib.suppress(RagError):  # a paper no longer in the index
                out[pid] = self.engine.related(pid, 5).to_dict()["related"]
        return out

    def related_api(self, paper: str, k: int = 5) -> dict:
        """The papers nearest a paper by whole-paper vector. paper: its id, its title, or words of its title only
        one paper has; k: how many (1-50). Returns {"paper": {...}, "related": [{..., "score"}]}, best first."""
        try:
            return self.engine.related(paper, k).to_dict()
        except Exception as exc:
            raise gr.Error(public_message(exc, self.settings), print_exception=False) from None

    def topics_api(self, points: bool = False) -> dict:
        """The topic clusters of the collection (as `rag topics --json`): size, decision mix, label terms, example
        papers; with points=true also the map: each paper's id, x, y (0..1) and topic number."""
        try:
            if points is not None and not isinstance(points, bool):
                raise QuestionError(f"points must be true or false, got {str(points)[:40]!r}.")
            return self.engine.topics().summary(points=bool(points))
        except Exception as exc:
            raise gr.Error(public_message(exc, self.settings), print_exception=False) from None

    def reset(self, request: gr.Request) -> dict:
        assert self.page is not None
        page = self.page
        return {page.chatbot: [], page.answers: [], page.cards: sources_panel([], lang=request_language(request)),
                page.export_md: None,
                page.export_json: None, page.spent: "", **self.chip_updates(None)}


def build(engine: Engine) -> gr.Blocks:
    """Lay out the page and wire its events to a `ChatApp`'s handlers."""
    app = ChatApp(engine)
    t = page_i18n({"header": _mode_header(engine.settings, app.menu)})  # the page's words, translated in the browser
    with gr.Blocks(title="Ask the ICLR 2025 abstracts", analytics_enabled=False,
                   delete_cache=(EXPORT_MAX_AGE // 2, EXPORT_MAX_AGE)) as demo:
        c = _lay_out(engine, app.menu, t)
        app.page = Page(c.chatbot, c.answers, c.cards, c.export_md, c.export_json, c.box, c.export_id, c.spent, c.chips)
        _wire_answers(app, c)
        timer = _wire_uploads_and_status(app, c, demo)
    _STATUS[demo] = (c.progress, timer)
    _I18N[demo] = t
    return demo


def _mode_header(settings, menu: ModelMenu) -> tuple[str, str]:
    """The heading and the line saying who writes the answers (the LLM, and whether another can be chosen, or
    extraction), in each language of the page (`rag.web.i18n.header`)."""
    name = inert(settings.llm_model or "")
    if settings.llm_enabled:
        return header(f"Answers written by **{name}** from the retrieved abstracts"
                      + (" (another model can be chosen under Model)" if menu.several else ""),
                      f"回答由 **{name}** 根据检索到的摘要写成"
                      + ("（可在“模型”中换用其他模型）" if menu.several else ""))
    return header("**Extractive — no LLM configured**: answers quote the retrieved abstracts",
                  "**抽取式——未配置 LLM**：回答直接引用检索到的摘要")


@dataclass
class _Layout:
    """The page's components (`_lay_out`), for the steps that wire their events."""

    answers: gr.State
    export_id: gr.State
    progress: gr.Markdown
    chatbot: gr.Chatbot
    chips: list[gr.Button]
    box: gr.Textbox
    send: gr.Button
    examples: Examples  # gr.Examples builds one
    examples_zh: Examples  # shown instead on a Chinese page (`_wire_uploads_and_status`, at load)
    export_buttons: list[gr.Button]
    export_md: gr.DownloadButton
    export_json: gr.DownloadButton
    clear: gr.Button
    upload: gr.UploadButton
    spent: gr.Markdown
    added: gr.Markdown
    model: gr.Dropdown
    decisions: gr.CheckboxGroup
    author: gr.Textbox
    k: gr.Slider
    cards: gr.HTML
    mapview: MapPanel
    map_html: gr.HTML


def _lay_out(engine: Engine, menu: ModelMenu, t: Any) -> _Layout:
    """The components, in page order: the chat column (chat, chips, question box, examples, export, clear, add
    papers), the side column (model, filters, sources), and the map under both."""
    answers = gr.State([])
    export_id = gr.State("")
    gr.Markdown(t("header"), elem_id="header")
    progress = gr.Markdown(_translated_status(t, engine), elem_id="indexing")
    with gr.Row(elem_id="main-row"):  # on a phone one column: chat, then the sources (rag.web.render.CSS)
        with gr.Column(scale=3, elem_id="chat-col"):
            # latex_delimiters=[]: TeX from papers is shown as plain text (`rag.text.readable`), never typeset
            # by KaTeX from a paper's own `$$...$$` (which could draw over the page).
            chatbot = gr.Chatbot(label=t("chat"), height=560, elem_id="chat", sanitize_html=True,
                                 latex_delimiters=[],
                                 feedback_options=("Like", "Dislike"), buttons=["copy"])
            with gr.Row(elem_id="chips"):  # filters the last question's words set; a click asks without it
                chips = [gr.Button("", size="sm", visible=False, elem_id=f"chip-{kind}", elem_classes="chip")
                         for kind in QUESTION_FILTERS]
            with gr.Row(elem_id="ask-row"):  # first on a phone (rag.web.render.CSS)
                box = gr.Textbox(placeholder=t("question"), show_label=False, scale=6,
                                 elem_id="question", max_length=100_000, submit_btn=False)
                send = gr.Button(t("ask"), variant="primary", scale=1, elem_id="ask")
            examples = gr.Examples(EXAMPLES, inputs=box, label=t("examples"),  # a click asks (`_wire_answers`)
                                   elem_id="examples")
            examples_zh = gr.Examples(EXAMPLES_ZH, inputs=box, label=t("examples"), visible=False,
                                      elem_id="examples-zh")
            with gr.Row():
                export_buttons = [gr.Button(t("export_md"), elem_id="export-md", size="sm"),
                                  gr.Button(t("export_json"), elem_id="export-json", size="sm")]
                # The files, made on the click (ChatApp.write_export) and downloaded by these hidden buttons.
                export_md = gr.DownloadButton(t("md_file"), elem_id="export-md-file", visible="hidden")
                export_json = gr.DownloadButton(t("json_file"), elem_id="export-json-file", visible="hidden")
                clear = gr.Button(t("clear"), size="sm", elem_id="clear")
                upload = gr.UploadButton(t("add_papers"), size="sm", elem_id="add-papers", file_count="multiple",
                                         file_types=sorted(SUPPORTED_SUFFIXES))
            spent = gr.Markdown("", elem_id="session-totals")
            added = gr.Markdown("", elem_id="added")
        with gr.Column(scale=2, elem_id="side-col"):
            model = gr.Dropdown(menu.choices, value=menu.default or None, label=t("model"), elem_id="model",
                                visible=menu.several, interactive=True)
            with gr.Accordion(t("filters"), open=True):
                decisions = gr.CheckboxGroup([(t(d), d) for d in DECISIONS], label=t("decision"), elem_id="decision")
                author = gr.Textbox(label=t("author"), elem_id="author")
                k = gr.Slider(1, 20, value=engine.settings.k, step=1, label=t("k"), elem_id="k")
            cards = gr.HTML(f'<p class="src-empty">{t("sources_empty")}</p>', elem_id="sources")
    with gr.Accordion(t("map"), open=True, elem_id="map-panel"):
        mapview = MapPanel(engine)
        map_html = mapview.render()
    return _Layout(answers, export_id, progress, chatbot, chips, box, send, examples, examples_zh, export_buttons,
                   export_md,
                   export_json, clear, upload, spent, added, model, decisions, author, k, cards, mapview, map_html)


def _wire_answers(app: ChatApp, c: _Layout) -> None:
    """The events of asking and of what follows an answer: ask (button, Enter), a chip asking again without its
    filter, export, feedback, clear, the named API endpoints; after each, the session's totals and the map."""
    settings = app.settings
    outputs = [c.chatbot, c.answers, c.cards, c.box, c.export_id, *c.chips]

    def session_now(answers: list[dict], request: gr.Request) -> str:
        return session_line(answers, settings, request_language(request))

    totals = dict(fn=session_now, inputs=c.answers, outputs=c.spent, api_visibility="private")
    map_state: dict[str, Any] = dict(fn=c.mapview.state, inputs=[c.answers, c.decisions, c.author],
                                     outputs=c.map_html, api_visibility="private", show_progress="hidden")
    # An example fills the box and asks it: one that only filled the box would leave the user waiting for an answer.
    for trigger in (c.send.click, c.box.submit, c.examples.load_input_event.then, c.examples_zh.load_input_event.then):
        trigger(app.stream_answer, [c.box, c.chatbot, c.answers, c.decisions, c.author, c.k, c.export_id, c.model],
                outputs, api_visibility="private", concurrency_limit=settings.concurrency, concurrency_id="ask"
                ).then(**totals).then(**map_state)
    for chip, kind in zip(c.chips, QUESTION_FILTERS, strict=True):
        chip.click(app.without_filter(kind), [c.chatbot, c.answers, c.decisions, c.author, c.k, c.export_id, c.model],
                   outputs, api_visibility="private", concurrency_limit=settings.concurrency, concurrency_id="ask"
                   ).then(**totals).then(**map_state)
    for button, holder, kind in zip(c.export_buttons, (c.export_md, c.export_json), ("md", "json"), strict=True):
        button.click(app.exporter(kind), [c.answers, c.export_id], [holder, c.export_id], api_visibility="private",
                     concurrency_limit=2, concurrency_id="export").then(
            None, None, None, js=f"() => document.querySelector('#{holder.elem_id}').click()")
    c.chatbot.like(app.on_feedback, [c.answers], None, api_visibility="private")
    reset_outputs = [c.chatbot, c.answers, c.cards, c.export_md, c.export_json, c.spent, *c.chips]
    c.clear.click(app.reset, None, reset_outputs, api_visibility="private").then(**map_state)
    c.chatbot.clear(app.reset, None, reset_outputs, api_visibility="private")  # the chat's trash icon too
    gr.api(app.ask_api, api_name="ask", concurrency_limit=settings.concurrency, concurrency_id="ask")
    gr.api(app.related_api, api_name="related", concurrency_limit=settings.concurrency)
    gr.api(app.topics_api, api_name="topics", concurrency_limit=settings.concurrency)
    for control in (c.decisions.change, c.author.change):
        control(**map_state)


def _wire_uploads_and_status(app: ChatApp, c: _Layout, demo: gr.Blocks) -> gr.Timer:
    """"Add papers" (the report scrolled into view), the indexing line with the timer that refreshes it while
    an ingest runs, and the examples in the browser's language when the page loads. Returns the timer."""
    engine = app.engine
    # The report (and the progress while embedding) is under the buttons, below the fold of a laptop's screen:
    # brought into view when the upload starts and when it ends.
    into_view = "() => { document.querySelector('#added')?.scrollIntoView({block: 'center'}); }"
    c.upload.upload(None, None, None, js=into_view)
    c.upload.upload(app.add_papers, [c.upload], [c.added, c.progress], api_visibility="private", concurrency_limit=1
                    ).then(None, None, None, js=into_view)
    timer = gr.Timer(2.0, active=engine.indexing.running)

    def status_now(request: gr.Request):
        return indexing_line(engine, request_language(request)), gr.Timer(active=engine.indexing.running)

    status: dict[str, Any] = dict(fn=status_now, inputs=None, outputs=[c.progress, timer], api_visibility="private",
                                  show_progress="hidden")
    timer.tick(**status)
    demo.load(**status)  # the line as it is when the page loads (its config may be a second old)

    def examples_now(request: gr.Request):  # a Chinese browser's examples are Chinese questions
        zh = request_language(request) == "zh"
        return gr.Dataset(visible=not zh), gr.Dataset(visible=zh)

    demo.load(examples_now, None, [c.examples.dataset, c.examples_zh.dataset], api_visibility="private",
              show_progress="hidden")
    return timer


# Gradio's default theme, with its font's bold from the full Bold face: the SemiBold file Gradio ships (600, the
# weight of its labels and our card titles) holds 55 glyphs, so a title mixed that subset's letters with a fallback
# font's ("CʙQ: Cross-Bʟock"). Asked for 600, the browser takes the nearest weight, 700.
THEME = gr.themes.Default(font=[gr.themes.GoogleFont("Source Sans Pro", weights=(400, 700)), "ui-sans-serif",
                                "system-ui", "sans-serif"])
# How many values each API call's `data` list takes; a shorter list is filled with nulls (rag.web.api_args).
API_ARITY = arity({"ask": ChatApp.ask_api, "related": ChatApp.related_api, "topics": ChatApp.topics_api})
SELF_CHECK_WAIT = 60.0  # seconds launch() waits for its own page before giving up


@contextlib.contextmanager
def _patient_self_check(wait: float = SELF_CHECK_WAIT):
    """Make Gradio's start-up self-check patient while `launch()` runs.

    Gradio's launch() sends a HEAD to its own page and, on the first request that takes over 3 s, raises "When
    localhost is not accessible, a shareable link must be created" and the server exits (a check meant for hosted
    notebooks; gradio/networking.py `url_ok`). On a loaded 2-core machine the first request to a server that has
    just started, while the bundled list is being indexed, can take longer: CI lost a `rag serve` that way, and it
    reproduced here at load 10. The server binds to an address we chose and never needs a share link, so we wait
    up to `wait` seconds for any answer instead; a server that truly cannot be reached still fails, later."""
    from gradio import networking

    original = networking.url_ok

    def url_ok(url: str) -> bool:
        import httpx

        deadline = time.monotonic() + wait
        while True:
            try:
                if httpx.head(url, timeout=10, verify=False).status_code in (200, 401, 301, 302, 303, 307, 308):
                    return True
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                return False
            time.sleep(0.5)

    networking.url_ok = url_ok
    try:
        yield
    finally:
        networking.url_ok = original


def launch(engine: Engine, block: bool = True, background: list | None = None, first: Sequence = ()
           ) -> gr.Blocks:
    """Load the index, then serve; `background` files are indexed while serving (the bundled list), after the
    `first` ones when the index is empty (`Engine.index_in_background`). `block=False` returns at once (tests)."""
    load_sentence_splitter()  # before any worker thread (rag.text: nltk's import is not thread-safe)
    background = list(background or [])
    if background or first:
        # The page first: the indexing thread, started once it is served, loads the embedder and the store (a third
        # of the start-up) while the page already says the collection is being read.
        engine.indexing = Indexing(running=True)
    else:
        engine.retriever  # noqa: B018  load the embedder and index now, not on the first question
        if engine.is_empty():
            print(f"warning: the index in {engine.settings.data_dir} is empty; run `rag ingest PATH` first, or add "
                  "papers on the page", flush=True)
        else:
            engine.share_in_background()  # for read-only commands beside the server (`rag ask`: rag.store.lock)
            warm_map(engine)  # the map of the collection, ready by the first page load (rag.explore.topicmap)
    demo = build(engine)
    auth = None
    if engine.settings.auth:  # Gradio calls it with exactly the name it compares (rag.web.guard)
        user, _, password = engine.settings.auth.get_secret_value().partition(":")
        auth = LoginThrottle({user: password})
    demo.queue(default_concurrency_limit=engine.settings.concurrency)
    from starlette.middleware import Middleware

    with _patient_self_check():
        demo.launch(server_name=engine.settings.host, server_port=engine.settings.port, share=False, auth=auth,
                    prevent_thread_lock=True, ssr_mode=False, mcp_server=False, quiet=True, css=CSS, theme=THEME,
                    footer_links=["api"], max_file_size=MAX_UPLOAD, i18n=_I18N.get(demo),
                    app_kwargs={"middleware": [Middleware(Guard, hosts=allowed_hosts(engine.settings.host,
                                                                                      engine.settings.allowed_hosts)),
                                               Middleware(ApiDefaults, apis=API_ARITY)]})
    if background or first:
        ingest = engine.index_in_background(background, report=lambda line: print(line, flush=True), first=first)
        keep_status_published(demo, engine, ingest)
    if block:
        print(f"Serving on http://{engine.settings.host}:{engine.settings.port} (Ctrl-C to stop)", flush=True)
        demo.block_thread()
    return demo
