"""Ingest under bad input: generated files (hypothesis) and hand-written broken ones. No traceback, every bad
record reported as `file:line: reason`, every good record in the same files kept, exit codes 0 / 1 / 2.

Generated inputs: 150 per property in `make test`, 1,000+ per property under `make soak` (--soak)."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess

import pytest
from helpers import DATA, ROOT, rag_cmd, without_capabilities
from hypothesis import HealthCheck, given, settings, strategies as st

from rag.store.ingest import MIN_ABSTRACT_CHARS, normalize_text, read_paths, stable_id

FUZZ = dict(deadline=None, suppress_health_check=list(HealthCheck), derandomize=False)
PROBLEM_LINE = re.compile(r"^(?P<path>.+?)(?::(?P<line>\d+))?: (?P<reason>\S.*)$")


def examples(request_soak: bool) -> int:
    return 1_000 if request_soak else 150


# ---- generated JSON lines: good records mixed with every kind of bad one ------------------------------------

_words = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=12)
good_abstract = st.lists(_words, min_size=5, max_size=40).map(" ".join).filter(
    lambda a: len(normalize_text(a)) >= MIN_ABSTRACT_CHARS)
junk = st.one_of(st.integers(), st.floats(allow_nan=False), st.booleans(), st.lists(st.integers(), max_size=3),
                 st.dictionaries(st.text(max_size=5), st.integers(), max_size=2))


def _record(draw, index: int, kind: str) -> dict:
    """A generated record with id g<index>, spoilt as `kind` says when that is about its abstract."""
    record = {"id": f"g{index}", "title": draw(st.text(max_size=40)), "abstract": draw(good_abstract),
              "authors": draw(st.one_of(st.lists(st.text(max_size=20), max_size=4), st.text(max_size=40)))}
    if kind == "no_abstract":
        del record["abstract"]
    elif kind == "abstract_type":
        record["abstract"] = draw(junk)
    return record


@st.composite
def jsonl_line(draw, index: int):
    """(kind, bytes of one line); kind "good" records carry id g<index>."""
    kind = draw(st.sampled_from(["good", "good", "good", "no_abstract", "abstract_type", "id_type", "short",
                                 "not_object", "broken_json", "bad_utf8", "bad_url"]))
    record = _record(draw, index, kind)
    if kind == "id_type":
        record["id"] = draw(st.one_of(st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3),
                                                                                          st.integers(), max_size=2),
                                      st.floats(allow_nan=False)))
    elif kind == "short":
        record["abstract"] = draw(st.text(alphabet="abc ", max_size=MIN_ABSTRACT_CHARS - 1))
    elif kind == "bad_url":
        record["url"] = "javascript:" + draw(st.text(max_size=10))
    if kind == "not_object":
        line = json.dumps(draw(junk)).encode()
    elif kind == "broken_json":
        line = json.dumps(record).encode()[: draw(st.integers(1, 30))]
    elif kind == "bad_utf8":
        text = json.dumps(record, ensure_ascii=True).encode()
        cut = text.index(b'"abstract": "') + len(b'"abstract": "')
        bad = draw(st.sampled_from([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\x80\x80", b"\\ud800", b"\\udfff"]))
        line = text[:cut] + bad + text[cut:]  # raw bytes that are not UTF-8, or a JSON-escaped lone surrogate
    else:
        line = json.dumps(record, ensure_ascii=draw(st.booleans())).encode()
    return kind, line


@st.composite
def jsonl_file(draw):
    n = draw(st.integers(1, 25))
    return [draw(jsonl_line(i)) for i in range(n)]


def _check_problems(problems, path) -> dict[int, str]:
    """Every problem is `file:line: reason` (or `file: reason` for the whole file); returns line -> reason."""
    by_line = {}
    for problem in problems:
        match = PROBLEM_LINE.match(str(problem))
        assert match and match["path"] == str(path), str(problem)
        assert "Traceback" not in match["reason"]
        if match["line"]:
            by_line[int(match["line"])] = match["reason"]
    return by_line


def test_generated_jsonl_keeps_every_good_record_and_reports_every_bad_line(tmp_path_factory, soak):
    @settings(max_examples=examples(soak), **FUZZ)
    @given(jsonl_file())
    def check(lines):
        path = tmp_path_factory.mktemp("fuzz") / "papers.jsonl"
        path.write_bytes(b"\n".join(line for _, line in lines) + b"\n")
        result = read_paths([path])
        good = [f"g{i}" for i, (kind, _) in enumerate(lines) if kind == "good"]
        assert [p.paper_id for p in result.papers] == good
        bad_lines = {i + 1 for i, (kind, _) in enumerate(lines) if kind != "good"}
        assert set(_check_problems(result.problems, path)) == bad_lines
        assert result.files == ([str(path)] if not bad_lines else [])

    check()


# ---- generated pretty-printed JSON arrays: a broken record must not take the records after it ----------------

@st.composite
def array_element(draw, index: int):
    """(kind, text of one element of `json.dumps(records, indent=2)`); kind "good" records carry id g<index>.
    The broken ones are what a hand edit or a cut-short save leaves: an unclosed string, a bare word, a record
    whose end is missing, and a value nested deeper than the JSON decoder recurses."""
    kind = draw(st.sampled_from(["good", "good", "good", "no_abstract", "abstract_type", "not_object",
                                 "unclosed_string", "bare_word", "cut_short", "nested"]))
    record = _record(draw, index, kind)
    value = draw(junk) if kind == "not_object" else record
    text = "\n".join("  " + line for line in json.dumps(value, indent=2, ensure_ascii=draw(st.booleans())).split("\n"))
    id_field = f'"id": "g{index}"'  # its first occurrence is the key itself: quotes inside strings are escaped
    if kind == "unclosed_string":
        text = text.replace(id_field, id_field[:-1], 1)
    elif kind == "bare_word":
        text = text.replace(id_field, f'"id": g{index}', 1)
    elif kind == "cut_short":
        text = text[: draw(st.integers(3, len(text) - 1))]  # keeps the opening "{", loses the closing one
    elif kind == "nested":
        depth = draw(st.integers(10_000, 20_000))  # hypothesis raises the recursion limit by 2,000 while it runs
        field = draw(st.sampled_from(["abstract", "authors", "unknown"]))
        text = text.replace(id_field, f'{id_field}, "{field}": {"[" * depth}{"]" * depth}', 1)
    return kind, text


def test_generated_pretty_json_arrays_keep_every_good_record_and_report_every_bad_one(tmp_path_factory, soak):
    @settings(max_examples=examples(soak), **FUZZ)
    @given(st.integers(1, 15).flatmap(lambda n: st.tuples(*(array_element(i) for i in range(n)))))
    def check(elements):
        path = tmp_path_factory.mktemp("fuzz") / "papers.json"
        path.write_text("[\n" + ",\n".join(text for _, text in elements) + "\n]\n", encoding="utf-8")
        result = read_paths([path])
        assert [p.paper_id for p in result.papers] == [f"g{i}" for i, (kind, _) in enumerate(elements)
                                                       if kind == "good"]
        starts, line = [], 2  # the line of each element's first character; line 1 is the "["
        for _, text in elements:
            starts.append(line)
            line += text.count("\n") + 1
        bad_lines = {start for start, (kind, _) in zip(starts, elements, strict=False) if kind != "good"}
        assert set(_check_problems(result.problems, path)) == bad_lines
        assert len(result.problems) == len(bad_lines)

    check()


@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".csv", ".txt"])
def test_random_bytes_never_raise_and_every_problem_has_a_place(tmp_path_factory, soak, suffix):
    @settings(max_examples=examples(soak) // 2, **FUZZ)
    @given(st.one_of(st.binary(max_size=3000),
                     st.text(max_size=3000).map(lambda t: t.encode("utf-8", "surrogatepass")),
                     st.lists(st.sampled_from([b"{", b"}", b"[", b"]", b",", b'"', b"\n", b"\r\n", b"abstract",
                                               b'"abstract": ', b"\xff", b"a" * 30, b"\n\n", b":", b"\\"]),
                              max_size=200).map(b"".join)))
    def check(data):
        path = tmp_path_factory.mktemp("bytes") / ("input" + suffix)
        path.write_bytes(data)
        result = read_paths([path])
        _check_problems(result.problems, path)
        for paper in result.papers:
            assert len(paper.abstract) >= MIN_ABSTRACT_CHARS
            json.dumps(dataclasses.asdict(paper), ensure_ascii=False).encode("utf-8")  # storable: no lone surrogates

    check()


# ---- hand-written broken files, through the real CLI and a real store --------------------------------------

GOOD = [{"id": f"ok-{i}", "title": f"Good paper {i}",
         "abstract": f"A perfectly ordinary abstract number {i} about graph neural networks and their training."}
        for i in range(6)]


def _broken_tree(base):
    """A directory of broken files, each also holding good records; returns (dir, good ids, bad locations)."""
    d = base / "inbox"
    d.mkdir()
    (d / "random.jsonl").write_bytes(os.urandom(4096).replace(b"\n", b"\x00").replace(b"\r", b"\x00"))
    (d / "latin1.jsonl").write_bytes(
        (json.dumps(GOOD[0]) + "\n").encode() + '{"id": "l1", "abstract": "Caf\u00e9 r\u00e9sum\u00e9 na\u00efve '
        'text in Latin-1 bytes here."}\n'.encode("latin-1"))
    (d / "empty.jsonl").write_bytes(b"")
    (d / "huge.jsonl").write_text(json.dumps(GOOD[1]) + "\n" + json.dumps({"id": "big", "abstract": "x" * 10_000_000})
                                  + "\n")
    (d / "huge_line.txt").write_text("Header line\n\n" + "word " * 2_000_000 + "\n\n" + GOOD[2]["abstract"] + "\n")
    (d / "types.jsonl").write_text("\n".join([
        json.dumps(GOOD[3]), json.dumps({"id": "t1", "abstract": 42}), json.dumps({"id": "t2", "title": "no abstract"}),
        json.dumps({"id": ["t3"], "abstract": GOOD[0]["abstract"] + " Other."}), json.dumps([1, 2, 3]),
        json.dumps({"id": "t4", "abstract": "An abstract long enough but with a bad author list.",
                    "authors": {"a": 1}}),
    ]) + "\n")
    conflict = {**GOOD[4], "abstract": "Different text under the same id, which is a conflict."}
    (d / "dups.jsonl").write_text(json.dumps(GOOD[4]) + "\n" + json.dumps(conflict) + "\n")
    (d / "quotes.csv").write_text(
        'id,title,abstract\n'
        f'{GOOD[5]["id"]},{GOOD[5]["title"]},"{GOOD[5]["abstract"]}"\n'
        'q1,Broken,"An opening quote that never closes, so the row is broken\n'
        'q2,After,"A good row right after the broken one, which must survive."\n')
    unreadable = d / "unreadable.jsonl"
    unreadable.write_text(json.dumps({"id": "u1", "abstract": "A record nobody can read because of permissions."}))
    unreadable.chmod(0)
    locked = d / "locked"
    locked.mkdir()
    (locked / "inside.jsonl").write_text(json.dumps({"id": "u2", "abstract": "In a directory nobody may list here."}))
    locked.chmod(0)
    # GOOD[2] is an untitled paragraph of huge_line.txt, whose id is the hash of its text
    good = {g["id"] for g in GOOD} - {"ok-2"} | {"q2", stable_id(GOOD[2]["abstract"])}
    bad = {("random.jsonl", 1), ("latin1.jsonl", 2), ("empty.jsonl", None), ("huge.jsonl", 2),
           ("huge_line.txt", 3), ("types.jsonl", 2), ("types.jsonl", 3), ("types.jsonl", 4), ("types.jsonl", 5),
           ("types.jsonl", 6), ("dups.jsonl", 2), ("quotes.csv", 3), ("unreadable.jsonl", None), ("locked", None)}
    return d, good, bad


def test_a_directory_of_broken_files_ingests_every_good_record_and_lists_every_bad_one(tmp_path):
    inbox, good, bad = _broken_tree(tmp_path)
    data_dir = tmp_path / "index"
    run = subprocess.run(without_capabilities(rag_cmd("ingest", "-q", str(inbox), data_dir=data_dir)), cwd=ROOT,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 1, run.stderr  # partial
    assert "Traceback" not in run.stderr + run.stdout
    skipped = [line.removeprefix("skipped ") for line in run.stderr.splitlines() if line.startswith("skipped ")]
    places = set()
    for line in skipped:
        match = PROBLEM_LINE.match(line)
        assert match, line
        places.add((os.path.basename(match["path"]), int(match["line"]) if match["line"] else None))
    assert places == bad, "\n".join(skipped)
    assert "cannot read: Permission denied" in run.stderr and "cannot list directory: Permission denied" in run.stderr
    stats = json.loads(subprocess.run(rag_cmd("stats", "--json", data_dir=data_dir), cwd=ROOT,
                                      capture_output=True, text=True, timeout=300).stdout)
    assert stats["papers"] == len(good)
    from rag.config import Settings
    from rag.engine import Engine

    assert set(Engine(Settings.load(data_dir=data_dir)).index.papers.get(include=[])["ids"]) == good


def test_exit_codes_0_all_ingested_2_nothing_ingested(tmp_path):
    ok = subprocess.run(rag_cmd("ingest", "-q", str(DATA / "papers_small.jsonl"), data_dir=tmp_path / "a"),
                        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0, ok.stderr
    junk = tmp_path / "junk.jsonl"
    junk.write_bytes(b"\xff\xfe not json\n[1, 2]\n")
    nothing = subprocess.run(rag_cmd("ingest", "-q", str(junk), data_dir=tmp_path / "b"), cwd=ROOT,
                             capture_output=True, text=True, timeout=300)
    assert nothing.returncode == 2
    assert nothing.stderr.splitlines() == [f"skipped {junk}:1: invalid JSON: Expecting value",
                                           f"skipped {junk}:2: expected a JSON object, got a list"]
