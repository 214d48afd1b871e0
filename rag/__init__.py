"""rag: cited question answering over research-paper abstracts, offline by default.

The data flows one way through the modules:

    ingest (files -> papers) -> index (papers -> chunks -> Chroma) -> retrieve (question -> scored papers)
    -> answer (scored papers -> cited Answer) -> cli / ui (thin shells)

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
