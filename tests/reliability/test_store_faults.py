"""The store failing under a running app: a Chroma server stopped mid-session (clear error, then recovery when it
is back), a read-only or damaged data dir (clear error naming the fix), and `rag ingest` killed with SIGKILL at
random moments (2 trials in `make test`, 10 under `make soak`): the store stays consistent every time."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time

import pytest
from helpers import DATA, ROOT, api_ask, free_port, rag_cmd, short_abstracts, start_chroma, without_capabilities

from rag.config import Settings
from rag.store.index import INGEST_BATCH, StoreError
from rag.engine import Engine

Q = "protein structure generation"


def _start_chroma(path, port: int) -> subprocess.Popen:
    return start_chroma(path, port)


def _stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)


def test_a_chroma_server_stopped_mid_session_is_a_clear_error_and_recovers(tmp_path):
    from rag.web.app import launch

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = _start_chroma(tmp_path / "chroma", port)
    engine = Engine(Settings(data_dir=tmp_path / "index", chroma_url=url, collection="faults", port=free_port()))
    engine.ingest([DATA / "papers_small.jsonl"])
    demo = launch(engine, block=False)
    base = f"http://127.0.0.1:{engine.settings.port}"
    try:
        status, answer = api_ask(base, [Q])
        assert status == 200 and answer["sources"][0]["title"].startswith("ProtComposer")
        _stop(server)

        with pytest.raises(StoreError) as raised:
            engine.ask(Q)
        message = str(raised.value)
        assert url in message and "chroma run" in message and "Traceback" not in message
        status, reply = api_ask(base, [Q])
        assert status == 200 and reply["error"] == message  # the web app shows the same sentence
        cli = subprocess.run(rag_cmd("ask", Q, data_dir=tmp_path / "index", chroma_url=url, collection="faults"),
                             cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert cli.returncode == 1 and cli.stderr.startswith(f"Error: cannot use the Chroma server at {url}")
        assert "Traceback" not in cli.stderr and len(cli.stderr.strip().splitlines()) == 1

        server = _start_chroma(tmp_path / "chroma", port)  # back, with the same data
        status, answer = api_ask(base, [Q])
        assert status == 200 and answer["sources"][0]["title"].startswith("ProtComposer")
        assert engine.ingest([DATA / "papers_small.jsonl"]).unchanged == 8
    finally:
        demo.close()
        _stop(server)


def test_a_read_only_data_dir_is_a_clear_error_naming_the_fix(tmp_path):
    data_dir = tmp_path / "index"
    Engine(Settings(data_dir=data_dir)).ingest([DATA / "papers_small.jsonl"])
    for path in [data_dir, *data_dir.rglob("*")]:
        path.chmod(path.stat().st_mode & ~0o222)
    try:
        for args in (("ask", Q), ("ingest", str(DATA / "papers_small.jsonl")), ("stats",)):
            run = subprocess.run(without_capabilities(rag_cmd(*args, data_dir=data_dir)), cwd=ROOT, capture_output=True,
                                 text=True, timeout=120)
            assert run.returncode == 1, run.stdout
            assert run.stderr.startswith(f"Error: cannot write the data dir {data_dir}"), run.stderr
            assert f"chmod -R u+w {data_dir}" in run.stderr and "--data-dir" in run.stderr
            assert "Traceback" not in run.stderr
    finally:
        for path in [data_dir, *data_dir.rglob("*")]:
            path.chmod(path.stat().st_mode | 0o200)


@pytest.mark.parametrize("damage", ["garbage sqlite", "data dir is a file"])
def test_a_damaged_data_dir_is_a_clear_error_naming_the_fix(tmp_path, damage):
    data_dir = tmp_path / "index"
    if damage == "garbage sqlite":
        Engine(Settings(data_dir=data_dir)).ingest([DATA / "papers_small.jsonl"])
        (data_dir / "chroma" / "chroma.sqlite3").write_bytes(os.urandom(8192))
    else:
        data_dir.mkdir()
        (data_dir / "chroma").write_text("not a directory")
    run = subprocess.run(rag_cmd("ask", Q, data_dir=data_dir), cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert run.stderr.startswith(f"Error: cannot open the index in {data_dir / 'chroma'}"), run.stderr
    assert f"mv {data_dir} {data_dir}.broken" in run.stderr and "ingest again" in run.stderr


def test_kill_9_at_random_moments_leaves_a_consistent_store(tmp_path, soak):
    """Each trial starts an ingest into the same store and kills it after a random delay. After every kill: no
    duplicate chunk ids, every paper with a record has all of its chunks, and what has no record is invisible to
    search. After the last, a full run completes the set exactly."""
    abstracts = short_abstracts()
    path = tmp_path / "many.jsonl"
    n = 100  # two batches
    with path.open("w") as f:
        for i in range(n):
            f.write(json.dumps({"id": f"p{i:03d}", "title": f"Paper {i}",
                                "abstract": f"{abstracts[i % len(abstracts)]} Variant {i}."}) + "\n")
    data_dir = tmp_path / "index"
    rng = random.Random(int(os.environ.get("RAG_SOAK_SEED", "7")))
    trials = 10 if soak else 2
    stored = []
    for _ in range(trials):
        proc = subprocess.Popen(rag_cmd("ingest", str(path), data_dir=data_dir), cwd=ROOT,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        # Kill at a random moment of the embedding work: after a random number of committed batches (read from
        # the progress bar) plus a random 0-4 s into the next one.
        seen, target, deadline = "", None, time.time() + 300
        while time.time() < deadline:
            chunk = os.read(proc.stderr.fileno(), 4096).decode(errors="replace")
            if not chunk:
                break  # it finished first
            seen += chunk
            counts = [(int(a), int(b)) for a, b in re.findall(r"(\d+)/(\d+)", seen)]
            if counts and target is None:
                target = rng.randrange(-(-counts[0][1] // INGEST_BATCH)) * INGEST_BATCH
            if target is not None and max(done for done, _ in counts) >= target:
                break
        time.sleep(rng.uniform(0.0, 4.0))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        proc.stderr.close()
        stored.append(_check_consistent(data_dir, n))
    run = subprocess.run(rag_cmd("ingest", "-q", str(path), data_dir=data_dir), cwd=ROOT, capture_output=True,
                         text=True, timeout=900)
    assert run.returncode == 0, run.stderr
    summary = run.stdout.strip().splitlines()[-1]
    assert f"added {n - stored[-1]}," in summary and f"unchanged {stored[-1]}," in summary, summary  # no re-embedding
    assert _check_consistent(data_dir, n) == n
    print(f"\nkill -9 trials: {trials}, papers complete after each kill: {stored}, after the final run: {n}")


CHECK = """
import json, sys
from collections import Counter
from rag.config import Settings
from rag.search.retrieve import RetrievalParams
from rag.engine import Engine
data_dir, n = sys.argv[1], int(sys.argv[2])
engine = Engine(Settings(data_dir=data_dir))
papers = engine.index.papers.get(include=["metadatas"])
chunk_ids = engine.index.chunks.get(include=[])["ids"]
per_paper = Counter(i.split("#")[0] for i in chunk_ids)
problems = []
if len(chunk_ids) != len(set(chunk_ids)):
    problems.append("duplicate chunk ids")
if len(papers["ids"]) != len(set(papers["ids"])) or not set(papers["ids"]) <= {f"p{i:03d}" for i in range(n)}:
    problems.append("duplicate or unknown paper ids")
problems += [f"{pid} is only partly stored" for pid, meta in zip(papers["ids"], papers["metadatas"])
             if per_paper[pid] != meta["chunks"]]
if papers["ids"]:  # chunks without a paper record (an unfinished batch) never reach a user
    problems += [f"{hit.paper.paper_id} found without its record"
                 for hit in engine.retriever.retrieve("Variant", RetrievalParams(k=20)).hits
                 if hit.paper.paper_id not in papers["ids"]]
print(json.dumps({"papers": len(papers["ids"]), "problems": problems}))
"""


def _check_consistent(data_dir, n: int) -> int:
    """Open the store in a fresh process, as the next `rag` command would (Chroma's embedded store caches its
    state per process, so a process that had it open while another wrote to it is not a fair witness)."""
    run = subprocess.run([sys.executable, "-c", CHECK, str(data_dir), str(n)], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["problems"] == []
    return result["papers"]
