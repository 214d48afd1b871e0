"""A `make run`-style session under `strace -f -e trace=connect`: ingest into an empty index, serve, load the page,
ask through the API with an LLM configured. Every connect() of every process and thread (native code included:
onnxruntime, Chroma's Rust core, Gradio) goes to loopback or a local socket; nothing else is even attempted."""

from __future__ import annotations

import ipaddress
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

from helpers import ROOT, SEEDS, api_ask, free_port, rag_cmd, wait_for_page
from fake_openai import FakeOpenAI

STRACE = shutil.which("strace") or "/usr/bin/strace"
CONNECT = re.compile(r"connect\(\d+, \{sa_family=(?P<family>AF_\w+)(?P<rest>.*?)\}")


def _traced(log, cmd: list[str]) -> list[str]:
    return [STRACE, "-f", "--seccomp-bpf", "-qq", "-e", "trace=connect", "-o", str(log), *cmd]


def outside_connections(log_text: str) -> list[str]:
    """connect() calls in an strace log that leave the machine."""
    bad = []
    for line in log_text.splitlines():
        match = CONNECT.search(line)
        if not match:
            continue
        family, rest = match["family"], match["rest"]
        if family in ("AF_UNIX", "AF_LOCAL", "AF_NETLINK", "AF_UNSPEC"):
            continue
        address = re.search(r'inet_addr\("([^"]+)"\)|inet_pton\(AF_INET6, "([^"]+)"', rest)
        host = (address.group(1) or address.group(2)) if address else ""
        try:
            ip = ipaddress.ip_address(host)
            if ip.is_loopback or ip.is_unspecified or (ip.version == 6 and ip.ipv4_mapped
                                                       and ip.ipv4_mapped.is_loopback):
                continue
        except ValueError:
            pass
        bad.append(line.strip())
    return bad


def test_the_strace_parser_flags_outside_addresses():
    log = "\n".join([
        '1 connect(5, {sa_family=AF_INET, sin_port=htons(7860), sin_addr=inet_addr("127.0.0.1")}, 16) = 0',
        '1 connect(6, {sa_family=AF_UNIX, sun_path="/run/x"}, 110) = 0',
        '1 connect(7, {sa_family=AF_INET6, sin6_port=htons(80), sin6_flowinfo=htonl(0), '
        'inet_pton(AF_INET6, "::1", &sin6_addr), sin6_scope_id=0}, 28) = 0',
        '2 connect(8, {sa_family=AF_INET, sin_port=htons(443), sin_addr=inet_addr("34.120.1.2")}, 16) = -1',
        '2 connect(9, {sa_family=AF_INET6, sin6_port=htons(53), sin6_flowinfo=htonl(0), '
        'inet_pton(AF_INET6, "2001:4860::8888", &sin6_addr), sin6_scope_id=0}, 28) = -1',
    ])
    assert [line.split("connect(")[1][:2] for line in outside_connections(log)] == ["8,", "9,"]


def test_a_full_session_connects_to_nothing_outside_loopback(tmp_path):
    assert os.path.exists(STRACE), "strace is installed by `make test` (apt-get install strace)"
    data_dir = tmp_path / "index"
    ingest_log, serve_log = tmp_path / "ingest.strace", tmp_path / "serve.strace"
    run = subprocess.run(_traced(ingest_log, rag_cmd("ingest", "--if-empty", "-q", str(SEEDS), data_dir=data_dir)),
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    port = free_port()
    with FakeOpenAI() as llm:
        env = {**os.environ, "OPENAI_API_KEY": "sk-local-test"}
        proc = subprocess.Popen(_traced(serve_log, rag_cmd("serve", data_dir=data_dir, port=port,
                                                           llm_model="fake-chat", llm_base_url=llm.base_url)),
                                cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        try:
            base = f"http://127.0.0.1:{port}"
            page = wait_for_page(base + "/", proc)
            assert "Ask the ICLR 2025 abstracts" in page
            status, answer = api_ask(base, ["Is there work on making sparse autoencoders cheaper to train?"])
            assert status == 200 and answer["mode"] == "llm" and answer["citations"]
            time.sleep(2)  # give any background thread (telemetry, update checks) time to try
        finally:  # stop the traced `rag serve` (strace's child); strace then exits with it
            children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
            for pid in children:
                os.kill(int(pid), signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                for pid in children:
                    os.kill(int(pid), signal.SIGKILL)
                proc.kill()
                proc.wait(timeout=30)
    serve_text = serve_log.read_text()
    assert re.search(rf"htons\({llm.port}\)", serve_text), "the trace must see the LLM connection"
    assert outside_connections(ingest_log.read_text()) == []
    assert outside_connections(serve_text) == []
