"""Search: a question -> scored candidate papers (dense + BM25, fused, topical signals)."""
