"""Crash safety: `rag ingest` killed with SIGKILL in the middle, then run again, ends with exactly one complete
copy of every paper and does not embed again what was already committed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest

from helpers import ROOT, short_abstracts

from rag.config import Settings
from rag.engine import Engine


# Against a real Chroma server; the embedded store gets random kill points in tests/reliability/test_store_faults.py.
@pytest.mark.parametrize("store", ["server"], indirect=True)
def test_kill_9_mid_ingest_then_rerun_gives_every_paper_exactly_once(tmp_path, store):
    abstracts = short_abstracts()
    path = tmp_path / "many.jsonl"
    with path.open("w") as f:
        for i in range(192):  # three batches of 64
            f.write(json.dumps({"id": f"p{i:03d}", "title": f"Paper {i}",
                                "abstract": f"{abstracts[i % len(abstracts)]} Variant {i}."}) + "\n")
    cmd = [sys.executable, "-m", "rag", "ingest", str(path)]
    for name, value in store.items():
        cmd += ["--" + name.replace("_", "-"), str(value)]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    progress = ""
    deadline = time.time() + 240
    while "64/192" not in progress and time.time() < deadline:  # the first batch is committed
        progress += os.read(proc.stderr.fileno(), 4096).decode(errors="replace")
    time.sleep(0.5)  # into the second batch (64 short abstracts take seconds to embed)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert "64/192" in progress and proc.returncode == -signal.SIGKILL

    rerun = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr
    summary = rerun.stdout.strip().splitlines()[-1]
    added = int(summary.split("added ")[1].split(",")[0])
    assert 0 < added <= 192 - 64, summary  # the committed batch was not embedded again

    engine = Engine(Settings.load(**store))
    papers = engine.index.papers.get(include=["metadatas"])
    assert sorted(papers["ids"]) == [f"p{i:03d}" for i in range(192)]
    chunk_ids = engine.index.chunks.get(include=[])["ids"]
    assert len(chunk_ids) == len(set(chunk_ids))
    per_paper = Counter(i.split("#")[0] for i in chunk_ids)
    chunks_of = {pid: meta["chunks"] for pid, meta in zip(papers["ids"], papers["metadatas"], strict=True)}
    assert chunks_of == dict(per_paper)
    again = engine.ingest([path])
    assert again.embedded_chunks == 0 and again.unchanged == 192
