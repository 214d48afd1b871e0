"""The reader in the gate (rag/answering/reader.py, measured by eval/reader_lso.py): the question's words read
against the best sentences of the top papers."""

from __future__ import annotations

from rag.answering import abstain, reader
from rag.search.retrieve import RetrievalParams


def test_a_word_reads_closest_to_its_own_inflection_in_context():
    (q_words, q), (s_words, s) = reader.word_states(
        ["How do they quantize the weights?", "Weights are quantized to four bits while the weather stays fine."])
    best = s_words[int((q[q_words.index("quantize")] @ s.T).argmax())]
    assert best == "quantized"
    assert q.shape == (len(q_words), 384) and abs(float(q[0] @ q[0]) - 1.0) < 1e-5


def test_a_question_its_paper_answers_reads_higher_than_a_detail_the_paper_never_states(embedded_seed_engine):
    retriever = embedded_seed_engine.retriever
    answered = retriever.retrieve("What is AERCA for root cause analysis?", RetrievalParams(k=5))
    detail = retriever.retrieve("Which robot arm did AERCA use for root cause analysis?", RetrievalParams(k=5))
    assert answered.hits[0].paper.paper_id == detail.hits[0].paper.paper_id  # the same paper, asked two things
    a = dict(zip(reader.FEATURES, reader.features(answered), strict=False))
    d = dict(zip(reader.FEATURES, reader.features(detail), strict=False))
    assert d["reader_rare_min"] < a["reader_rare_min"] - 0.1
    assert d["reader_cover"] < a["reader_cover"] and d["reader_missing"] < a["reader_missing"]


def test_an_absent_topic_next_to_a_covered_one_is_not_answered_once_the_reader_reads_it(corpus_engine):
    # absent_v5 (read): the gate before the reader answered it from a speech-recognition benchmark (issue 51).
    question = "I'm looking for work on speaker verification: deciding whether two utterances come from one speaker."
    retrieval = corpus_engine.retriever.retrieve(question, RetrievalParams(k=5))
    assert abstain.reads(retrieval)
    p, _, unsure_at, _ = abstain.judgement(retrieval)
    assert p >= unsure_at and corpus_engine.ask(question).outcome != "answered"
    # The gate reads the top paper alone (a third fewer texts through the model), as it was fitted to
    read = dict(zip(reader.FEATURES, reader.features(retrieval, second=False), strict=True))
    assert read["reader_second"] == 0.0
    gate_reads = list(abstain.features(retrieval)[-len(abstain.READER_FEATURES):])
    assert [read[n] for n in abstain.READER_FEATURES] == gate_reads


def test_a_named_or_chinese_question_is_judged_by_the_gate_before_the_reader(corpus_engine):
    for question in ("What is SAM 2?", "有没有让稀疏自编码器训练更便宜的工作？"):
        retrieval = corpus_engine.retriever.retrieve(question, RetrievalParams(k=5))
        assert not abstain.reads(retrieval)
        assert abstain.judgement(retrieval)[:2] == abstain.coverage(retrieval)
        assert corpus_engine.ask(question).outcome == "answered"


def test_the_answers_policy_hash_covers_the_gate_file_and_the_prompt_templates(tmp_path, monkeypatch):
    """`Answer.policy` names what decided the answer: the tuned numbers and thresholds, and the gate's file (the
    reader's weights and cut points) and the prompts, so a refit gate gives another hash."""
    import hashlib

    from rag import config

    root = config.Path(config.__file__).resolve().parent
    files = [root / "answering" / "abstain_gate.json", *sorted((root / "generation" / "templates").glob("*"))]
    expected = hashlib.sha256()
    for path in files:
        expected.update(path.name.encode() + b"\0" + path.read_bytes())
    assert config._decision_files_digest() == expected.hexdigest() and len(files) >= 2
    settings = config.Settings(data_dir=tmp_path)
    before = settings.policy_hash
    monkeypatch.setattr(config, "_decision_files_digest", lambda: "a refit gate")
    assert settings.policy_hash != before
