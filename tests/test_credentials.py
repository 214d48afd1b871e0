"""Credentials in a configured URL (`http://user:secret@host/v1` in OPENAI_BASE_URL, RAG_EMBED_BASE_URL or
RAG_CHROMA_URL) are never shown: not in the fallback notice or `fallback_reason` of an answer, an error line of the
CLI, the page's model menu or a log line (security review 3, issue 26 item 9)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import pytest
from fake_openai import FakeOpenAI
from helpers import ROOT, free_port, rag_cmd

from rag.answering.records import Answer

SECRET = "s3cret-Pa55"
SAE = "Is there work on making sparse autoencoders cheaper to train?"


@pytest.mark.parametrize("text, shown", [
    (f"http://user:{SECRET}@127.0.0.1:8000/v1", "http://***@127.0.0.1:8000/v1"),
    (f"could not connect to https://{SECRET}@api.example.com/v1 (refused)", "could not connect to "
     "https://***@api.example.com/v1 (refused)"),
    (f"http://host/v1?api_key={SECRET}&model=x", "http://host/v1?api_key=***&model=x"),
    (f"http://host/v1?x=1&access_token={SECRET}", "http://host/v1?x=1&access_token=***"),
    ("https://github.com/a@b and mail a@b.org", "https://github.com/a@b and mail a@b.org"),  # no user-info
])
def test_redact_url_hides_user_info_and_credential_query_values(text, shown):
    from rag.errors import one_line, redact_url

    assert redact_url(text) == shown
    assert one_line(RuntimeError(text)) == shown


def _answer(engine, question=SAE) -> Answer:
    answer = list(engine.stream(question))[-1]
    assert isinstance(answer, Answer)
    return answer


def test_an_answer_that_falls_back_never_shows_the_base_urls_credentials(embedded_seed_engine, caplog):
    closed = free_port()
    with FakeOpenAI() as stalling:
        stalling.mode, stalling.delay = "stall", 5.0
        host, port = stalling.base_url.split("//")[1].split("/")[0].split(":")
        for url in (f"http://user:{SECRET}@127.0.0.1:{closed}/v1", f"http://user:{SECRET}@{host}:{port}/v1"):
            engine = embedded_seed_engine.derive(llm_model="fake-chat", llm_base_url=url, llm_timeout=1.0,
                                                 llm_connect_timeout=1.0, llm_max_retries=0)
            with caplog.at_level(logging.DEBUG):
                answer = _answer(engine)
            assert answer.mode == "extractive" and answer.fallback_reason, answer.fallback_reason
            assert "127.0.0.1" in answer.fallback_reason + stalling.base_url
            shown = json.dumps(answer.to_dict()) + caplog.text
            assert SECRET not in shown and "user:" not in shown, answer.fallback_reason


def test_the_model_menu_never_shows_the_base_urls_credentials(embedded_seed_engine):
    from rag.web.session import ModelMenu

    engine = embedded_seed_engine.derive(llm_model="fake-chat", llm_connect_timeout=1.0, llm_max_retries=0,
                                         llm_base_url=f"http://user:{SECRET}@127.0.0.1:{free_port()}/v1")
    menu = ModelMenu(engine)
    assert menu.problem and "***@127.0.0.1" in menu.problem and SECRET not in menu.problem


def test_the_cli_never_prints_a_urls_credentials(embedded_seed_engine):
    closed = free_port()
    env = {**os.environ, "OPENAI_BASE_URL": f"http://user:{SECRET}@127.0.0.1:{closed}/v1",
           "RAG_DATA_DIR": str(embedded_seed_engine.settings.data_dir), "RAG_LLM_CONNECT_TIMEOUT": "1",
           "RAG_LLM_MAX_RETRIES": "0"}
    runs = [subprocess.run(rag_cmd(*args), cwd=ROOT, env={**env, **extra}, capture_output=True, text=True,
                           timeout=180)
            for args, extra in ((("models",), {}), (("ask", SAE), {"RAG_LLM_MODEL": "fake-chat"}),
                                (("stats",), {"RAG_CHROMA_URL": f"http://{SECRET}@127.0.0.1:{closed}"}))]
    for run in runs:
        out = run.stdout + run.stderr
        assert SECRET not in out, out
        assert "***@127.0.0.1" in out, out
    assert runs[1].returncode == 0 and "extractive" in runs[1].stdout
    assert runs[0].returncode == 1 and runs[2].returncode == 1 and "Traceback" not in runs[2].stderr
    assert sys.executable  # the venv's python ran every command


LOGIN, PASSWORD, QUERY_SECRET, KEY = "bob", "pa55w0rd", "Q5ecretQuery", "sk-Key0123456789"
BASIC = "Ym9iOnBhNTV3MHJk"  # base64 of bob:pa55w0rd, as a Basic Authorization header carries it


def _secrets_shown(text: str) -> list[str]:
    return [s for s in (PASSWORD, BASIC, QUERY_SECRET, KEY, f"{LOGIN}:") if s in text]


def test_an_endpoint_quoting_the_requests_credentials_is_scrubbed_of_every_form_of_them(embedded_seed_engine,
                                                                                        caplog):
    """An endpoint whose error quotes the request's Authorization header (Basic base64 of user:password), the
    password itself and the request's query: none of them reaches the answer's notices or fallback_reason."""
    with FakeOpenAI() as server:
        server.mode = "echo_auth"
        hostport = server.base_url.split("//")[1].split("/")[0]
        for url, key in ((f"http://{LOGIN}:{PASSWORD}@{hostport}/v1", None),
                         (f"http://{hostport}/v1?api_key={QUERY_SECRET}&x=1", KEY),
                         (f"http://{LOGIN}:{PASSWORD}@{hostport}/v1?token={QUERY_SECRET}", None)):
            engine = embedded_seed_engine.derive(llm_model="fake-chat", llm_base_url=url, llm_api_key=key,
                                                 llm_max_retries=0)
            with caplog.at_level(logging.DEBUG):
                answer = _answer(engine)
            assert answer.mode == "extractive" and "denied /v1/chat/completions" in answer.fallback_reason, (
                url, answer.fallback_reason)
            shown = json.dumps(answer.to_dict()) + caplog.text
            assert _secrets_shown(shown) == [], (url, answer.fallback_reason)
        # The base URL's query goes after the path the client appends, as each request's own query.
        paths = [r["path"] for r in server.requests]
        assert "/v1/chat/completions?api_key=Q5ecretQuery&x=1" in paths, paths
        assert not any(p.startswith("/v1?") for p in paths), paths


def test_rag_models_never_prints_what_an_endpoint_quotes_of_its_credentials(embedded_seed_engine):
    with FakeOpenAI() as server:
        server.mode = "echo_auth"
        hostport = server.base_url.split("//")[1].split("/")[0]
        env = {**os.environ, "OPENAI_BASE_URL": f"http://{LOGIN}:{PASSWORD}@{hostport}/v1?api_key={QUERY_SECRET}",
               "RAG_DATA_DIR": str(embedded_seed_engine.settings.data_dir), "RAG_LLM_MAX_RETRIES": "0"}
        run = subprocess.run(rag_cmd("models"), cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    out = run.stdout + run.stderr
    assert run.returncode == 1 and "denied /v1/models?api_key=***" in out, out
    assert _secrets_shown(out) == [], out
