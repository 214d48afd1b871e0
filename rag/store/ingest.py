"""Ingest: files on disk -> `Paper` records, with every rejected record reported as `file:line: reason`.

Formats (chosen by extension; directories are walked recursively, hidden files skipped):
- `.txt` / `.md`: the seed format, a header line then one abstract per non-empty paragraph;
- `.jsonl` / `.ndjson`: JSON lines (or concatenated objects); `.json`: also a JSON array of objects;
- `.csv`: a header row with the same column names.
Record fields: `abstract` (required), `id`, `title`, `authors` (list or "a; b" / "a, b" string), `decision`,
`venue`, `url`, `keywords` (list or string), `year`. Unknown fields are ignored.

A title-only paper is a record with `"has_abstract": false`, a title and no abstract (the bundled list of accepted
ICLR 2025 papers whose abstracts no source had, rag/data/). It is read so that it can be found and listed by title
and authors; nothing downstream quotes it, since there is no text to quote. Any other record without an abstract
stays a bad record: a lost abstract is a broken file, not a title-only paper.

A bad record never stops the file: it is skipped with its location and the good records around it are kept. That
holds for any failure, not only the foreseen ones: a value nested deeper than the JSON decoder recurses, a number
too long to convert, or a bug in a field check costs its record, and reading resumes at the next record (in a
JSON array, at the next element by bracket depth and indentation, not at the next line, which may be the middle
of the broken record). This module only reads; what is new, changed or unchanged is decided by `rag.store.index`
against the store.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import json
import os
import re
import unicodedata
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from collections.abc import Callable, Iterator, Sequence

from rag.text import visible

SEED_SUFFIXES = {".txt", ".md"}
JSON_SUFFIXES = {".jsonl", ".ndjson", ".json"}
CSV_SUFFIXES = {".csv"}
SUPPORTED_SUFFIXES = SEED_SUFFIXES | JSON_SUFFIXES | CSV_SUFFIXES

MIN_ABSTRACT_CHARS = 20
MAX_ABSTRACT_CHARS = 20_000  # real abstracts are < 5k characters; a 10 MB "abstract" is a broken file
MAX_FIELD_CHARS = 2_000  # title, venue, url, ...
# Authors and keywords: the bundled 2,114 + title-only ICLR 2025 papers have at most 83 authors (1,310 characters
# in all); 2,500 authors of 2 KB each made every answer that cited the paper carry a 5 MB cards panel.
MAX_NAMES = 200
MAX_NAMES_CHARS = 10_000
# A report names the first MAX_PROBLEMS_NAMED problems and counts the rest by kind (file and reason, its numbers and
# quoted values left out), at most MAX_PROBLEM_KINDS kinds: a 4 MB file of "x" lines is 2.1 million bad records,
# and keeping each as a Problem took 850 MB and a 154 MB report pushed to the page.
MAX_PROBLEMS_NAMED = 100
MAX_PROBLEM_KINDS = 50
# ... and reading stops once there are more than MAX_PROBLEMS problems and PROBLEMS_PER_PAPER times as many problems
# as papers: the file is not a papers file, and each bad line costs the decoder's error (2.1 million took 40-90 s
# under the ingest lock). A big real file with some bad records (150,000 of 3 million) is read to its end.
MAX_PROBLEMS = 100_000
PROBLEMS_PER_PAPER = 10

_SURROGATE = re.compile("[\ud800-\udfff]")  # undecodable bytes (surrogateescape) or JSON "\\ud800"
_JSON_MARK = re.compile(r'[][{}",\\\n]')  # what `_next_element` looks at
_INDENT = re.compile(r"[ \t]*")
_SPECIFIC = re.compile(r"'[^']{2,}'|\"[^\"]{2,}\"|\d[\d,.]*")  # what differs between problems of one kind


@dataclass(frozen=True)
class Paper:
    """One paper as read from a file. `paper_id` is stable across runs (see `stable_id`)."""

    paper_id: str
    abstract: str
    title: str = ""
    authors: tuple[str, ...] = ()
    decision: str = ""
    venue: str = ""
    url: str = ""
    keywords: tuple[str, ...] = ()
    year: int | None = None
    source: str = ""  # the file it came from
    position: int = 0  # 1-based record number within that file
    line: int = 0  # line where the record starts
    also_in: tuple[tuple[str, int], ...] = ()  # (file, position) of exact repeats in other files read with it
    has_abstract: bool = True  # False: a title-only paper (`abstract` is empty)
    enriched_from: str = ""  # where the id, title, ... came from when the file had only the abstract (catalog)

    @property
    def label(self) -> str:
        """The title, or for untitled papers a readable stand-in: `file.txt #3`."""
        return self.title or f"{Path(self.source).name} #{self.position}"

    @property
    def content_hash(self) -> str:
        """Changes whenever anything that is indexed or shown changes. (`has_abstract` is the abstract being
        empty, and `enriched_from` comes with the title, authors, ... it names, so neither needs a place here:
        hashes of stores written before they existed stay valid.)"""
        payload = json.dumps(
            [self.title, self.abstract, list(self.authors), self.decision, self.venue, self.url,
             list(self.keywords), self.year],
            ensure_ascii=False,
        )
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


@dataclass
class Problem:
    """A record or file that was skipped (or partly ignored), with where and why."""

    path: str
    line: int | None
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}" if self.line else f"{self.path}: {self.reason}"


@dataclass
class ReadResult:
    """What `read_paths` read. Its problems are bounded whatever the files hold: `problems` keeps the first
    MAX_PROBLEMS_NAMED, `more` counts the others by kind (`kind_of`), `problem_count` and `skipped` count them all.
    Add problems with `add_problem`, which keeps these in step."""

    papers: list[Paper] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    # Files read without a single problem: only these are mirrored (papers no longer in them leave the index).
    # A file with a broken record keeps its old papers, since the broken record may be one of them.
    files: list[str] = field(default_factory=list)
    problem_count: int = 0  # every problem, named or counted
    skipped: int = 0  # of those, the records skipped (a problem with a line; the others are about a whole file)
    more: dict[tuple[str, str], int] = field(default_factory=dict)  # (file, kind) -> problems not named
    too_many_papers: bool = False  # `read_paths(max_papers=...)` stopped reading at the paper past the cap
    stopped: Problem | None = None  # where and why reading stopped at MAX_PROBLEMS problems (see there)

    def add_problem(self, problem: Problem) -> None:
        self.problem_count += 1
        self.skipped += problem.line is not None
        if len(self.problems) < MAX_PROBLEMS_NAMED:
            self.problems.append(problem)
            return
        key = (problem.path, kind_of(problem.reason))
        if key not in self.more and len(self.more) >= MAX_PROBLEM_KINDS:
            key = ("", "other problems")
        self.more[key] = self.more.get(key, 0) + 1

    def report(self) -> list[str]:
        """Each named problem as `file:line: reason`, then one line per kind of the rest
        (`file: … and 99,900 more like this: invalid JSON: Expecting value`), then where reading stopped, if it did."""
        counted = sorted(self.more.items(), key=lambda item: -item[1])
        return [str(p) for p in self.problems] + [
            f"{path + ': ' if path else ''}… and {n:,} more like this: {kind}" for (path, kind), n in counted
        ] + ([str(self.stopped)] if self.stopped else [])


@functools.lru_cache(maxsize=1024)  # the reasons of a broken file repeat: a dict lookup, not a regex, per problem
def kind_of(reason: str) -> str:
    """A problem's reason without what differs from record to record (numbers, quoted values), cut to 200
    characters: "abstract too short (3 characters)" -> "abstract too short (N characters)"."""
    kind = _SPECIFIC.sub(lambda m: "N" if m.group()[0].isdigit() else "'…'", reason)
    return kind if len(kind) <= 200 else kind[:199] + "…"


def normalize_text(text: str) -> str:
    """NFKC, without the characters that draw nothing (`rag.text.visible`: zero-width, bidi controls, terminal
    escapes), whitespace collapsed: so a sentence with a zero-width space in it is the sentence without, for ids,
    repeats and answers, and no stored text carries an escape to a terminal or a reordering to a page."""
    return re.sub(r"\s+", " ", visible(unicodedata.normalize("NFKC", text))).strip()


def stable_id(text: str, prefix: str = "abs-") -> str:
    """The id of a paper that has none: a hash of its normalized abstract (case and spacing ignored), or for a
    title-only paper of its title (prefix "title-")."""
    return prefix + hashlib.sha256(normalize_text(text).lower().encode("utf-8")).hexdigest()[:16]


def read_paths(paths: Sequence[str | Path], max_papers: int | None = None) -> ReadResult:
    """Read files and directories into papers. Duplicate ids keep the first record and report the others; an exact
    repeat in another file is noted in `also_in`, since that file holds the paper too (see `rag.store.index`).
    With `max_papers`, reading stops at the first paper past it (`too_many_papers`): an upload the page refuses
    anyway costs no more than that many papers' memory."""
    result = ReadResult()
    seen: dict[str, int] = {}  # id -> its index in result.papers
    for path in _expand(paths, result.add_problem):
        clean = True
        for item in _read_file(path):
            if isinstance(item, Problem):
                result.add_problem(item)
                clean = False
                if result.problem_count > MAX_PROBLEMS and result.problem_count > PROBLEMS_PER_PAPER * len(
                        result.papers):
                    result.stopped = Problem(str(path), item.line, (
                        f"stopped reading here, after {result.problem_count:,} problems and "
                        f"{len(result.papers):,} papers: this does not look like a papers file (nothing after this "
                        "line, or in the files after it, was read). Fix it, or ingest its good records on their own."))
                    return result
                continue
            index = seen.get(item.paper_id)
            if index is not None:
                first = result.papers[index]
                if first.content_hash != item.content_hash:
                    result.add_problem(Problem(str(path), item.line,
                                               f"duplicate id {item.paper_id!r} with different content "
                                               f"(first at {first.source}:{first.line}); kept the first"))
                elif item.source not in {first.source, *(source for source, _ in first.also_in)}:
                    result.papers[index] = replace(first, also_in=first.also_in + ((item.source, item.position),))
                continue  # an exact repeat is harmless and not worth a warning
            if max_papers is not None and len(result.papers) >= max_papers:
                result.too_many_papers = True
                return result
            seen[item.paper_id] = len(result.papers)
            result.papers.append(item)
        if clean:
            result.files.append(str(path))
    return result


def _expand(paths: Sequence[str | Path], problem: Callable[[Problem], None]) -> Iterator[Path]:
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            problem(Problem(str(path), None, "no such file or directory"))
        elif path.is_dir():
            errors: list[OSError] = []
            children: list[Path] = []
            for root, dirs, files in os.walk(path, onerror=errors.append):
                dirs[:] = [d for d in dirs if not d.startswith(".")]
                children += [Path(root, f) for f in files if not f.startswith(".")]
            for exc in errors:  # os.walk skips what it cannot list; say so
                problem(Problem(str(exc.filename or path), None, f"cannot list directory: {exc.strerror or exc}"))
            for child in sorted(children):
                # is_file() also drops broken links, FIFOs (reading one would block) and sockets.
                if (child.suffix.lower() in SUPPORTED_SUFFIXES and child.name.lower() != "readme.md"
                        and child.is_file()):
                    yield child
        elif path.suffix.lower() not in SUPPORTED_SUFFIXES:
            problem(Problem(str(path), None, f"unsupported file type {path.suffix or '(none)'!r}; "
                            f"use one of {', '.join(sorted(SUPPORTED_SUFFIXES))}"))
        else:
            yield path


def _read_file(path: Path) -> Iterator[Paper | Problem]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        yield Problem(str(path), None, f"cannot read: {exc.strerror or exc}")
        return
    # surrogateescape keeps undecodable bytes visible as lone surrogates, so one bad byte costs one record,
    # not the whole file.
    text = data.decode("utf-8", errors="surrogateescape").removeprefix("\ufeff")
    del data  # this generator lives as long as the file is read: hold its text once, not twice
    if not text.strip():
        yield Problem(str(path), None, "empty file")
        return
    suffix = path.suffix.lower()
    if suffix in SEED_SUFFIXES:
        records = _seed_records(text)
    elif suffix in CSV_SUFFIXES:
        records = _csv_records(text, str(path))
    else:
        records = _json_records(text, allow_array=suffix == ".json")
    position = 0
    for line, record in records:
        if isinstance(record, str):  # a parse error for this location
            yield Problem(str(path), line, record)
            continue
        position += 1
        try:
            item: Paper | Problem = _to_paper(record, source=str(path), position=position, line=line)
        except ValueError as exc:
            item = Problem(str(path), line, str(exc))
        except Exception as exc:  # what no check foresaw costs this record only (see `_unreadable`)
            item = Problem(str(path), line, _unreadable(exc))
        yield item


def _seed_records(text: str) -> Iterator[tuple[int, dict | str]]:
    """Header line, then paragraphs separated by blank lines; each paragraph is one abstract."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip()), len(lines)) + 1  # skip the header line
    para: list[str] = []
    para_line = 0
    for i in range(start, len(lines) + 1):
        line = lines[i] if i < len(lines) else ""
        if line.strip():
            if not para:
                para_line = i + 1
            para.append(line.strip())
        elif para:
            yield para_line, {"abstract": " ".join(para)}
            para = []


def _json_records(text: str, allow_array: bool = True) -> Iterator[tuple[int, dict | str]]:
    """JSON lines, concatenated objects, or (`allow_array`, for .json files) one array of objects; a broken value
    costs only its own line (in an array, its own element). In a .jsonl file a line holding a list is a bad record,
    not the start of an array."""
    window = _Window(text)
    line_of = _LineCounter(text)
    pos = _skip_ws(text, 0)
    in_array = allow_array and text.startswith("[", pos)
    indent = None  # the column of the elements of a pretty-printed array (first element on a line of its own)
    if in_array:
        first = _skip_ws(text, pos + 1)
        indent = first - text.rfind("\n", 0, first) - 1 if "\n" in text[pos:first] else None
        pos = first
    while pos < len(text):
        if in_array and text.startswith("]", pos):
            pos = _skip_ws(text, pos + 1)
            if pos < len(text):
                yield line_of(pos), "unexpected content after the closing ']'"
            return
        line = line_of(pos)
        try:
            value, end = window.decode(pos)
        except Exception as exc:  # not only JSONDecodeError: RecursionError, ValueError for a 5,000-digit number
            yield line, _decode_failure(exc)
            if in_array:
                pos = _next_element(text, pos, indent)
                continue
            nl = text.find("\n", pos)
            if nl < 0:
                return
            pos = _skip_ws(text, nl + 1)
            continue
        if isinstance(value, dict):
            yield line, value
        else:
            yield line, f"expected a JSON object, got {_type_name(value)}"
        pos = _skip_ws(text, end)
        if in_array and text.startswith(",", pos):
            pos = _skip_ws(text, pos + 1)


class _Window:
    """`json.JSONDecoder.raw_decode` over whole lines of `text` starting at the value to read, not over `text`.

    Why: a `JSONDecodeError` counts the line breaks from the start of the string it was given to say where it is,
    so decoding every broken line of a big file against the whole text costs time quadratic in the file's size
    (a 9.7 MB file of broken lines took 23.5 s, a 40 MB one over 300 s). Here the decoder sees a window that
    starts at or before the value and ends at a line break; the JSON that follows a line break cannot change how
    the text before it decodes, so a result or error that stays inside the window is the one the whole text gives.
    A value that runs into the window's end (a record spread over lines, a string or object cut off there) is
    decoded again in a window twice as long, so a long record costs about its length, not the file's."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.start = self.end = 0  # the window is text[start:end]; end is a line break or the text's end
        self.chunk = ""

    def decode(self, pos: int) -> tuple[Any, int]:
        if not self.start <= pos < self.end:
            self._move(pos, pos + 1)
        while True:
            try:
                value, end = _DECODER.raw_decode(self.chunk, pos - self.start)
                return value, self.start + end  # a value that ends at a line break ends there in the text too
            except json.JSONDecodeError as exc:
                if self.end < len(self.text) and (exc.pos >= len(self.chunk.rstrip())
                                                  or exc.msg.startswith("Unterminated string")):
                    self._move(pos, pos + 2 * (self.end - pos) + 1)  # ran into the window's end: a longer one
                    continue
                self._forget()
                raise
            except Exception:
                self._forget()
                raise

    def _move(self, start: int, at_least: int) -> None:
        """The window from `start` to the first line break at or after `at_least` (or the text's end)."""
        nl = self.text.find("\n", at_least - 1)
        self.start, self.end = start, nl if nl >= 0 else len(self.text)
        self.chunk = self.text[start:self.end]

    def _forget(self) -> None:
        """After an error: the next value gets a window of its own, so its own error counts lines from it."""
        self.start = self.end = 0
        self.chunk = ""


_DECODER = json.JSONDecoder()


def _next_element(text: str, pos: int, indent: int | None) -> int:
    """Where reading resumes after the broken array element that starts at `pos`: the next element, or the array's
    closing `]`. Found by bracket depth: the first `,` outside the element's brackets and strings (a raw line break,
    which a JSON string cannot hold, ends an unclosed one). In a pretty-printed array (`indent`: the column of its
    elements) the layout decides as well, since a record cut short or with a stray bracket leaves the depth wrong:
    a line that starts at that column (but for a closing bracket) starts the next element, a `]` further left ends
    the array, and a `,` counts only if an object or list follows it on the same line. At column 0, where
    `json.dumps(indent=0)` puts every line, only a line opening an object or list starts an element."""
    depth, in_string, i = 0, False, pos
    while (mark := _JSON_MARK.search(text, i)) is not None:
        i, char = mark.start(), mark.group()
        if char == "\n":
            in_string = False
            if indent is not None:
                start = _INDENT.match(text, i + 1).end()  # type: ignore[union-attr]  # [ \t]* matches anywhere
                column, opener = start - i - 1, text[start:start + 1]
                starts = opener in ("{", "[") if indent == 0 else opener not in ("", "}", "]", ",", "\r", "\n")
                if column == indent and starts or column < indent and opener == "]":
                    return start
        elif in_string:
            if char == '"':
                in_string = False
            elif char == "\\" and not text.startswith("\n", i + 1):
                i += 1  # the escaped character
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
        elif char in "]}":
            if depth == 0 and char == "]" and indent is None:
                return i
            depth = max(depth - 1, 0)  # a stray closing bracket is part of the damage
        elif char == "," and depth == 0:
            after = _skip_ws(text, i + 1)
            if indent is None or text.startswith(("{", "["), after) and "\n" not in text[i:after]:
                return after
        i += 1
    return len(text)


def _csv_records(text: str, path: str) -> Iterator[tuple[int, dict | str]]:
    """A header row, then one record per row (quoted fields may span lines). A broken row is reported at its first
    line and reading resumes on the next line, so a stray quote cannot swallow the good rows after it."""
    lines = text.splitlines(keepends=True)
    try:
        header = next(csv.reader(lines[:1], strict=True))
    except (csv.Error, StopIteration) as exc:
        yield 1, f"unreadable CSV header: {exc}"
        return
    header = [h.strip().lower() for h in header]
    if "abstract" not in header:
        yield 1, "CSV header has no 'abstract' column"
        return
    source = _Lines(lines, 1)
    reader = csv.reader(source, strict=True)
    while source.next < len(lines):
        first = source.next  # 0-based index of the row's first line
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            problem = f"broken CSV row: {exc}"
        else:
            if not row:
                continue
            if len(row) <= len(header):
                yield first + 1, dict(zip(header, row, strict=False))
                continue
            problem = f"CSV row has {len(row)} fields, header has {len(header)}"
        yield first + 1, problem
        source.next = first + 1
        reader = csv.reader(source, strict=True)  # a fresh reader: no state left from the broken row


class _Lines:
    """An iterator over lines whose position can be set back (for `_csv_records`)."""

    def __init__(self, lines: list[str], start: int) -> None:
        self.lines, self.next = lines, start

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> str:
        if self.next >= len(self.lines):
            raise StopIteration
        self.next += 1
        return self.lines[self.next - 1]


def _to_paper(record: dict[str, Any], *, source: str, position: int, line: int) -> Paper:
    if _title_only(record):
        return _title_only_paper(record, source=source, position=position, line=line)
    abstract = record.get("abstract")
    if _blank(abstract):
        raise ValueError("no abstract")
    if not isinstance(abstract, str):
        raise ValueError(f"abstract must be text, got {_type_name(abstract)}")
    abstract = normalize_text(abstract)
    if _SURROGATE.search(abstract):
        raise ValueError("abstract is not valid UTF-8")
    if len(abstract) < MIN_ABSTRACT_CHARS:
        raise ValueError(f"abstract too short ({len(abstract)} characters)")
    if len(abstract) > MAX_ABSTRACT_CHARS:
        raise ValueError(f"abstract too long ({len(abstract):,} characters; the limit is {MAX_ABSTRACT_CHARS:,})")

    return _paper(record, abstract, _text(record.get("title"), "title"), source=source, position=position, line=line)


def _title_only(record: dict[str, Any]) -> bool:
    """Whether the record says it has no abstract: `"has_abstract": false` (in a CSV, the text "false"; an empty
    cell or a missing field means it has one)."""
    flag = record.get("has_abstract")
    if flag is None or isinstance(flag, str) and flag.strip().lower() in ("", "true", "false"):
        flag = str(flag).strip().lower() != "false"
    if not isinstance(flag, bool):
        raise ValueError(f"has_abstract must be true or false, got {_type_name(flag)}")
    return not flag


def _title_only_paper(record: dict[str, Any], *, source: str, position: int, line: int) -> Paper:
    if not _blank(record.get("abstract")):
        raise ValueError("has_abstract is false but the record has an abstract; drop one of the two")
    title = _text(record.get("title"), "title")
    if not title:
        raise ValueError('no title: a paper without an abstract ("has_abstract": false) needs its title')
    return _paper(record, "", title, source=source, position=position, line=line)


def _paper(record: dict[str, Any], abstract: str, title: str, *, source: str, position: int, line: int) -> Paper:
    """A Paper from a record whose abstract (empty: a title-only paper) and title are already checked."""
    raw_id = record.get("id")
    if _blank(raw_id):
        paper_id = stable_id(abstract) if abstract else stable_id(title, "title-")
    elif isinstance(raw_id, (str, int)) and not isinstance(raw_id, bool):
        paper_id = _text(raw_id, "id")
    else:
        raise ValueError(f"id must be text or a number, got {_type_name(raw_id)}")

    url = _text(record.get("url"), "url")
    if url and not re.match(r"^https?://", url, re.IGNORECASE):
        raise ValueError(f"url must start with http:// or https://, got {url[:60]!r}")

    return Paper(
        paper_id=paper_id,
        abstract=abstract,
        title=title,
        authors=_names(record.get("authors"), "authors"),
        decision=_text(record.get("decision"), "decision"),
        venue=_text(record.get("venue"), "venue"),
        url=url,
        keywords=_names(record.get("keywords"), "keywords"),
        year=_year(record.get("year")),
        source=source,
        position=position,
        line=line,
        has_abstract=bool(abstract),
    )


def _blank(value: Any) -> bool:
    return value is None or isinstance(value, str) and not value.strip()


def _decode_failure(exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"invalid JSON: {exc.msg}"
    if isinstance(exc, ValueError):  # int() refusing a number of over 4,300 digits; its advice is for programmers
        return f"invalid JSON: {str(exc).split(';')[0]}"
    return _unreadable(exc)


def _unreadable(exc: Exception) -> str:
    """The reason for a record that failed in a way no check foresaw. Any Exception costs only its record, even
    MemoryError: what the record's decoding allocated is freed with it, so the next record has the memory back.
    KeyboardInterrupt and SystemExit are not Exceptions and still stop the ingest."""
    if isinstance(exc, RecursionError):
        return "nested too deeply (lists or objects hundreds of levels deep)"
    return f"cannot read this record ({type(exc).__name__}: {exc})"


def _text(value: Any, name: str) -> str:
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError(f"{name} must be text, got {_type_name(value)}")
    text = normalize_text(str(value))
    if _SURROGATE.search(text):
        raise ValueError(f"{name} is not valid UTF-8")
    if len(text) > MAX_FIELD_CHARS:
        raise ValueError(f"{name} too long ({len(text):,} characters)")
    return text


def _names(value: Any, name: str) -> tuple[str, ...]:
    if value is None or value == "":
        return ()
    if isinstance(value, str):
        parts = value.split(";") if ";" in value else value.split(",")
    elif isinstance(value, list):
        parts = value
    else:
        raise ValueError(f"{name} must be a list or text, got {_type_name(value)}")
    if len(parts) > MAX_NAMES:
        raise ValueError(f"too many {name} ({len(parts):,}; the limit is {MAX_NAMES})")
    names = tuple(t for t in (_text(p, name) for p in parts) if t)
    if sum(len(t) + 2 for t in names) > MAX_NAMES_CHARS:
        raise ValueError(f"{name} too long ({sum(len(t) + 2 for t in names):,} characters in all; the limit is "
                         f"{MAX_NAMES_CHARS:,})")
    return names


def _year(value: Any) -> int | None:
    if value is None or value == "":
        return None
    try:
        year = int(str(value).strip())
    except ValueError:
        raise ValueError(f"year must be a whole number, got {value!r}") from None
    if not 1900 <= year <= 2200:
        raise ValueError(f"year out of range: {year}")
    return year


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


class _LineCounter:
    """Line number of a position, for positions that only move forward (linear, not quadratic, in big files)."""

    def __init__(self, text: str) -> None:
        self.text, self.pos, self.line = text, 0, 1

    def __call__(self, pos: int) -> int:
        self.line += self.text.count("\n", self.pos, pos)
        self.pos = pos
        return self.line


def _type_name(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "text", bool: "true/false", type(None): "null"}.get(
        type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__
    )
