"""rag: cited question answering over research-paper abstracts, offline by default.

The data flows one way through wings (sub-packages), and imports run the same way, downward only:

    store (files -> papers -> chunks and vectors) -> query (what the question asks) -> search (question -> scored
    papers) -> explore (related papers, topic map) -> generation (LLM, prompts, citations, support)
    -> answering (scored papers -> one cited `Answer`) -> engine (wires them) -> evaluation, cli, web (shells)

under a floor every wing shares: `rag.errors`, `rag.config` (`Settings`), `rag.text`.
`rag.engine.Engine` ties them together behind one call: ``Engine(settings).ask(question)``.

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

__version__ = "0.1.0"
