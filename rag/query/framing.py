"""Framing words: the words of a question that say what kind of question it is, or that it asks about papers, rather
than what it is about ("Which papers study X?": only X is the topic). They are kept here, in one place, per
language: English below; Chinese is `rag.query.zh.GLUE` (the question glue a Chinese question's search drops).

Each reader of a question leaves out the framing words that matter to it, and their sets differ on purpose (each was
chosen with its reader and is measured with it; one set for all would change what each does):
- NOT_TOPIC (`rag.query.intent`): words that leave a question without a topic ("papers by X", "what did X
  publish"), as written, casefolded;
- SCAFFOLD (`rag.search.topical`): words of a question about papers that name no topic, as BM25 stems them;
- SIDE_GENERIC (`rag.answering.compare`): words of a comparison's side that say "a paper / a method" rather than
  which one ("the sharpness-aware fine-tuning approach"), stemmed;
- NOT_HIGHLIGHTED (`rag.web.render.highlight`): words of a question never highlighted in a paper's text, stemmed.
"""

from __future__ import annotations

from rag.text import tokenize

# The words for a paper, the first words of every set below.
_PAPER = "paper papers work"
_PAPERS = f"{_PAPER} works study studies research article articles publication publications"
_QUESTION_WORDS = "which what"

NOT_TOPIC = frozenset(f"""{_PAPERS} {_QUESTION_WORDS} did does has have had publish published present presented write
wrote written the and for all any list show find give are there was were iclr about with from his her their its
collection""".split())

SCAFFOLD = frozenset(t for words in tokenize([
    f"{_PAPERS} how many number list {_QUESTION_WORDS} use uses using about exist existing any iclr 2025 propose "
    "proposes approach approaches"]) for t in words)

SIDE_GENERIC = frozenset(tokenize([f"{_PAPER} approach approaches method methods framework technique proposed propose "
                                   "one new"])[0])

NOT_HIGHLIGHTED = frozenset(tokenize([
    f"{_PAPER} works use used using make made method methods approach propose proposed study new show shown way "
    f"there {_QUESTION_WORDS} who whom whose how why where when does do did is are was were can could should would "
    "will any some about list find tell me give explain describe iclr 2025 model models"])[0])
