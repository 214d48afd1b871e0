"""Choosing the model, and what answers cost: `rag models` against the fake OpenAI-compatible server, the local
probe of `rag serve` (127.0.0.1 only, never used unasked), per-session model engines, session totals and prices,
and the quiet mark on unsupported sentences in the page's Markdown."""

from __future__ import annotations

import json
import socket
import subprocess

import pytest
from helpers import ROOT, free_port, rag_cmd
from fake_openai import FakeOpenAI

from rag import cli
from rag.config import ConfigError, Settings
from rag.generation import endpoints
from rag.generation.cost import answer_cost, money, totals
from rag.generation.llm import LLMError
from rag.web.render import UNSUPPORTED_MARK, answer_markdown, footer
from rag.web.session import ModelMenu, session_line


@pytest.fixture
def server():
    with FakeOpenAI() as fake:
        fake.models = ["fake-chat", "fake-chat-large", "fake-embed"]
        yield fake


def test_list_models_returns_the_endpoints_ids_or_one_line(server):
    assert endpoints.list_models(Settings(llm_base_url=server.base_url)) == \
        ["fake-chat", "fake-chat-large", "fake-embed"]
    with pytest.raises(LLMError, match=r"^no LLM endpoint is configured: set --llm-base-url / OPENAI_BASE_URL"):
        endpoints.list_models(Settings())
    closed = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(LLMError) as error:
        endpoints.list_models(Settings(llm_base_url=closed, llm_connect_timeout=1))
    assert str(error.value) == f"could not connect to the LLM endpoint at {closed}"


def test_rag_models_lists_marks_the_model_in_use_and_fails_in_one_line(server):
    run = subprocess.run(rag_cmd("models", llm_base_url=server.base_url, llm_model="fake-chat-large"), cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["  fake-chat", "* fake-chat-large", "  fake-embed"]
    run = subprocess.run(rag_cmd("models", "--json", llm_base_url=server.base_url), cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert json.loads(run.stdout) == ["fake-chat", "fake-chat-large", "fake-embed"]
    closed = f"http://127.0.0.1:{free_port()}/v1"
    run = subprocess.run(rag_cmd("models", llm_base_url=closed), cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 1 and run.stderr == f"Error: could not connect to the LLM endpoint at {closed}\n"


def test_serve_without_a_model_names_the_local_server_it_found_and_the_line_to_use_it(server, monkeypatch, capsys):
    # Stand-ins for the well-known ports: the fake server's, and a port where nothing listens.
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        monkeypatch.setattr(endpoints, "LOCAL_SERVERS", {server.port: "Ollama", closed.getsockname()[1]: "vLLM"})
        settings = Settings()
        cli._announce_llm(settings)
    err = capsys.readouterr().err.splitlines()
    assert err == [f"Found Ollama at {server.base_url} (fake-chat, fake-chat-large, fake-embed); answers stay "
                   "extractive unless you choose it:",
                   f"  rag serve --llm-base-url {server.base_url} --llm-model fake-chat    (or "
                   f"OPENAI_BASE_URL={server.base_url} RAG_LLM_MODEL=fake-chat)"]
    assert settings.llm_model is None and not server.chat_requests()  # listed, never used
    assert all(r["path"] == "/v1/models" for r in server.requests)


def test_the_probe_looks_only_at_127_0_0_1_and_is_quiet_when_nothing_answers(monkeypatch, capsys):
    seen = []
    real = endpoints._probe
    monkeypatch.setattr(endpoints, "_probe", lambda port, timeout: seen.append((port, timeout)) or real(port, 0.2))
    found = endpoints.probe_local({free_port(): "vLLM"})
    assert found == [] and seen[0][1] == endpoints.PROBE_TIMEOUT <= 0.5
    assert set(endpoints.LOCAL_SERVERS) == {11434, 8080, 1234, 8000}
    assert endpoints.suggestion([]) == []


def test_a_session_can_only_pick_a_listed_chat_model_and_shares_the_index(server, embedded_seed_engine):
    engine = embedded_seed_engine.derive(llm_model="fake-chat", llm_base_url=server.base_url)
    menu = ModelMenu(engine)
    assert menu.choices == ["fake-chat", "fake-chat-large"] and menu.several  # the embedding model is left out
    large = menu.engine_for("fake-chat-large")
    assert large.settings.llm_model == "fake-chat-large" and large is menu.engine_for("fake-chat-large")
    assert large.retriever is engine.retriever and large.index is engine.index
    assert menu.engine_for("gpt-5-not-listed") is engine and menu.engine_for(None) is engine
    answer = large.ask("Is there work on making sparse autoencoders cheaper to train?")
    assert answer.model == "fake-chat-large" and server.requested_models()[-1] == "fake-chat-large"


def test_costs_need_a_price_and_sessions_add_up():
    usage = {"prompt_tokens": 2_000, "completion_tokens": 500}
    assert answer_cost(usage, Settings()) is None
    priced = Settings(llm_price_in=0.5, llm_price_out=1.5)
    assert answer_cost(usage, priced) == pytest.approx(0.00175)
    assert answer_cost({}, priced) is None  # extractive: no tokens, no cost
    assert money(0.00175) == "$0.0018" and money(12.5) == "$12.50"
    answers = [{"usage": usage, "timings": {"total_ms": 1500}}, {"usage": {}, "timings": {"total_ms": 500}},
               {"usage": {"prompt_tokens": 1000, "completion_tokens": 100}, "timings": {"total_ms": 1000}}]
    t = totals(answers, priced)
    assert (t["answers"], t["llm_answers"], t["prompt_tokens"], t["completion_tokens"]) == (3, 2, 3000, 600)
    assert t["seconds"] == pytest.approx(3.0) and t["cost_usd"] == pytest.approx(0.00240)
    assert session_line(answers, priced) == \
        "<sub>This session: 3 answers · 3,000 tokens in + 600 out · 3.0 s · $0.0024</sub>"
    assert session_line(answers, Settings()) == "<sub>This session: 3 answers · 3,000 tokens in + 600 out · 3.0 s</sub>"
    assert session_line([], priced) == ""
    with pytest.raises(ConfigError, match="--llm-price-in / RAG_LLM_PRICE_IN"):
        Settings.load(llm_price_in=-1)


def _answer(**fields) -> dict:
    base = {"question": "q", "answer": "", "mode": "llm", "model": "m", "abstained": False, "citations": [],
            "sources": [], "notices": [], "fabricated": 0, "unsupported": [], "timings": {"total_ms": 900},
            "usage": {"prompt_tokens": 10, "completion_tokens": 5}}
    return base | fields


def test_an_unsupported_sentence_gets_a_quiet_mark_and_the_answer_stands():
    text = "Switch SAEs route activations to experts [1]. It was trained on 12,345 GPUs [1]. Also <b>x</b> [2]."
    cited = [{"n": 1}, {"n": 2}]  # only the answer's own citations become links (rag.web.render._own_markers)
    doubtful = ["It was trained on 12,345 GPUs [1]."]
    markdown = answer_markdown(_answer(answer=text, citations=cited, unsupported=doubtful), 0)
    first, rest = markdown.split(UNSUPPORTED_MARK, 1)
    assert first.endswith('GPUs [<a href="#src-0-1">1</a>].')  # the mark follows the doubtful sentence only
    assert 'experts [<a href="#src-0-1">1</a>].' in first and "<b>" not in markdown  # still inert
    assert markdown.count("unverified") == 2  # the mark, and its explanation under the answer
    assert UNSUPPORTED_MARK not in answer_markdown(_answer(answer=text, citations=cited), 0)
    assert footer(_answer(cost_usd=0.00175)).endswith("10 + 5 tokens · $0.0018")
