"""Generation: the LLM client, prompt templates, citations and their support, endpoints and cost."""
