"""Topic map: a 2-D layout of the collection and its topic clusters, each named by its most distinctive words.

Input: every paper's whole-paper vector (`rag.explore.related`; the normalized mean of its chunk vectors). Steps, all
seeded (SEED) so the same index gives the same map:
- layout: PCA to at most 50 dimensions (numpy's SVD), then t-SNE to 2 (scikit-learn, Barnes-Hut, PCA init);
- clusters: KMeans over the unit vectors, `Settings.topics` of them (at most one per 5 papers), renumbered by
  size (topic 1 is the largest);
- labels: c-TF-IDF (class-based TF-IDF, as BERTopic names topics) over each cluster's titles and abstracts joined
  into one document: a word or two-word phrase scores high if it is frequent in that cluster and rare in the
  others; the three best, minus words already said, name the topic, and a topic's name opens with a term whose words
  no other topic's name has (the cluster a word describes best keeps it: two "diffusion, ..." or "llms, knowledge"
  topics read as one);
- decision mix: Oral / Spotlight / Poster counts per topic, and example papers (nearest the cluster's centre,
  overall and per decision) for answers that cite one or two.

Stability: while the papers added or removed since the last full build are at most STABLE_SHARE of it, the map is
extended instead (`extend`): a new paper joins the topic whose centre is nearest and sits beside its nearest paper,
and every topic keeps its number and name, so adding a few papers does not renumber and rename all of them.

The map is computed once per index content and stored beside the index (`<data dir>/topicmap-<collection>.json`),
keyed by a hash of every paper's id and content hash, the embedder, the number of topics and the method's
version: any ingest that changes a paper changes the key, and the next use recomputes it (28 s of CPU for the
2,114 ICLR 2025 papers, on one core; 43 s of wall time on this shared 2-core machine at load 7: bench/REPORT.md).
It is built on first use (`rag topics`, the page's map, a topics question; `rag serve` starts it at start-up),
not during the ingest, so ingesting a batch of files costs nothing extra.

The answer to "which topics have the most orals?" is built from the clusters by `rag.answering.collection`.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rag.store.index import StoredPaper
from rag.explore.related import explorer

MAP_FORMAT = "map5"  # version of the method and file: part of the key
# A map is extended, not rebuilt, while the papers added (and removed) since it was built are at most this share
# of it: its topics keep their numbers and names (adding 4 papers once renumbered and renamed all 20).
STABLE_SHARE = 0.10
SEED = 0
PCA_DIMS = 50
LABEL_TERMS = 3
KINDS = ("Oral", "Spotlight", "Poster")
# Words every abstract uses to describe itself: never a topic's name.
GENERIC = set("""model models method methods approach approaches propose proposed proposes paper results result
performance show shows shown based using use used new novel task tasks existing work framework training train
trained learning data study problem problems demonstrate demonstrates significantly significant state art various
address different experiments experimental extensive effective effectively improve improves improved improving
introduce introduces key challenge challenges large achieve achieves code available github com https source
approach also however furthermore particular specifically including results prior recent recently end
benchmark benchmarks evaluation evaluate varepsilon epsilon mathcal mathbb mathbf textbf texttt textit frac tilde
emph neural network networks deep""".split())


def kind(decision: str) -> str:
    return next((k for k in KINDS if k.lower() in (decision or "").lower()), "other")


@dataclass
class Topic:
    n: int  # 1 = the largest
    label: str
    terms: list[str]
    size: int
    decisions: dict[str, int]  # Oral / Spotlight / Poster / other -> papers
    examples: dict[str, list[str]] = field(default_factory=dict)  # "all" or a kind -> paper ids, nearest first


@dataclass
class TopicMap:
    key: str
    paper_ids: list[str]
    xy: list[list[float]]  # per paper, in 0..1
    topic: list[int]  # per paper: its topic's n
    topics: list[Topic]
    seconds: float = 0.0  # time to compute it
    cached: bool = False  # read from the file beside the index
    basis: str = ""  # method, seed, topics asked for and embedder: a map is only extended on the same basis
    built: int = 0  # papers of the last full build (its topics); extensions count from it
    drift: int = 0  # papers added or removed since that build

    def to_json(self) -> str:
        data = asdict(self)
        data.pop("cached")
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> TopicMap:
        data = json.loads(text)
        data["topics"] = [Topic(**t) for t in data["topics"]]
        return cls(**data, cached=True)

    def summary(self, points: bool = False) -> dict[str, Any]:
        """What `rag topics --json` prints (and the `/topics` API returns); with `points`, the map itself too:
        each paper's id, 2-D position (0..1) and topic number, for plotting it elsewhere."""
        out: dict[str, Any] = {"papers": len(self.paper_ids), "topics": [asdict(t) for t in self.topics],
                               "seconds": round(self.seconds, 2), "key": self.key[:16]}
        if points:
            out["points"] = [{"paper_id": pid, "x": xy[0], "y": xy[1], "topic": topic}
                             for pid, xy, topic in zip(self.paper_ids, self.xy, self.topic, strict=False)]
        return out


def basis(embedder: str, n_topics: int) -> str:
    return f"{MAP_FORMAT}|{SEED}|{n_topics}|{embedder}"


def fingerprint(papers: list[StoredPaper], embedder: str, n_topics: int) -> str:
    digest = hashlib.sha256(f"{basis(embedder, n_topics)}\n".encode())
    for p in papers:
        digest.update(f"{p.paper_id}:{p.content_hash}\n".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def pca(vectors: np.ndarray, dims: int) -> np.ndarray:
    """The first `dims` principal components, signs fixed (the largest loading of each is positive)."""
    centred = vectors - vectors.mean(axis=0)
    u, s, vt = np.linalg.svd(centred, full_matrices=False)
    dims = max(1, min(dims, vt.shape[0]))
    signs = np.sign(vt[:dims][np.arange(dims), np.abs(vt[:dims]).argmax(axis=1)])
    return (u[:, :dims] * s[:dims]) * np.where(signs == 0, 1, signs)


def layout(vectors: np.ndarray) -> np.ndarray:
    """[n, 2] in 0..1: PCA, then t-SNE when there are enough papers for it."""
    n = len(vectors)
    if n == 0:
        return np.zeros((0, 2))
    reduced = pca(vectors.astype(np.float64), PCA_DIMS)
    if n >= 8:
        from sklearn.manifold import TSNE

        # 500 iterations (250 of them early exaggeration) and angle 0.7 (Barnes-Hut's accuracy/speed trade-off; 0.5
        # by default): 18 s instead of 71 s for 2,114 papers on this machine under load, with the same clusters.
        perplexity = float(min(30.0, (n - 1) / 3))
        reduced = TSNE(n_components=2, perplexity=perplexity, init="pca", learning_rate="auto", max_iter=500,
                       angle=0.7, random_state=SEED, n_jobs=1).fit_transform(reduced[:, :PCA_DIMS])
    xy = np.zeros((n, 2))
    xy[:, :min(2, reduced.shape[1])] = reduced[:, :2]
    span = xy.max(axis=0) - xy.min(axis=0)
    return (xy - xy.min(axis=0)) / np.where(span > 0, span, 1.0)


def _singular(word: str) -> str:
    return word[:-1] if word.endswith("s") and len(word) > 3 and not word.endswith("ss") else word


def label_terms(docs: list[str], top: int = LABEL_TERMS) -> list[list[str]]:
    """The `top` most distinctive words or two-word phrases of each document (one per cluster), by c-TF-IDF; the
    first term of each has no word of another's terms (given in order of the clusters' best scores)."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, CountVectorizer

    stop = sorted(set(ENGLISH_STOP_WORDS) | GENERIC)
    counts = CountVectorizer(stop_words=stop, ngram_range=(1, 2), token_pattern=r"(?u)\b[a-zA-Z][a-zA-Z0-9-]+\b",
                             min_df=1).fit(docs)
    matrix = counts.transform(docs).astype(np.float64)
    words = counts.get_feature_names_out()
    tf = matrix.multiply(1.0 / np.maximum(matrix.sum(axis=1), 1)).tocsr()
    per_class = matrix.sum() / max(len(docs), 1)
    idf = np.log1p(per_class / np.maximum(np.asarray(matrix.sum(axis=0)).ravel(), 1))
    scores = tf.multiply(idf).tocsr()
    lines = [scores.getrow(row).toarray().ravel() for row in range(len(docs))]
    out: list[list[str]] = [[] for _ in docs]
    given: set[str] = set()  # the words of the labels given so far
    # The cluster whose best term scores highest names itself first: a word two clusters share goes to the one it
    # describes best, and the other is named by what sets it apart.
    for row in sorted(range(len(docs)), key=lambda r: -float(lines[r].max(initial=0.0))):
        line = lines[row]
        chosen: list[str] = []
        for j in np.argsort(-line, kind="stable"):
            if len(chosen) >= top or line[j] <= 0:
                break
            term = str(words[j])
            said = {_singular(w) for c in chosen for w in c.split()}
            mine = {_singular(w) for w in term.split()}
            if mine <= said:  # "networks" after "network", "graph" after "graph neural"
                continue
            # "diffusion" gives way to "diffusion models"
            kept = [c for c in chosen if not {_singular(w) for w in c.split()} < mine]
            if (not kept or kept[0] != chosen[0]) and mine & given:
                continue  # a label opens with words no other label has: no two "diffusion, ..." topics
            chosen = kept + [term]
        given |= {_singular(w) for c in chosen for w in c.split()}
        out[row] = chosen
    return out


def build(papers: list[StoredPaper], vectors: np.ndarray, n_topics: int, key: str = "") -> TopicMap:
    """The map of these papers (unit vectors in the same order)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):  # BLAS threads waiting on each other cost 3x the CPU of KMeans on a busy machine
        return _build(papers, vectors, n_topics, key)


def _build(papers: list[StoredPaper], vectors: np.ndarray, n_topics: int, key: str) -> TopicMap:
    started = time.perf_counter()
    n = len(papers)
    xy = layout(vectors)
    clusters = max(1, min(n_topics, n // 5))
    if n == 0:
        return TopicMap(key, [], [], [], [], time.perf_counter() - started)
    if clusters > 1:
        from sklearn.cluster import KMeans

        raw = KMeans(n_clusters=clusters, random_state=SEED, n_init=4).fit_predict(vectors)
    else:
        raw = np.zeros(n, dtype=int)
    by_size = [c for c, _ in sorted(Counter(raw.tolist()).items(), key=lambda item: (-item[1], item[0]))]
    number = {c: i + 1 for i, c in enumerate(by_size)}
    topic = np.array([number[c] for c in raw.tolist()])
    docs = [" ".join(p.search_text for p, t in zip(papers, topic, strict=False) if t == k)
            for k in range(1, len(by_size) + 1)]
    terms = label_terms(docs)
    topics = [_topic(papers, vectors, np.flatnonzero(topic == k), k, terms[k - 1],
                     ", ".join(terms[k - 1]) or f"topic {k}") for k in range(1, len(by_size) + 1)]
    return TopicMap(key, [p.paper_id for p in papers], np.round(xy, 4).tolist(), topic.tolist(), topics,
                    time.perf_counter() - started, built=n)


def extend(previous: TopicMap, papers: list[StoredPaper], vectors: np.ndarray, key: str) -> TopicMap | None:
    """`previous` with the papers added since put in their nearest topic (by cosine to its centre) and on the map
    beside their nearest paper, and the papers removed since left out; the topics keep their numbers, names and
    terms, their sizes, decision mix and examples are counted again. None when the papers added or removed since
    its last full build are more than STABLE_SHARE of that build's (or none of it is left): then it is built anew."""
    started = time.perf_counter()
    at = {pid: i for i, pid in enumerate(previous.paper_ids)}
    index = {p.paper_id: i for i, p in enumerate(papers)}
    kept = [pid for pid in previous.paper_ids if pid in index]
    added = [p.paper_id for p in papers if p.paper_id not in at]
    drift = previous.drift + len(previous.paper_ids) - len(kept) + len(added)
    if not kept or not previous.topics or drift > STABLE_SHARE * (previous.built or len(previous.paper_ids)):
        return None
    old_rows = np.array([index[pid] for pid in kept])
    old_topic = np.array([previous.topic[at[pid]] for pid in kept])
    numbers = [t.n for t in previous.topics]
    centres = np.stack([vectors[old_rows[old_topic == n]].mean(axis=0) if (old_topic == n).any()
                        else np.zeros(vectors.shape[1]) for n in numbers])
    topic_of = {pid: previous.topic[at[pid]] for pid in kept}
    xy_of = {pid: previous.xy[at[pid]] for pid in kept}
    for pid in added:
        v = vectors[index[pid]]
        topic_of[pid] = numbers[int(np.argmax(centres @ v))]
        near = kept[int(np.argmax(vectors[old_rows] @ v))]
        x, y = xy_of[near]
        xy_of[pid] = [round(min(1.0, x + 0.004), 4), round(min(1.0, y + 0.004), 4)]
    ids = [p.paper_id for p in papers]
    topic = np.array([topic_of[pid] for pid in ids])
    topics = []
    for t in previous.topics:
        members = np.flatnonzero(topic == t.n)
        topics.append(_topic(papers, vectors, members, t.n, t.terms, t.label))
    return TopicMap(key, ids, [xy_of[pid] for pid in ids], topic.tolist(), topics, time.perf_counter() - started,
                    basis=previous.basis, built=previous.built or len(previous.paper_ids), drift=drift)


def _topic(papers: list[StoredPaper], vectors: np.ndarray, members: np.ndarray, n: int, terms: list[str],
           label: str) -> Topic:
    """Topic `n` of these member rows: its size, decision mix and examples nearest its centre."""
    centre = vectors[members].mean(axis=0) if len(members) else np.zeros(vectors.shape[1])
    nearest = members[np.argsort(-(vectors[members] @ centre), kind="stable")]
    mix = Counter(kind(papers[i].decision) for i in members)
    examples = {"all": [papers[i].paper_id for i in nearest[:5]]}
    for name in KINDS:
        examples[name] = [papers[i].paper_id for i in nearest if kind(papers[i].decision) == name][:2]
    return Topic(n, label, terms, len(members), {name: mix.get(name, 0) for name in (*KINDS, "other")}, examples)


_CACHE: dict[tuple[str, str], TopicMap] = {}
_LOCK = threading.Lock()


def map_path(settings: Any) -> Path:
    return Path(settings.data_dir) / f"topicmap-{settings.collection}.json"


def topic_map(engine: Any, stale_ok: bool = False) -> TopicMap:
    """The engine's collection map: from memory, else from the file beside the index if its key matches, else
    computed now and written there (one build at a time). `stale_ok`: the map in memory will do even if the index
    changed since (the page while the collection is still being indexed: not a new map for every batch)."""
    settings = engine.settings
    with _LOCK:
        slot = (str(Path(settings.data_dir).resolve()), settings.collection)
        found = _CACHE.get(slot)
        if found is not None and stale_ok:
            return found
        papers, vectors = explorer(engine.retriever).matrix()
        key = fingerprint(papers, engine.index.embedder.identity, settings.topics)
        if found is not None and found.key == key:
            return found
        path = map_path(settings)
        try:
            found = TopicMap.from_json(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, TypeError, KeyError):
            found = None
        if found is None or found.key != key:
            wanted = basis(engine.index.embedder.identity, settings.topics)
            previous = found if found is not None and found.basis == wanted else None
            found = (previous and extend(previous, papers, vectors, key)) or build(papers, vectors, settings.topics,
                                                                                   key)
            found.basis = wanted
            try:
                tmp = path.with_suffix(f".{os.getpid()}.tmp")
                tmp.write_text(found.to_json(), encoding="utf-8")
                tmp.replace(path)
            except OSError:
                pass  # a read-only data dir: the map is kept in memory only
        _CACHE[slot] = found
        return found
