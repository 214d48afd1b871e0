"""The question rewritten by the LLM for search (issue 28 item 4, rag/generation/rewrite.py), through the tests' fake
OpenAI-compatible server: the rewrite is asked in one short call, searched beside the question (fused), bounded (a
dead or slow endpoint leaves the question searched alone, with the reason), harmless when it is junk, and folded
into a follow-up's standalone rewrite (one call, not two)."""

from __future__ import annotations

import time

import pytest
from helpers import free_port
from fake_openai import FakeOpenAI

from rag.generation import rewrite as rewriting

SAE = "Is there work on making sparse autoencoders cheaper to train?"
SAE_PAPER = "Efficient Dictionary Learning with Switch Sparse Autoencoders"
WATERMARK = "An Undetectable Watermark for Generative Image Models"  # nothing to do with SAEs
FIRST = "Which paper introduces a billion-scale time series foundation model?"
TIME_MOE = "Time-MoE: Billion-Scale Time Series Foundation Models with Mixture of Experts"


@pytest.fixture
def server():
    with FakeOpenAI() as fake:
        yield fake


def engine_at(seed_engine, base_url, **overrides):
    return seed_engine.derive(llm_model="fake-chat", llm_base_url=base_url, llm_api_key="sk-test", llm_timeout=2.0,
                              llm_connect_timeout=1.0, llm_max_retries=0, **overrides)


def titles(answer):
    return [s.title for s in answer.sources]


def rewrites(server):
    return [r for r in server.chat_requests() if "First sentence: <" in r["body"]["messages"][0]["content"]]


def test_the_question_is_rewritten_in_one_short_call_and_searched_beside_itself(embedded_seed_engine, server):
    alone = engine_at(embedded_seed_engine, server.base_url, llm_rewrite=False).ask(SAE)
    assert WATERMARK not in titles(alone) and titles(alone)[0] == SAE_PAPER
    server.rewrite = f"Title: {WATERMARK}\nFirst sentence: We watermark images from diffusion models."
    answer = engine_at(embedded_seed_engine, server.base_url).ask(SAE)
    sent = rewrites(server)
    assert len(sent) == 1 and f"Question: {SAE}" in sent[0]["body"]["messages"][0]["content"]
    assert sent[0]["body"]["stream"] and sent[0]["body"]["max_tokens"] <= 96  # streamed: abandoned, it stops
    assert answer.rewrite == f"{WATERMARK} We watermark images from diffusion models."  # labels left out
    # Fused: the rewrite's paper is found, and the question's own top paper stays.
    assert WATERMARK in titles(answer) and titles(answer)[0] == SAE_PAPER, titles(answer)
    assert answer.timings["rewrite_ms"] > 0 and answer.mode == "llm" and answer.fallback_reason == ""


def test_a_junk_rewrite_does_not_drop_the_questions_top_paper(embedded_seed_engine, server):
    # A small model's worst: the prompt echoed back, a refusal, a wrong guess in markup.
    server.rewrite = ("Write the title and the first sentence of the abstract of a research paper that would answer "
                      "the question\nI'm sorry, but I cannot help with that.\n**Title:** <b>Strong Model Collapse</b>")
    answer = engine_at(embedded_seed_engine, server.base_url).ask(SAE)
    assert answer.rewrite == "Strong Model Collapse"  # the echo and the refusal dropped, markup removed
    assert titles(answer)[0] == SAE_PAPER and "Strong Model Collapse" in titles(answer), titles(answer)


def test_a_dead_endpoint_leaves_the_question_searched_alone_with_the_reason(embedded_seed_engine):
    dead = f"http://127.0.0.1:{free_port()}/v1"
    alone = embedded_seed_engine.ask(SAE)
    started = time.perf_counter()
    answer = engine_at(embedded_seed_engine, dead).ask(SAE)
    assert time.perf_counter() - started < 10
    assert answer.fallback_reason and "connect" in answer.fallback_reason.lower()
    assert answer.mode == "extractive" and answer.rewrite == ""
    assert [s.paper_id for s in answer.sources] == [s.paper_id for s in alone.sources]
    assert any(answer.fallback_reason in n for n in answer.notices)


def test_a_slow_rewrite_is_cut_at_the_deadline_and_the_answer_not_asked_again(embedded_seed_engine, server):
    engine = engine_at(embedded_seed_engine, server.base_url, llm_deadline=1.0)
    engine.ask(SAE)  # the store opened, the search index built and the client made before the clock starts
    server.requests.clear()
    server.mode, server.delay = "timeout", 5.0
    started = time.perf_counter()
    answer = engine.ask(SAE)
    assert time.perf_counter() - started < 1 + 1.5
    assert answer.fallback_reason == "the LLM endpoint did not finish its answer within 1 s"
    assert len(server.chat_requests()) == 1 and titles(answer)[0] == SAE_PAPER  # searched alone, answered extractive


def test_a_follow_up_costs_one_call_for_its_standalone_question_and_its_search(embedded_seed_engine, server):
    engine = engine_at(embedded_seed_engine, server.base_url)
    history = [{"role": "user", "content": FIRST},
               {"role": "assistant", "content": "It scales to 2.4 billion parameters [1]."}]  # no title: rewritten
    answer = engine.ask("What dataset did they use?", history=history)
    calls = server.chat_requests()
    assert len(calls) == 2 and len(rewrites(server)) == 1  # the rewrite (standalone + search), then the answer
    assert "Last message: What dataset did they use?" in calls[0]["body"]["messages"][0]["content"]
    standalone = f"{FIRST} What dataset did they use?"  # the fake's "Question:" line
    assert f"Question: {standalone}" in calls[1]["body"]["messages"][1]["content"]  # the answer asks it
    assert answer.rewrite == standalone and titles(answer)[0] == TIME_MOE and answer.mode == "llm"


def test_a_question_whose_named_paper_was_found_skips_the_call(embedded_seed_engine, server):
    answer = engine_at(embedded_seed_engine, server.base_url).ask("How does CatVTON do virtual try-on?")
    assert rewrites(server) == [] and len(server.chat_requests()) == 1  # the answer only
    assert titles(answer)[0].startswith("CatVTON") and answer.rewrite == ""


def test_a_question_without_a_topic_skips_the_call(embedded_seed_engine, server):
    answer = engine_at(embedded_seed_engine, server.base_url).ask("Papers by Xiaoming Shi")  # the filter lists them
    assert rewrites(server) == [] and answer.filters.author == "Xiaoming Shi" and titles(answer) == [TIME_MOE]


def test_the_setting_turns_it_off(embedded_seed_engine, server):
    engine_at(embedded_seed_engine, server.base_url, llm_rewrite=False).ask(SAE)
    assert rewrites(server) == [] and len(server.chat_requests()) == 1


@pytest.mark.parametrize("reply,followup,expected", [
    ("Title: Switch Sparse Autoencoders\nFirst sentence: We train SAEs cheaply.", False,
     ("", "Switch Sparse Autoencoders We train SAEs cheaply.")),
    ("1. **Title** - Foo Bar\n2. **First sentence:** Baz.", False, ("", "Foo Bar Baz.")),
    ("Question: What data did Time-MoE use?\nTitle: Time-MoE\nFirst sentence: We pretrain on Time-300B.", True,
     ("What data did Time-MoE use?", "Time-MoE We pretrain on Time-300B.")),
    ("What data did Time-MoE use?", True, ("What data did Time-MoE use?", "")),  # a one-line reply: the question
    ("Title: 稀疏自编码器", False, ("", "sparse autoencoder")),  # Chinese left in: its glossary terms
    ("As an AI, I cannot write titles.", False, ("", "")),
    ('Title: <img src=x onerror="alert(1)">[Click](http://x.y) `SAE` \x1b[31mred\u202e', False,
     ("", "Click SAE [31mred")),
    ("x" * 5000, False, ("", "x" * rewriting.MAX_REWRITE_CHARS)),
])
def test_a_reply_is_read_as_data(reply, followup, expected):
    assert rewriting.parse(reply, "", followup) == expected


def test_a_confident_first_retrieval_skips_the_call_and_a_doubtful_one_makes_it(corpus_engine, server):
    """At 2,114 papers the learned gate speaks: where it is sure the first retrieval answers (doubt below
    `AnswerPolicy.rewrite_confident_below`), the rewrite would rarely move the top 5 and is not asked; where it
    doubts, it is; at 0 every question is rewritten (the harness's "hybrid-rewrite-always")."""
    from rag.answering import abstain
    from rag.search.retrieve import RetrievalParams

    engine = engine_at(corpus_engine, server.base_url)
    cut = engine.settings.policy.rewrite_confident_below
    sure, doubtful = SAE, "Is there work on predicting the ripening of bananas from photos?"
    params = RetrievalParams.from_settings(engine.settings, k=engine.settings.k)
    doubts = {q: abstain.probability(corpus_engine.retriever.retrieve(q, params)) for q in (sure, doubtful)}
    assert doubts[sure] < cut <= doubts[doubtful], doubts
    answer = engine.ask(sure)
    assert rewrites(server) == [] and "rewrite_ms" not in answer.timings
    assert "sparse autoencoders" in answer.sources[0].title.lower()
    answer = engine.ask(doubtful)
    assert len(rewrites(server)) == 1 and answer.timings["rewrite_ms"] > 0
    always = engine_at(corpus_engine, server.base_url, policy={"rewrite_confident_below": 0.0})
    always.ask(sure)
    assert len(rewrites(server)) == 2
