"""rag.text under threads: the sentence splitter's import, which `rag serve` once lost a question to."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from helpers import ROOT

RACE = textwrap.dedent("""
    import sys, threading
    from llama_index.core.node_parser import SentenceSplitter
    from rag.text import load_sentence_splitter, sentence_spans
    if sys.argv[1] == "warm":
        load_sentence_splitter()  # what `rag serve`, `rag mcp` and the background indexing do first
    splitter = SentenceSplitter(chunk_size=64, chunk_overlap=0)
    barrier, errors = threading.Barrier(8), []
    def work(i):
        barrier.wait()
        try:
            if i % 2:
                sentence_spans("One sentence here. Another one there.")
            else:
                splitter.split_text("One sentence here. Another one there. " * 30)
        except Exception as exc:
            errors.append(repr(exc))
    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    print(len(errors), errors[:1])
""")


def _race(mode: str) -> str:
    run = subprocess.run([sys.executable, "-c", RACE, mode], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return run.stdout.strip()


def test_sentence_splitting_on_many_threads_at_once_works_once_the_splitter_is_loaded():
    # Without the warm-up this failed 5 runs in 5 here (5 to 8 of the 8 threads: "cannot import name 'load' from
    # partially initialized module 'nltk.data'"): nltk imports itself in a circle, and threads importing it at the
    # same moment (our splitter, llama-index's) get a half-initialized module.
    assert _race("warm") == "0 []"


def test_background_indexing_loads_the_splitter_before_its_thread_starts(tmp_path):
    code = textwrap.dedent(f"""
        import rag.text
        from rag.config import Settings
        from rag.engine import Engine
        import threading
        engine = Engine(Settings(data_dir={str(tmp_path / "index")!r}))
        assert rag.text._PUNKT is None
        start = threading.Thread.start
        def checked_start(thread):
            print("splitter loaded when", thread.name, "started:", rag.text._PUNKT is not None)
            start(thread)
        threading.Thread.start = checked_start
        engine.index_in_background([{str(ROOT / "seeds")!r}]).join()
        print(engine.indexing.summary)
    """)
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "added 38" in run.stdout, run.stderr
    assert "splitter loaded when background-ingest started: True" in run.stdout


def test_paper_tex_and_markdown_read_as_text_and_prices_stay_prices():
    """`readable` is how paper text is shown (web cards and answers, exports, the CLI). A newcomer saw "$O(n)$"
    verbatim beside a converted "O(n^2)", and "barG on barX = X cup \\Y\\." for a set's closure."""
    from rag.text import readable

    assert readable("achieves $O(n)$ time and $O(n^2)$ memory") == "achieves O(n) time and O(n^2) memory"
    closure = r"a graph $\bar{\mathcal{G}}$ on $\bar{X} = X \cup \{Y\}$."
    assert readable(closure) == "a graph G\u0304 on X\u0304 = X ∪ {Y}."
    assert readable(r"$\texttt{BRAID}$ certifies $\ell_p$ robustness, $f(x)$ and $\hat y$") == \
        "BRAID certifies ℓ_p robustness, f(x) and y\u0302"
    assert readable("it costs $5 and $10 each") == "it costs $5 and $10 each"  # two prices, not math
    assert readable("improves by 9.6\\% on **L**earns and H\\&E slides") == "improves by 9.6% on Learns and H&E slides"
