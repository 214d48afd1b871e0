"""The reader: does a sentence of the retrieved papers state what the question asks? Features for the abstention
gate (rag/answering/abstain.py) that read the question against the best sentences of the top papers word by word,
where the gate's other features score nearness of the whole abstract.

Why: retrieval scores measure how near a paper is, so an absent topic next to a covered one ("speaker verification"
beside speech recognition) or a detail a found paper never states ("which GPU?") looks as near as a question the paper
answers. Reading word against word tells them apart: a paraphrase scores high ("quantize" against "quantization"), a
word no sentence says anything like scores low ("robot arm" against an abstract about grasp planning). Measured by
leaving whole question sets out (eval/reader_lso.py; eval/DECISIONS.md, "A reader of question against sentence").

How: the question and a few sentences of the top papers (the title and the sentences the retrieval scored best, which
it already holds) go through the shipped MiniLM (rag/store/embeddings.py) once, in one batch; each word gets the
mean of its WordPiece states, which saw the sentence around it (contextual, ColBERT-style late interaction). Each
content word of the question (a term BM25 searches by) is weighted by its inverse document frequency among the
papers, and gets its best cosine over the words of the read sentences (MaxSim). A hand-written MaxSim because no
dependency of the app offers late interaction over an ONNX model's token states.

Features (`FEATURES`, in order):
- reader_cover: IDF-weighted mean MaxSim of the question's words over the top paper's read sentences and title;
- reader_sentence: the same against the single best sentence (is there ONE sentence that states it?);
- reader_rare_min: the least MaxSim among the question's three rarest words (the asked detail is often rare);
- reader_missing: IDF-weighted mean MaxSim of the question's words the top paper does not contain as such
  (1.0 when it contains them all): a paraphrase is close, an absent detail is not;
- reader_second: the best of reader_cover over the second paper, minus the top paper's;
- reader_number: a figure is asked (`rag.query.wording.FIGURE`) and the best sentence holds a number;
- missing_df: how common the rarest question term is that the top paper lacks (log df / log corpus size; 1.0
  when it lacks none): a term no or few papers contain is an absent topic.
"""

from __future__ import annotations

import math
import re
import threading
from collections import OrderedDict
from typing import Any

import numpy as np

from rag.text import tokenize

READ_TOP1 = 3  # best-scored sentences read of the top paper (plus its title)
READ_TOP2 = 1  # ... of the second paper (plus its title)
RAREST = 3  # reader_rare_min: the question's rarest words
FEATURES = ["reader_cover", "reader_sentence", "reader_rare_min", "reader_missing", "reader_second",
            "reader_number", "missing_df"]
_WORDS = re.compile(r"\w+", re.UNICODE)
_NUMBER = re.compile(r"\d|\b(?:two|three|four|five|six|seven|eight|nine|ten|twenty|hundred|thousand|million|"
                     r"billion|twice|half|double)\b", re.IGNORECASE)
THREADS = 2  # onnxruntime intra-op threads of the reader's model: its one batch a question is small
_LOCK = threading.Lock()
_EMBEDDER: list[Any] = []
_MEMO: OrderedDict[tuple, list[float]] = OrderedDict()  # a retrieval's features, as the gate asks more than once
_MEMO_SIZE = 64


def embedder() -> Any:
    """The shipped MiniLM (its checksum verified), loaded once per process, beside the search's own copy (22 MB) so
    that its thread count stays the reader's."""
    with _LOCK:
        if not _EMBEDDER:
            from rag.store.embeddings import MiniLMEmbedding

            _EMBEDDER.append(MiniLMEmbedding(threads=THREADS))
        return _EMBEDDER[0]


def word_states(texts: list[str], model: Any = None) -> list[tuple[list[str], np.ndarray]]:
    """Per text: its words (`\\w+`) and one unit vector per word, the mean of the states of its WordPiece tokens
    (words cut off by the model's truncation are left out)."""
    model = model or embedder()
    out: list[tuple[list[str], np.ndarray]] = [([], np.zeros((0, 384), np.float32)) for _ in texts]
    for idx, encodings, hidden, _ in model._hidden_states(texts) if texts else ():
        for row, (i, encoding) in enumerate(zip(idx, encodings, strict=False)):
            offsets = np.asarray(encoding.offsets)
            real = np.asarray(encoding.special_tokens_mask) == 0
            words, vectors = [], []
            for m in _WORDS.finditer(texts[i]):
                inside = real & (offsets[:, 0] >= m.start()) & (offsets[:, 1] <= m.end()) & (
                    offsets[:, 1] > offsets[:, 0])
                if inside.any():
                    v = hidden[row, :len(offsets)][inside].mean(axis=0)
                    words.append(m.group())
                    vectors.append(v / max(float(np.linalg.norm(v)), 1e-12))
            if words:
                out[i] = (words, np.asarray(vectors, dtype=np.float32))
    return out


def _idf(df: int, n: int) -> float:
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def key(retrieval: Any) -> tuple:
    """What the features of a retrieval depend on: the question, its terms, the first two papers and their best
    sentences."""
    return (retrieval.question, tuple(sorted(retrieval.terms)),
            tuple(h.paper.paper_id for h in retrieval.hits[:2]),
            tuple(s.text for i in (0, 1) for s in retrieval.scored.get(i, [])[:READ_TOP1]))


def features(retrieval: Any, model: Any = None, cache: dict | None = None, second: bool = True) -> list[float]:
    """`FEATURES` of one retrieval (a `rag.search.retrieve.Retrieval`); all 0 without hits or question terms.
    `cache` (text -> word states) lets an evaluation reuse the states of sentences it has read before; without one,
    the last few retrievals' features are remembered (the gate is asked more than once per question). `second`
    False reads the top paper alone (reader_second 0): a third fewer texts through the model, for a gate that
    does not use it."""
    if cache is not None or model is not None:
        return _features(retrieval, model, cache, second)
    k = (*key(retrieval), second)
    with _LOCK:
        if k in _MEMO:
            _MEMO.move_to_end(k)
            return list(_MEMO[k])
    out = _features(retrieval, None, None, second)
    with _LOCK:
        _MEMO[k] = out
        while len(_MEMO) > _MEMO_SIZE:
            _MEMO.popitem(last=False)
    return list(out)


def _features(retrieval: Any, model: Any, cache: dict | None, second: bool) -> list[float]:
    hits = retrieval.hits
    zeros = [0.0] * len(FEATURES)
    if not hits or not retrieval.terms:
        return zeros
    n = max(retrieval.corpus_size, 1)
    top_terms = set(tokenize([hits[0].paper.search_text])[0])
    missing_dfs = [retrieval.term_df.get(t, 0) for t in retrieval.terms if t not in top_terms]
    missing_df = (math.log1p(min(missing_dfs)) / math.log1p(n)) if missing_dfs else 1.0

    question = retrieval.question  # a Chinese question's English search terms (`Retrieval.asked` holds it)
    texts: list[list[str]] = []  # per read paper: title, then its best sentences
    for i, count in ((0, READ_TOP1), (1, READ_TOP2)) if second else ((0, READ_TOP1),):
        if i < len(hits):
            sentences = [s.text for s in retrieval.scored.get(i, [])[:count]]
            texts.append([hits[i].paper.title, *sentences])
    flat = [question, *(t for paper in texts for t in paper)]
    cache = cache if cache is not None else {}
    todo = [t for t in dict.fromkeys(flat) if t not in cache]
    for t, states in zip(todo, word_states(todo, model), strict=False):
        cache[t] = states
    q_words, q_vectors = cache[question]
    stems = tokenize(q_words) if q_words else []
    keep = [j for j, s in enumerate(stems) if s and s[0] in retrieval.terms]
    if not keep:
        return [*zeros[:-1], missing_df]
    weights = np.array([_idf(retrieval.term_df.get(stems[j][0], 0), n) for j in keep])
    weights = weights / (weights.sum() or 1.0)
    qv = q_vectors[keep]

    def maxsim(text_list: list[str]) -> np.ndarray:
        vectors = [cache[t][1] for t in text_list if len(cache[t][0])]
        if not vectors:
            return np.zeros(len(keep))
        best: np.ndarray = (qv @ np.concatenate(vectors).T).max(axis=1)
        return best

    top = maxsim(texts[0])
    cover = float(weights @ top)
    per_sentence = [(float(weights @ maxsim([s])), s) for s in texts[0][1:]]
    best_sentence, best_text = max(per_sentence, default=(0.0, ""))
    rarest = np.argsort(-weights)[:RAREST]
    lacking = np.array([stems[j][0] not in top_terms for j in keep])
    reader_missing = float((weights[lacking] @ top[lacking]) / weights[lacking].sum()) if lacking.any() else 1.0
    over_second = float(weights @ maxsim(texts[1])) - cover if len(texts) > 1 else 0.0
    number = float(retrieval.wording.figure and bool(_NUMBER.search(best_text)))
    return [cover, best_sentence, float(top[rarest].min()), reader_missing, over_second, number, missing_df]
