"""Query: what the question asks (its type, filters and search terms; Chinese questions)."""
