"""Shared fixtures: a real Chroma store of the real seed files, built once per session with the real embedder."""

from __future__ import annotations

import os
import sys
from typing import Any

import pytest

# The tests decide their own settings: no RAG_* or OpenAI variables from the developer's shell leak in.
for _name in list(os.environ):
    if _name.startswith("RAG_") or _name.startswith("OPENAI_"):
        del os.environ[_name]
# A `rag serve` started by a test serves its own index; indexing the whole bundled list (minutes of embedding)
# is tested on its own.
os.environ["RAG_BUNDLED"] = "false"
# One BLAS thread in every test process and every process a test starts (`rag` commands, servers): two test workers
# share the cores, and OpenBLAS threads spin while they wait for each other, so a second thread costs more than it
# gives (what the app already does where it counts: rag/engine.py's mpnet, rag/explore/topicmap.py). Measured on 2
# cores beside a busy process: tests/store/test_mpnet.py took 38 s with OpenBLAS's default threads, 7 s with one.
os.environ["OPENBLAS_NUM_THREADS"] = "1"


def _one_blas_thread() -> None:
    """The same for this process, should numpy (and so OpenBLAS) have been loaded before this file set the variable."""
    if "numpy" in sys.modules:
        from threadpoolctl import threadpool_limits

        threadpool_limits(1, user_api="blas")


_one_blas_thread()

from helpers import CORPUS, SEEDS, free_port, start_chroma  # noqa: E402  (after the environment is cleaned)

# Store-parametrized tests run against the embedded store and a real `chroma run`; the latter are marked `server`.
SERVER = pytest.param("server", marks=pytest.mark.server)
# Whole modules that start processes, run for a long time or sweep many inputs: `make test-fast` leaves them out.
SLOW_MODULES = {"test_cli.py", "test_crash.py", "test_mcp.py", "test_eval.py", "test_serve.py"}
# ... and single tests of other modules that spawn the CLI, wait out timeouts on purpose, or repeat a fast unit test
# through the whole engine for every case (test_citations.py covers the same cases in milliseconds).
SLOW_TESTS = {
    "test_rag_ask_streams_the_llm_answer_and_never_prints_the_key",
    "test_rag_chat_keeps_the_conversation_for_follow_ups",
    "test_rag_models_lists_marks_the_model_in_use_and_fails_in_one_line",
    "test_every_citation_style_is_accepted_and_shown_in_the_apps_form",
    "test_every_endpoint_fault_falls_back_to_an_extractive_answer_in_time",
    "test_an_error_body_of_any_shape_falls_back_with_a_one_line_reason",
    "test_an_error_body_of_any_shape_in_the_follow_up_rewrite_falls_back_too",
    "test_a_slow_drip_is_cut_off_at_the_deadline_and_the_streamed_text_restarted",
    "test_the_follow_up_rewrite_obeys_the_deadline_too",
    "test_instructions_hidden_in_an_abstract_do_not_become_the_answer",
    "test_an_edited_seed_abstract_replaces_its_chunks",
    "test_an_index_without_stored_sentences_still_answers_and_ingest_adds_them",
}


def _embed_each_input_once() -> None:
    """Many tests ingest the same seed files into a fresh store (embedded, on the server, beside other files, in
    other batches); the bundled embedder gives a text the same vector whatever it is batched with (ONNX on the CPU
    is deterministic, and tests/store/test_embeddings.py checks that padding changes nothing), so in this process each
    distinct text (with its spans, for late chunking) is embedded once and its vector reused: the stores, chunks
    and rankings are the same, without embedding the seeds a dozen times. `rag` subprocesses always embed, and an
    embedder with `remember = False` (tests/store/test_embeddings.py, testing the embedder itself) always computes."""
    import numpy as np

    from rag.store.embeddings import MiniLMEmbedding

    embed, embed_spans = MiniLMEmbedding.embed, MiniLMEmbedding.embed_spans
    MiniLMEmbedding.remember = True
    texts_seen: dict[tuple, Any] = {}
    spans_seen: dict[tuple, Any] = {}

    def remembered(self, texts):
        if not self.remember or not texts:
            return embed(self, texts)
        keys = [(self.identity, text) for text in texts]
        missing = list(dict.fromkeys(key for key in keys if key not in texts_seen))
        if missing:
            for key, vector in zip(missing, embed(self, [text for _, text in missing]), strict=False):
                texts_seen[key] = vector
        return np.stack([texts_seen[key] for key in keys])

    def remembered_spans(self, texts, spans):
        if not self.remember or not texts:
            return embed_spans(self, texts, spans)
        keys = [(self.identity, text, tuple(map(tuple, s))) for text, s in zip(texts, spans, strict=False)]
        missing = list(dict.fromkeys(key for key in keys if key not in spans_seen))
        if missing:
            vectors, span_vectors = embed_spans(self, [k[1] for k in missing], [list(k[2]) for k in missing])
            for key, vector, span_vector in zip(missing, vectors, span_vectors, strict=False):
                spans_seen[key] = (vector, span_vector)
        return (np.stack([spans_seen[key][0] for key in keys]), [spans_seen[key][1].copy() for key in keys])

    MiniLMEmbedding.embed, MiniLMEmbedding.embed_spans = remembered, remembered_spans

    # The same for all-mpnet-base-v2 (rag.store.mpnet, numpy: deterministic too, and a batch gives each text the
    # vector it gets alone: tests/store/test_mpnet.py, which sets `remember` False to test the model itself). Most
    # tests ask the same few questions over the seeds; each costs a 50-100 ms pass otherwise.
    from rag.store.mpnet import MPNetEmbedding

    mpnet_embed = MPNetEmbedding.embed
    MPNetEmbedding.remember = True
    mpnet_seen: dict[str, Any] = {}

    def mpnet_remembered(self, texts):
        if not self.remember or not texts:
            return mpnet_embed(self, texts)
        missing = list(dict.fromkeys(text for text in texts if text not in mpnet_seen))
        if missing:
            for text, vector in zip(missing, mpnet_embed(self, missing), strict=False):
                mpnet_seen[text] = vector
        return np.stack([mpnet_seen[text] for text in texts])

    MPNetEmbedding.embed = mpnet_remembered


_embed_each_input_once()


_ENGINES: list[Any] = []  # weak references to every Engine this process made, in order


def _track_engines() -> None:
    import weakref

    from rag.engine import Engine

    init = Engine.__init__

    def tracked(self, *args, **kwargs):
        init(self, *args, **kwargs)
        _ENGINES.append(weakref.ref(self))

    Engine.__init__ = tracked


_track_engines()


@pytest.fixture(autouse=True)
def _close_test_engines():
    """Every Engine a test (or its function-scoped fixtures) made is closed when the test ends: an embedded store's
    Chroma system stays open for the whole process until its client is closed (about 19 descriptors a store), and
    one worker runs hundreds of tests. Session-scoped engines are made before this fixture starts and stay open."""
    first = len(_ENGINES)
    yield
    for ref in _ENGINES[first:]:
        if (engine := ref()) is not None:
            engine.close()
    del _ENGINES[first:]


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in SLOW_MODULES or "reliability" in item.path.parts or item.originalname in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)


# `make test` gives each worker whole files (--dist loadfile), and xdist hands them out largest test count first:
# a file of one or two long tests (a kill -9 trial, a wheel build) came last and ran alone while the other worker
# idled (a whole run ended with tests/test_crash.py's one 56 s test running alone). The files that take longest are
# handed out first instead (longest processing time first), by these seconds (`make test` on 2 cores beside another
# job, `--junitxml` per-test times summed per file; files of 10 s and more); any other file counts 0.2 s a test.
# A stale number only changes the order files start in, never what runs.
FILE_SECONDS: dict[str, float] = {
    "tests/web/test_web.py": 250, "tests/test_cli.py": 215, "tests/generation/test_llm.py": 213,
    "tests/generation/test_llm_real.py": 178, "tests/reliability/test_service.py": 139,
    "tests/reliability/test_store_faults.py": 118, "tests/test_serve.py": 105, "tests/evaluation/test_eval.py": 75,
    "tests/store/test_index.py": 65, "tests/store/test_snapshot.py": 64, "tests/test_mcp.py": 63,
    "tests/test_prebuilt.py": 61, "tests/reliability/test_bad_input.py": 58, "tests/test_crash.py": 56,
    "tests/explore/test_explore.py": 41, "tests/reliability/test_network.py": 40,
    "tests/answering/test_answer.py": 35, "tests/web/test_map_web.py": 25, "tests/test_text.py": 24,
    "tests/test_wheel.py": 22, "tests/answering/test_abstain.py": 21, "tests/generation/test_support.py": 17,
    "tests/store/test_mpnet.py": 17, "tests/query/test_intent.py": 16, "tests/test_credentials.py": 16,
    "tests/generation/test_models.py": 14, "tests/web/test_outcomes_web.py": 12,
    "tests/search/test_mpnet_ranking.py": 11,
}


def pytest_xdist_make_scheduler(config, log):
    """xdist's loadfile scheduling, longest files first (FILE_SECONDS)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class LongestFirst(LoadFileScheduling):
        def _assign_work_unit(self, node):
            def seconds(scope: str) -> float:
                return FILE_SECONDS.get(scope, 0.2 * len(self.workqueue[scope]))

            self.workqueue.move_to_end(max(self.workqueue, key=seconds), last=False)
            super()._assign_work_unit(node)

    return LongestFirst(config, log)


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory):
    """A real Chroma server (`chroma run` of this venv's chromadb) on 127.0.0.1 and a free port; its URL."""
    import subprocess

    port = free_port()
    log = (tmp_path_factory.mktemp("chroma-server") / "server.log").open("w")
    proc = start_chroma(tmp_path_factory.mktemp("chroma-data"), port, output=log)
    url = f"http://127.0.0.1:{port}"
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


@pytest.fixture(params=["embedded", SERVER])
def store(request, tmp_path):
    """Settings for a fresh, empty store: the embedded Chroma in a temp dir, or a new collection on a real
    Chroma server. Tests that take this run against both."""
    import uuid

    if request.param == "embedded":
        return {"data_dir": tmp_path / "index"}
    return {"data_dir": tmp_path / "index", "chroma_url": request.getfixturevalue("chroma_server"),
            "collection": f"t-{uuid.uuid4().hex[:12]}"}


@pytest.fixture(scope="session", params=["embedded", SERVER])
def seed_ingest(request, tmp_path_factory):
    """(engine, stats of the first ingest) over a fresh store of seeds/, embedded and on a Chroma server."""
    return _seed_index(request.param, request, tmp_path_factory)


_SEED_INDEXES: dict[str, tuple] = {}


def _seed_index(kind: str, request, tmp_path_factory) -> tuple:
    """The seeds ingested once per session into a store of this kind (shared by the fixtures that need one)."""
    from rag.config import Settings
    from rag.engine import Engine

    if kind not in _SEED_INDEXES:
        extra = {}
        if kind == "server":
            extra = {"chroma_url": request.getfixturevalue("chroma_server"), "collection": "seeds"}
        engine = Engine(Settings.load(data_dir=tmp_path_factory.mktemp("seed-index"), **extra))
        _SEED_INDEXES[kind] = (engine, engine.ingest([SEEDS]))
    return _SEED_INDEXES[kind]


@pytest.fixture(scope="session")
def seed_engine(seed_ingest):
    return seed_ingest[0]


@pytest.fixture(scope="session")
def embedded_seed_engine(request, tmp_path_factory):
    """The seeds in the embedded store only: for the many-case tests of behaviour that does not depend on the
    store (LLM faults, citation styles); the store-dependent paths run on both kinds through `seed_engine`."""
    return _seed_index("embedded", request, tmp_path_factory)[0]


@pytest.fixture(scope="session")
def corpus_engine(tmp_path_factory, worker_id):
    """The bundled 2,114 abstracts (rag/data/iclr2025.jsonl) in an embedded store, once per session: the scale the
    learned gate and its three outcomes apply at (1,000+ papers). Built once for all test workers (from the shipped
    vectors: about 40 s), each of which answers from a copy of its own (a store belongs to one process)."""
    import fcntl
    import shutil

    from rag.config import Settings
    from rag.engine import Engine

    base = tmp_path_factory.getbasetemp()
    shared = (base.parent if worker_id != "master" else base) / "corpus-index-built"  # this run's, all workers'
    with open(shared.with_suffix(".lock"), "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # the first worker builds; the others wait for it
        if not (shared / "done").exists():
            with Engine(Settings.load(data_dir=shared / "index")) as builder:
                builder.ingest([CORPUS])
            (shared / "done").touch()
    mine = tmp_path_factory.mktemp("corpus-index") / "index"
    shutil.copytree(shared / "index", mine)
    engine = Engine(Settings.load(data_dir=mine, port=free_port()))
    assert engine.ingest([CORPUS]).embedded_chunks == 0  # the copy is the whole list: nothing to embed again
    return engine


@pytest.fixture(scope="session")
def embedder(seed_engine):
    return seed_engine.index.embedder


def pytest_addoption(parser):
    parser.addoption("--soak", action="store_true",
                     help="Run the long versions of tests/reliability (`make soak`): more inputs, trials, seconds.")


@pytest.fixture(scope="session")
def soak(request) -> bool:
    """True under `make soak`: reliability tests then run their long versions."""
    return request.config.getoption("--soak")


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory):
    """A real llama.cpp server (llama-cpp-python's, built into .venv-llm by `make llm-deps`, which `make test-llm`
    runs) serving SmolLM2-135M-Instruct on 127.0.0.1, started once for the session by the same script as
    `make llm-server`. Missing, it is a failure naming the fix, not a skip."""
    import subprocess
    import time
    import urllib.request
    from types import SimpleNamespace

    from helpers import ROOT

    python = ROOT / ".venv-llm" / "bin" / "python"
    if not python.exists():
        pytest.fail("the llama.cpp server is not installed: run `make llm-deps` (once; `make test-llm` does it)")
    port, model = free_port(), "smollm2-135m"
    # Half the cores (one on a 2-core CI machine): llama.cpp's threads meet at a barrier after every layer and spin
    # while they wait, so with the other test worker (and its servers and browser) busy on the other core, a
    # two-thread server mostly waits for its descheduled thread. Measured on 2 cores beside a busy process: 1,000
    # prompt tokens and 60 generated took 23-33 s with 2 threads, 7-9 s with 1 (4 against 85 tokens/s generating).
    threads = max(1, (os.cpu_count() or 2) // 2)
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with log.open("wb") as out:
        process = subprocess.Popen([str(python), str(ROOT / "tools" / "llm_server.py"), "--model", model,
                                    "--port", str(port), "--threads", str(threads)],
                                   stdout=out, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(base_url + "/models", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the llama.cpp server did not start: {log.read_text()[-2000:]}")
            time.sleep(0.5)
        yield SimpleNamespace(base_url=base_url, model=model, process=process, log=log)
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
