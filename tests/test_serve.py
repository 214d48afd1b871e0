"""Serving and indexing at once: the embedded store is owned by the `rag serve` process (other processes that would
write or open it are refused with a message naming the fix; read-only commands answer from the snapshot it
shares), and a background ingest makes papers searchable as it goes and resumes
after a restart without embedding anything twice."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time

import pytest

from helpers import DATA, ROOT, SEEDS, rag_cmd, start_chroma

from rag.config import Settings
from rag.store import lock
from rag.engine import Engine


def test_other_processes_are_refused_while_rag_serve_owns_the_store(tmp_path):
    settings = Settings(data_dir=tmp_path / "index")
    held = lock.hold(settings)  # what `rag serve` does for its whole life
    try:
        for args in (("ingest", str(DATA / "papers_small.jsonl")), ("ask", "protein structure generation"),
                     ("serve", "--no-bundled")):
            run = subprocess.run(rag_cmd(*args, data_dir=settings.data_dir), cwd=ROOT, capture_output=True,
                                 text=True, timeout=120)
            assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
            assert "a running `rag serve`" in run.stderr and "Add papers" in run.stderr, run.stderr
            assert "RAG_CHROMA_URL" in run.stderr
        assert sorted(p.name for p in settings.data_dir.iterdir()) == ["serve.lock"]  # nothing else created
    finally:
        held.close()
    run = subprocess.run(rag_cmd("ingest", "-q", str(DATA / "papers_small.jsonl"), data_dir=settings.data_dir),
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "added 8" in run.stdout, run.stderr  # the lock goes with its process


def test_read_only_commands_answer_beside_a_running_rag_serve_and_ingest_is_refused(tmp_path):
    """README's first section starts `make run`, then has the user try the CLI: `rag ask`, `rag related` and
    `rag topics` exited 1 with "a running `rag serve` ... uses the index" (issue 54 item 1). Beside a real
    `rag serve` they answer from the snapshot it shares; `rag ingest` is still refused, saying what to do."""
    from helpers import COVERED, free_port, wait_for_page

    data_dir = tmp_path / "index"
    run = subprocess.run(rag_cmd("ingest", "-q", str(SEEDS), data_dir=data_dir), cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    port = free_port()
    with (tmp_path / "serve.log").open("w") as log:
        proc = subprocess.Popen(rag_cmd("serve", "--no-bundled", "--port", str(port), data_dir=data_dir), cwd=ROOT,
                                stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for_page(f"http://127.0.0.1:{port}/", proc, timeout=180)
        shared = data_dir / "corpus" / "papers.shared.json"  # written by the server once it serves (a few s)
        deadline = time.monotonic() + 60
        while not shared.exists():
            assert time.monotonic() < deadline and proc.poll() is None, (tmp_path / "serve.log").read_text()
            time.sleep(0.3)
        for args, expected in ((("ask", COVERED), "Switch Sparse Autoencoders"),
                               (("related", "Efficient Dictionary Learning with Switch Sparse Autoencoders"), "1."),
                               (("topics",), "38 papers in"), (("stats",), "38")):
            run = subprocess.run(rag_cmd(*args, data_dir=data_dir), cwd=ROOT, capture_output=True, text=True,
                                 timeout=300)
            assert run.returncode == 0 and expected in run.stdout, (args, run.stdout, run.stderr)
            assert "Traceback" not in run.stderr
        run = subprocess.run(rag_cmd("ingest", str(DATA / "papers_small.jsonl"), data_dir=data_dir), cwd=ROOT,
                             capture_output=True, text=True, timeout=300)
        assert run.returncode == 1 and "Traceback" not in run.stderr and run.stderr.count("\n") == 1, run.stderr
        assert "a running `rag serve`" in run.stderr and "cannot add papers to it there" in run.stderr
        assert "Add papers" in run.stderr, run.stderr
        assert proc.poll() is None  # the server is untouched
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def test_a_second_process_adding_papers_to_the_same_store_is_refused_while_the_first_writes(tmp_path):
    settings = Settings(data_dir=tmp_path / "index")
    engine = Engine(settings)
    engine.ingest([DATA / "papers_small.jsonl"])
    # Another process in the middle of an ingest (or of `rag eval` building its collection) holds the write lock.
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom rag.store import lock\nfrom rag.config "
                               "import Settings\nwith lock.writing(Settings(data_dir=sys.argv[1])):\n"
                               "    print('holding', flush=True); time.sleep(600)", str(settings.data_dir)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "holding\n"
        run = subprocess.run(rag_cmd("ingest", str(SEEDS), data_dir=settings.data_dir), cwd=ROOT,
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 1 and "Traceback" not in run.stderr and run.stderr.count("\n") == 1, run.stderr
        assert f"another process is adding papers to the index in {settings.data_dir}" in run.stderr
        assert "--data-dir / RAG_DATA_DIR" in run.stderr
        with pytest.raises(lock.StoreBusyError):  # the library call too, and nothing was written
            engine.ingest([SEEDS])
        assert engine.index.count() == 8
    finally:
        holder.kill()  # killed, even with -9, its lock goes with it
        holder.wait()
    assert engine.ingest([SEEDS]).added == 38


def test_a_background_ingest_is_searchable_as_it_goes_and_resumes_after_a_restart(tmp_path, monkeypatch):
    settings = Settings(data_dir=tmp_path / "index")
    engine = Engine(settings, serving=True)
    engine.ingest([DATA / "papers_small.jsonl"])
    # The 38 seeds can be stored before a question is answered: the indexing thread waits, after the first batch it
    # made searchable, until a question asked meanwhile has searched it (at most 30 s; then the test fails). A
    # question answered before that first batch also says "indexed so far" (of the 8), so only one that searched
    # more releases the thread.
    asked, refresh = threading.Event(), engine._refresh

    def refresh_then_wait() -> None:
        refresh()
        if threading.current_thread() is not threading.main_thread() and not asked.is_set():
            asked.wait(30)
            asked.set()

    monkeypatch.setattr(engine, "_refresh", refresh_then_wait)
    thread = engine.index_in_background([SEEDS], refresh_every=0.0)
    seen_notice, searched = False, 0
    while thread.is_alive():
        answer = engine.ask("protein structure generation")
        for notice in answer.notices:
            if found := re.search(r"Searched the ([\d,]+) papers indexed so far", notice):
                seen_notice, searched = True, max(searched, int(found.group(1).replace(",", "")))
                if searched > 8:
                    asked.set()
        time.sleep(0.2)
    assert engine.indexing.summary.startswith("added 38") and not engine.indexing.failed
    assert engine.indexing.total == 46 and engine.index.count() == 46
    assert seen_notice  # answers given meanwhile said they searched part of the collection
    assert searched > 8  # ... which had grown past the 8 papers there before
    assert not any("indexed so far" in n for n in engine.ask("protein structure generation").notices)

    restarted = Engine(settings, serving=True)  # a restart: nothing is embedded again
    restarted.index_in_background([SEEDS]).join(120)
    assert restarted.indexing.summary.startswith("added 0, updated 0, unchanged 38")
    assert "0 chunks embedded" in restarted.indexing.summary


def test_a_background_ingest_reports_its_progress_and_a_last_line_to_the_console(tmp_path):
    """`rag serve` printed nothing while it indexed the bundled list for minutes, nor when it was done."""
    engine = Engine(Settings(data_dir=tmp_path / "index"), serving=True)
    engine.ingest([DATA / "papers_small.jsonl"])
    lines: list[str] = []
    engine.index_in_background([SEEDS], report=lines.append, report_every=0.0).join(120)
    progress, done = lines[:-1], lines[-1]
    assert progress and all(re.fullmatch(r"Indexing: \d+ of 46 papers stored \(\d+ of 38 new\), \d+ s so far\.",
                                         line) for line in progress), lines
    assert progress[-1].startswith("Indexing: 46 of 46 papers stored (38 of 38 new)")
    assert re.fullmatch(r"Indexed 46 papers in \d+ s: added 38, updated 0, unchanged 0, .*\.", done), done
    quiet: list[str] = []
    engine.index_in_background([SEEDS], report=quiet.append).join(120)  # every REPORT_EVERY s: nothing to add
    assert len(quiet) == 1 and quiet[0].startswith("Indexed 46 papers in ")


def test_seeds_are_indexed_first_into_an_empty_index_and_skipped_once_it_holds_papers(tmp_path):
    """`make run` ran `rag ingest --if-empty seeds/` in a process of its own before `rag serve` (27 s of a first run
    at load 7-16: a second start-up, model and store loaded twice); `rag serve --seed seeds/` does it behind the
    served page, with what that command printed."""
    engine = Engine(Settings(data_dir=tmp_path / "index"), serving=True)
    lines: list[str] = []
    engine.index_in_background([DATA / "papers_small.jsonl"], report=lines.append, first=[SEEDS]).join(120)
    assert re.fullmatch(r"Ingested .*seeds: added 38, updated 0, unchanged 0, removed 0, skipped 0, 38 matched to "
                        r"ICLR 2025 papers .*", lines[0]), lines
    assert re.fullmatch(r"Indexed 46 papers in \d+ s: added 8, updated 0, unchanged 0, .*\.", lines[-1]), lines
    assert engine.index.count() == 46 and not engine.indexing.failed
    again: list[str] = []  # the index holds papers: seeds/ is left alone (as --if-empty did)
    engine.index_in_background([DATA / "papers_small.jsonl"], report=again.append, first=[SEEDS]).join(120)
    assert len(again) == 1 and again[0].startswith("Indexed 46 papers in ") and "unchanged 8" in again[0], again


def test_an_answer_from_a_partial_index_says_its_refusal_or_single_match_may_change(tmp_path):
    """The notice said how much was searched, not that a refusal, or an answer resting on one paper, may not hold
    once the rest is indexed (a question was once answered confidently from the wrong paper that way)."""
    import threading

    engine = Engine(Settings(data_dir=tmp_path / "index"), serving=True)
    engine.ingest([DATA / "papers_small.jsonl"])
    gate, upsert = threading.Event(), engine.index.upsert

    def held(papers, files=(), progress=None):  # the background ingest waits at the gate after it starts
        def step(done, todo):
            progress(done, todo)
            if done == 0:
                gate.wait(60)
        return upsert(papers, files=files, progress=step)

    engine.index.upsert = held
    thread = engine.index_in_background([SEEDS])
    try:
        deadline = time.time() + 60
        while not engine.indexing.total and time.time() < deadline:
            time.sleep(0.05)
        refused = engine.ask("Is there work on making sparse autoencoders cheaper to train?")  # a seed's paper
        assert refused.abstained
        assert refused.notices[0] == ("Searched the 8 papers indexed so far; indexing of 46 is still under way. "
                                      "This refusal may change when indexing ends: the paper that answers may not "
                                      "be indexed yet.")
        single = engine.ask("protein structure generation with a diffusion model")
        assert not single.abstained and len(single.citations) == 1
        assert single.notices[0].endswith("still under way. It rests on one paper, which may change when indexing "
                                          "ends: a closer match may not be indexed yet.")
    finally:
        gate.set()
        thread.join(120)
    assert not any("indexing" in n for n in engine.ask("protein structure generation").notices)


def test_the_progress_total_counts_an_updated_paper_once(tmp_path):
    settings = Settings(data_dir=tmp_path / "index")
    engine = Engine(settings, serving=True)
    engine.ingest([DATA / "papers_small.jsonl"])
    lines = (DATA / "papers_small.jsonl").read_text().splitlines()
    record = json.loads(lines[0])
    record["abstract"] += " We also release a benchmark of cloud incidents."  # same id, new text: an update
    edited = tmp_path / "papers_small.jsonl"
    edited.write_text("\n".join([json.dumps(record), *lines[1:]]) + "\n")
    thread = engine.index_in_background([edited, SEEDS], refresh_every=0.0)
    totals = set()
    while thread.is_alive():
        if engine.indexing.running and engine.indexing.total:
            totals.add(engine.indexing.total)
        time.sleep(0.01)
    assert engine.indexing.summary.startswith("added 38, updated 1, unchanged 7")
    # 8 stored + 38 new: the updated paper is stored already and is not counted again while it is re-embedded.
    assert totals == {46} and engine.indexing.total == engine.index.count() == 46


def test_a_port_in_use_is_reported_before_the_index_loads(tmp_path):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        run = subprocess.run(rag_cmd("serve", "--no-bundled", data_dir=tmp_path / "index", port=port), cwd=ROOT,
                             capture_output=True, text=True, timeout=120)
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert f"cannot serve on 127.0.0.1:{port}" in run.stderr and "--port / RAG_PORT" in run.stderr, run.stderr
    assert "GRADIO_SERVER_PORT" not in run.stderr
    assert not (tmp_path / "index").exists()  # it stopped before opening (or creating) the store


def _refused(settings, *args) -> bool:
    run = subprocess.run(rag_cmd(*args, data_dir=settings.data_dir), cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert "Traceback" not in run.stderr and "unexpected" not in run.stderr, run.stderr
    return run.returncode == 1 and "a running `rag serve`" in run.stderr


@pytest.mark.parametrize("damage", ["deleted", "replaced"])
def test_deleting_or_replacing_serve_lock_while_serving_does_not_let_others_in(tmp_path, damage):
    """The lock was the `flock` of serve.lock: deleting the file while serving let `rag ingest` and `rag ask` run
    beside the server (issue 26 item 13). The lock is now on the data dir, which cannot be deleted under it."""
    settings = Settings(data_dir=tmp_path / "index")
    held = lock.hold(settings)
    try:
        (settings.data_dir / "serve.lock").unlink()
        if damage == "replaced":
            (settings.data_dir / "serve.lock").write_text("12345")
        assert _refused(settings, "ingest", str(DATA / "papers_small.jsonl"))
        assert _refused(settings, "ask", "protein structure generation")
        with pytest.raises(lock.StoreBusyError):
            lock.hold(settings)
    finally:
        held.close()
    lock.check_free(settings, "open it")  # released with its holder


def test_serve_lock_as_a_symlink_is_replaced_and_its_target_left_alone(tmp_path):
    """A symlink at serve.lock had its target truncated and overwritten with the PID (issue 26 item 14)."""
    import os

    settings = Settings(data_dir=tmp_path / "index")
    settings.data_dir.mkdir()
    target = tmp_path / "precious.txt"
    target.write_text("do not touch\n")
    (settings.data_dir / "serve.lock").symlink_to(target)
    held = lock.hold(settings)
    try:
        assert target.read_text() == "do not touch\n"
        path = settings.data_dir / "serve.lock"
        assert not path.is_symlink() and path.read_text() == str(os.getpid())
        assert _refused(settings, "ingest", str(DATA / "papers_small.jsonl"))
        assert sorted(p.name for p in settings.data_dir.iterdir()) == ["serve.lock"]  # no temp file left
    finally:
        held.close()
    # A link planted while serving is never followed to read the PID either.
    (settings.data_dir / "serve.lock").unlink()
    (settings.data_dir / "serve.lock").symlink_to(target)
    held = lock.hold(settings)
    try:
        (settings.data_dir / "serve.lock").unlink()
        (settings.data_dir / "serve.lock").symlink_to(target)
        with pytest.raises(lock.StoreBusyError, match=r"\(pid \?\)"):
            lock.check_free(settings, "open it")
    finally:
        held.close()
    assert target.read_text() == "do not touch\n"


def test_serve_lock_as_a_directory_still_serves_and_refuses_others(tmp_path):
    """A directory at serve.lock made `rag serve` fail with "unexpected IsADirectoryError" (issue 26 item 15)."""
    settings = Settings(data_dir=tmp_path / "index")
    (settings.data_dir / "serve.lock").mkdir(parents=True)
    held = lock.hold(settings)
    try:
        assert _refused(settings, "ingest", str(DATA / "papers_small.jsonl"))
        assert sorted(p.name for p in settings.data_dir.iterdir()) == ["serve.lock"]
    finally:
        held.close()


def _chroma_run(path, port):
    """A `chroma run` of this venv on 127.0.0.1:port, once it answers."""
    return start_chroma(path, port)


@pytest.mark.server
def test_two_servers_on_one_chroma_server_see_each_others_new_papers(tmp_path, chroma_server):
    """Two `rag serve` on one Chroma server never saw each other's new papers until restarted (issue 26 item 16).
    Each now checks the collection's change mark at most every `store_check_seconds` before a question, and
    reloads the papers when another process changed them."""
    import uuid

    from helpers import api_ask, free_port, wait_for_page

    store = {"chroma_url": chroma_server, "collection": f"t-{uuid.uuid4().hex[:12]}"}
    records = [json.loads(line) for line in (DATA / "papers_small.jsonl").read_text().splitlines()]
    first, later = tmp_path / "first.jsonl", tmp_path / "later.jsonl"
    first.write_text("\n".join(json.dumps(r) for r in records[:4]) + "\n")
    later.write_text("\n".join(json.dumps(r) for r in records[4:]) + "\n")
    other = Engine(Settings.load(data_dir=tmp_path / "other", **store))  # the other server's engine
    other.ingest([first])
    port = free_port()
    log = (tmp_path / "serve.log").open("w")
    proc = subprocess.Popen(rag_cmd("serve", "--no-bundled", "--port", str(port), data_dir=tmp_path / "serve",
                                    chroma_url=store["chroma_url"], collection=store["collection"]),
                            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, text=True,
                            env={**__import__("os").environ, "RAG_STORE_CHECK_SECONDS": "1"})
    try:
        base = f"http://127.0.0.1:{port}"
        wait_for_page(base + "/", proc, timeout=120)
        question = records[5]["title"]
        status, answer = api_ask(base, [question])
        assert status == 200 and records[5]["id"] not in [s["paper_id"] for s in answer["sources"]]
        other.ingest([later])  # papers added through the other server (or `rag ingest`) ...
        time.sleep(1.2)
        status, answer = api_ask(base, [question])  # ... are searched by this one at its next question
        assert status == 200 and answer["sources"][0]["paper_id"] == records[5]["id"], answer["sources"]
        assert answer["timings"]  # an ordinary answer
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def test_related_while_the_chroma_server_is_down_is_the_stores_one_line_error(tmp_path):
    """`/related` while the Chroma server was down said "Something went wrong" (issue 26 item 17): the paper
    vectors were read past the store's error handling. Now it is the store's own line, and works again once
    the server is back."""
    from helpers import free_port

    from rag.store.index import StoreError
    from rag.web.app import ChatApp, public_message

    records = [json.loads(line) for line in (DATA / "papers_small.jsonl").read_text().splitlines()]
    path = tmp_path / "papers.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    port = free_port()
    proc = _chroma_run(tmp_path / "chroma", port)
    try:
        engine = Engine(Settings.load(data_dir=tmp_path / "index", chroma_url=f"http://127.0.0.1:{port}"))
        engine.ingest([path])
        engine.retriever  # noqa: B018  loaded while the server runs, as a serving app has it
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    with pytest.raises(StoreError) as down:
        engine.related(records[0]["id"])
    line = public_message(down.value, engine.settings)
    assert line.startswith(f"cannot use the Chroma server at http://127.0.0.1:{port}") and "chroma run" in line
    import gradio as gr

    with pytest.raises(gr.Error) as shown:
        ChatApp(engine).related_api(records[0]["id"])
    assert "Something went wrong" not in str(shown.value) and "Chroma server" in str(shown.value)
    proc = _chroma_run(tmp_path / "chroma", port)
    try:
        assert [n.paper.paper_id for n in engine.related(records[0]["id"]).related]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_a_server_slow_to_answer_its_first_request_still_starts():
    """Gradio's launch() gives its own page one 3 s try and then exits with "When localhost is not accessible, a
    shareable link must be created" (CI lost a `rag serve` that way under load). Inside `launch()` the check
    waits for the page instead."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from gradio import networking

    from rag.web.app import _patient_self_check

    seen = []

    class Slow(BaseHTTPRequestHandler):
        def do_HEAD(self):
            seen.append(time.monotonic())
            if len(seen) == 1:
                time.sleep(4)  # the first request, as on a loaded machine
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/"
    try:
        assert networking.url_ok(url) is False  # Gradio's own check gives up on the slow first answer
        seen.clear()
        with _patient_self_check(wait=20):
            assert networking.url_ok(url) is True
        assert networking.url_ok.__module__ == "gradio.networking"  # put back after launch
    finally:
        server.shutdown()


def _queue_call(base: str, name: str, data: list) -> str:
    """Run one of the page's event handlers through Gradio's queue, as the page does; the event stream's text."""
    import urllib.request
    import uuid

    config = json.loads(urllib.request.urlopen(base + "/config", timeout=10).read())
    fn = next(d for d in config["dependencies"] if d.get("api_name") == name)
    session = uuid.uuid4().hex[:11]
    body = {"data": data, "fn_index": fn["id"], "trigger_id": fn["targets"][0][0], "session_hash": session,
            "event_data": None}
    request = urllib.request.Request(base + "/gradio_api/queue/join", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=30).read()
    return urllib.request.urlopen(f"{base}/gradio_api/queue/data?session_hash={session}", timeout=120).read().decode()


def test_the_serve_console_shows_a_clients_control_characters_escaped(tmp_path):
    """An upload event naming a file path with OSC 52 (set the clipboard) and a clear-screen: Gradio's traceback
    printed the path raw, so the escapes reached the operator's terminal. The console now shows them escaped."""
    from helpers import free_port, wait_for_page

    port, log_path = free_port(), tmp_path / "serve.log"
    evil = "/tmp/paper\x1b]52;c;b3duZWQ=\x07\x1b[2J\x9b31m\u202e.jsonl"
    with log_path.open("w") as log:
        proc = subprocess.Popen(rag_cmd("serve", "--no-bundled", "--port", str(port), data_dir=tmp_path / "serve"),
                                cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, text=True)
        try:
            base = f"http://127.0.0.1:{port}"
            wait_for_page(base + "/", proc, timeout=180)
            events = _queue_call(base, "add_papers", [[{"path": evil, "orig_name": "paper.jsonl",
                                                        "meta": {"_type": "gradio.FileData"}}]])
            assert "Traceback" not in events and "\x1b" not in events
            deadline = time.monotonic() + 30
            while "52;c;" not in log_path.read_text(errors="replace") and time.monotonic() < deadline:
                time.sleep(0.5)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    console = log_path.read_text(errors="replace")
    assert "\\x1b]52;c;b3duZWQ=\\x07\\x1b[2J\\x9b31m\\u202e.jsonl" in console, console[-3000:]
    assert not {"\x1b", "\x07", "\x9b", "\u202e"} & set(console), console[-3000:]
