"""Store: files -> papers -> chunks and vectors in Chroma (ingest, catalog, embeddings, index, lock)."""
