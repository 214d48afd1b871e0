"""Shared fixtures: a real Chroma store of the real seed files, built once per session with the real embedder."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import pytest

# The tests decide their own settings: no RAG_* or OpenAI variables from the developer's shell leak in.
for _name in list(os.environ):
    if _name.startswith("RAG_") or _name.startswith("OPENAI_"):
        del os.environ[_name]

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT / "seeds"
DATA = Path(__file__).resolve().parent / "data"
CORPUS = ROOT.parent / "shared" / "corpus" / "iclr2025.jsonl"
sys.path.insert(0, str(ROOT))


def seed_paragraphs(name: str) -> list[str]:
    """The abstracts of a seed file, as the seed format defines them (header line dropped)."""
    text = (SEEDS / name).read_text()
    return [" ".join(p.split()) for p in text.split("\n\n")[1:] if p.strip()]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def seed_ingest(tmp_path_factory):
    """(engine, stats of the first ingest) over a fresh store of seeds/."""
    from rag.config import Settings
    from rag.engine import Engine

    engine = Engine(Settings.load(data_dir=tmp_path_factory.mktemp("seed-index")))
    stats = engine.ingest([SEEDS])
    return engine, stats


@pytest.fixture(scope="session")
def seed_engine(seed_ingest):
    return seed_ingest[0]


@pytest.fixture(scope="session")
def embedder(seed_engine):
    return seed_engine.index.embedder
