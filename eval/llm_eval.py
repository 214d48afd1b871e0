"""`make eval-llm`: `rag eval` in LLM mode through a local llama.cpp server, beside the same run's extractive answers.

It starts `tools/llm_server.py` (the `make llm-server` script) in .venv-llm on a free port, waits for it, takes the
first `--limit` questions of each set (a CPU server needs 5-50 s an answer: the whole sets would take hours; the
subset is the sets' first lines, the same every run), and runs `rag eval --configs hybrid` with the model set.
The report (eval/reports/llm-<model>.md/.json) has, per set, the LLM columns (answers written by the LLM, its
"no answer"s, fallbacks and their reasons, facts stated, gold cited, citations on gold, answerable refused,
unanswerable answered, unsupported share, fabricated, p50/p90 latency, tokens) for the LLM run and the extractive
one. Any OpenAI-compatible endpoint can be measured the same way with `rag eval --llm-model M --llm-base-url U`.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(base_url: str, process: subprocess.Popen, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"error: the LLM server exited with {process.returncode}")
        try:
            with urllib.request.urlopen(base_url + "/models", timeout=2):
                return
        except OSError:
            time.sleep(1)
    raise SystemExit(f"error: the LLM server did not answer within {timeout:g} s")


def subset(paths: list[Path], limit: int, out: Path) -> list[Path]:
    written = []
    for path in paths:
        lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()][:limit]
        target = out / path.name
        target.write_text("\n".join(lines) + "\n", encoding="utf-8")
        written.append(target)
    return written


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sets", nargs="+", type=Path)
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--port", type=int, default=0, help="0: a free port")
    parser.add_argument("--limit", type=int, default=20, help="questions per set (0: all)")
    parser.add_argument("--corpus", type=Path, default=ROOT / "rag" / "data" / "iclr2025.jsonl")
    parser.add_argument("--deadline", type=float, default=90.0)
    args = parser.parse_args()
    port = args.port or free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    server = subprocess.Popen([str(ROOT / ".venv-llm" / "bin" / "python"), str(ROOT / "tools" / "llm_server.py"),
                               "--model", args.model, "--port", str(port)])
    try:
        wait_for(base_url, server)
        with tempfile.TemporaryDirectory() as tmp:
            sets = subset(args.sets, args.limit, Path(tmp)) if args.limit else args.sets
            env = {**os.environ, "OPENAI_BASE_URL": base_url, "RAG_LLM_MODEL": args.model,
                   "RAG_LLM_DEADLINE": str(args.deadline), "RAG_LLM_MAX_RETRIES": "0", "RAG_BUNDLED": "false"}
            cmd = [sys.executable, "-m", "rag", "eval", *map(str, sets), "--corpus", str(args.corpus),
                   "--configs", "hybrid", "--name", f"llm-{args.model}"]
            return subprocess.run(cmd, cwd=ROOT, env=env).returncode
    finally:
        server.terminate()
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:
            server.kill()


if __name__ == "__main__":
    sys.exit(main())
