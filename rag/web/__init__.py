"""rag.web: the Gradio web chat, a thin shell over `rag.engine.Engine`."""
