"""Generated answers through a real model: llama.cpp's OpenAI-compatible server (llama-cpp-python, built into
.venv-llm by `make llm-deps`) serving SmolLM2-135M-Instruct, through its real chat template, tokenizer and stream.

What only a real model shows: special tokens of the chat template must never reach an answer; its server reports
usage without a stream and none within one; `max_tokens` stops it; a weak model's uncited or invented text falls
back with its notice; the deadline holds; a request abandoned at the deadline does not hold up the next one.
The stdlib fake (tests/fake_openai.py) stays for faults on demand."""

from __future__ import annotations

import re
import time

import openai
import pytest

from rag.answering.records import Answer, Delta, Restart
from rag.cli import usage_text

pytestmark = pytest.mark.llm

SPECIAL = re.compile(r"<\|[a-z_]+\|>|<\|im_(?:start|end)\|>|</?s>|<\|endoftext\|>")
QUESTIONS = [
    "Is there work on making sparse autoencoders cheaper to train?",
    "Which paper introduces a billion-scale time series foundation model?",
    "How does CatVTON simplify virtual try-on?",
]


def real_engine(seed_engine, llama_server, **overrides):
    settings = {"llm_model": llama_server.model, "llm_base_url": llama_server.base_url, "llm_timeout": 60.0,
                "llm_deadline": 90.0, "llm_max_retries": 0, "llm_max_tokens": 160} | overrides
    return seed_engine.derive(**settings)


@pytest.fixture(scope="module")
def streamed(embedded_seed_engine, llama_server) -> dict[str, list]:
    """Each question's stream (its events, the Answer last) at the default settings, generated once for the tests
    that read it: on a 2-core machine each costs a ~1,100-token prompt and up to 160 tokens of SmolLM2."""
    engine = real_engine(embedded_seed_engine, llama_server)
    return {question: list(engine.stream(question)) for question in QUESTIONS}


def test_answers_stream_through_the_chat_template_without_special_tokens(streamed):
    for question in QUESTIONS:
        events = streamed[question]
        answer = events[-1]
        assert isinstance(answer, Answer)
        shown = "".join(e.text for e in events if isinstance(e, Delta))
        assert not SPECIAL.search(shown) and not SPECIAL.search(answer.answer), (question, shown)
        if not answer.usage:  # the gate refused before the model was asked
            assert answer.abstained and answer.mode == "extractive"
        elif answer.mode == "llm":
            # What a weak model writes is shown only with a citation, or as the refusal itself.
            assert answer.citations or answer.abstained, answer.answer
            assert len([e for e in events if isinstance(e, Delta)]) > 1  # streamed
        elif answer.llm_no_answer:
            # The model said the papers do not answer: not final beside an answerable retrieval (issue 28).
            assert answer.outcome == "unsure" and answer.citations and not answer.fallback_reason
            assert any("found no answer" in n for n in answer.notices)
        else:
            # Fell back: says why, and the extractive answer cites the abstracts it quotes.
            assert answer.fallback_reason and any("could not answer" in n for n in answer.notices)
            assert answer.citations or answer.abstained
            assert all(isinstance(e, (Delta, Restart)) for e in events[:-1])


def test_usage_is_reported_without_a_stream_and_said_to_be_missing_within_one(streamed, llama_server):
    client = openai.OpenAI(base_url=llama_server.base_url, api_key="none", max_retries=0)
    reply = client.chat.completions.create(model=llama_server.model, max_tokens=8, temperature=0,
                                           messages=[{"role": "user", "content": "Say hello."}])
    assert reply.usage.prompt_tokens > 5 and 0 < reply.usage.completion_tokens <= 8
    answer = streamed[QUESTIONS[0]][-1]  # what `ask` returns: the Answer that ends the stream
    if answer.usage.get("prompt_tokens") is None:  # llama-cpp-python 0.3.36 sends no usage in a stream
        assert answer.usage["completion_tokens"] is None
        assert answer.usage.get("completion_chunks", 0) > 0 or answer.fallback_reason  # counted if any came
        assert usage_text(answer.usage, None) == ", tokens not reported by the server"
    else:  # a later server version that does
        assert answer.usage["prompt_tokens"] > 100


def test_max_tokens_stops_the_model_and_the_stream_still_ends_cleanly(llama_server):
    client = openai.OpenAI(base_url=llama_server.base_url, api_key="none", max_retries=0)
    reply = client.chat.completions.create(model=llama_server.model, max_tokens=12, temperature=0, messages=[
        {"role": "user", "content": "Write a long essay about sparse autoencoders."}])
    assert reply.choices[0].finish_reason == "length" and reply.usage.completion_tokens == 12
    stream = client.chat.completions.create(model=llama_server.model, max_tokens=12, temperature=0, stream=True,
                                            messages=[{"role": "user", "content": "Write a long essay."}])
    reasons = [c.choices[0].finish_reason for c in stream if c.choices]
    assert reasons[-1] == "length" and not any(reasons[:-1])


def test_the_deadline_holds_and_an_abandoned_request_does_not_delay_the_next(embedded_seed_engine, llama_server):
    engine = real_engine(embedded_seed_engine, llama_server, llm_max_tokens=400)
    started = time.perf_counter()
    baseline = engine.ask(QUESTIONS[0])
    alone = time.perf_counter() - started
    late = real_engine(embedded_seed_engine, llama_server, llm_deadline=0.5, llm_max_tokens=400)
    started = time.perf_counter()
    cut = late.ask(QUESTIONS[1])
    assert time.perf_counter() - started < 0.5 + 3.0  # the deadline, plus the extractive answer
    assert cut.mode == "extractive" and "within 0.5 s" in cut.fallback_reason
    started = time.perf_counter()
    again = engine.ask(QUESTIONS[0])
    after = time.perf_counter() - started
    assert again.answer == baseline.answer  # temperature 0: the same answer ...
    # ... not queued behind the abandoned one's generation (400 tokens, ~20 s here): the client closes the stream
    # and the server stops at its next token. What it cannot stop is a prompt it is still reading (llama.cpp reads a
    # prompt in one call), so the next answer may wait up to one prompt's reading time: the baseline's first token.
    prefill = baseline.timings.get("ttft_ms", 0) / 1000
    assert after < alone * 1.5 + prefill + 2.0, (after, alone, prefill)


def test_an_answer_the_server_cuts_at_max_tokens_is_never_shown_mid_sentence(embedded_seed_engine, llama_server):
    """llama.cpp ends a stream that ran into max_tokens with finish_reason "length": the app keeps the finished
    sentences (with a notice) or, when none finished, falls back saying so; a half sentence is never the answer."""
    engine = real_engine(embedded_seed_engine, llama_server, llm_max_tokens=24)
    limited = 0
    for question in QUESTIONS:
        answer = engine.ask(question)
        limited += answer.usage.get("completion_chunks", 0) >= 24  # SmolLM2's answers here take 40-500 tokens
        if answer.mode == "llm" and answer.usage.get("completion_chunks", 0) >= 24:  # it ran to the limit
            assert re.search(r"[.!?。！？][\"'”’)\]]*(?: ?\[\d+(?:, \d+)*\])?$", answer.answer), answer.answer
            # (a notice says so when a sentence was left out; the 24th token may also end one exactly)
        elif answer.mode == "extractive" and answer.fallback_reason:
            assert answer.citations or answer.abstained
    assert limited, "no answer ran to max_tokens: the cut was not exercised"
