"""rag: cited question answering over research-paper abstracts, offline by default.

The data flows one way through wings (sub-packages), and imports run the same way, downward only:

    store (files -> papers -> chunks and vectors) -> query (what the question asks) -> search (question -> scored
    papers) -> explore (related papers, topic map) -> generation (LLM, prompts, citations, support)
    -> answering (scored papers -> one cited `Answer`) -> engine (wires them) -> evaluation, cli, web (shells)

under a floor every wing shares: `rag.errors`, `rag.config` (`Settings`), `rag.text`.
`rag.engine.Engine` ties them together behind one call: ``Engine(settings).ask(question)``. The library's stable
names are importable from here (``from rag import Engine, Settings``; docs/api.md); they load on first use,
so `import rag` (every CLI command, `--help` included) stays fast.

Importing this package first switches off every phone-home of the libraries underneath (onnxruntime's
OneDS telemetry, Chroma's product telemetry, Gradio's version check, the Hugging Face hub), because the
switches are read when those libraries are imported. See ../shared/STACK-NOTES.md for how each was found.
"""

import os

# Forced, not defaulted: a full run must connect to nothing but 127.0.0.1 and the endpoints a user configured.
os.environ["ORT_DISABLE_TELEMETRY"] = "1"
os.environ["ANONYMIZED_TELEMETRY"] = "False"
os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# name -> the module that defines or re-exports it (modules that stay where they are when others move).
_EXPORTS = {"Engine": "rag.engine", "Answer": "rag.engine", "Source": "rag.engine", "Delta": "rag.engine",
            "Restart": "rag.engine", "Search": "rag.engine", "QuestionError": "rag.engine",
            "Settings": "rag.config", "ConfigError": "rag.config", "RagError": "rag.errors"}
__all__ = ["__version__", "Engine", "Answer", "Source", "Delta", "Restart", "Search", "QuestionError", "Settings",
           "ConfigError", "RagError"]

if TYPE_CHECKING:
    from rag.config import ConfigError, Settings
    from rag.engine import Answer, Delta, Engine, QuestionError, Restart, Search, Source
    from rag.errors import RagError


assert set(__all__) == {"__version__", *_EXPORTS}


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'rag' has no attribute {name!r}")
