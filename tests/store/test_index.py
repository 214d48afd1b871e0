"""The Chroma store: every seed paper in, re-ingest embeds nothing, edits replace chunks, no duplicates ever."""

from __future__ import annotations

import json
import shutil
from collections import Counter

import numpy as np
import pytest
from helpers import DATA, SEEDS

from rag.config import ConfigError, Settings
from rag.text import split_sentences
from rag.engine import Engine


def _chunk_ids(engine):
    return engine.index.chunks.get(include=[])["ids"]


def test_seeds_ingest_into_38_papers_and_their_chunks(seed_ingest):
    engine, stats = seed_ingest
    assert (stats.added, stats.updated, stats.unchanged, stats.skipped, stats.enriched) == (38, 0, 0, 0, 38)
    assert engine.index.count() == 38
    ids = _chunk_ids(engine)
    assert len(ids) == len(set(ids)) == stats.embedded_chunks
    per_paper = Counter(i.split("#")[0] for i in ids)
    assert len(per_paper) == 38
    stored = engine.index.papers.get(include=["metadatas"])
    chunks_of = {pid: meta["chunks"] for pid, meta in zip(stored["ids"], stored["metadatas"], strict=True)}
    assert chunks_of == dict(per_paper)
    # Named after their ICLR 2025 papers (rag.store.catalog): OpenReview ids and titles, and where those came from.
    assert all(meta["title"] and meta["has_abstract"] and meta["enriched_from"] for meta in stored["metadatas"])
    assert "k2ZVAzVeMP" in stored["ids"]


def test_no_chunk_is_longer_than_the_embedder_reads(seed_engine):
    got = seed_engine.index.chunks.get(include=["documents", "metadatas"])
    embedder = seed_engine.index.embedder
    longest = max(embedder.count_tokens(doc) for doc in got["documents"])
    assert longest < 256, longest
    # and the chunks of each paper cover its whole abstract
    papers = {p.paper_id: p for p in seed_engine.index.all_papers()}
    for pid, paper in papers.items():
        chunks = [d for d, m in zip(got["documents"], got["metadatas"], strict=False) if m["paper_id"] == pid]
        assert paper.abstract.split()[-1] in " ".join(chunks)


def test_second_ingest_of_unchanged_seeds_embeds_nothing(seed_engine):
    before = sorted(_chunk_ids(seed_engine))
    stats = seed_engine.ingest([SEEDS])
    assert (stats.added, stats.updated, stats.unchanged, stats.removed) == (0, 0, 38, 0)
    assert stats.embedded_chunks == 0
    assert sorted(_chunk_ids(seed_engine)) == before


def test_an_edited_seed_abstract_replaces_its_chunks(tmp_path, store):
    seeds = tmp_path / "seeds"
    shutil.copytree(SEEDS, seeds)
    engine = Engine(Settings.load(**store))
    engine.ingest([seeds])
    path = seeds / "000_99312b63f56aee43.txt"
    paragraphs = path.read_text().split("\n\n")
    old_text = " ".join(paragraphs[16].split())
    old = next(p for p in engine.index.all_papers() if p.abstract == old_text)
    paragraphs[16] = paragraphs[16].replace("large language models", "huge language models")
    assert paragraphs[16] != old_text
    path.write_text("\n\n".join(paragraphs))

    stats = engine.ingest([seeds])
    assert (stats.added, stats.updated, stats.unchanged, stats.removed) == (0, 1, 37, 0)
    papers = engine.index.all_papers()
    assert len(papers) == 38
    new = next(p for p in papers if "huge language models" in p.abstract)
    assert old.paper_id not in {p.paper_id for p in papers}
    # An edited abstract is no longer the listed paper's: it keeps its text and loses the name it was given.
    assert old.title == "Quantifying Generalization Complexity for Large Language Models" and old.enriched_from
    assert (new.title, new.enriched_from, new.label) == ("", "", "000_99312b63f56aee43.txt #16")
    ids = _chunk_ids(engine)
    assert len(ids) == len(set(ids))
    assert not [i for i in ids if i.startswith(old.paper_id)]
    new_chunks = engine.index.chunks.get(where={"paper_id": new.paper_id}, include=["documents"])
    assert stats.embedded_chunks == len(new_chunks["ids"]) >= 1
    assert "huge language models" in " ".join(new_chunks["documents"])
    assert not engine.index.sentences.get(where={"paper_id": old.paper_id}, include=[])["ids"]
    assert any("huge language models" in t for t in engine.index.sentences_of([new])[new.paper_id].texts)
    answer = engine.ask("huge language models generalization versus memorization")
    assert answer.sources[0].paper_id == new.paper_id


def test_every_abstract_sentence_is_stored_with_a_vector_of_its_own_tokens(seed_engine):
    papers = seed_engine.index.all_papers()
    stored = seed_engine.index.sentences_of(papers)
    embedder = seed_engine.index.embedder
    assert set(stored) == {p.paper_id for p in papers}
    own = total = 0
    for i, paper in enumerate(papers):
        sentences = stored[paper.paper_id]
        assert sentences.texts == split_sentences(paper.abstract)
        assert np.allclose(np.linalg.norm(sentences.vectors, axis=1), 1.0, atol=1e-3)
        if i % 3:
            continue  # every third paper's sentences are embedded alone below (the slow part): 102 sentences
        # Pooled from the right tokens: a stored vector is closest to its own sentence embedded alone far more
        # often than chance (~1 in 8 sentences per abstract); 76 of those 102 seed sentences are (224 of all 294).
        alone = embedder.embed(sentences.texts)
        own += int(((sentences.vectors @ alone.T).argmax(axis=1) == np.arange(len(alone))).sum())
        total += len(alone)
    assert own / total >= 0.7, (own, total)


def test_an_index_without_stored_sentences_still_answers_and_ingest_adds_them(tmp_path, store):
    engine = Engine(Settings.load(**store))
    engine.ingest([SEEDS / "000_99312b63f56aee43.txt"])
    question = "Is there work on making sparse autoencoders cheaper to train?"
    top = engine.ask(question).sources[0]
    # What an index written before sentences were stored looks like: no sentences, the old chunking marker.
    engine.index.sentences.delete(where={"paper_id": top.paper_id})
    meta = engine.index.papers.get(ids=[top.paper_id], include=["metadatas"])["metadatas"][0]
    engine.index.papers.update(ids=[top.paper_id], metadatas=[{**meta, "chunking": "250/30", "sentences": 0}])
    answer = Engine(Settings.load(**store)).ask(question)
    assert answer.sources[0].paper_id == top.paper_id and answer.citations[0].n == 1
    assert answer.citations[0].snippet in top.text
    stats = engine.ingest([SEEDS / "000_99312b63f56aee43.txt"])
    assert stats.updated == 1 and stats.unchanged == engine.index.count() - 1
    assert top.paper_id in engine.index.sentences_of(engine.index.all_papers())


def test_records_with_ids_update_in_place_and_vanish_when_removed_from_their_file(tmp_path, store):
    records = [json.loads(line) for line in (DATA / "papers_small.jsonl").read_text().splitlines()]
    path = tmp_path / "papers.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records))
    engine = Engine(Settings.load(**store))
    assert engine.ingest([path]).added == len(records)

    records[0]["abstract"] += " We also release a new benchmark of cloud incidents."
    del records[1]
    path.write_text("\n".join(json.dumps(r) for r in records))
    stats = engine.ingest([path])
    assert (stats.added, stats.updated, stats.unchanged, stats.removed) == (0, 1, len(records) - 1, 1)
    docs = engine.index.chunks.get(where={"paper_id": records[0]["id"]}, include=["documents"])["documents"]
    assert "cloud incidents" in " ".join(docs)
    assert engine.index.count() == len(records)
    stored = {p.paper_id: p for p in engine.index.all_papers()}
    assert stored[records[0]["id"]].title == records[0]["title"]
    assert stored[records[0]["id"]].decision == records[0]["decision"]
    assert stored[records[0]["id"]].authors == tuple(records[0]["authors"])


def test_a_title_only_paper_is_one_chunk_of_its_title_and_has_no_sentences(tmp_path, store):
    titles = {r["id"]: r["title"] for r in map(json.loads, (DATA / "papers_title_only.jsonl").read_text().splitlines())}
    engine = Engine(Settings.load(**store))
    stats = engine.ingest([DATA / "papers_title_only.jsonl", DATA / "papers_small.jsonl"])
    assert (stats.added, stats.problems) == (10, [])
    chunks = engine.index.chunks.get(where={"paper_id": {"$in": list(titles)}}, include=["documents", "metadatas"])
    pairs = zip((m["paper_id"] for m in chunks["metadatas"]), chunks["documents"], strict=True)
    assert sorted(pairs) == sorted(titles.items())
    assert not engine.index.sentences.get(where={"paper_id": {"$in": list(titles)}}, include=[])["ids"]
    stored = {p.paper_id: p for p in engine.index.all_papers()}
    for pid, title in titles.items():
        assert (stored[pid].title, stored[pid].abstract, stored[pid].has_abstract, stored[pid].sentences) == (
            title, "", False, 0)
    assert all(p.has_abstract for pid, p in stored.items() if pid not in titles)
    again = engine.ingest([DATA / "papers_title_only.jsonl"])
    assert (again.unchanged, again.embedded_chunks) == (2, 0)
    # A store written before `has_abstract` was kept: every paper in it had an abstract.
    lantern = next(pid for pid, p in stored.items() if p.title.startswith("LANTERN"))
    engine.index.papers.update(ids=[lantern], metadatas=[{"has_abstract": None, "enriched_from": None}])
    assert "has_abstract" not in engine.index.papers.get(ids=[lantern], include=["metadatas"])["metadatas"][0]
    old = next(p for p in engine.index.all_papers() if p.paper_id == lantern)
    assert old.has_abstract and old.enriched_from == ""


def test_the_openai_compatible_embedder_works_and_an_index_refuses_the_wrong_embedder(tmp_path):
    from fake_openai import FakeOpenAI

    data_dir = tmp_path / "index"
    with FakeOpenAI() as server:
        engine = Engine(Settings.load(data_dir=data_dir, embedder="openai", embed_base_url=server.base_url,
                                      embed_model="fake-embed", embed_api_key="sk-test-123"))
        stats = engine.ingest([DATA / "papers_small.jsonl"])
        assert stats.added == 8 and stats.embedded_chunks >= 8
        answer = engine.ask("Presto distilling steps and layers to accelerate music generation")
        assert answer.sources[0].title.startswith("Presto!")
        calls = [r for r in server.requests if r["path"] == "/v1/embeddings"]
        assert calls and all(r["body"]["model"] == "fake-embed" for r in calls)
        assert calls[0]["headers"]["Authorization"] == "Bearer sk-test-123"
    with pytest.raises(ConfigError, match="was built with embedder 'openai:fake-embed'"):
        Engine(Settings.load(data_dir=data_dir)).index  # noqa: B018  opening it raises


def test_a_file_with_broken_records_does_not_remove_papers(tmp_path, store):
    records = [json.loads(line) for line in (DATA / "papers_small.jsonl").read_text().splitlines()]
    path = tmp_path / "papers.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records))
    engine = Engine(Settings.load(**store))
    engine.ingest([path])
    lines = path.read_text().splitlines()
    lines[2] = lines[2][:40]  # a save that cut one record short
    path.write_text("\n".join(lines))
    stats = engine.ingest([path])
    assert stats.removed == 0 and stats.skipped == 1
    assert engine.index.count() == len(records)
    path.write_bytes(b"")
    assert engine.ingest([path]).removed == 0
    assert engine.index.count() == len(records)


def _graph(collection) -> tuple[int, int]:
    hnsw = collection.configuration["hnsw"]
    return hnsw["ef_construction"], hnsw["max_neighbors"]


@pytest.mark.filterwarnings("ignore:legacy embedding function config:DeprecationWarning")  # chromadb's, reading it
def test_only_the_searched_collection_gets_a_full_hnsw_graph_and_older_stores_keep_theirs(tmp_path, store,
                                                                                          monkeypatch):
    from rag.store import index as store_index

    # A new store: the papers and sentences, never searched by vector, with the tiny graph; the chunks with Chroma's
    # default one. Read back from Chroma (a new client), not from what we passed.
    engine = Engine(Settings.load(**store))
    engine.ingest([SEEDS / "000_99312b63f56aee43.txt"])
    client = engine.index.client
    names = [engine.index.chunks.name, engine.index.papers.name, engine.index.sentences.name]
    chunks, papers, sentences = (client.get_collection(name) for name in names)
    assert _graph(chunks) == (100, 16)
    assert _graph(papers) == _graph(sentences) == (16, 4)
    assert chunks.configuration["hnsw"]["space"] == papers.configuration["hnsw"]["space"] == "cosine"

    # A store made before (every collection with the default graph) opens, keeps its graphs, ingests and answers.
    old = {**store, "data_dir": tmp_path / "old"}
    if "collection" in store:
        old["collection"] = store["collection"] + "-old"
    monkeypatch.setattr(store_index, "read_by_id_config", store_index.searched_config)
    Engine(Settings.load(**old)).ingest([SEEDS / "000_99312b63f56aee43.txt"])
    monkeypatch.undo()
    reopened = Engine(Settings.load(**old))
    stats = reopened.ingest([SEEDS])
    assert (stats.added, stats.unchanged) == (19, 19)
    assert [_graph(c) for c in (reopened.index.chunks, reopened.index.papers, reopened.index.sentences)] == \
        [(100, 16)] * 3
    answer = reopened.ask("Is there work on making sparse autoencoders cheaper to train?")
    assert answer.citations and answer.citations[0].snippet in answer.sources[0].text


def test_a_missing_or_incompatible_chroma_server_is_a_clear_error(tmp_path):
    from fake_openai import FakeOpenAI  # any HTTP server that is not Chroma

    from rag.store.index import StoreError
    from helpers import free_port

    with pytest.raises(StoreError, match="cannot use the Chroma server at http://127.0.0.1:.*chroma run --path"):
        Engine(Settings.load(data_dir=tmp_path, chroma_url=f"http://127.0.0.1:{free_port()}")).index  # noqa: B018
    with FakeOpenAI() as not_chroma, pytest.raises(StoreError, match="cannot use the Chroma server"):
        Engine(Settings.load(data_dir=tmp_path, chroma_url=f"http://127.0.0.1:{not_chroma.port}")).index  # noqa: B018


def test_a_chroma_server_of_another_major_version_is_refused_at_connect(tmp_path):
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from rag.store.index import StoreError

    class FutureChroma(BaseHTTPRequestHandler):  # answers like a Chroma server, but reports version 2.0.0
        def log_message(self, *args):
            pass

        def do_GET(self):
            path = self.path.split("?")[0]
            body = {"/api/v2/heartbeat": {"nanosecond heartbeat": 1}, "/api/v2/version": "2.0.0",
                    "/api/v2/auth/identity": {"user_id": "", "tenant": "default_tenant",
                                              "databases": ["default_database"]},
                    "/api/v2/tenants/default_tenant": {"name": "default_tenant"}}.get(
                path, {"id": "00000000-0000-0000-0000-000000000000", "name": "default_database",
                       "tenant": "default_tenant"})
            raw = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

    server = ThreadingHTTPServer(("127.0.0.1", 0), FutureChroma)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        with pytest.raises(StoreError, match=r"reports version 2\.0\.0, which this client \(chromadb 1\.5\.9"):
            Engine(Settings.load(data_dir=tmp_path, chroma_url=url)).index  # noqa: B018  opening it raises
    finally:
        server.shutdown()


def _write_jsonl(path, records):
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    return path


def _ids(engine):
    return sorted(engine.index.papers.get(include=[])["ids"])


@pytest.mark.parametrize("together", [False, True], ids=["two-runs", "one-run"])
def test_a_paper_stays_while_another_ingested_file_still_holds_it(tmp_path, store, together):
    records = [json.loads(line) for line in (DATA / "papers_small.jsonl").read_text().splitlines()]
    ids = sorted(r["id"] for r in records)
    everything = _write_jsonl(tmp_path / "p300.jsonl", records)
    subset = _write_jsonl(tmp_path / "subset.jsonl", records[:3])
    engine = Engine(Settings.load(**store))
    if together:  # one run: subset.jsonl's records are exact repeats of p300.jsonl's
        engine.ingest([everything, subset])
    else:
        engine.ingest([everything])
        assert engine.ingest([subset]).unchanged == 3
    assert _ids(engine) == ids

    # B and C leave subset.jsonl, but p300.jsonl still has them; A leaves p300.jsonl, but subset.jsonl still has
    # it. Each order is the one the old code got wrong: it only knew the file a paper was last read from.
    edits = [(subset, records[:1]), (everything, records[1:])]
    for path, kept in reversed(edits) if together else edits:
        _write_jsonl(path, kept)
        stats = engine.ingest([path])
        assert (stats.added, stats.updated, stats.removed, stats.embedded_chunks) == (0, 0, 0, 0)
        assert _ids(engine) == ids
    # Each paper is shown (and counted by `rag stats`) under one file that still holds it.
    assert engine.stats()["sources"] == {"p300.jsonl": 7, "subset.jsonl": 1}
    a = next(p for p in engine.index.all_papers() if p.paper_id == records[0]["id"])
    assert a.source == str(subset.resolve())

    _write_jsonl(everything, records[3:])  # B and C are in no file any more
    stats = engine.ingest([everything])
    assert (stats.added, stats.updated, stats.removed) == (0, 0, 2)
    assert _ids(engine) == sorted([records[0]["id"]] + [r["id"] for r in records[3:]])
    _write_jsonl(subset, records[3:4])  # nor is A
    assert engine.ingest([subset]).removed == 1
    assert _ids(engine) == sorted(r["id"] for r in records[3:])
    assert not engine.index.chunks.get(where={"paper_id": records[0]["id"]}, include=[])["ids"]


def test_a_store_written_before_papers_kept_several_sources_still_mirrors_its_files(tmp_path, store):
    records = [json.loads(line) for line in (DATA / "papers_small.jsonl").read_text().splitlines()]
    everything = _write_jsonl(tmp_path / "p300.jsonl", records)
    engine = Engine(Settings.load(**store))
    engine.ingest([everything])
    # What an older version wrote: one `source` per paper and nothing else about where the paper is.
    got = engine.index.papers.get(include=["metadatas", "documents", "embeddings"])
    old_keys = {"title", "label", "authors", "decision", "venue", "url", "keywords", "year", "source", "position",
                "hash", "chunks", "chunking", "sentences"}
    engine.index.papers.delete(ids=got["ids"])
    engine.index.papers.add(ids=got["ids"], documents=got["documents"], embeddings=got["embeddings"],
                            metadatas=[{k: v for k, v in m.items() if k in old_keys} for m in got["metadatas"]])

    subset = _write_jsonl(tmp_path / "subset.jsonl", records[:2])
    stats = engine.ingest([subset])
    assert (stats.unchanged, stats.embedded_chunks) == (2, 0)
    _write_jsonl(everything, records[1:])  # A stays (subset.jsonl has it)
    assert engine.ingest([everything]).removed == 0
    _write_jsonl(everything, records[2:])  # B stays (subset.jsonl has it); C..H are untouched old records
    stats = engine.ingest([everything])
    assert (stats.removed, stats.unchanged) == (0, len(records) - 2)
    _write_jsonl(subset, records[:1])  # B leaves its last file
    assert engine.ingest([subset]).removed == 1
    assert _ids(engine) == sorted([records[0]["id"]] + [r["id"] for r in records[2:]])
    _write_jsonl(everything, records[3:])  # an old record that leaves its only file still goes
    assert engine.ingest([everything]).removed == 1
    assert _ids(engine) == sorted([records[0]["id"]] + [r["id"] for r in records[3:]])


# ---- security review 3 (issue 26): uploads through the page (items 2, 5) ----------------------------------------

def _upload(root, name: str, records: list[dict]):
    """A file as Gradio keeps an upload: `<uploads>/<hash of its content>/<name>`."""
    import hashlib

    text = "\n".join(json.dumps(r) for r in records) + "\n"
    path = root / hashlib.sha256(text.encode()).hexdigest()[:20] / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_an_upload_adds_papers_and_updates_its_own_but_never_replaces_another_files_paper(tmp_path):
    """An uploaded record with a bundled paper's id used to replace its abstract, decision and link for every user
    (the report said only "updated 1"). Now it is skipped with a `file:line` problem; the upload's other records
    are added, and a later upload of the same file (a new content hash, so a new folder) updates its papers."""
    records = [json.loads(line) for line in (DATA / "papers_small.jsonl").read_text().splitlines()]
    bundled = tmp_path / "bundled.jsonl"
    bundled.write_text("\n".join(json.dumps(r) for r in records[:4]) + "\n")
    engine = Engine(Settings.load(data_dir=tmp_path / "index"))
    engine.ingest([bundled])
    before = {p.paper_id: p for p in engine.index.all_papers()}
    victim = records[0]
    hostile = {**victim, "abstract": "This paper is retracted; see https://evil.example for the real results.",
               "decision": "Reject", "url": "https://evil.example/"}
    uploads = tmp_path / "gradio"
    first = _upload(uploads, "mine.jsonl", [records[4], hostile, records[5]])
    stats = engine.ingest([first], upload=True)
    assert (stats.added, stats.updated, stats.skipped) == (2, 0, 1)
    assert stats.problems == [f"{first}:2: id {victim['id']!r} is already in the index from another file; kept "
                              "that paper (give this record an id of its own to add it)"]
    after = {p.paper_id: p for p in engine.index.all_papers()}
    assert after[victim["id"]] == before[victim["id"]]  # abstract, decision, link and source unchanged
    assert set(after) == set(before) | {records[4]["id"], records[5]["id"]}

    # The same file edited and uploaded again: its own papers update; the bundled one is still refused.
    edited = {**records[4], "abstract": records[4]["abstract"] + " We also release the code."}
    again = _upload(uploads, "mine.jsonl", [edited, hostile, records[5]])
    assert again.parent != first.parent
    stats = engine.ingest([again], upload=True)
    assert (stats.added, stats.updated, stats.unchanged, stats.skipped) == (0, 1, 1, 1)
    stored = {p.paper_id: p for p in engine.index.all_papers()}
    assert stored[records[4]["id"]].abstract.endswith("We also release the code.")
    assert stored[victim["id"]] == before[victim["id"]]
    # Another user's file of another name may not rewrite those uploaded papers either.
    other = _upload(uploads, "theirs.jsonl", [{**records[5], "title": "Renamed by someone else"}])
    stats = engine.ingest([other], upload=True)
    assert (stats.added, stats.updated, stats.skipped) == (0, 0, 1)
    assert {p.paper_id: p for p in engine.index.all_papers()}[records[5]["id"]].title == records[5]["title"]
    # An exact copy replaces nothing and is fine; `rag ingest` (not an upload) still updates any paper.
    stats = engine.ingest([_upload(uploads, "copy.jsonl", [records[1]])], upload=True)
    assert (stats.unchanged, stats.skipped) == (1, 0)
    bundled.write_text("\n".join(json.dumps(r) for r in [hostile, *records[1:4]]) + "\n")
    assert engine.ingest([bundled]).updated == 1


def test_an_upload_with_more_records_than_the_cap_is_refused_before_anything_is_embedded(tmp_path):
    """25,000 valid records in one upload kept both cores busy for minutes and blocked other uploads. Past
    `upload_max_records` the upload is refused with one line naming `rag ingest`; `rag ingest` has no cap."""
    from rag.engine import UploadError
    from rag.errors import one_line

    records = [json.loads(line) for line in (DATA / "papers_small.jsonl").read_text().splitlines()]
    engine = Engine(Settings.load(data_dir=tmp_path / "index", upload_max_records=5))
    path = _upload(tmp_path / "gradio", "big.jsonl", records[:6])
    with pytest.raises(UploadError) as refused:
        engine.ingest([path], upload=True)
    assert one_line(refused.value) == (
        "this upload holds more than 5 papers; the page adds at most 5 at a time (embedding them keeps the server "
        "busy for everyone). Upload it in smaller files, or add it with `rag ingest FILE` where the server runs.")
    assert engine.index.count() == 0
    assert engine.ingest([_upload(tmp_path / "gradio", "ok.jsonl", records[:5])], upload=True).added == 5
    assert engine.ingest([path]).added == 1  # the command line: no cap
    assert Settings.load().upload_max_records == 1000


def test_an_upload_of_millions_of_bad_lines_gets_a_short_report_in_seconds(tmp_path):
    """Issue 49 #1: a 4 MB upload of "x" lines was 2.1 million problems, 90 s under the ingest lock and a 154 MB
    report pushed to the page. The report (what the page and `rag ingest` print) names the first problems, counts
    the rest and says where reading stopped; the summary counts them all."""
    import time

    from rag.store.ingest import MAX_PROBLEMS, MAX_PROBLEMS_NAMED

    engine = Engine(Settings.load(data_dir=tmp_path / "index"))
    path = _upload(tmp_path / "gradio", "x.jsonl", [])
    path.write_text("x\n" * 2_097_152)
    started = time.perf_counter()
    stats = engine.ingest([path], upload=True)
    assert time.perf_counter() - started < 20
    assert len(stats.problems) == MAX_PROBLEMS_NAMED + 2 and sum(map(len, stats.problems)) < 20_000
    assert stats.problems[-2] == (f"{path}: … and {MAX_PROBLEMS + 1 - MAX_PROBLEMS_NAMED:,} more like this: "
                                  "invalid JSON: Expecting value")
    assert stats.problems[-1].startswith(f"{path}:{MAX_PROBLEMS + 1}: stopped reading here")
    assert (stats.added, stats.skipped, stats.problem_count) == (0, MAX_PROBLEMS + 1, MAX_PROBLEMS + 1)


def _open_files(under) -> list[str]:
    import os

    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # closed while listing (the listing's own descriptor)
            continue
        if target.startswith(str(under)):
            found.append(target)
    return found


def test_closing_an_engine_releases_its_stores_files_and_a_later_use_reopens_them(tmp_path):
    """chromadb keeps one system per store path for the whole process until its client is closed: a dropped
    engine kept ~19 descriptors (SQLite, vector segments) forever, and a test worker ran past 1,024 of them."""
    engine = Engine(Settings.load(data_dir=tmp_path / "index"))
    engine.ingest([SEEDS])
    assert engine.ask("prompt compression for long contexts").sources
    derived = engine.derive(llm_model=None)
    assert len(_open_files(tmp_path)) >= 4  # the SQLite file and the segments' files
    derived.close()  # it shares the index: the engine that opened it closes it
    assert len(_open_files(tmp_path)) >= 4 and engine.index.count() == 38
    engine.close()
    assert _open_files(tmp_path) == []
    engine.close()  # twice is harmless
    assert engine.ask("prompt compression for long contexts").sources  # reopened on use
    assert engine.ingest([SEEDS]).unchanged == 38
    engine.close()
    assert _open_files(tmp_path) == []
    with Engine(Settings.load(data_dir=tmp_path / "index")) as again:
        assert again.index.count() == 38
    assert _open_files(tmp_path) == []


def test_a_question_asked_while_an_upload_is_stored_says_its_papers_are_not_in_yet(tmp_path):
    """A question asked while "Add papers" is still storing an upload was answered "Not covered" with no word of
    the papers on their way (issue 53); it now says how many are still being stored and to ask again. After the
    upload, the same question finds the new paper and the notice is gone."""
    import threading

    records = [json.loads(line) for line in (DATA / "papers_small.jsonl").read_text().splitlines()]
    bundled = tmp_path / "bundled.jsonl"
    bundled.write_text("\n".join(json.dumps(r) for r in records[:4]) + "\n")
    engine = Engine(Settings.load(data_dir=tmp_path / "index"))
    engine.ingest([bundled])
    upload = _upload(tmp_path / "gradio", "mine.jsonl", records[4:6])
    midway, go_on = threading.Event(), threading.Event()

    def progress(done: int, todo: int) -> None:
        midway.set()
        assert go_on.wait(60)

    worker = threading.Thread(target=engine.ingest, args=([upload],), kwargs={"upload": True, "progress": progress})
    worker.start()
    try:
        assert midway.wait(120)
        asked = engine.ask(records[4]["title"])
    finally:
        go_on.set()
        worker.join(120)
    assert any(n.startswith("2 added papers are still being stored; this searched the 4 already in.")
               for n in asked.notices), asked.notices
    after = engine.ask(records[4]["title"])
    assert not any("still being stored" in n for n in after.notices)
    assert after.citations and after.sources[0].paper_id == records[4]["id"]
    assert engine.indexing.adding == 0
