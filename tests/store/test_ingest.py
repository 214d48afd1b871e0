"""Reading files into papers: the seed format, JSON/JSONL/CSV, directories, and bad records reported by file:line."""

from __future__ import annotations

import json

import pytest
from helpers import CORPUS, SEEDS, seed_paragraphs

from rag.store.ingest import read_paths, stable_id
from rag.text import first_sentence


def test_seed_files_give_38_untitled_papers_with_labels_and_previews():
    result = read_paths([SEEDS])  # as read: the titles come later, from the bundled list (tests/store/test_catalog.py)
    assert result.problems == []
    assert len(result.papers) == 38
    assert sorted(p.source.rsplit("/", 1)[-1] for p in result.papers).count("000_99312b63f56aee43.txt") == 19
    first = next(p for p in result.papers if p.source.endswith("000_99312b63f56aee43.txt") and p.position == 3)
    assert first.abstract == seed_paragraphs("000_99312b63f56aee43.txt")[2]
    assert first.title == "" and first.has_abstract and first.enriched_from == ""
    assert first.label == "000_99312b63f56aee43.txt #3"
    assert first_sentence(first.abstract) == ("Sparse autoencoders (SAEs) are a recent technique for decomposing "
                                              "neural network activations into human-interpretable features.")
    assert first.line > 1  # the header line is not a paper
    assert len({p.paper_id for p in result.papers}) == 38


def test_ids_are_stable_hashes_of_the_normalized_abstract():
    a = read_paths([SEEDS]).papers
    b = read_paths([SEEDS]).papers
    assert [p.paper_id for p in a] == [p.paper_id for p in b]
    text = a[0].abstract
    assert stable_id(text) == stable_id("  " + text.upper().replace(" ", "\n  ") + " ")
    assert stable_id(text) != stable_id(text + " More.")


def test_jsonl_bad_records_are_reported_and_good_ones_kept(tmp_path):
    good = "A study of sparse autoencoders that makes them cheaper to train with experts."
    lines = [
        json.dumps({"id": "p1", "title": "Good one", "abstract": good, "authors": ["A. B", "C. D"]}),
        '{"id": "p2", "abstract": "broken JSON here',
        json.dumps({"id": "p3", "title": "No abstract"}),
        json.dumps({"id": "p4", "abstract": good + " Two.", "authors": 7}),
        json.dumps(["not", "an", "object"]),
        "",
        json.dumps({"id": "p6", "abstract": good + " Six.", "authors": "Ann Lee; Bo Chen", "year": "2025",
                    "decision": "Accept (Oral)", "url": "https://openreview.net/forum?id=p6"}),
        json.dumps({"id": "p7", "abstract": good + " Seven.", "url": "javascript:alert(1)"}),
        json.dumps({"id": "p8", "abstract": good + " Eight.", "year": "soon"}),
    ]
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join(lines) + "\n")
    result = read_paths([path])
    assert [p.paper_id for p in result.papers] == ["p1", "p6"]
    problems = [str(p) for p in result.problems]
    assert problems[0].startswith(f"{path}:2: invalid JSON")
    assert f"{path}:3: no abstract" in problems
    assert f"{path}:4: authors must be a list or text, got a number" in problems
    assert f"{path}:5: expected a JSON object, got a list" in problems
    assert any(p.startswith(f"{path}:8: url must start with http") for p in problems)
    assert any(p.startswith(f"{path}:9: year must be a whole number") for p in problems)
    six = result.papers[1]
    assert six.authors == ("Ann Lee", "Bo Chen") and six.year == 2025 and six.decision == "Accept (Oral)"


def test_json_array_reports_the_line_of_each_bad_record(tmp_path):
    records = [{"id": "a", "abstract": "An abstract long enough to be kept as a paper."},
               {"id": "b", "abstract": ""},
               {"id": "c", "abstract": "Another abstract long enough to be kept here."}]
    path = tmp_path / "papers.json"
    path.write_text(json.dumps(records, indent=2))
    result = read_paths([path])
    assert [p.paper_id for p in result.papers] == ["a", "c"]
    bad_line = path.read_text().splitlines().index("  {", 2) + 1  # the second record's opening brace
    assert [str(p) for p in result.problems] == [f"{path}:{bad_line}: no abstract"]


def test_csv_rows_and_broken_rows(tmp_path):
    path = tmp_path / "papers.csv"
    path.write_text('id,title,abstract,authors\n'
                    'c1,"Title, with comma","An abstract long enough, with a comma inside it.","X; Y"\n'
                    'c2,Too,many,fields,here\n'
                    'c3,Third,"A third abstract that is long enough to keep.",Z\n')
    result = read_paths([path])
    assert [p.paper_id for p in result.papers] == ["c1", "c3"]
    assert result.papers[0].title == "Title, with comma" and result.papers[0].authors == ("X", "Y")
    assert [str(p) for p in result.problems] == [f"{path}:3: CSV row has 5 fields, header has 4"]
    no_abstract = tmp_path / "other.csv"
    no_abstract.write_text("id,title\n1,x\n")
    problems = [str(p) for p in read_paths([no_abstract]).problems]
    assert problems == [f"{no_abstract}:1: CSV header has no 'abstract' column"]


def test_directories_are_walked_and_hidden_or_unknown_files_skipped(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.jsonl").write_text(json.dumps({"id": "a", "abstract": "Abstract A is long enough."}))
    (tmp_path / "b.txt").write_text("Header line\n\nAbstract B, a paragraph long enough.\n")
    (tmp_path / ".hidden.jsonl").write_text(json.dumps({"id": "h", "abstract": "Hidden abstract is long."}))
    (tmp_path / "notes.pdf").write_bytes(b"%PDF")
    result = read_paths([tmp_path])
    assert sorted(p.paper_id for p in result.papers) == sorted(["a", stable_id("Abstract B, a paragraph long enough.")])
    assert result.problems == []
    explicit = read_paths([tmp_path / "notes.pdf", tmp_path / "missing.jsonl"])
    assert [p.reason for p in explicit.problems][1] == "no such file or directory"
    assert "unsupported file type '.pdf'" in explicit.problems[0].reason


def test_duplicates_and_undecodable_bytes_cost_only_their_record(tmp_path):
    path = tmp_path / "dups.jsonl"
    one = json.dumps({"id": "d", "abstract": "The first version of this abstract."}).encode()
    same = one
    other = json.dumps({"id": "d", "abstract": "A different text under the same id."}).encode()
    bad = b'{"id": "x", "abstract": "Bytes \xff\xfe that are not UTF-8 at all."}'
    fine = json.dumps({"id": "f", "abstract": "A fine record after the broken one."}).encode()
    path.write_bytes(b"\n".join([one, same, other, bad, fine]))
    result = read_paths([path])
    assert [p.paper_id for p in result.papers] == ["d", "f"]
    assert result.papers[0].abstract == "The first version of this abstract."
    reasons = [str(p) for p in result.problems]
    assert reasons[0].startswith(f"{path}:3: duplicate id 'd' with different content")
    assert reasons[1] == f"{path}:4: abstract is not valid UTF-8"
    assert len(reasons) == 2  # the exact repeat on line 2 is not a problem


def test_a_title_only_record_is_a_paper_and_other_records_without_abstract_stay_bad(tmp_path):
    path = tmp_path / "titles.jsonl"
    lines = [
        {"id": "t1", "title": "Quokka Telemetry with Tiny Transformers", "authors": ["Ada Q"], "has_abstract": False},
        {"title": "A title-only paper without an id", "has_abstract": False},
        {"id": "t3", "has_abstract": False},
        {"id": "t4", "title": "Says it has none", "abstract": "But it has an abstract after all, a long one.",
         "has_abstract": False},
        {"id": "t5", "title": "Forgot the flag"},
        {"id": "t6", "title": "A bad flag", "has_abstract": "no"},
        {"id": "t7", "title": "Flag true", "abstract": "An ordinary abstract that is long enough.",
         "has_abstract": True},
    ]
    path.write_text("\n".join(json.dumps(r) for r in lines) + "\n")
    result = read_paths([path])
    assert [p.paper_id for p in result.papers] == ["t1", stable_id("A title-only paper without an id", "title-"),
                                                   "t7"]
    t1 = result.papers[0]
    assert (t1.has_abstract, t1.abstract, t1.title, t1.authors) == (
        False, "", "Quokka Telemetry with Tiny Transformers", ("Ada Q",))
    assert result.papers[2].has_abstract
    assert [str(p) for p in result.problems] == [
        f'{path}:3: no title: a paper without an abstract ("has_abstract": false) needs its title',
        f"{path}:4: has_abstract is false but the record has an abstract; drop one of the two",
        f"{path}:5: no abstract",
        f"{path}:6: has_abstract must be true or false, got text"]
    csv = tmp_path / "titles.csv"
    csv.write_text("id,title,abstract,has_abstract\nc1,Only a title,,false\n"
                   "c2,Both,An ordinary abstract that is long enough.,\n")
    assert [(p.paper_id, p.has_abstract) for p in read_paths([csv]).papers] == [("c1", False), ("c2", True)]


def test_the_bundled_iclr_2025_list_reads_without_a_problem():
    from rag.store.catalog import BUNDLED

    with_abstracts, title_only = (read_paths([path]) for path in BUNDLED)
    assert with_abstracts.problems == [] and title_only.problems == []
    assert len(with_abstracts.papers) == 2114 and all(p.has_abstract and p.title for p in with_abstracts.papers)
    assert len(title_only.papers) == 1592 and not any(p.has_abstract for p in title_only.papers)
    assert all(p.title and p.authors and p.decision.startswith("Accept") for p in title_only.papers)
    assert not {p.paper_id for p in with_abstracts.papers} & {p.paper_id for p in title_only.papers}


def test_empty_and_oversized_inputs(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    assert [p.reason for p in read_paths([empty]).problems] == ["empty file"]
    huge = tmp_path / "huge.jsonl"
    huge.write_text(json.dumps({"id": "h", "abstract": "word " * 10_000}) + "\n")
    assert "abstract too long" in read_paths([huge]).problems[0].reason


def test_the_2114_paper_corpus_reads_as_is():
    result = read_paths([CORPUS])
    assert result.problems == []
    assert len(result.papers) == 2114
    assert all(p.title and p.url.startswith("https://openreview.net/") for p in result.papers)
    assert {p.decision for p in result.papers} == {"Accept (Oral)", "Accept (Spotlight)", "Accept (Poster)"}


DEEP = "[" * 1_500 + "]" * 1_500  # deeper than json's C decoder recurses (RecursionError, not JSONDecodeError)
TOO_DEEP = "nested too deeply (lists or objects hundreds of levels deep)"


def _good(i):
    return {"id": f"g{i}", "abstract": f"A good abstract number {i}, long enough to be kept as a paper."}


@pytest.mark.parametrize("field", ["abstract", "authors", "unknown_field"])
def test_a_deeply_nested_record_costs_only_its_own_line(tmp_path, field):
    path = tmp_path / "deep.jsonl"
    deep = json.dumps({"id": "d", "abstract": _good(0)["abstract"], field: "x"}).replace('"x"', DEEP)
    big_number = json.dumps({"id": "n", "abstract": _good(0)["abstract"], "year": 0}).replace("0}", "1" * 5_000 + "}")
    path.write_text("\n".join([json.dumps(_good(1)), deep, json.dumps(_good(2)), big_number, json.dumps(_good(3))]))
    result = read_paths([path])
    assert [p.paper_id for p in result.papers] == ["g1", "g2", "g3"]
    assert [str(p) for p in result.problems] == [f"{path}:2: {TOO_DEEP}",
                                                 f"{path}:4: invalid JSON: Exceeds the limit (4300 digits) for "
                                                 "integer string conversion: value has 5000 digits"]


def test_a_deeply_nested_record_in_a_json_array_costs_only_itself(tmp_path):
    path = tmp_path / "deep.json"
    records = [_good(1), {**_good(9), "authors": "x"}, _good(2)]
    path.write_text(json.dumps(records, indent=2).replace('"x"', DEEP))
    result = read_paths([path])
    assert [p.paper_id for p in result.papers] == ["g1", "g2"]
    assert [str(p) for p in result.problems] == [f"{path}:6: {TOO_DEEP}"]


def test_an_unexpected_error_converting_one_record_costs_only_that_record(tmp_path, monkeypatch):
    import rag.store.ingest

    def broken_year(value):
        if value == "boom":
            raise RuntimeError("something nobody expected")
        return None

    monkeypatch.setattr(rag.store.ingest, "_year", broken_year)
    path = tmp_path / "papers.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [_good(1), {**_good(2), "year": "boom"}, _good(3)]))
    result = read_paths([path])
    assert [p.paper_id for p in result.papers] == ["g1", "g3"]
    assert [str(p) for p in result.problems] == [
        f"{path}:2: cannot read this record (RuntimeError: something nobody expected)"]


@pytest.mark.parametrize("damage", [
    ('"id": "g3"', '"id": "g3'),  # a closing quote dropped
    ('"id": "g3"', '"id": g3'),  # a bare word
    ('"id": "g3"', '"id": "g3", ]],'),  # stray closing brackets
])
def test_a_broken_record_in_a_pretty_printed_array_costs_only_itself(tmp_path, damage):
    path = tmp_path / "papers.json"
    text = json.dumps([{**_good(i), "authors": ["A. B", "C. D"]} for i in range(6)], indent=2)
    path.write_text(text.replace(*damage, 1))
    result = read_paths([path])
    assert [p.paper_id for p in result.papers] == ["g0", "g1", "g2", "g4", "g5"]
    start = text.splitlines().index('    "id": "g3",')  # 0-based index of the line after the record's "{"
    assert [f"{p.path}:{p.line}" for p in result.problems] == [f"{path}:{start}"]


def test_a_record_cut_short_in_a_pretty_printed_array_costs_only_itself(tmp_path):
    path = tmp_path / "papers.json"
    records = [{**_good(i), "authors": ["A. B", "C. D"]} for i in range(6)]
    lines = json.dumps(records, indent=2).splitlines()
    start = lines.index('    "id": "g3",') - 1
    cut = lines[:start + 2] + [lines[start + 2][:30]] + lines[start + 8:]  # g3 ends mid-abstract, unclosed
    path.write_text("\n".join(cut))
    result = read_paths([path])
    assert [p.paper_id for p in result.papers] == ["g0", "g1", "g2", "g4", "g5"]
    assert [f"{p.path}:{p.line}" for p in result.problems] == [f"{path}:{start + 1}"]


def test_an_exact_repeat_in_another_file_is_kept_once_and_noted_as_held_there_too(tmp_path):
    a = tmp_path / "a.jsonl"
    b = tmp_path / "b.jsonl"
    a.write_text(json.dumps(_good(1)) + "\n" + json.dumps(_good(2)) + "\n")
    b.write_text(json.dumps(_good(2)) + "\n" + json.dumps(_good(2)) + "\n")
    result = read_paths([a, b])
    assert [(p.paper_id, p.source, p.position, p.also_in) for p in result.papers] == [
        ("g1", str(a), 1, ()), ("g2", str(a), 2, ((str(b), 1),))]
    assert result.problems == [] and result.files == [str(a), str(b)]


# ---- security review 3 (issue 26): items 11, 12, 21 ----------------------------------------------------------

BROKEN_LINE = '{"abstract": "' + "x" * 80 + '", "title": "no closing brace"\n'


def test_broken_json_lines_parse_in_linear_time(tmp_path):
    """A file of broken lines (each an object cut short) used to take time quadratic in its size, since every
    JSONDecodeError counted the line breaks from the start of the file: 1 MB 9.9 s, 2 MB 34 s, 4 MB 146 s here
    (9.7 MB 23.5 s, 40 MB over 300 s in the review), holding the upload slot. Now 2 MB takes about 0.6 s."""
    import time

    path = tmp_path / "broken.jsonl"
    path.write_text(BROKEN_LINE * (2_000_000 // len(BROKEN_LINE)) + json.dumps(_good(1)) + "\n")
    started = time.perf_counter()
    result = read_paths([path])
    seconds = time.perf_counter() - started
    assert [p.paper_id for p in result.papers] == ["g1"]
    lines = 2_000_000 // len(BROKEN_LINE)
    assert result.problem_count == lines  # the first named (`report`), the rest counted
    assert result.report()[-1] == f"{path}: … and {lines - 100:,} more like this: invalid JSON: Expecting ',' delimiter"
    assert seconds < 8, f"{seconds:.1f} s for 2 MB of broken lines"


def _whole_text_records(text: str) -> list:
    """What `_json_records` gave before it decoded in windows: every value decoded against the whole text."""
    from rag.store.ingest import _type_name

    decoder, out, pos = json.JSONDecoder(), [], 0
    while True:
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1
        if pos >= len(text):
            return out
        line = text.count("\n", 0, pos) + 1
        try:
            value, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            out.append((line, f"invalid JSON: {exc.msg}"))
            pos = text.find("\n", pos) + 1 or len(text)
            continue
        out.append((line, value if isinstance(value, dict) else f"expected a JSON object, got {_type_name(value)}"))


@pytest.mark.parametrize("text", [
    '{"a": 1}\n{"a": 2',                             # cut short at the end of the file
    '{"a": 1,\n"b": 2}\n{"c": 3}\n',                  # one object over two lines, then another
    '{"a": "unterminated\n{"b": 1}\n',                # a string broken by a line break
    '{"a": 1}{"b": 2} {"c": 3}\n{"d": [1,\n2,\n3]}',  # concatenated, and a list over lines
    '{"a": 1,\n{"b": 2}\n',                           # a cut object followed by a good one
    '{"a": tru\ne}\n{"b": 1}\n',                      # a literal broken by a line break
    '{"a": "\\u12\n"}\n{"b": 1}\n',                   # an escape broken by a line break
    '{"a":\n\n\n\n\n\n\n\n\n1}\n',                    # a value many lines on
    '[1, 2,\n3]\n"text"\n42\n{"x": 1}',              # not objects
    '{"a": "' + "y" * 5000 + '"\n' * 3 + '{"ok": 1}',  # long broken lines
])
def test_window_decoding_gives_what_decoding_the_whole_text_gave(text):
    from rag.store.ingest import _json_records

    assert list(_json_records(text, allow_array=False)) == _whole_text_records(text)


def test_author_and_keyword_lists_are_bounded(tmp_path):
    """2,500 authors of 2 KB each made every answer citing the paper carry a 5 MB cards panel. The bundled
    papers have at most 83 authors (1,310 characters); a record past 200 names or 10,000 characters is skipped
    with its reason, its neighbours kept."""
    path = tmp_path / "many.jsonl"
    many = {"id": "many", "abstract": _good(0)["abstract"], "authors": [f"Author {i}" for i in range(2_500)]}
    long = {"id": "long", "abstract": _good(0)["abstract"], "keywords": ["k" * 1_900] * 6}
    fine = {"id": "fine", "abstract": _good(0)["abstract"], "authors": [f"Author {i}" for i in range(83)],
            "keywords": "a; b; c"}
    path.write_text("\n".join(json.dumps(r) for r in (many, long, fine, _good(1))) + "\n")
    result = read_paths([path])
    assert [p.paper_id for p in result.papers] == ["fine", "g1"]
    assert len(result.papers[0].authors) == 83 and result.papers[0].keywords == ("a", "b", "c")
    assert [str(p) for p in result.problems] == [
        f"{path}:1: too many authors (2,500; the limit is 200)",
        f"{path}:2: keywords too long (11,412 characters in all; the limit is 10,000)"]


def test_zero_width_bidi_and_control_characters_are_dropped_from_paper_text(tmp_path):
    """Characters that draw nothing made a copy of an abstract another paper (the same sentences quoted twice),
    reordered a title on the page (`Alice \\u202eecilA`) and carried terminal escapes to `rag ask`."""
    abstract = seed_paragraphs("000_99312b63f56aee43.txt")[0]
    hidden = abstract.replace(" ", " \u200b", 3).replace("e", "e\u200d", 2).replace(". ", ".\u202e ", 1)
    path = tmp_path / "copies.jsonl"
    path.write_text(json.dumps({"abstract": abstract}) + "\n" + json.dumps({"abstract": hidden}) + "\n"
                    + json.dumps({"abstract": abstract, "title": "Clear\x1b[2J\x1b]0;owned\x07 title\x9b31m",
                                  "authors": ["Alice \u202eecilA"], "id": "t"}) + "\n")
    result = read_paths([path])
    assert result.problems == []
    assert [p.paper_id for p in result.papers] == [stable_id(abstract), "t"]  # the copy is the same paper
    titled = result.papers[1]
    assert titled.title == "Clear title" and titled.authors == ("Alice ecilA",)


def test_the_invisible_class_covers_every_control_and_format_character():
    import sys
    import unicodedata

    from rag.text import INVISIBLE

    missed = [hex(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) in ("Cc", "Cf")
              and chr(c) not in "\t\n\r" and not INVISIBLE.match(chr(c))]
    assert missed == []


def test_millions_of_bad_lines_cost_a_short_report_bounded_memory_and_seconds(tmp_path):
    """A 4 MB file of "x" lines is 2.1 million bad records: keeping each as a Problem took 730 MB and 41 s here, and
    its 97 MB report went to the page (and to the terminal). The report names the first problems and counts the
    rest by kind, and reading stops once the file is plainly not a papers file."""
    import time
    import tracemalloc

    from rag.store.ingest import MAX_PROBLEMS, MAX_PROBLEMS_NAMED

    path = tmp_path / "x.jsonl"
    path.write_text("x\n" * 2_097_152)
    tracemalloc.start()
    started = time.perf_counter()
    try:
        result = read_paths([path])
        seconds = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 40 * 1024 * 1024 and seconds < 20, (peak, seconds)
    assert result.papers == [] and result.files == []
    report = result.report()
    assert report[:MAX_PROBLEMS_NAMED] == [f"{path}:{n}: invalid JSON: Expecting value"
                                           for n in range(1, MAX_PROBLEMS_NAMED + 1)]
    counted = MAX_PROBLEMS + 1 - MAX_PROBLEMS_NAMED
    assert report[MAX_PROBLEMS_NAMED:] == [
        f"{path}: … and {counted:,} more like this: invalid JSON: Expecting value",
        f"{path}:{MAX_PROBLEMS + 1}: stopped reading here, after {MAX_PROBLEMS + 1:,} problems and 0 papers: this "
        "does not look like a papers file (nothing after this line, or in the files after it, was read). Fix it, or "
        "ingest its good records on their own."]
    assert result.problem_count == result.skipped == MAX_PROBLEMS + 1


def test_past_the_named_problems_the_rest_are_counted_by_file_and_kind_and_good_records_read_on(tmp_path):
    """A real file with many bad records among more good ones is read to its end; its problems beyond the first
    MAX_PROBLEMS_NAMED are counted per file and kind, numbers and quoted values aside."""
    from rag.store.ingest import MAX_PROBLEMS_NAMED

    lines = []
    for i in range(300):
        lines.append(json.dumps(_good(i)))
        lines.append(json.dumps({"abstract": "short " + "x" * (i % 7)}) if i % 2 else "{broken")
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join(lines) + "\n")
    result = read_paths([path])
    assert len(result.papers) == 300 and result.problem_count == result.skipped == 300
    report = result.report()
    assert len(report) == MAX_PROBLEMS_NAMED + 2 and report[0] == f"{path}:2: invalid JSON: Expecting property name " \
                                                                    "enclosed in double quotes"
    assert report[MAX_PROBLEMS_NAMED:] == [
        f"{path}: … and 100 more like this: invalid JSON: Expecting property name enclosed in double quotes",
        f"{path}: … and 100 more like this: abstract too short (N characters)"]


# Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt, Unicode 15.1), which `unicodedata` does not
# expose, and the blank characters that are not whitespace: what README promises ingest drops.
DEFAULT_IGNORABLE = [(0xAD, 0xAD), (0x34F, 0x34F), (0x61C, 0x61C), (0x115F, 0x1160), (0x17B4, 0x17B5),
                     (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
                     (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3),
                     (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF)]
BLANKS = [0x115F, 0x1160, 0x3164, 0xFFA0, 0x2800, 0x034F]


def test_the_invisible_class_covers_every_default_ignorable_and_blank_character():
    from rag.text import INVISIBLE

    missed = [hex(c) for a, b in DEFAULT_IGNORABLE for c in range(a, b + 1) if not INVISIBLE.match(chr(c))]
    assert missed + [hex(c) for c in BLANKS if not INVISIBLE.match(chr(c))] == []


def test_a_copy_told_apart_only_by_blank_or_ignorable_characters_is_the_same_paper(tmp_path):
    """U+115F (Hangul choseong filler), U+2800 (blank Braille pattern) and U+034F (combining grapheme joiner) kept a
    copy of an abstract apart from it: a second paper, its sentences quoted twice."""
    abstract = seed_paragraphs("000_99312b63f56aee43.txt")[0]
    hidden = abstract.replace(" ", " \u115f", 2).replace("e", "e\u034f", 2).replace(". ", ".\u2800 ", 1)
    hidden = hidden.replace("a", "a\u3164\uffa0\u1160\ufe0f", 1)
    path = tmp_path / "copies.jsonl"
    path.write_text(json.dumps({"abstract": abstract}) + "\n" + json.dumps({"abstract": hidden}) + "\n"
                    + json.dumps({"abstract": abstract, "title": "Blank\u2800\u115f title", "id": "t"}) + "\n")
    result = read_paths([path])
    assert result.problems == []
    assert [p.paper_id for p in result.papers] == [stable_id(abstract), "t"]
    assert result.papers[1].title == "Blank title"
