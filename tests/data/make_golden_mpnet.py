"""Regenerate golden_mpnet.npz: reference vectors from sentence-transformers' all-mpnet-base-v2 (fp32, torch), which
tests/store/test_mpnet.py holds `rag.store.mpnet` (numpy, no torch) to.

Run once, by hand, in a throw-away venv (it needs torch; the project does not), after `make install` has put the
model into rag/models/mpnet/ (the same files, sha256-checked, that the app loads):
    python -m venv /tmp/tv && /tmp/tv/bin/pip install torch==2.13.0 sentence-transformers==6.3.0
    /tmp/tv/bin/python tests/data/make_golden_mpnet.py
"""

import json
import sys
from pathlib import Path

import numpy as np
from sentence_transformers import SentenceTransformer

here = Path(__file__).parent
root = here.parent.parent
model_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else root / "rag" / "models" / "mpnet"
papers = [json.loads(line) for line in (root / "rag" / "data" / "iclr2025.jsonl").open(encoding="utf-8")]
paper = papers[0]
longest = max(papers, key=lambda p: len(p["abstract"]))
TEXTS = [
    "Is there work on making sparse autoencoders cheaper to train?",
    "有没有用扩散模型做图像修复的论文？它们和GAN相比效果如何。",
    f"{paper['title']}. {paper['abstract']}",  # one paper as the app embeds it: "title. abstract"
    # far over 384 tokens, so truncation decides the vector: the longest abstract, twice
    f"{longest['title']}. {longest['abstract']} {longest['abstract']}",
    "THE QUICK brown fox — naïve café, 42 × 7 = 294! ﬁnance Ǆemo e\u0301 \u200bzero-width 😀 Ω≈ç√ ½ \t\n tabs",
    "a",
    "",
]
model = SentenceTransformer(str(model_dir), device="cpu")
assert model.max_seq_length == 384
vectors = model.encode(TEXTS, normalize_embeddings=True, convert_to_numpy=True).astype(np.float32)
tokens = [len(model.tokenizer(t)["input_ids"]) for t in TEXTS]
assert tokens[3] > 384, tokens
np.savez_compressed(here / "golden_mpnet.npz", texts=np.array(TEXTS), vectors=vectors,
                    untruncated_tokens=np.array(tokens))
print("wrote", len(TEXTS), "vectors; tokens before truncation:", tokens)
