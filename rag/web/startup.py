"""What `rag serve` starts before it imports gradio: the background indexing of the bundled list (or of the files
given), so that gradio's import (3-5 s on a busy 2-core machine) overlaps the indexing instead of delaying it.

Nothing here imports gradio. `rag.cli.serve` calls `start_indexing`, then imports `rag.web.app` holding
`HEAVY_IMPORTS`; the indexing thread imports nothing meanwhile: what writing needs (llama-index) is imported
on the main thread first when the store is likely to get papers, or else, should the ingest find something to
write after all, on the indexing thread under the same lock, once gradio is in.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Sequence

from rag.text import load_sentence_splitter


def console(line: str) -> None:
    """The background indexing's progress and last line ("Indexed 3,706 papers in 41 s: ..."), on the console."""
    print(line, flush=True)


def start_indexing(engine: Any, paths: Sequence[str | Path], report: Any = console) -> threading.Thread:
    """Load the index and start ingesting `paths` in a thread (`Engine.index_in_background`); returns it."""
    load_sentence_splitter()  # before any worker thread (rag.text: nltk's import is not thread-safe)
    engine.retriever  # load the embedder and index now, not on the first question
    if may_add(engine, paths):
        engine.index.prepare_writer()
    return engine.index_in_background(list(paths), report=report)


def may_add(engine: Any, paths: Sequence[str | Path]) -> bool:
    """Whether ingesting `paths` will likely write: the store holds fewer papers than the files have records
    (a .jsonl file's non-blank lines; any other file or a directory counts as "may add"). A restart over a
    complete index then skips llama-index's import (≈ 1.3 s before the page is served). A wrong guess costs that
    import for nothing, or the other way, the import on the indexing thread once gradio is in."""
    records = 0
    for path in map(Path, paths):
        if path.suffix != ".jsonl" or not path.is_file():
            return True
        try:
            with path.open("rb") as lines:
                records += sum(1 for line in lines if line.strip())
        except OSError:
            return True  # the ingest reports it
    return engine.index.count() < records
