"""Lock: one process owns an embedded Chroma store while `rag serve` runs on it.

The embedded store (a `PersistentClient` in the data dir) belongs to one process at a time: another process
writing to it is not seen by the one serving (the server keeps answering from what it loaded, and Chroma may
report "Nothing found on disk"). So `rag serve` holds an exclusive `flock` on `<data dir>/serve.lock` for its
lifetime, and every other command that opens the same embedded store checks it first and stops at once with a
message that names the fixes (add papers through the page, stop the server, or share a Chroma server).
The kernel drops the lock when the server process dies, even by kill -9, so a stale lock never blocks anyone.
A Chroma server (`chroma_url`) is made for many processes and needs no lock.

Writers exclude each other too: two processes adding papers to one embedded store at once (two `rag ingest`,
or a `rag eval` building its haystack while another runs on the same cache) interleave their writes to the
same SQLite and segment files, and the store can end up unreadable. So every ingest into an embedded store
holds `<data dir>/ingest.lock` (`writing`) while it writes; a second one stops at once and says why.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

from rag.errors import RagError
from rag.config import Settings

NAME = "serve.lock"
WRITE_NAME = "ingest.lock"


class StoreBusyError(RagError, RuntimeError):
    """Another process serves this embedded store; the message says what to do instead."""


def hold(settings: Settings) -> IO[str] | None:
    """Take the lock for a serving process; returns the open file (keep it open) or None for a Chroma server.
    Raises StoreBusyError if another process already serves this data dir."""
    if settings.chroma_url:
        return None
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    handle = (settings.data_dir / NAME).open("a+", encoding="utf-8")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        raise StoreBusyError(_busy(settings, "serve it a second time")) from None
    handle.truncate(0)
    handle.write(str(os.getpid()))
    handle.flush()
    return handle


def check_free(settings: Settings, doing: str) -> None:
    """Raise StoreBusyError if a `rag serve` holds this embedded store. Creates nothing."""
    path = settings.data_dir / NAME
    if settings.chroma_url or not path.is_file():
        return
    try:
        with path.open("r", encoding="utf-8") as handle:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
            fcntl.flock(handle, fcntl.LOCK_UN)
    except BlockingIOError:
        raise StoreBusyError(_busy(settings, doing)) from None
    except OSError:
        return  # unreadable lock file: the store's own checks will say what is wrong


def _busy(settings: Settings, doing: str) -> str:
    try:
        pid = (settings.data_dir / NAME).read_text(encoding="utf-8").strip()
    except OSError:
        pid = "?"
    return (f"a running `rag serve` (pid {pid}) uses the index in {settings.data_dir}, so this process cannot "
            f"{doing} there. Add papers through its page (Add papers), stop it first, or run a Chroma server "
            "(`chroma run --path DIR`) and point both at it with RAG_CHROMA_URL.")


@contextmanager
def writing(settings: Settings) -> Iterator[None]:
    """Hold the embedded store's write lock for one ingest (released when it ends or the process dies). Raises
    StoreBusyError if another process is writing to it. Within one process `Engine` serialises its own ingests."""
    if settings.chroma_url:
        yield
        return
    try:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        handle = (settings.data_dir / WRITE_NAME).open("a+", encoding="utf-8")
    except OSError:
        yield  # an unwritable data dir: the store's own checks say what is wrong and how to fix it
        return
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise StoreBusyError(
                f"another process is adding papers to the index in {settings.data_dir} (a `rag ingest`, or a "
                "`rag eval` building its collection); wait for it to finish, or give this one its own --data-dir "
                "/ RAG_DATA_DIR.") from None
        yield
