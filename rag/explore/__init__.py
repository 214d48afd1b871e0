"""Explore: the collection around a paper (related papers) and as a whole (the topic map)."""
