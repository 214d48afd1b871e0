"""The `rag` command as users and scripts call it, in real subprocesses: its JSON contract, batch mode, exit
codes, one-line errors, and no network connection outside 127.0.0.1."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import urllib.request

import pytest
from helpers import DATA, NEAR_MISS, ROOT, SEEDS, free_port, wait_for_page
from netaudit import outside

AUDIT = [sys.executable, str(ROOT / "tests" / "netaudit.py")]
SAE = "Is there work on making sparse autoencoders cheaper to train?"
SAE_TITLE = "Efficient Dictionary Learning with Switch Sparse Autoencoders"  # the seed's ICLR 2025 paper


def rag(*args, audit=None, input=None, check=False, env=None):
    cmd = (AUDIT + [str(audit), "--"] if audit else [sys.executable, "-m", "rag"]) + [str(a) for a in args]
    result = subprocess.run(cmd, capture_output=True, text=True, input=input, cwd=ROOT, timeout=300,
                            env={**os.environ, **(env or {})})
    if check:
        assert result.returncode == 0, result.stderr
    return result


@pytest.fixture(scope="module")
def cli_index(tmp_path_factory):
    """A data dir filled by `rag ingest seeds/` under the network audit; yields (data_dir, ingest result, report)."""
    base = tmp_path_factory.mktemp("cli")
    report = base / "net.jsonl"
    result = rag("ingest", SEEDS, "--data-dir", base / "index", audit=report)
    return base / "index", result, report


def test_ingest_prints_a_summary_and_makes_no_outside_connection(cli_index):
    data_dir, result, report = cli_index
    assert result.returncode == 0, result.stderr
    assert "added 38, updated 0, unchanged 0, removed 0, skipped 0, 38 matched to ICLR 2025 papers" in result.stdout
    assert "embedding" in result.stderr  # the progress bar
    assert report.read_text() == ""


def test_ask_json_contract(cli_index):
    data_dir, _, report = cli_index
    result = rag("ask", "--json", SAE, "--data-dir", data_dir, audit=report, check=True)
    answer = json.loads(result.stdout)
    assert set(answer) >= {"question", "answer", "mode", "abstained", "citations", "sources", "timings"}
    assert answer["question"] == SAE and answer["mode"] == "extractive" and answer["abstained"] is False
    assert answer["citations"] and re.search(r"\[1\]", answer["answer"])
    for source in answer["sources"] + answer["citations"]:
        assert set(source) >= {"n", "paper_id", "title", "authors", "decision", "url", "text", "snippet", "score"}
    assert [s["n"] for s in answer["sources"]] == [1, 2, 3, 4, 5]
    assert answer["citations"][0]["text"].startswith("Sparse autoencoders (SAEs)")
    assert answer["timings"]["total_ms"] > 0
    assert report.read_text() == ""


def test_ask_json_cites_the_seed_under_its_iclr_2025_title_decision_and_link(cli_index):
    data_dir, _, report = cli_index
    answer = json.loads(rag("ask", "--json", SAE, "--data-dir", data_dir, audit=report, check=True).stdout)
    cited = answer["citations"][0]
    assert (cited["n"], cited["title"], cited["paper_id"]) == (1, SAE_TITLE, "k2ZVAzVeMP")
    assert cited["url"] == "https://openreview.net/forum?id=k2ZVAzVeMP" and cited["decision"] == "Accept (Poster)"
    assert cited["authors"] and cited["has_title"] and cited["has_abstract"] is True
    assert cited["enriched_from"] == "ICLR 2025 list (rag/data/iclr2025.jsonl)"
    assert all(s["enriched_from"] and s["url"].startswith("https://openreview.net/") for s in answer["sources"])
    assert report.read_text() == ""


def test_ask_text_output_and_k(cli_index):
    data_dir, _, _ = cli_index
    result = rag("ask", SAE, "--data-dir", data_dir, "--k", "2", check=True)
    assert "[1]" in result.stdout and "Sources:" in result.stdout
    assert SAE_TITLE in result.stdout
    two = json.loads(rag("ask", "--json", SAE, "--data-dir", data_dir, "--k", "2", check=True).stdout)
    assert len(two["sources"]) == 2


def test_history_file_turns_a_follow_up_into_a_standalone_search(cli_index, tmp_path):
    data_dir, _, _ = cli_index
    history = tmp_path / "history.json"
    history.write_text(json.dumps([{"role": "user", "content": "Which paper introduces a billion-scale time series "
                                                                "foundation model?"},
                                   {"role": "assistant", "content": "Time-MoE [1]."}]))
    answer = json.loads(rag("ask", "--json", "What data did they pre-train it on?", "--history", history,
                            "--data-dir", data_dir, check=True).stdout)
    assert answer["sources"][0]["text"].startswith("Deep learning for time series forecasting")
    history.write_text('{"role": "user"}')
    bad = rag("ask", "x", "--history", history, "--data-dir", data_dir)
    assert bad.returncode == 2 and "history must be a list" in bad.stderr


def test_batch_answers_every_line_in_order_with_errors_in_place(cli_index, tmp_path):
    data_dir, _, _ = cli_index
    batch = tmp_path / "batch.jsonl"
    batch.write_text("\n".join([
        json.dumps({"question": SAE}),
        "{not json",
        json.dumps({"question": "What data did they pre-train it on?",
                    "history": [{"role": "user", "content": "Which paper introduces a billion-scale time series "
                                                            "foundation model?"}]}),
        json.dumps({"question": "   "}),
        json.dumps({"question": "What is the best recipe for chocolate cake?"}),
    ]) + "\n")
    result = rag("ask", "--json", "--batch", batch, "--data-dir", data_dir)
    assert result.returncode == 1  # some lines failed
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(lines) == 5
    assert lines[0]["question"] == SAE and lines[0]["citations"]
    assert lines[1]["line"] == 2 and "error" in lines[1]
    assert lines[2]["sources"][0]["text"].startswith("Deep learning for time series forecasting")
    assert lines[3]["line"] == 4 and "empty" in lines[3]["error"]
    assert lines[4]["abstained"] is True
    assert "Traceback" not in result.stderr


def test_each_outcome_has_its_own_first_line(cli_index, corpus_engine):
    """`rag ask` begins with the outcome when it is not an answer: "Unsure: ..." (the closest papers follow,
    cited), "Not covered: ..."; an answer begins with what the papers say. `--json` carries `outcome`."""
    data_dir, _, _ = cli_index
    answered = rag("ask", SAE, "--data-dir", data_dir, check=True).stdout.splitlines()
    not_covered = rag("ask", "What is the best recipe for chocolate cake?", "--data-dir", data_dir,
                      check=True).stdout.splitlines()
    unsure = rag("ask", NEAR_MISS, "--data-dir", corpus_engine.settings.data_dir, check=True).stdout.splitlines()
    assert not_covered[0].startswith("Not covered: the collection does not appear to cover this question.")
    assert unsure[0] == "Unsure: none of the papers clearly answers this. The closest are:"
    assert re.match(r"• “.+” \[1\]", unsure[1]) and "Closest papers (none clearly answers):" in unsure
    assert not answered[0].startswith(("Unsure", "Not covered")) and "[1]" in "\n".join(answered)
    outcomes = [json.loads(rag("ask", "--json", q, "--data-dir", d, check=True).stdout)["outcome"]
                for q, d in ((SAE, data_dir), (NEAR_MISS, corpus_engine.settings.data_dir))]
    assert outcomes == ["answered", "unsure"]


def test_a_source_ranked_above_a_cited_one_is_named_so_the_numbers_have_no_gap(cli_index):
    """Sources are numbered as retrieved and an answer may cite [2] and [3] only; the terminal listed just those, and
    a newcomer looked for [1]. A source ranked above a cited one gets a line saying it was retrieved, not cited.
    (A real list answer over the seeds, its first citation left out to make the case: lists now take the top paper
    whenever it belongs.)"""
    import dataclasses

    from rag.cli import render_sources
    from rag.config import Settings
    from rag.engine import Engine

    data_dir, _, _ = cli_index
    full = Engine(Settings.load(data_dir=data_dir)).ask("Which papers study time series foundation models?")
    assert [c.n for c in full.citations][:2] == [1, 2]
    answer = dataclasses.replace(full, citations=full.citations[1:])
    sources = render_sources(answer)
    assert f"[1] {full.sources[0].title} (retrieved, not cited)" in sources
    for c in answer.citations:
        assert f"[{c.n}] {c.title} ({c.decision}, {c.url})" in sources
    shown = [int(n) for n in re.findall(r"^\[(\d+)\]", sources, re.MULTILINE)]
    assert shown == list(range(1, max(c.n for c in answer.citations) + 1)), sources  # in order, no gap


def test_stats(cli_index):
    data_dir, _, _ = cli_index
    info = json.loads(rag("stats", "--json", "--data-dir", data_dir, check=True).stdout)
    assert info["papers"] == 38 and info["chunks"] >= 38
    assert info["sources"] == {"000_99312b63f56aee43.txt": 19, "003_ca1cb07fa40ffbf8.txt": 19}
    assert "papers" in rag("stats", "--data-dir", data_dir, check=True).stdout


def test_errors_are_one_line_and_exit_codes_tell_what_happened(cli_index, tmp_path):
    data_dir, _, _ = cli_index
    for blank in ("  ", ""):  # "" once stopped as a usage error, "missing QUESTION", beside the question it was
        empty = rag("ask", blank, "--data-dir", data_dir)
        assert empty.returncode == 1 and empty.stderr.strip() == "Error: The question is empty: type a question " \
                                                                "about the papers."
    no_index = rag("ask", SAE, "--data-dir", tmp_path / "nothing")
    assert no_index.returncode == 1 and "there is no index in" in no_index.stderr
    assert "run `rag ingest PATH` first" in no_index.stderr
    assert not (tmp_path / "nothing").exists()  # a read command creates nothing where no index is
    bad_setting = rag("ask", SAE, "--data-dir", data_dir, env={"RAG_K": "many"})
    assert bad_setting.returncode == 1 and "--k / RAG_K" in bad_setting.stderr
    for result in (empty, no_index, bad_setting):
        assert "Traceback" not in result.stderr

    partial = tmp_path / "partial.jsonl"
    partial.write_text(json.dumps({"id": "ok", "abstract": "A perfectly good abstract about graphs."}) + "\n{oops\n")
    result = rag("ingest", partial, "--data-dir", tmp_path / "p")
    assert result.returncode == 1
    assert f"skipped {partial}:2: invalid JSON" in result.stderr and "added 1" in result.stdout
    nothing = tmp_path / "nothing.jsonl"
    nothing.write_text("{oops\n")
    assert rag("ingest", nothing, "--data-dir", tmp_path / "n").returncode == 2
    again = rag("ingest", "--if-empty", DATA / "papers_small.jsonl", "--data-dir", tmp_path / "p", check=True)
    assert "already holds 1 papers; nothing to do" in again.stdout


def test_ask_json_lists_a_title_only_paper_with_no_text(tmp_path):
    data_dir = tmp_path / "index"
    ingest = rag("ingest", DATA / "papers_small.jsonl", DATA / "papers_title_only.jsonl", "--data-dir", data_dir,
                 "-q", check=True)
    assert "added 10" in ingest.stdout and "matched" not in ingest.stdout
    question = "Which papers use speculative decoding to accelerate autoregressive image generation?"
    answer = json.loads(rag("ask", "--json", question, "--data-dir", data_dir, check=True).stdout)
    jacobi = next(s for s in answer["sources"] if s["paper_id"] == "LZfjxvqw0N")
    assert (jacobi["has_abstract"], jacobi["text"], jacobi["snippet"], jacobi["enriched_from"]) == (False, "", "", "")
    assert jacobi["title"].startswith("Accelerating Auto-regressive Text-to-Image Generation")
    # A list question lists it by its title, and quotes only papers with abstracts.
    assert answer["answer_type"] == "list" and answer["citations"][0]["has_abstract"]
    assert f"{jacobi['title']} [{jacobi['n']}] (title only: the list has no abstract for it)" in answer["answer"]
    assert f"[{jacobi['n']}]." not in answer["answer"]


def test_help_lists_every_command_and_the_docs_every_setting():
    from rag.cli import main as cli_main
    from rag.config import ENV_VARS

    top = rag("--help", check=True).stdout
    assert sorted(cli_main.commands) == sorted(
        ["ask", "chat", "eval", "ingest", "mcp", "models", "related", "serve", "stats", "topics"])
    for command in cli_main.commands:
        assert re.search(rf"^\s+{command}\s+\S", top, re.M), command  # listed with its one-line summary
    ask_help = rag("ask", "--help", check=True).stdout
    for flag in ("--json", "--k", "--decision", "--history", "--batch", "--data-dir", "RAG_DATA_DIR"):
        assert flag in ask_help
    configuration = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert not [var for var in ENV_VARS.values() if f"`{var}`" not in configuration]


def test_serve_answers_over_http_and_connects_nowhere_else(cli_index, tmp_path):
    data_dir, _, _ = cli_index
    report = tmp_path / "serve-net.jsonl"
    port = free_port()
    proc = subprocess.Popen(AUDIT + [str(report), "--", "serve", "--data-dir", str(data_dir), "--port", str(port)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        base = f"http://127.0.0.1:{port}"
        page = wait_for_page(base + "/", proc, timeout=60)
        assert "Ask the ICLR 2025 abstracts" in page
        request = urllib.request.Request(base + "/gradio_api/call/ask",
                                         data=json.dumps({"data": [SAE, None, 5, None, ""]}).encode(),
                                         headers={"Content-Type": "application/json"})
        event = json.loads(urllib.request.urlopen(request, timeout=30).read())["event_id"]
        stream = urllib.request.urlopen(f"{base}/gradio_api/call/ask/{event}", timeout=60).read().decode()
        assert "event: complete" in stream
        answer = json.loads([line[6:] for line in stream.splitlines() if line.startswith("data: ")][-1])[0]
        assert answer["citations"][0]["title"] == SAE_TITLE and "[1]" in answer["answer"]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert report.read_text() == ""


def test_the_audit_hook_sees_outside_connections():
    import socket

    class Sock:
        family = socket.AF_INET

    assert outside("socket.connect", (Sock(), ("93.184.216.34", 443))) == "('93.184.216.34', 443)"
    assert outside("socket.getaddrinfo", ("api.gradio.app", 443, 0, 0, 0)) == "'api.gradio.app'"
    assert outside("socket.connect", (Sock(), ("127.0.0.1", 8000))) is None
    assert outside("socket.connect", (Sock(), ("::1", 8000, 0, 0))) is None
    assert outside("socket.getaddrinfo", ("localhost", 80, 0, 0, 0)) is None


def test_telemetry_switches_are_set_before_the_libraries_load():
    code = ("import rag, os, sys; "
            "assert 'onnxruntime' not in sys.modules and 'chromadb' not in sys.modules; "
            "print(os.environ['ORT_DISABLE_TELEMETRY'], os.environ['ANONYMIZED_TELEMETRY'], "
            "os.environ['GRADIO_ANALYTICS_ENABLED'], os.environ['HF_HUB_OFFLINE'])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "ORT_DISABLE_TELEMETRY": "0"}, check=True).stdout.split()
    assert out == ["1", "False", "False", "1"]


# Terminal escapes: clear the screen, set the window title, write the clipboard (OSC 52), an 8-bit CSI (U+009B)
# and a bidi override. None may reach a terminal (security review 3, issue 26 item 18).
ESCAPES = "\x1b[2J\x1b[H\x1b]0;pwned\x07\x1b]52;c;ZXZpbA==\x07\x9b31m\u202e"
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def test_terminal_escapes_in_paper_text_or_a_servers_words_never_reach_the_terminal(tmp_path):
    """A paper's title, authors and abstract with escape sequences, ingested and then listed by `rag related`,
    quoted by `rag ask` (text and JSON), and an LLM endpoint's error text with them (which no ingest cleans):
    the escape characters are dropped from text output and escaped in JSON; the words around them remain."""
    from fake_openai import FakeOpenAI

    abstracts = [json.loads(line) for line in (DATA / "papers_small.jsonl").read_text().splitlines()][:3]
    hostile = {**abstracts[0], "title": f"Switch{ESCAPES} Sparse Autoencoders",
               "authors": [f"Mallory{ESCAPES}"], "abstract": f"{ESCAPES}" + abstracts[0]["abstract"]}
    path = tmp_path / "hostile.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [hostile, *abstracts[1:]]) + "\n")
    data = tmp_path / "index"
    rag("ingest", path, "--data-dir", data, check=True)
    runs = [rag("related", abstracts[0]["id"], "--data-dir", data, check=True),
            rag("ask", abstracts[0]["title"], "--data-dir", data, check=True),
            rag("ask", "--json", abstracts[0]["title"], "--data-dir", data, check=True),
            rag("related", f"no such paper{ESCAPES}", "--data-dir", data)]
    with FakeOpenAI() as server:
        server.mode, server.status = "error_body", 500
        server.body = {"error": {"message": f"overloaded{ESCAPES} try later"}}
        runs.append(rag("ask", abstracts[0]["title"], "--data-dir", data, check=True,
                        env={"OPENAI_BASE_URL": server.base_url, "RAG_LLM_MODEL": "fake-chat",
                             "RAG_LLM_MAX_RETRIES": "0"}))
    for run in runs:
        assert not _CONTROL.search(run.stdout + run.stderr), repr(run.stdout + run.stderr)
    assert "Switch Sparse Autoencoders" in runs[0].stdout + runs[1].stdout
    assert json.loads(runs[2].stdout)["sources"]  # still valid JSON
    assert runs[3].returncode == 1 and "no such paper" in runs[3].stderr
    assert "overloaded try later" in runs[4].stdout, runs[4].stdout


def test_tex_and_markdown_of_paper_text_read_as_text_in_the_terminal(tmp_path):
    """Abstracts write "9.6\\%" (153 of the 2,114 bundled ones) and titles "**L**earns"; the web page shows them as
    9.6% and Learns, and a terminal did not (a newcomer saw the raw marks). The text output shows them readable;
    JSON keeps the stored text, which is data."""
    records = [json.loads(line) for line in (DATA / "papers_small.jsonl").read_text().splitlines()][:3]
    first = records[0]
    marked = {**first, "title": "**S**witch Sparse Autoencoders",
              "abstract": first["abstract"] + " Reconstruction error falls by 9.6\\% at the same compute."}
    path = tmp_path / "marked.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [marked, *records[1:]]) + "\n")
    data = tmp_path / "index"
    rag("ingest", path, "--data-dir", data, check=True)
    question = "By how much does reconstruction error fall at the same compute with switch sparse autoencoders?"
    text = rag("ask", question, "--data-dir", data, check=True).stdout
    assert "by 9.6% at the same compute" in text and "Switch Sparse Autoencoders" in text, text
    assert "\\%" not in text and "**" not in text, text
    raw = json.loads(rag("ask", "--json", question, "--data-dir", data, check=True).stdout)
    assert "9.6\\%" in raw["answer"] and raw["sources"][0]["title"] == "**S**witch Sparse Autoencoders"


def test_a_reader_that_stops_early_ends_the_output_quietly(cli_index):
    """`rag topics | head` once ended with "Error: unexpected BrokenPipeError". Made certain, not left to timing:
    `rag ask --json --batch -` answers a first question into a real `head -1`, which prints it and exits; only then is
    the second question sent, so its answer meets a pipe nobody reads. And `rag topics` writes into a pipe whose
    reader has already gone (`rag topics | true`)."""
    data_dir, _, _ = cli_index
    read, write = os.pipe()
    asker = subprocess.Popen([sys.executable, "-m", "rag", "ask", "--json", "--batch", "-",
                              "--data-dir", str(data_dir)],
                             cwd=ROOT, stdin=subprocess.PIPE, stdout=write, stderr=subprocess.PIPE, text=True)
    head = subprocess.Popen(["head", "-1"], stdin=read, stdout=subprocess.PIPE, text=True)
    os.close(read)
    os.close(write)
    asker.stdin.write(json.dumps({"question": SAE}) + "\n")
    asker.stdin.flush()
    first, _ = head.communicate(timeout=300)
    assert json.loads(first)["sources"], first  # `head` printed the first answer and is gone
    asker.stdin.write(json.dumps({"question": "Which papers study diffusion models?"}) + "\n")
    asker.stdin.close()
    err = asker.stderr.read()
    assert asker.wait(timeout=300) == 141, err  # as a shell reports a process ended by SIGPIPE
    assert err == "", err  # no "Error: unexpected BrokenPipeError", no "Exception ignored ... BrokenPipeError"

    read, write = os.pipe()
    os.close(read)
    topics = subprocess.run([sys.executable, "-m", "rag", "topics", "--data-dir", str(data_dir)], cwd=ROOT,
                            stdout=write, stderr=subprocess.PIPE, text=True, timeout=300)
    os.close(write)
    assert (topics.returncode, topics.stderr) == (141, "")


# What a question never needs: the web app, the ingest's splitter, LLM clients, and what those pull in.
NOT_FOR_A_QUESTION = {"gradio", "llama_index", "nltk", "openai", "pandas", "sklearn", "fastapi", "umap", "torch",
                      "transformers"}


def test_a_cold_ask_reads_the_cached_corpus_and_imports_nothing_a_question_does_not_need(tmp_path):
    """`rag ask` as a whole process (issue 30, item 2): the second one over an index loads the corpus the first
    cached (it builds no BM25 index: that and the term counts were ~2 s of a 3.5 s cold start) and imports none of
    the heavy libraries only serving, ingesting or an LLM need. A fact test, not a timing test."""
    data = tmp_path / "index"
    subprocess.run([sys.executable, "-m", "rag", "ingest", "-q", "--data-dir", str(data), str(SEEDS)], cwd=ROOT,
                   check=True, capture_output=True)
    question = "Is there work on making sparse autoencoders cheaper to train?"
    cold = subprocess.run([sys.executable, "-m", "rag", "ask", "--data-dir", str(data), question], cwd=ROOT,
                          capture_output=True, text=True, check=True).stdout
    code = ("import sys, bm25s\n"
            "def built(*args, **kwargs):\n"
            "    raise SystemExit('the BM25 index was built again')\n"
            "bm25s.BM25.index = built\n"
            "from rag.cli import main\n"
            f"main(['ask', '--data-dir', {str(data)!r}, {question!r}], standalone_mode=False)\n"
            "print('IMPORTED', sorted({m.split('.')[0] for m in sys.modules}))\n")
    run = subprocess.run([sys.executable, "-X", "importtime", "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    answer, _, imported = run.stdout.rpartition("IMPORTED ")
    assert re.sub(r"\d+ ms\b", "ms", answer) == re.sub(r"\d+ ms\b", "ms", cold) and "[1]" in answer  # but its timing
    assert NOT_FOR_A_QUESTION.isdisjoint(ast.literal_eval(imported)), imported
    timed = {line.rsplit("|", 1)[1].strip() for line in run.stderr.splitlines() if line.startswith("import time:")}
    # The store is at rest (the ingest left its mark): the question read it from the data dir (rag.store.snapshot).
    assert "chromadb" not in ast.literal_eval(imported)
    assert "chromadb" not in timed and NOT_FOR_A_QUESTION.isdisjoint(timed)  # -X importtime agrees


def test_ask_json_stays_valid_json_when_a_paper_holds_a_url_with_a_secret_like_query(tmp_path):
    """`rag ask --json` redacted URL secrets over the JSON text, and the pattern ate the closing quote and comma
    after `?key=demo` in a paper's title: anyone who could add such a paper broke every JSON consumer (security
    re-check of issue 49). Each string is redacted before the JSON is written; `--batch` lines parse too."""
    records = [json.loads(line) for line in (DATA / "papers_small.jsonl").read_text().splitlines()][:3]
    hostile = {**records[0], "title": records[0]["title"] + " https://okapi.example/d?key=demo"}
    path = tmp_path / "papers.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [hostile, *records[1:]]) + "\n")
    data = tmp_path / "index"
    rag("ingest", path, "--data-dir", data, check=True)
    answer = json.loads(rag("ask", "--json", records[0]["title"], "--data-dir", data, check=True).stdout)
    titles = [s["title"] for s in answer["sources"]]
    assert any(t.endswith("https://okapi.example/d?key=***") for t in titles), titles
    batch = tmp_path / "batch.jsonl"
    batch.write_text(json.dumps({"question": records[0]["title"]}) + "\n" + json.dumps({"question": "x" * 3}) + "\n")
    lines = rag("ask", "--json", "--batch", batch, "--data-dir", data, check=True).stdout.splitlines()
    assert len(lines) == 2 and all(isinstance(json.loads(line), dict) for line in lines)


def test_ask_shows_a_list_s_first_papers_and_all_of_them_with_all(cli_index):
    data_dir, _, _ = cli_index
    question = "What work is there on diffusion models?"
    whole = json.loads(rag("ask", "--json", "--all", question, "--data-dir", data_dir, check=True).stdout)
    assert whole["answer_type"] == "list" and whole["listed"] >= 3
    assert len(whole["citations"]) == whole["listed"] and whole["answer"].startswith(
        f"{whole['listed']} papers on diffusion models:\n")
    assert "more (Show more" not in whole["answer"]
