"""The bundled ICLR 2025 list (rag/data/) and the naming of untitled abstracts after its papers: every seed
abstract gets its OpenReview id, title, authors, decision and link, typography aside, and nothing else does."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from helpers import DATA, ROOT, SEEDS, seed_paragraphs

from rag.config import Settings
from rag.store.catalog import BUNDLED, ENRICHED_FROM, WITH_ABSTRACTS, abstract_key, enrich
from rag.store.ingest import read_paths
from rag.engine import Engine

SEED_PAPERS = json.loads((DATA / "seed_papers.json").read_text())  # each seed paragraph's paper (OpenReview)


def test_the_bundled_files_ship_with_the_package():
    assert [p.name for p in BUNDLED] == ["iclr2025.jsonl", "iclr2025_no_abstract.jsonl"]
    assert all(p.is_file() and p.parent == ROOT / "rag" / "data" for p in BUNDLED)
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "data/*" in package_data["rag"]


def test_every_seed_abstract_is_matched_to_its_iclr_2025_paper():
    papers, matched = enrich(read_paths([SEEDS]).papers)
    assert matched == len(papers) == len(SEED_PAPERS) == 38
    by_place = {(Path(p.source).name, p.position): p for p in papers}
    for expected in SEED_PAPERS:
        paper = by_place[(expected["file"], expected["paragraph"])]
        assert (paper.paper_id, paper.title) == (expected["id"], expected["title"])
        assert paper.url == f"https://openreview.net/forum?id={expected['id']}"
        assert paper.decision.startswith("Accept (") and paper.venue.startswith("ICLR 2025 ") and paper.authors
        assert paper.enriched_from == ENRICHED_FROM and paper.year == 2025
        assert paper.abstract == seed_paragraphs(expected["file"])[expected["paragraph"] - 1]  # the user's text


def test_matching_ignores_typography_but_not_wording():
    known = {p.paper_id: p for p in read_paths([WITH_ABSTRACTS]).papers}
    seeds = {(Path(p.source).name, p.position): p for p in read_paths([SEEDS]).papers}
    time_moe = seeds[("003_ca1cb07fa40ffbf8.txt", 13)]  # the list's copy ends with a full stop, the seed's not
    freezing = seeds[("003_ca1cb07fa40ffbf8.txt", 16)]  # the seed has a curly apostrophe, the list a straight one
    for seed, pid in ((time_moe, "e1wDDFmlVu"), (freezing, "dOAkHmsjRX")):
        assert seed.abstract != known[pid].abstract and abstract_key(seed.abstract) == abstract_key(known[pid].abstract)
    text = known["k2ZVAzVeMP"].abstract
    assert abstract_key(text) == abstract_key("  " + text.upper().replace(" ", "\n ").replace("'", "\u2019"))
    assert abstract_key(text) != abstract_key(text.replace("compute cost", "memory cost"))


def test_only_untitled_abstracts_are_named_and_the_file_metadata_wins(tmp_path):
    sae = seed_paragraphs("000_99312b63f56aee43.txt")[2]
    path = tmp_path / "mine.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [
        {"abstract": sae},
        {"id": "mine-2", "title": "My own title", "abstract": sae},
        {"abstract": "An abstract this list has never seen, about quokka telemetry collars."},
    ]) + "\n")
    read = read_paths([path, DATA / "papers_title_only.jsonl"])
    papers, matched = enrich(read.papers)
    assert matched == 1
    assert papers[0].paper_id == "k2ZVAzVeMP" and papers[0].enriched_from == ENRICHED_FROM
    assert papers[1:] == read.papers[1:]  # titled, unknown and title-only papers are left as they are


def test_a_seed_and_the_bundled_list_read_together_keep_one_copy_of_each_paper():
    read = read_paths([SEEDS, WITH_ABSTRACTS])
    assert len(read.papers) == 38 + 2114
    papers, matched = enrich(read.papers)
    assert matched == 38 and len(papers) == 2114
    sae = next(p for p in papers if p.paper_id == "k2ZVAzVeMP")
    assert Path(sae.source).name == "000_99312b63f56aee43.txt" and sae.enriched_from == ENRICHED_FROM
    assert [(Path(source).name, n) for source, n in sae.also_in] == [("iclr2025.jsonl", 1574)]


def test_a_seed_file_and_the_bundled_record_of_one_paper_are_one_paper_in_the_store(tmp_path, store):
    engine = Engine(Settings.load(**store))
    first = engine.ingest([SEEDS / "000_99312b63f56aee43.txt"])
    assert (first.added, first.enriched) == (19, 19)
    assert "19 matched to ICLR 2025 papers" in first.summary()
    listed = tmp_path / "sae.jsonl"
    listed.write_text(next(line for line in WITH_ABSTRACTS.read_text().splitlines() if '"k2ZVAzVeMP"' in line))
    second = engine.ingest([listed])
    assert (second.added, second.updated, second.unchanged, second.enriched, second.embedded_chunks) == (0, 0, 1, 0, 0)
    assert "matched" not in second.summary()
    assert engine.index.count() == 19
    sae = next(p for p in engine.index.all_papers() if p.paper_id == "k2ZVAzVeMP")
    assert sae.title == "Efficient Dictionary Learning with Switch Sparse Autoencoders"
    assert sae.enriched_from == ""  # shown from the list's own record now, which needed no naming


def test_the_abstract_key_keeps_exactly_the_letters_and_digits_str_isalnum_keeps():
    """The key's pattern is the documented rule (NFKC, case folding, str.isalnum) on every bundled abstract and on
    characters where a regex class and isalnum could part: the underscore, combining marks, CJK, superscripts."""
    import hashlib
    import unicodedata

    def by_rule(text: str) -> str:
        kept = "".join(c for c in unicodedata.normalize("NFKC", text).casefold() if c.isalnum())
        return hashlib.sha256(kept.encode("utf-8")).hexdigest()

    tricky = ["snake_case x", "e\u0301t\u00e9", "扩散模型 2025", "x\u00b2 \u2460", "\u0663\u0664 \u0915\u093f",
              "a\u200bb"]
    texts = tricky + [p.abstract for p in read_paths([WITH_ABSTRACTS]).papers]
    assert [abstract_key(t) for t in texts] == [by_rule(t) for t in texts]
