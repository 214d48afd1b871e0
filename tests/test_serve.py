"""Serving and indexing at once: the embedded store is owned by the `rag serve` process (other processes are
refused with a message naming the fix), and a background ingest makes papers searchable as it goes and resumes
after a restart without embedding anything twice."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from helpers import DATA, ROOT, SEEDS, rag_cmd

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


def test_a_background_ingest_is_searchable_as_it_goes_and_resumes_after_a_restart(tmp_path):
    settings = Settings(data_dir=tmp_path / "index")
    engine = Engine(settings, serving=True)
    engine.ingest([DATA / "papers_small.jsonl"])
    thread = engine.index_in_background([SEEDS], refresh_every=0.0)
    seen_notice = False
    while thread.is_alive():
        answer = engine.ask("protein structure generation")
        seen_notice |= any("indexed so far" in n for n in answer.notices)
        time.sleep(0.2)
    assert engine.indexing.summary.startswith("added 38") and not engine.indexing.failed
    assert engine.indexing.total == 46 and engine.index.count() == 46
    assert seen_notice  # answers given meanwhile said they searched part of the collection
    assert not any("indexed so far" in n for n in engine.ask("protein structure generation").notices)

    restarted = Engine(settings, serving=True)  # a restart: nothing is embedded again
    restarted.index_in_background([SEEDS]).join(120)
    assert restarted.indexing.summary.startswith("added 0, updated 0, unchanged 38")
    assert "0 chunks embedded" in restarted.indexing.summary


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
