"""Check the Chinese glossary `rag/data/zh_terms.tsv` against the corpus: size, one line per Chinese key, and
how many English terms occur in the titles and abstracts (verbatim, and word by word).

    python eval/check_glossary.py [--corpus rag/data/iclr2025.jsonl]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rag.query import zh  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=ROOT / "rag" / "data" / "iclr2025.jsonl")
    args = parser.parse_args()
    lines = [line for line in zh.GLOSSARY.read_text(encoding="utf-8").splitlines()
             if line.strip() and not line.startswith("#")]
    keys = [line.split("\t")[0] for line in lines]
    repeated = sorted({k for k in keys if keys.count(k) > 1})
    english = sorted({e for values in zh.glossary().values() for e in values})
    papers = [json.loads(x) for x in args.corpus.read_text(encoding="utf-8").splitlines() if x.strip()]
    text = "\n".join(f"{p.get('title', '')} {p.get('abstract', '')}".lower() for p in papers)
    words = set(re.findall(r"[a-z0-9]+", text))
    verbatim = [e for e in english if e.lower() in text]
    by_word = [e for e in english if all(w in words for w in re.findall(r"[a-z0-9]+", e.lower()))]
    print(f"{len(lines)} lines, {len(zh.glossary())} Chinese terms, {len(english)} English terms; "
          f"{len(verbatim)} English terms occur verbatim in the {len(papers)} papers, {len(by_word)} word by word")
    print("not in the corpus word by word:", ", ".join(e for e in english if e not in by_word) or "none")
    if repeated:
        print("Chinese keys on more than one line:", ", ".join(repeated))
    return 1 if repeated else 0


if __name__ == "__main__":
    sys.exit(main())
