"""Rebuild the ICLR 2025 data files of this folder from the project's corpus (../shared/corpus beside the clone).

    python rag/data/build.py [CORPUS_DIR]

A maintainer's tool, run by hand when the corpus changes; the app never runs it and never reads CORPUS_DIR.
- `iclr2025.jsonl`: a byte-for-byte copy of the corpus file (2,114 accepted papers with abstracts);
- `iclr2025_no_abstract.jsonl`: the accepted papers of `iclr2025_metadata_only.jsonl` (decision "Accept (...)";
  1,592 of its 9,558 records), each with `"has_abstract": false`, the form `rag.store.ingest` reads as a title-only
  paper. Rejected, withdrawn and desk-rejected submissions stay out: the app is about the accepted papers.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_CORPUS = HERE.parent.parent.parent / "shared" / "corpus"


def build(corpus: Path) -> tuple[int, int]:
    """Write both files from `corpus`; returns (papers with abstracts, title-only papers)."""
    shutil.copyfile(corpus / "iclr2025.jsonl", HERE / "iclr2025.jsonl")
    with_abstract = sum(1 for line in (HERE / "iclr2025.jsonl").open(encoding="utf-8") if line.strip())
    accepted = []
    for line in (corpus / "iclr2025_metadata_only.jsonl").open(encoding="utf-8"):
        record = json.loads(line)
        if str(record.get("decision") or "").startswith("Accept"):
            accepted.append(json.dumps({**record, "has_abstract": False}, ensure_ascii=False))
    (HERE / "iclr2025_no_abstract.jsonl").write_text("\n".join(accepted) + "\n", encoding="utf-8")
    return with_abstract, len(accepted)


if __name__ == "__main__":
    corpus = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_CORPUS
    if not (corpus / "iclr2025.jsonl").is_file():
        sys.exit(f"no iclr2025.jsonl in {corpus}; pass the corpus folder: python rag/data/build.py DIR")
    with_abstract, title_only = build(corpus)
    print(f"wrote {with_abstract} papers with abstracts, {title_only} title-only papers")
