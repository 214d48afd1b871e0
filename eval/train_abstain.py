"""Fit the abstention classifier of rag/answering/abstain.py on questions generated from the papers and on the dev
questions (`make model`).

    python eval/train_abstain.py [--corpus rag/data/iclr2025.jsonl] [--data-dir .rag-eval/iclr2025] [--dry-run]
                                 [--cache retrievals.pkl] [--dev-weight 30]

The dev questions are those of eval/tune_outcomes.py's DEV_SETS (no held-out set), asked as `rag eval` asks them,
each weighted --dev-weight beside a generated question (eval/gate_cv.py chose the weight and the features by grouped
cross-validation over them; 0 fits on the generated questions alone, as before issue 29). The generated ones are
never taken from eval/questions (the papers those sets ask about are left out of the generation too):
- answerable: a paper's title reworded into a question with some words dropped; 4-8 content words of one abstract
  sentence in a question template; questions about a number an abstract does give ("how many <noun> ..." for
  "48 variants", "what <metric> does X achieve?" for "a score of 18.4%" or "8x speedup");
- unanswerable: topics whose key terms occur in no title or abstract (TRAIN_TOPICS, checked here against the
  corpus and kept apart from the topics of the evaluation sets), alone or joined to a method the corpus does
  contain ("... with graph neural networks"); and specific figures (learning rate, GPU hours, FID, number of
  layers, ... in ten wordings) asked about a real paper whose abstract does not contain the figure's words, or
  mentions them with no number within six words ("figure-mentioned": "we tune the learning rate").
Every question is retrieved as the app does (hybrid, k = 10); `rag.answering.abstain.features` turns the retrieval into
a vector; a logistic regression (scikit-learn, L2, balanced classes) is fitted on 80% of the generated (and the dev
questions) and checked on the other 20%, and the threshold (the two-outcome gate's; the three outcomes' cut points
are eval/tune_outcomes.py's) is the lowest probability that refuses at most 3% of the held-back answerable
generated questions. The
fitted values are written to rag/answering/abstain_gate.json, with the feature names the app checks at load.
"""

from __future__ import annotations

import argparse
import json
import pickle
import random
import re
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "eval"))

from rag.config import Settings  # noqa: E402
from rag.search.retrieve import RetrievalParams  # noqa: E402
from rag.answering import abstain  # noqa: E402
from rag.engine import Engine  # noqa: E402
from gate_cv import SHIPPED_DEV_WEIGHT, fit, record  # noqa: E402
from tune_outcomes import DEV_SETS  # noqa: E402

SEED = 2025
MAX_TRAIN_FALSE_REFUSAL = 0.03
# Topics for generated unanswerable questions. None may occur in the corpus (checked below), and none is a topic of
# the evaluation sets (those are checked against TEST_TERMS from eval/questions at run time).
TRAIN_TOPICS = [
    "lottery ticket sales forecasting", "horse racing odds", "tennis serve speed", "golf swing analysis",
    "bowling scores", "cricket match outcomes", "baseball pitch classification", "rugby tackles",
    "sourdough baking", "cheese ripening", "chocolate tempering", "tea leaf grading", "sushi freshness",
    "vineyard irrigation", "orchard pruning", "mushroom foraging", "beekeeping schedules", "poultry farming",
    "dairy cow lameness", "sheep shearing", "fishing quotas", "oyster farming", "lobster populations",
    "whale song", "dolphin whistles", "frog calls", "butterfly migration", "ant colony foraging in deserts",
    "coral bleaching", "mangrove restoration", "tsunami warnings", "hurricane evacuation routes",
    "lightning strikes", "hailstorm damage", "drought insurance", "flood insurance claims", "mortgage defaults",
    "tax evasion audits", "pension fund allocation", "cryptocurrency mining rigs", "casino fraud",
    "parking tickets", "toll booth queues", "subway crowding", "bicycle sharing docks", "ferry schedules",
    "airport baggage handling", "train delays in rural railways", "truck platooning fuel savings",
    "tire wear", "windshield cracks", "car paint defects", "welding seams", "plumbing leaks", "roof shingles",
    "furniture assembly instructions", "carpet weaving", "pottery glazing", "stained glass design",
    "violin making", "guitar tablature", "drum notation", "opera librettos", "ballet choreography",
    "stand-up comedy timing", "magic tricks", "circus acrobatics", "theatre lighting cues", "museum visitor flow",
    "library book loans", "postal sorting", "wedding planning", "funeral arrangements", "pet adoption",
    "dog barking", "cat litter", "aquarium algae", "houseplant watering", "lawn mowing robots",
    "snow plough routing", "ice rink maintenance", "sauna temperature", "perfume bottles", "lipstick shades",
    "hair dye", "nail polish", "shoe sizing", "eyeglass prescriptions", "hearing aid fitting",
    "wheelchair ramps", "prosthetic leg sockets", "dialysis schedules", "blood bank inventory",
    "vaccine cold chains", "snake bites", "malaria nets", "dengue outbreaks in slums", "tuberculosis sanatoriums",
]
FIGURES = [
    ("learning rate", ["learning rate"]), ("batch size", ["batch size"]), ("weight decay", ["weight decay"]),
    ("number of training epochs", ["epoch"]), ("number of GPUs", ["gpu"]), ("GPU hours", ["gpu", "hours"]),
    ("dropout rate", ["dropout"]), ("number of warmup steps", ["warmup"]), ("random seeds", ["seed"]),
    ("training time in hours", ["hours", "hour"]), ("memory footprint in gigabytes", ["gb", "gigabyte"]),
    ("optimizer", ["adam", "sgd", "optimizer"]), ("sampling temperature", ["temperature"]),
    ("number of human annotators", ["annotator"]), ("total compute cost in dollars", ["$", "dollar", "cost"]),
    ("software licence", ["licen"]), ("number of attention heads", ["heads"]), ("hidden dimension", ["hidden"]),
    ("number of layers", ["layer"]), ("context length in tokens", ["context length", "tokens"]),
    ("vocabulary size", ["vocabulary"]), ("number of training tokens", ["tokens"]),
    ("inference latency in milliseconds", ["latency", "ms"]), ("FLOPs", ["flop"]),
    ("number of participants", ["participant"]), ("top-1 accuracy on ImageNet", ["imagenet"]),
    ("BLEU score", ["bleu"]), ("F1 score", ["f1"]), ("number of images", ["image"]),
    ("number of classes", ["class"]), ("embedding dimension", ["dimension"]), ("perplexity", ["perplexity"]),
    ("wall-clock time", ["wall-clock", "time"]), ("number of sampling steps", ["steps"]),
    ("beam size", ["beam"]), ("momentum", ["momentum"]), ("discount factor", ["discount"]),
    ("number of rounds", ["round"]), ("AUC", ["auc"]), ("RMSE", ["rmse"]), ("mIoU", ["miou"]),
    ("PSNR in dB", ["psnr", "db"]), ("FID", ["fid"]), ("number of model parameters", ["parameter"]),
    ("dataset size", ["samples", "examples"]), ("number of hidden units", ["units"]),
]
FIGURE_TEMPLATES = [
    "What {f} was used in '{t}'?", "Which {f} did the authors of {t} report?", "What is the {f} for {t}?",
    "How many {f} did {t} need?", "What exact {f} does the paper on {t} use?", "What {f} does {t} reach?",
    "In {t}, what {f} was chosen?", "What was the {f} in the experiments of {t}?",
    "Which {f} do the authors of {t} use?", "What {f} is reported for {t}?",
]
COUNT_TEMPLATES = ["How many {n} does {t} use?", "How many {n} are there in {t}?", "What number of {n} does {t} "
                   "report?", "On how many {n} was {t} evaluated?", "How many {n} did {t} need?"]
METRIC_TEMPLATES = ["What {n} does {t} achieve?", "What {n} is reported for {t}?", "How large is the {n} of {t}?",
                    "Which {n} does {t} reach?"]
NUMBER_WORDS = set("two three four five six seven eight nine ten eleven twelve twenty thirty fifty hundred hundreds "
                   "thousand thousands million millions billion billions dozen dozens half twice double".split())
TOPIC_TEMPLATES = [
    "Which papers study {x}?", "Is there work on {x}?", "Are there methods for {x}?", "Which paper models {x}?",
    "What has been proposed for {x}?",
]
MIXED_TEMPLATES = [
    "Which papers apply {m} to {x}?", "Is there work on {x} using {m}?", "How can {m} help with {x}?",
    "Are there {m} approaches for {x}?",
]
ANSWER_TEMPLATES = ["Which paper {w}?", "Is there work on {w}?", "How can {w}?", "What method {w}?", "{w}?",
                    "Papers about {w}", "Which papers {w}?"]
STOP = set("""a an the of in on for to and or with by from via is are be as at that this these those we our their its
it into over under than then which what how can not no more most less both each such using use based new towards
while when where between through across without within do does show shows paper propose proposed approach method
methods results also has have been was were they them however existing recent work first one two different various
many several large significant other novel e.g i.e only even often still further well""".split())
METHODS = ["graph neural networks", "diffusion models", "large language models", "reinforcement learning",
           "transformers", "contrastive learning", "federated learning", "gaussian processes", "sparse autoencoders",
           "vision-language models", "knowledge distillation", "bayesian optimization", "optimal transport",
           "self-supervised learning", "neural operators", "normalizing flows", "mixture of experts"]


def words_of(text: str) -> list[str]:
    return re.findall(r"[A-Za-z][A-Za-z0-9-]*", text)


def absent(term: str, corpus_text: str) -> bool:
    return not re.search(r"(?<![\w-])" + re.escape(term.lower()) + r"(?:s|es)?(?![\w-])", corpus_text)


def generate(papers: list[dict], excluded: set[str], test_terms: set[str], rng: random.Random) -> list[tuple]:
    """[(question, label, kind)]: label 1 = unanswerable (refuse), 0 = answerable."""
    corpus_text = "\n".join(f"{p['title']} {p['abstract']}".lower() for p in papers)
    pool = [p for p in papers if p["id"] not in excluded and p.get("abstract")]
    rng.shuffle(pool)
    # Users paraphrase: their questions share only part of the paper's words. Each generated answerable question
    # has 20-60% of its words swapped for words of the corpus at large (by frequency), and one in twenty a misspelt
    # word (a term no paper contains), so that the model does not learn "every word matches" as "answerable".
    vocabulary = Counter(w.lower() for p in papers for w in set(words_of(p["title"] + " " + p["abstract"]))
                         if w.lower() not in STOP and len(w) > 3)
    # ties broken by the word: set iteration order (hash seed) must not change what is generated
    common = [w for w, _ in sorted(vocabulary.items(), key=lambda kv: (-kv[1], kv[0]))[:3000]]

    def paraphrase(words: list[str]) -> str:
        share = rng.uniform(0.2, 0.6)
        words = [rng.choice(common) if rng.random() < share else w for w in words]
        if rng.random() < 0.05 and words:
            i = rng.randrange(len(words))
            w = words[i]
            words[i] = w[:1] + w[2:3] + w[1:2] + w[3:] + "x" if len(w) > 3 else w + "qz"
        return " ".join(words)

    out = []
    for p in pool[:500]:  # titles, words dropped
        kept = [w for w in words_of(p["title"].split(":")[-1] if rng.random() < 0.5 else p["title"])
                if rng.random() > 0.3]
        if len(kept) >= 3:
            out.append((rng.choice(ANSWER_TEMPLATES).format(w=paraphrase(kept).lower()), 0, "title"))
    for p in pool[500:1300]:  # one abstract sentence, 4-8 content words in order
        sentences = [s for s in re.split(r"(?<=[.!?])\s+", p["abstract"]) if len(s.split()) > 10]
        if not sentences:
            continue
        content = [w for w in words_of(rng.choice(sentences)) if w.lower() not in STOP and len(w) > 2]
        if len(content) < 4:
            continue
        start = rng.randrange(0, max(1, len(content) - 6))
        kept = content[start:start + rng.randint(4, 8)]
        out.append((rng.choice(ANSWER_TEMPLATES).format(w=paraphrase(kept)), 0, "sentence"))
    count = re.compile(r"\b(\d[\d,.]*)\s+(?:[a-z-]+\s+)?([a-z][a-z-]+s)\b")
    gain = re.compile(r"\b(\d[\d,.]*)\s*(%|x|×|times)")
    # a metric next to its figure: "an accuracy of 95%", "a score of only 18.4%", "8x speedup", "26% improvement"
    metric = re.compile(r"\b([a-z][a-z-]{3,}) (?:of|to|by) (?:up to |about |only |over |nearly )?\$?\d[\d.,]*\s*"
                        r"(?:%|\\?%|×|x\b|\\times)|\d[\d.,]*\s*(?:%|\\%|×|x|\\times)\$?\s+(?:relative |average )?"
                        r"([a-z][a-z-]{3,})")
    for p in pool[1300:] + pool[:300]:  # a number the abstract gives
        title = " ".join(words_of(p["title"].split(":")[0] if ":" in p["title"] else p["title"])[:6])
        m, g, k = count.search(p["abstract"]), gain.search(p["abstract"]), metric.search(p["abstract"])
        noun = k and (k.group(1) or k.group(2))
        if noun and noun not in STOP and rng.random() < 0.5:
            out.append((rng.choice(METRIC_TEMPLATES).format(n=noun, t=title), 0, "number"))
        elif m and m.group(2) not in STOP:
            out.append((rng.choice(COUNT_TEMPLATES).format(n=m.group(2), t=title), 0, "number"))
        elif g:
            out.append((f"By how much does {title} improve over prior work?", 0, "number"))
    # a topic is kept when one of its words (the key term) occurs in no paper and none is a word of a test topic
    topics = [t for t in TRAIN_TOPICS if any(absent(w, corpus_text) for w in t.split() if len(w) > 3)
              and not ({w for w in t.lower().split() if len(w) > 4} & test_terms)]
    for t in topics:
        for template in rng.sample(TOPIC_TEMPLATES, 3):
            out.append((template.format(x=t), 1, "topic"))
        for template in rng.sample(MIXED_TEMPLATES, 2):
            out.append((template.format(x=t, m=rng.choice(METHODS)), 1, "topic+method"))
    # Figures the abstract does not give: their words are absent, or no number stands near them. (min: every new
    # question set shrinks the pool; the same draw as before while it holds 600 or more.)
    for p in rng.sample(pool, min(600, len(pool))):
        name, keys = rng.choice(FIGURES)  # ("we tune the learning rate": mentioned, no number)
        words = [w.lower() for w in re.findall(r"\d+|[^\W\d_][\w-]*", p["abstract"])]
        at = [i for i, _ in enumerate(words) for k in keys
              if all(i + j < len(words) and words[i + j].startswith(part) for j, part in enumerate(k.split()))]
        numbers = [i for i, w in enumerate(words) if w[0].isdigit() or w in NUMBER_WORDS]
        if any(abs(i - j) <= 6 for i in at for j in numbers) or (at and rng.random() < 0.5):
            continue
        title = p["title"] if rng.random() < 0.5 else " ".join(words_of(p["title"])[:5])
        out.append((rng.choice(FIGURE_TEMPLATES).format(f=name, t=title), 1, "figure" if not at else
                    "figure-mentioned"))
    return out, topics


def auc(scores: np.ndarray, y: np.ndarray) -> float:
    pos, neg = scores[y == 1], scores[y == 0]
    return float(((pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum())
                 / (len(pos) * len(neg)))


def held_out_of_generation() -> tuple[set[str], set[str]]:
    """What generation must not touch: the papers the question sets ask about (gold, `about`) and the longer words
    of their unanswerable questions."""
    excluded: set[str] = set()
    test_terms: set[str] = set()
    for path in sorted((ROOT / "eval" / "questions").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                q = json.loads(line)
                excluded.update(q.get("gold", []))
                excluded.update([q["about"]] if q.get("about") else [])
                if q.get("kind") == "none":
                    test_terms.update(w.lower() for w in words_of(q["question"]) if len(w) > 4)
    return excluded, test_terms


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=ROOT / "rag" / "data" / "iclr2025.jsonl")
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--dry-run", action="store_true", help="print, do not write rag/answering/abstain.py")
    parser.add_argument("--dev-weight", type=float, default=SHIPPED_DEV_WEIGHT,
                        help="each dev question's weight beside a generated one's 1 (tune_outcomes.DEV_SETS, asked "
                             "as `rag eval` asks; chosen by eval/gate_cv.py); 0: generated questions only")
    parser.add_argument("--cache", type=Path, default=None,
                        help="pickle of the retrievals by question, read and updated: refitting after a feature "
                             "change then skips retrieval (valid only for the same index and retrieval code)")
    args = parser.parse_args()
    papers = [json.loads(x) for x in args.corpus.read_text(encoding="utf-8").splitlines() if x.strip()]
    excluded, test_terms = held_out_of_generation()
    rng = random.Random(SEED)
    items, topics = generate(papers, excluded, test_terms, rng)
    engine = Engine(Settings.load(data_dir=args.data_dir or ROOT / ".rag-eval" / args.corpus.stem))
    engine.ingest([args.corpus])
    started = time.perf_counter()
    cache = pickle.loads(args.cache.read_bytes()) if args.cache and args.cache.exists() else {}
    for q, _, _ in items:
        if q not in cache:
            cache[q] = engine.retriever.retrieve(q, RetrievalParams(k=10))
    if args.cache:
        args.cache.write_bytes(pickle.dumps(cache))
    x = np.array([abstain.features(cache[q]) for q, _, _ in items])
    y = np.array([label for _, label, _ in items], dtype=float)
    kinds = np.array([kind for _, _, kind in items])
    counts = ", ".join(f"{k} {int((kinds == k).sum())}" for k in dict.fromkeys(kinds))
    print(f"{len(items)} generated questions ({counts}); {len(topics)} topics; "
          f"features in {time.perf_counter() - started:.0f} s")
    # The dev questions (issue 29 item 4): asked as `rag eval` asks them, each the outcome decision's retrieval,
    # weighted args.dev_weight beside a generated question (eval/gate_cv.py chose the weight by cross-validation).
    dev = [r for r in record(engine, DEV_SETS) if r["retrieval"] is not None] if args.dev_weight else []
    dx = np.array([abstain.features(r["retrieval"]) for r in dev]).reshape(len(dev), len(abstain.FEATURES))
    dy = np.array([0.0 if r["answerable"] else 1.0 for r in dev])
    dw = np.full(len(dev), args.dev_weight)
    if dev:
        print(f"{len(dev)} dev questions ({', '.join(DEV_SETS)}), each weighted {args.dev_weight:g}")
    order = np.random.default_rng(SEED).permutation(len(items))
    cut = int(0.8 * len(items))
    train, val = order[:cut], order[cut:]
    mean, scale, w, b = fit(np.vstack([x[train], dx]), np.concatenate([y[train], dy]),
                            np.concatenate([np.ones(len(train)), dw]))
    p_val = 1 / (1 + np.exp(-(((x[val] - mean) / scale) @ w + b)))
    answerable = np.sort(p_val[y[val] == 0])
    threshold = float(answerable[int(np.ceil((1 - MAX_TRAIN_FALSE_REFUSAL) * len(answerable))) - 1]) + 1e-6
    refused = p_val >= threshold
    print(f"validation (20% of the generated): AUC {auc(p_val, y[val]):.3f}; threshold {threshold:.3f}: refuses "
          f"{refused[y[val] == 1].mean():.3f} of unanswerable, {refused[y[val] == 0].mean():.3f} of answerable")
    for kind in dict.fromkeys(kinds):
        mask = kinds[val] == kind
        print(f"  {kind:<13} {int(mask.sum()):>4} refused {refused[mask].mean():.3f}")
    # Refit on everything for the shipped weights; the threshold stays the one chosen on the held-back 20%.
    mean, scale, w, b = fit(np.vstack([x, dx]), np.concatenate([y, dy]), np.concatenate([np.ones(len(y)), dw]))
    for name, weight in sorted(zip(abstain.FEATURES, w, strict=False), key=lambda t: -abs(t[1])):
        print(f"  {name:<18} {weight:+.3f}")
    gate = {"about": "The learned abstention gate (rag/answering/abstain.py): a logistic regression over "
                     "standardized retrieval features. Written by eval/train_abstain.py (make model); do not edit "
                     "by hand.",
            "features": list(abstain.FEATURES), "mean": [round(float(v), 6) for v in mean],
            "scale": [round(float(v), 6) for v in scale], "weights": [round(float(v), 6) for v in w],
            "bias": round(float(b), 6), "threshold": round(threshold, 4),
            "training": f"{len(items)} generated questions (seed {SEED})"
                        + (f" + {len(dev)} dev questions ({', '.join(DEV_SETS)}) each weighted {args.dev_weight:g}"
                           if dev else "")
                        + f", eval/train_abstain.py; validation AUC {auc(p_val, y[val]):.3f} (20% of the generated "
                          "held back)"}
    path = ROOT / "rag" / "answering" / abstain.GATE_FILE
    cuts = json.loads(path.read_text(encoding="utf-8")).get("outcomes")
    if cuts:  # the three-outcome cut points were chosen for the old weights: kept, and flagged until re-tuned
        gate["outcomes"] = {**cuts, "stale": "the gate was refit after these were chosen: run eval/tune_outcomes.py"}
        print("the outcome cut points were chosen for the old weights: re-run eval/tune_outcomes.py")
    text = json.dumps(gate, indent=1) + "\n"
    abstain.load_gate(text)  # the names and lengths the app will check
    if args.dry_run:
        print(text)
        return 0
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
