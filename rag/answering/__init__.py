"""Answering: scored papers -> the one `Answer` (records, abstention gate, extractive text, compose)."""
