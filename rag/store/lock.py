"""Lock: one process owns an embedded Chroma store while `rag serve` runs on it.

The embedded store (a `PersistentClient` in the data dir) belongs to one process at a time: another process
writing to it is not seen by the one serving (the server keeps answering from what it loaded, and Chroma may
report "Nothing found on disk"). So `rag serve` holds an exclusive `flock` on the data dir itself for its
lifetime (`<data dir>/serve.lock` only records its PID: deleting or replacing that file changes nothing), and
every other command that would open the same embedded store checks it first and stops at once with a message that
names the fixes (add papers through the page, stop the server, or share a Chroma server). Read-only commands
(`rag ask`, `chat`, `related`, `topics`, `stats`) do not open it: they answer beside the server from the snapshot it
shares in the data dir (`rag.search.retrieve`, "shared snapshot"), never through chromadb.
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
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from rag.errors import RagError
from rag.config import Settings

NAME = "serve.lock"
WRITE_NAME = "ingest.lock"


class StoreBusyError(RagError, RuntimeError):
    """Another process serves this embedded store; the message says what to do instead."""


class Held:
    """The serving lock while it is held: an open descriptor of the data dir, `flock`ed exclusively."""

    def __init__(self, fd: int) -> None:
        self.fd: int | None = fd

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing the descriptor releases the lock
            self.fd = None


def hold(settings: Settings) -> Held | None:
    """Take the lock for a serving process; returns it (keep it open) or None for a Chroma server.
    Raises StoreBusyError if another process already serves this data dir.

    The lock is on the data dir itself, not on `serve.lock`: a file can be deleted, replaced by a symlink or a
    directory while the server runs (the next `rag ingest` then saw no lock and wrote beside the server), a
    directory holding the index cannot. `serve.lock` only records the server's PID for the busy message, and is
    written without following a link (a symlink there once had its target truncated and overwritten)."""
    if settings.chroma_url:
        return None
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(settings.data_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise StoreBusyError(_busy(settings, "serve it a second time")) from None
    _write_pid(settings.data_dir / NAME)
    return Held(fd)


def _write_pid(path: Path) -> None:
    """Put this process's PID in `path`: a new file renamed over it, so a symlink there is replaced, never
    followed. If `path` is a directory (or the data dir unwritable) no PID is recorded; the lock holds all the same."""
    temp = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(str(os.getpid()))
        os.replace(temp, path)
    except OSError:
        with suppress(OSError):
            temp.unlink()


def check_free(settings: Settings, doing: str) -> None:
    """Raise StoreBusyError if a `rag serve` holds this embedded store. Creates nothing."""
    if served(settings):
        raise StoreBusyError(_busy(settings, doing))


def served(settings: Settings) -> bool:
    """Whether a `rag serve` holds this embedded store now (never for a Chroma server). Creates nothing."""
    if settings.chroma_url:
        return False
    try:
        fd = os.open(settings.data_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return False  # no data dir yet (nobody serves it), or not one: the store's own checks say what is wrong
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
    return False


def busy_message(settings: Settings, doing: str) -> str:
    """The one line that says a `rag serve` holds this store and what to do instead (`StoreBusyError`'s)."""
    return _busy(settings, doing)


def _busy(settings: Settings, doing: str) -> str:
    pid = "?"
    try:  # a short run of digits from a regular file, never through a link: the message quotes nothing else
        fd = os.open(settings.data_dir / NAME, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as handle:
            if stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                text = handle.read(20).decode("ascii", "replace").strip()
                pid = text if text.isdigit() else "?"
    except OSError:
        pass
    return (f"a running `rag serve` (pid {pid}) uses the index in {settings.data_dir}, so this process cannot "
            f"{doing} there. Ask it through its page or its HTTP API (/gradio_api/call/ask, docs/api.md), add papers "
            "through its page (Add papers), stop it first, or run a Chroma server (`chroma run --path "
            "DIR`) and point both at it with RAG_CHROMA_URL.")


def _flock_soon(handle, wait: float = 0.5) -> bool:
    """Take the write lock, waiting up to `wait` seconds: a reader holds it for a few milliseconds when it writes
    the store's mark (`rag.store.snapshot.claim`), and an ingest starting then should not be refused for that."""
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)


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
        if not _flock_soon(handle):
            raise StoreBusyError(
                f"another process is adding papers to the index in {settings.data_dir} (a `rag ingest`, or a "
                "`rag eval` building its collection); wait for it to finish, or give this one its own --data-dir "
                "/ RAG_DATA_DIR.") from None
        yield
