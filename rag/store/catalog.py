"""Catalog: the ICLR 2025 papers this project carries (rag/data/), and naming untitled abstracts after them.

`BUNDLED` are the two data files, the app's default collection: 2,114 accepted papers with abstracts and 1,592
accepted papers known by title and authors only (how they were built, their sources and licences:
rag/data/README.md).

A pile of abstracts without titles (the seed format) is the common case of a user's own file, and the abstracts
are usually of papers this list knows. `enrich` gives such a paper the id, title, authors, decision, venue, url
and year of the bundled paper whose abstract is the same text, and says so in `enriched_from`. "The same" is
compared on letters and digits only, after NFKC and case folding, so typography (a curly apostrophe, a dropped
full stop, line breaks) does not matter but any change of wording does: an exact lookup, no fuzzy matching that
could name a paper after a different one. The abstract itself stays the user's text. Papers that have a title
are left as they are: the file's own metadata wins. Taking the OpenReview id means a user's file and the bundled
list name the same paper the same way, so ingesting both keeps one copy of it.

Everything is local: the bundled file is read once per process, on first use (about 0.5 s), never downloaded.
"""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata
from dataclasses import replace
from pathlib import Path

from rag.store.ingest import Paper, read_paths

DATA_DIR = Path(__file__).resolve().parents[1] / "data"
WITH_ABSTRACTS = DATA_DIR / "iclr2025.jsonl"
BUNDLED = [WITH_ABSTRACTS, DATA_DIR / "iclr2025_no_abstract.jsonl"]
ENRICHED_FROM = "ICLR 2025 list (rag/data/iclr2025.jsonl)"
_NOT_ALNUM = re.compile(r"[\W_]+")


def abstract_key(text: str) -> str:
    """What two copies of one abstract share: a hash of its letters and digits, NFKC-normalized and case-folded."""
    # `[\W_]` is exactly "not str.isalnum()" (re's \w is isalnum plus the underscore), at C speed: a per-character
    # generator took ~1 s of a first ingest's CPU on the 2,114 bundled abstracts.
    kept = _NOT_ALNUM.sub("", unicodedata.normalize("NFKC", text).casefold())
    return hashlib.sha256(kept.encode("utf-8")).hexdigest()


@functools.lru_cache(maxsize=1)
def known_papers() -> dict[str, Paper]:
    """The bundled papers with abstracts, by `abstract_key`. Read once per process."""
    read = read_paths([WITH_ABSTRACTS])
    if not read.papers:
        raise FileNotFoundError(f"the bundled ICLR 2025 list {WITH_ABSTRACTS} is missing or empty; reinstall "
                                "the package (pip install -e .) or rebuild it with rag/data/build.py")
    return {abstract_key(p.abstract): p for p in read.papers}


def enrich(papers: list[Paper]) -> tuple[list[Paper], int]:
    """Papers without a title whose abstract is a bundled paper's take its metadata (see the module docstring).
    Returns (the papers, how many were matched). A matched paper that another paper of the list already is (the
    bundled file ingested with the seeds) is kept once, the first, with the other's file noted in `also_in`."""
    known = known_papers() if any(not p.title and p.has_abstract for p in papers) else {}
    out: list[Paper] = []
    at: dict[str, int] = {}  # id -> index in out
    matched = 0
    for paper in papers:
        match = known.get(abstract_key(paper.abstract)) if not paper.title and paper.has_abstract else None
        if match is not None:
            matched += 1
            paper = replace(paper, paper_id=match.paper_id, title=match.title, authors=match.authors,
                            decision=match.decision, venue=match.venue, url=match.url, year=match.year,
                            enriched_from=ENRICHED_FROM)
        first = at.get(paper.paper_id)
        if first is None:
            at[paper.paper_id] = len(out)
            out.append(paper)
        else:
            kept = out[first]
            listed = {kept.source, *(source for source, _ in kept.also_in)}
            more = tuple(h for h in ((paper.source, paper.position), *paper.also_in) if h[0] not in listed)
            out[first] = replace(kept, also_in=kept.also_in + more)
    return out, matched
