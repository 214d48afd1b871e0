"""Check that description-style questions describe their paper in other words than the paper's own (issue 29).

    python eval/check_describe.py [SET.jsonl ...] [--corpus rag/data/iclr2025.jsonl]

Without arguments it checks every describe_* set that eval/questions/manifest.toml lists (SETS).
A question is checked against its paper: the gold paper of an answerable question, the `about` paper of a near miss.
The rule, exactly:

1. Tokens. Text is split into runs of ASCII letters and digits (hyphens, apostrophes, slashes split words;
   Chinese characters are not tokens), lowercased and reduced by `stem` (a light suffix rule: plural, -ing, -ed,
   -ly, -ation...; written here because no stemmer is a dependency and inflections are all it has to catch).
   Stop words (STOP: English function words) are dropped.
2. No name. A *name* of the paper is a word of its title or abstract, as written, that has a digit, a capital
   after its first letter ("LaMPlace", "GPT", "RL"), or a capital first letter in the middle of a sentence
   ("Lean"), or any word of the title before its colon ("Scaling Laws: ..." names "Scaling" too); it is
   forbidden in the question when fewer than COMMON_DF (2%) of the corpus's papers use its stem (so "LLM",
   "GPT-4", "ImageNet", "Gaussian" stay usable words of the field, a paper's own coined name does not). A
   question's word matches an acronym (all capitals) written in capitals, singular or plural ("MATH" is the
   benchmark, "math" a word); any other name when their stems (step 1) are equal, in any case for a name with
   a digit or an inner capital ("LaMPlace", "lamplace"), capitalised for a capitalised-only name ("Lean" is
   the name, "lean" a word).
3. No three shared words. No 3 consecutive tokens of the question (after step 1: stemmed, stop words dropped)
   may occur as 3 consecutive tokens of the paper's title or abstract (same processing), unless that 3-gram
   occurs in at least COMMON_DF of the corpus's abstracts (a stock phrase of the field, "large language model",
   that points to no paper).
4. No rare term. No token of the question that occurs in the paper's title or abstract may have a document
   frequency under RARE_DF (0.5%) of the corpus's papers (title + abstract), unless the question lists it in
   `allowed_terms` ({"term": "reason"}), for when no everyday word exists.

Also checked: the question's paper is used by no other set in eval/questions/ (as gold, about, cited, relevant or
pid) nor by another describe set (a set in OLDER_POOL, written on the older sets' papers, only the latter); a "none"
question carries `near_miss` (bool); a near miss names its `about` paper and has `absent_terms` none of which occurs
in that paper's title or abstract; any other "none" question has `absent_terms` none of which occurs in any title or
abstract (whole word, any case, plural -s/-es).
Prints one line per problem and exits 1 on any problem.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from bisect import bisect_right
from collections import Counter
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from eval import manifest  # noqa: E402

# The description-style sets, in eval/questions/manifest.toml's order; those written on the second order of
# eval/sample_describe.py (`pool = "older"`: papers the older, named-question sets use, once the first order, papers
# no set uses, ran out) may share papers with those older sets, never with another describe set.
SETS = [s.path for s in manifest.load() if s.name.startswith("describe_")]
# The sets the manifest lists after its last describe set were written after every describe set, on any paper: a
# later set's use of a paper cannot unblind a describe set written before it, so their papers are not held against
# the describe sets. A new describe set goes after them and is checked against them all.
_LAST = max(i for i, s in enumerate(manifest.load()) if s.name.startswith("describe_"))
LATER = {s.path.resolve() for s in manifest.load()[_LAST + 1:]}
OLDER_POOL = {s.path for s in manifest.load() if s.name.startswith("describe_") and s.pool == "older"}
COMMON_DF = 0.02  # a name or 3-gram used by this share of papers or more is the field's, not the paper's
RARE_DF = 0.005  # a word used by fewer papers than this share is a rare term
STOP = frozenset("""
a about above after again against all also am an and any are as at be because been before being below between
both but by can could did do does doing down during each either few for from further had has have having he her
here hers him his how i if in into is it its itself just me more most my no nor not of off on once only or other
our ours out over own same she should so some such than that the their theirs them then there these they this
those through to too under until up very was we were what when where which while who whom why will with would
you your yours via per whether upon onto within without among amongst across toward towards s t
""".split())
WORD = re.compile(r"[A-Za-z0-9]+")
SENTENCE_END = re.compile(r"[.!?:;]\s*$")


@cache
def stem(word: str) -> str:
    """Lowercase and strip an inflection, so 'optimizes'/'optimizing'/'optimized' and 'placements' match.

    Cached: the corpus's ~900,000 words are a few ten thousand distinct ones, and stemming them was a fifth of
    the run."""
    w = word.lower()
    if len(w) <= 3:
        return w
    for suffix, repl in (("ational", "ate"), ("ization", "ize"), ("isation", "ize"), ("ations", "ate"),
                         ("ation", "ate"), ("ies", "y"), ("sses", "ss"), ("ness", ""), ("ments", "ment"),
                         ("ingly", ""), ("edly", ""), ("ing", ""), ("ed", ""), ("ly", ""), ("es", "e"),
                         ("s", "")):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3 and not (suffix == "s" and w.endswith("ss")):
            w = w[: len(w) - len(suffix)] + repl
            break
    if w.endswith("ise"):
        w = w[:-3] + "ize"
    return w.rstrip("e") if len(w) > 4 else w


def tokens(text: str) -> list[str]:
    """Stemmed content tokens, stop words dropped (rule step 1)."""
    return [stem(w) for w in WORD.findall(text) if w.lower() not in STOP]


def trigrams(toks: list[str]) -> set[tuple[str, str, str]]:
    return {tuple(toks[i:i + 3]) for i in range(len(toks) - 2)}  # type: ignore[misc]


def names(title: str, abstract: str) -> set[str]:
    """The words of a paper that look like names (rule step 2), as written."""
    found = set()
    if ":" in title:
        found |= {w for w in WORD.findall(title.split(":", 1)[0])}
    for text in (title, abstract):
        for m in re.finditer(r"[A-Za-z0-9]+(?:[-'][A-Za-z0-9]+)*", text):
            for w in WORD.findall(m.group()):
                if any(c.isdigit() for c in w) or any(c.isupper() for c in w[1:]):
                    found.add(w)
    # capitalised words in the middle of a sentence of the abstract
    for m in re.finditer(r"\b([A-Z][a-z]+)\b", abstract):
        before = abstract[: m.start()].rstrip()
        if before and not SENTENCE_END.search(before) and not before.endswith(("(", '"', "“")):
            found.add(m.group(1))
    return {w for w in found if w.lower() not in STOP and not w.isdigit()}


class Corpus:
    """Papers by id, with the document frequencies the rule needs."""

    def __init__(self, path: Path):
        self.records: dict[str, dict] = {}
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    rec = json.loads(line)
                    self.records[rec["id"]] = rec
        self.n = len(self.records)
        self.df: Counter[str] = Counter()  # stemmed token -> papers (title + abstract)
        self.raw_df: Counter[str] = Counter()  # word as written (lowercased) -> papers
        self.tri_df: Counter[tuple] = Counter()  # 3-gram of tokens -> abstracts
        self.text: dict[str, str] = {}
        for pid, rec in self.records.items():
            text = f"{rec.get('title', '')}\n{rec.get('abstract', '')}"
            self.text[pid] = text
            self.df.update(set(tokens(text)))
            self.raw_df.update({w.lower() for w in WORD.findall(text)})
            self.tri_df.update(trigrams(tokens(rec.get("abstract", ""))))
        self._folded: tuple[dict[int, str], str, list[int], list[str]] | None = None

    def _fold_index(self) -> tuple[dict[int, str], str, list[int], list[str]]:
        """Every paper's text case-folded the way `re.IGNORECASE` compares characters, joined in corpus order.

        The table maps each character of the corpus to one member of its class of characters that an IGNORECASE
        literal of one matches in the other (asked of `re` itself, so also its odd pairs such as 'ı'/'i' or
        'ſ'/'s'); a term that occurs in a text under IGNORECASE then occurs literally in the folded text."""
        if self._folded is None:
            alphabet = "".join(sorted(set("".join(self.text.values()))))
            rep = {c: c for c in alphabet}

            def find(c: str) -> str:
                while rep[c] != c:
                    c = rep[c]
                return c

            for c in alphabet:
                for other in re.compile(re.escape(c), re.IGNORECASE).findall(alphabet):
                    a, b = find(c), find(other)
                    if a != b:
                        rep[max(a, b)] = min(a, b)
            table = {ord(c): find(c) for c in alphabet}
            starts: list[int] = []
            ids: list[str] = []
            parts: list[str] = []
            pos = 0
            for pid, text in self.text.items():
                starts.append(pos)
                ids.append(pid)
                parts.append(text.translate(table))
                pos += len(text) + 1
            self._folded = (table, "\0".join(parts), starts, ids)
        return self._folded

    def papers_with(self, term: str) -> list[str]:
        """Ids of the papers whose title or abstract match `absent_pattern(term)`, in corpus order.

        The same as searching every paper with the pattern (over 700,000 searches for the describe sets, two thirds
        of the run), but a paper is searched only where the folded term occurs in its folded text (`_fold_index`), a
        condition any match of the pattern fulfils, so the answer is unchanged. A term with a character the
        corpus lacks (whose class `_fold_index` did not work out) falls back to searching every paper."""
        pattern = absent_pattern(term)
        table, folded, starts, ids = self._fold_index()
        if any(ord(c) not in table for c in term):
            return [pid for pid, text in self.text.items() if pattern.search(text)]
        key, pos = term.translate(table), 0
        hits: list[str] = []
        while (at := folded.find(key, pos)) >= 0:
            i = bisect_right(starts, at) - 1
            if pattern.search(self.text[ids[i]]):
                hits.append(ids[i])
            if i + 1 == len(starts):
                break
            pos = starts[i + 1]
        return hits

    def share(self, count: int) -> float:
        return count / self.n


def check_wording(question: str, rec: dict, corpus: Corpus, allowed: dict | None = None) -> list[str]:
    """Problems of one question against its paper under the rule (steps 2-4); empty when it passes."""
    problems = []
    allowed = {stem(t) for t in (allowed or {})}
    title, abstract = rec.get("title", ""), rec.get("abstract", "")
    q_words = WORD.findall(question)
    for name in sorted(names(title, abstract)):
        if corpus.share(corpus.df[stem(name)]) >= COMMON_DF or stem(name) in allowed:
            continue
        if name.isupper() and name.isalpha():  # an acronym: "MATH" is the benchmark, "math" the word
            hit = name in q_words or name + "s" in q_words
        else:
            exact = any(c.isdigit() for c in name) or any(c.isupper() for c in name[1:])
            hit = any(stem(w) == stem(name) and (exact or w[0].isupper()) for w in q_words)
        if hit:
            problems.append(f"uses the paper's name {name!r}")
    q_toks = tokens(question)
    paper_tris = trigrams(tokens(title)) | trigrams(tokens(abstract))
    for tri in sorted(trigrams(q_toks) & paper_tris):
        if corpus.share(corpus.tri_df[tri]) < COMMON_DF:
            problems.append(f"shares three words with the title or abstract: {' '.join(tri)!r}")
    paper_toks = set(tokens(f"{title}\n{abstract}"))
    for tok in sorted(set(q_toks) & paper_toks):
        if corpus.share(corpus.df[tok]) < RARE_DF and tok not in allowed:
            problems.append(f"uses the rare term {tok!r} of the paper (in {corpus.df[tok]} papers); "
                            "say it in everyday words or list it in allowed_terms with a reason")
    return problems


def absent_pattern(term: str) -> re.Pattern:
    return re.compile(r"(?<![\w-])" + re.escape(term) + r"(?:s|es)?(?![\w-])", re.IGNORECASE)


def used_elsewhere(skip: set[Path], corpus: Corpus, only: set[Path] | None = None) -> dict[str, str]:
    """Paper id -> the first other set that uses it (gold, about, cited, relevant, pid); `only` limits the sets read."""
    prefixes = [(re.sub(r"\s+", "", r.get("abstract", "")).lower(), pid) for pid, r in corpus.records.items()]
    used: dict[str, str] = {}
    for path in sorted((ROOT / "eval" / "questions").glob("*.jsonl")):
        if path.resolve() in skip or (only is not None and path.resolve() not in only):
            continue
        for line in path.open(encoding="utf-8"):
            if not line.strip():
                continue
            q = json.loads(line)
            refs = list(q.get("gold") or []) + list(q.get("cited") or []) + list(q.get("relevant") or [])
            refs += [q[k] for k in ("about", "pid") if q.get(k)]
            for ref in refs:
                if ref in corpus.records:
                    used.setdefault(ref, path.name)
                    continue
                key = re.sub(r"\s+", "", ref).lower()
                for abstract, pid in prefixes:
                    if key and abstract.startswith(key):
                        used.setdefault(pid, path.name)
    return used


def check_question(q: dict, corpus: Corpus, used: dict[str, str]) -> tuple[list[str], list[str]]:
    """(problems, the ids of the question's papers)."""
    problems: list[str] = []
    kind = q.get("kind")
    allowed = q.get("allowed_terms") or {}
    if not isinstance(allowed, dict) or not all(isinstance(v, str) and v.strip() for v in allowed.values()):
        problems.append("allowed_terms must map each term to a reason")
        allowed = {}
    if kind == "none":
        if not isinstance(q.get("near_miss"), bool):
            problems.append("a none question needs a boolean near_miss")
        terms = q.get("absent_terms") or []
        if not terms:
            problems.append("a none question needs absent_terms")
        about = q.get("about")
        if q.get("near_miss"):
            if about not in corpus.records:
                problems.append(f"near miss about {about!r}: not a paper of the corpus")
                return problems, []
            for term in terms:
                if absent_pattern(term).search(corpus.text[about]):
                    problems.append(f"absent term {term!r} occurs in the paper it is about")
            papers = [about]
        else:
            for term in terms:
                hits = corpus.papers_with(term)
                if hits:
                    problems.append(f"absent term {term!r} occurs in {len(hits)} papers: {', '.join(hits[:5])}")
            papers = []
    else:
        papers = [g for g in q.get("gold", []) if g in corpus.records]
        if len(papers) != len(q.get("gold", [])) or not papers:
            problems.append("gold must be paper ids of the corpus")
    for pid in papers:
        if pid in used:
            problems.append(f"paper {pid} is already used by {used[pid]}")
        problems += check_wording(q.get("question", ""), corpus.records[pid], corpus, allowed)
    return problems, papers


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sets", nargs="*", type=Path, default=SETS)
    parser.add_argument("--corpus", type=Path, default=ROOT / "rag" / "data" / "iclr2025.jsonl")
    args = parser.parse_args(argv)
    corpus = Corpus(args.corpus)
    skip = {p.resolve() for p in SETS} | {p.resolve() for p in args.sets} | LATER
    used = used_elsewhere(skip, corpus)
    # A set on the older pool may share papers with the older sets, not with another describe set: every describe set
    # not checked in this run is read for it (those checked in it meet each other through `mine` below), so a set
    # checked alone is still checked against the others.
    used_by_describe = used_elsewhere({p.resolve() for p in args.sets}, corpus, only={p.resolve() for p in SETS})
    bad = 0
    mine: dict[str, str] = {}
    for path in args.sets:
        counts: Counter[str] = Counter()
        for lineno, line in enumerate(path.open(encoding="utf-8"), 1):
            if not line.strip():
                continue
            q = json.loads(line)
            older = path.resolve() in {p.resolve() for p in OLDER_POOL}
            problems, papers = check_question(q, corpus, used_by_describe if older else used)
            for pid in papers:
                if pid in mine and mine[pid] != f"{path.name}:{q.get('qid')}":
                    problems.append(f"paper {pid} is also used by {mine[pid]}")
                mine.setdefault(pid, f"{path.name}:{q.get('qid')}")
            for problem in problems:
                print(f"{path}:{lineno}: {q.get('qid')}: {problem}")
            bad += len(problems)
            counts["near miss" if q.get("near_miss") else q.get("kind", "?")] += 1
        print(f"{path}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    print("OK" if not bad else f"{bad} problem(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
