"""The question sets of eval/questions/ and what each is for, read from eval/questions/manifest.toml: the one place
that says which sets are dev, read or held out, which the gate is tuned on and which `make eval-llm` runs.

    python eval/manifest.py --paths [--role dev|read|heldout] [--llm] [--gate] [--corpus iclr2025]
    python eval/manifest.py --table        # the sets as a Markdown table (eval/README.md)

Standard library only: the Makefile calls it with the system python before the venv exists.
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = ROOT / "eval" / "questions"
MANIFEST = QUESTIONS / "manifest.toml"
ROLES = ("dev", "read", "heldout")
CORPORA = ("iclr2025", "seeds+iclr2025", "cited")
FIELDS = {"name", "role", "questions", "corpus", "about", "written", "added", "pool", "refused", "gate", "llm"}


@dataclass(frozen=True)
class SetInfo:
    """One question set as the manifest describes it (the keys are explained at the top of manifest.toml)."""

    name: str
    role: str
    questions: int
    corpus: str
    about: str
    written: str
    added: str
    pool: str = "first"
    refused: bool = False
    gate: int | None = None
    llm: int | None = None

    @property
    def path(self) -> Path:
        return QUESTIONS / f"{self.name}.jsonl"

    @property
    def tunable(self) -> bool:
        """Whether a tuning script may fit or choose anything on it: never a held-out set nor a refused one."""
        return self.role != "heldout" and not self.refused


def load(path: Path = MANIFEST) -> list[SetInfo]:
    """Every set, in the manifest's order (the order `make eval` runs them). Raises ValueError naming the entry and
    the fix when an entry is malformed."""
    entries = tomllib.loads(path.read_text(encoding="utf-8")).get("set", [])
    out: list[SetInfo] = []
    for i, entry in enumerate(entries):
        where = f"{path.name}, set {i + 1} ({entry.get('name', '?')})"
        unknown = set(entry) - FIELDS
        if unknown:
            raise ValueError(f"{where}: unknown key(s) {sorted(unknown)}; the keys are explained at its top")
        try:
            info = SetInfo(**entry)
        except TypeError as e:
            raise ValueError(f"{where}: {e}; every set needs name, role, questions, corpus, about, written, "
                             "added") from e
        if info.role not in ROLES:
            raise ValueError(f"{where}: role {info.role!r} is not one of {', '.join(ROLES)}")
        if info.corpus not in CORPORA:
            raise ValueError(f"{where}: corpus {info.corpus!r} is not one of {', '.join(CORPORA)}")
        out.append(info)
    names = [s.name for s in out]
    for key in ("gate", "llm"):
        places = sorted(getattr(s, key) for s in out if getattr(s, key) is not None)
        if places != list(range(1, len(places) + 1)):
            raise ValueError(f"{path.name}: the {key} places are {places}; number them 1..{len(places)}, each once")
    if len(set(names)) != len(names):
        raise ValueError(f"{path.name}: a set is listed twice: {sorted({n for n in names if names.count(n) > 1})}")
    return out


def sets(role: str | None = None, llm: bool | None = None, gate: bool | None = None, corpus: str | None = None,
         path: Path = MANIFEST) -> list[SetInfo]:
    """The sets with this role / in (True) or out of (False) the LLM subset / among the gate's dev sets / that run
    over this corpus ("iclr2025" includes seeds+iclr2025). In manifest order; in the LLM subset's order when
    llm=True, in the gate's when gate=True."""
    if role is not None and role not in ROLES:
        raise ValueError(f"role {role!r} is not one of {', '.join(ROLES)}")
    chosen = [s for s in load(path)
              if (role is None or s.role == role)
              and (llm is None or (s.llm is not None) == llm)
              and (gate is None or (s.gate is not None) == gate)
              and (corpus is None or corpus in s.corpus.split("+"))]
    if llm:
        chosen.sort(key=lambda s: s.llm or 0)
    elif gate:
        chosen.sort(key=lambda s: s.gate or 0)
    return chosen


def get(name: str, path: Path = MANIFEST) -> SetInfo:
    """The set called `name` (a file stem such as "describe_final3"); KeyError naming the fix when it is not listed."""
    for s in load(path):
        if s.name == name:
            return s
    raise KeyError(f"{name!r} is not in {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: "
                   f"add an entry for eval/questions/{name}.jsonl")


def held_out(name: str) -> bool:
    """Whether the tuning scripts must refuse set `name` (a held-out set, or a read one the project keeps out of
    every fit). A name the manifest does not list is refused too: a new set is unread until it is entered."""
    try:
        return not get(name).tunable
    except KeyError:
        return True


def table(rows: list[SetInfo] | None = None) -> str:
    """The sets as a Markdown table: name, role, questions, corpus, gate / LLM subset, what it holds, who wrote it."""
    lines = ["| set | role | questions | over | gate dev | LLM subset | what | written |",
             "|---|---|---|---|---|---|---|---|"]
    for s in rows if rows is not None else load():
        role = s.role + (" (refused for tuning)" if s.refused else "")
        lines.append(f"| `{s.name}` | {role} | {s.questions} | {s.corpus} | {'yes' if s.gate else ''} | "
                     f"{'yes' if s.llm else ''} | {s.about} | {s.written} ({s.added}) |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--paths", action="store_true", help="print the sets' paths, relative to the repository")
    parser.add_argument("--table", action="store_true", help="print the Markdown table of the sets")
    parser.add_argument("--role", choices=ROLES)
    parser.add_argument("--llm", action="store_true", help="only the LLM subset, in its order")
    parser.add_argument("--gate", action="store_true", help="only the gate's dev sets, in their order")
    parser.add_argument("--corpus", choices=("iclr2025", "seeds", "cited"))
    args = parser.parse_args(argv)
    try:
        chosen = sets(role=args.role, llm=args.llm or None, gate=args.gate or None, corpus=args.corpus)
    except (OSError, ValueError, tomllib.TOMLDecodeError) as e:
        print(f"eval/manifest.py: {e}", file=sys.stderr)
        return 1
    if args.table:
        print(table(chosen))
    elif args.paths:
        print(" ".join(str(s.path.relative_to(ROOT)) for s in chosen))
    else:
        print(" ".join(s.name for s in chosen))
    return 0


if __name__ == "__main__":
    sys.exit(main())
