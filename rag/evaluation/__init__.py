"""Evaluation: question sets -> metrics per retrieval configuration, through `Engine.ask`."""
