"""Citations in generated text (`rag.generation.citations`), without a model or an index: every style is rewritten to
the app's "[1]" / "[1, 2]" before the sentence's full stop, numbers that are not citations stay, fabricated ones go, and
the streaming filter ends with the same text as cleaning the whole answer, however the answer was split."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.generation.citations import StreamFilter, clean, cited_sentences

VALID = {1, 2, 3, 4, 5}
QWEN_BARE = "Switch SAEs route each activation to one small expert.\n\nThis cuts the training compute.\n\n[1]"
QWEN_TITLES = ("Switch SAEs are cheaper to train.\n\nSources:\n[1] Efficient Dictionary Learning with Switch Sparse "
               "Autoencoders\n[2] Time-MoE: Billion-Scale Time Series Foundation Models with Mixture of Experts\n")

STYLES = [  # (as a model writes it, as the app shows it, the numbers cited)
    ("One. [1] Two. [2]", "One [1]. Two [2].", [1, 2]),
    ("One [1]. Two [2].", "One [1]. Two [2].", [1, 2]),
    ("One.[1] Two.[2]", "One [1]. Two [2].", [1, 2]),
    ("One[1]. Two[2].", "One [1]. Two [2].", [1, 2]),
    ("One [1][2].", "One [1, 2].", [1, 2]),
    ("One [1] [2], [3].", "One [1, 2, 3].", [1, 2, 3]),
    ("One [1, 2]. Two [3,4]. Three [5; 1].", "One [1, 2]. Two [3, 4]. Three [5, 1].",
     [1, 2, 3, 4, 5]),
    ("One [1-3].", "One [1, 2, 3].", [1, 2, 3]),
    ("One [1–3]. Two [2—4]. Three [1 to 2].", "One [1, 2, 3]. Two [2, 3, 4]. Three [1, 2].", [1, 2, 3, 4]),
    ("One [Source 1]. Two [source 2]. Three [Sources 3 and 4].", "One [1]. Two [2]. Three [3, 4].", [1, 2, 3, 4]),
    ("One [Source 1, Source 2].", "One [1, 2].", [1, 2]),
    ("One (Source 1). Two (Sources 2, 3).", "One [1]. Two [2, 3].", [1, 2, 3]),
    ("One [S1]. Two [S2, S3]. Three [S4][S5].", "One [1]. Two [2, 3]. Three [4, 5].", [1, 2, 3, 4, 5]),
    ("One【1】. Two【2】【3】. Three【4，5】.", "One [1]. Two [2, 3]. Three [4, 5].", [1, 2, 3, 4, 5]),
    ("One.^1 Two^2. Three.^3,4", "One [1]. Two [2]. Three [3, 4].", [1, 2, 3, 4]),
    ("One^[1]. Two.^[2] Three[^3][^4].", "One [1]. Two [2]. Three [3, 4].", [1, 2, 3, 4]),
    ("One [1]. [2] Two.", "One [1, 2]. Two.", [1, 2]),
    ("稀疏自编码器更便宜。[1] 第二句【2】。", "稀疏自编码器更便宜[1]。 第二句[2]。", [1, 2]),
    # Qwen2.5-Coder-1.5B over llama.cpp: "[1] and [2]" is both (it was read as [2] alone)
    ("This approach is supported by [1] and [2].", "This approach is supported by [1, 2].", [1, 2]),
    ("Both cut the cost [1] and [3] and [2].", "Both cut the cost [1, 3, 2].", [1, 3, 2]),
]

NOT_CITATIONS = [
    "Scores lie in the [0, 1] interval [1].",
    "Each value is in [0,1] and the top-[5] list is kept [1].",
    "It grows as x^2 and decays as e^{-1} over 10^3 steps [1].",
    "The $\\sigma^2$ and \\ell^2 norms [1].",
    "Equation (1) of Section 1 holds [1].",
    "Data from [2024] and a list [1].",
    "Smith et al. [1] show it.",  # a full stop followed by a lowercase word did not end the sentence
]


@pytest.mark.parametrize("raw,shown,cited", STYLES)
def test_every_style_is_rewritten_to_the_apps_form(raw, shown, cited):
    cleaned = clean(raw, VALID)
    assert (cleaned.text, cleaned.cited, cleaned.fabricated) == (shown, cited, 0)
    assert clean(cleaned.text, VALID).text == shown  # the app's form is left as it is


@pytest.mark.parametrize("raw", NOT_CITATIONS)
def test_numbers_that_are_not_citations_are_left_alone(raw):
    cleaned = clean(raw, VALID)
    assert (cleaned.text, cleaned.cited, cleaned.fabricated) == (raw, [1], 0)


@pytest.mark.parametrize("raw,shown,fabricated", [
    ("One [9]. Two [1].", "One. Two [1].", 1),
    ("One. [9] Two [1, 9].", "One. Two [1].", 2),
    ("One [7-9][1].", "One [1].", 3),
    ("One (Source 8).^9 Two [S1].", "One. Two [1].", 2),
])
def test_fabricated_numbers_are_removed_and_counted(raw, shown, fabricated):
    cleaned = clean(raw, VALID)
    assert (cleaned.text, cleaned.cited, cleaned.fabricated) == (shown, [1], fabricated)


@pytest.mark.parametrize("raw,shown,cited", [
    ("One. Two.\n\nSources: [1], [2]", "One. Two [1, 2].", [1, 2]),  # one paragraph: the whole answer
    ("One [1].\n\nTwo. Three.\n\n**Sources:** [2], [3]", "One [1].\n\nTwo. Three [2, 3].", [1, 2, 3]),
    ("One [1].\nReferences: 1, 3.\n", "One [1, 3].", [1, 3]),
    ("One [2]. Two.\n\nSources: [Source 1] and [S9]", "One [2]. Two [1].", [2, 1]),
    ("稀疏自编码器更便宜。\n\n来源：【1】", "稀疏自编码器更便宜[1]。", [1]),
    ("Sources: [1] are cited here.\n\nEnd [2].", "Sources: [1] are cited here.\n\nEnd [2].", [1, 2]),  # not at the end
    # The endings real models wrote in the issue-28 run (Qwen2.5-Coder-1.5B, SmolLM2-135M over llama.cpp):
    (QWEN_BARE, "Switch SAEs route each activation to one small expert.\n\nThis cuts the training compute [1].", [1]),
    ("Switch SAEs are cheaper.\n\n[1] Source [2] Source", "Switch SAEs are cheaper [1, 2].", [1, 2]),
    ('Switch SAEs are cheaper.\n[1] Source n="1"', "Switch SAEs are cheaper [1].", [1]),
    (QWEN_TITLES, "Switch SAEs are cheaper to train [1, 2].", [1, 2]),
    ("Cheaper [3].\n\n**References:**\n1. A title (2024)\n2) Another: 12 ideas", "Cheaper [3, 1, 2].", [3, 1, 2]),
    ("One [1].\n[2] Two is a claim of its own.", "One [1].\n[2] Two is a claim of its own.", [1, 2]),  # a claim
])
def test_a_trailing_sources_line_becomes_the_closing_citation_of_the_last_paragraph(raw, shown, cited):
    cleaned = clean(raw, VALID)
    assert (cleaned.text, cleaned.cited) == (shown, cited)


def test_sentences_of_a_paragraph_without_citations_take_its_closing_ones():
    text = clean("Alpha holds. Beta holds [1, 2].\n\nGamma holds [3]. Delta holds.\n\nEpsilon.", VALID).text
    assert cited_sentences(text) == [("Alpha holds.", [1, 2]), ("Beta holds [1, 2].", [1, 2]),
                                     ("Gamma holds [3].", [3]), ("Delta holds.", []), ("Epsilon.", [])]


def test_an_answer_cited_only_at_its_end_has_every_sentence_checked_against_that_citation():
    # Qwen2.5 wrote three paragraphs and a last "[1]": none of its sentences was checked before.
    text = clean(QWEN_BARE, VALID).text
    assert cited_sentences(text) == [("Switch SAEs route each activation to one small expert.", [1]),
                                     ("This cuts the training compute [1].", [1])]
    text = clean(QWEN_TITLES, VALID).text
    assert [c for _, c in cited_sentences(text)] == [[1, 2]]


ANSWERS = [raw for raw, _, _ in STYLES] + NOT_CITATIONS + [QWEN_BARE, QWEN_TITLES,
    "Cheaper.\n\n[1] Source [2] Source", 'Cheaper.\n[1] Source n="1"', "One [1].\n[2] Two is a claim.",
    "Cheaper [3].\n\n**References:**\n1. A title (2024)\n2) Another: 12 ideas",
    "One. Two.\n\nSources: [1], [2]",
    "One [1].\n\nTwo. Three.\n\n**Sources:** [2], [3]\n",
    "One [9]. Two. [1, 9] Three (Source 2).\n\nReferences: [S4]",
    "Sources: [1] are cited here.\n\nEnd [2].",
]


def _streamed(pieces: list[str]) -> tuple[str, object]:
    stream = StreamFilter(VALID)
    shown = "".join(stream.feed(piece) for piece in pieces)
    tail, cleaned = stream.finish()
    return shown + tail, cleaned


def _same_as_whole(text: str, pieces: list[str]) -> None:
    whole = clean(text, VALID)
    shown, cleaned = _streamed(pieces)
    assert (shown, cleaned.text, cleaned.cited, cleaned.fabricated) == \
           (whole.text, whole.text, whole.cited, whole.fabricated), pieces


@pytest.mark.parametrize("text", ANSWERS)
def test_streaming_gives_the_whole_answers_text_at_every_split(text):
    _same_as_whole(text, list(text))
    for i in range(len(text) + 1):
        _same_as_whole(text, [text[:i], text[i:]])
    rng = random.Random(text)
    for _ in range(50):
        cuts = sorted(rng.sample(range(len(text) + 1), rng.randint(1, min(8, len(text)))))
        _same_as_whole(text, [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=False)])


FRAGMENTS = ["word", " ", ".", "!", "。", "\n", "\n\n", "[1]", "[9]", "[1, 2]", "[1,2]", "[1-3]", "[Source 1]",
             "(Source 2)", "[S1]", "【1】", "^1", "^[2]", "[^3]", ",", "[0, 1]", "top-[5]", "x^2", "10^3", "(1)",
             "Sources: [1], [2]", "**References:** 1, 3", "Sour", "[", "(", "^", "$", "\\ell", "et al.", "a", "中文",
             " and ", "and", " an", " Source", ' n="1"', "Sources:\n", "1. ", "Title: X", "-", "s"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=16), st.data())
def test_streaming_gives_the_whole_answers_text_for_any_answer_and_split(fragments, data):
    text = "".join(fragments)
    cuts = sorted(data.draw(st.sets(st.integers(0, len(text)), max_size=10)))
    _same_as_whole(text, [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=False)])


def test_streaming_holds_back_only_what_may_still_change():
    stream = StreamFilter(VALID)
    assert stream.feed("Switch SAEs route activations") == "Switch SAEs route activations"
    assert stream.feed(" between experts.") == " between experts"  # a citation may follow the full stop
    assert stream.feed(" [") == ""  # an open bracket
    assert stream.feed("1] They") == " [1]. They"
    assert stream.feed(" scale.\n\nSou") == " scale"  # maybe the trailing "Sources:" line: "scale [n]."
    assert stream.feed("rce code is open.") == ".\n\nSource code is open"
    assert stream.finish()[0] == "."


@pytest.mark.parametrize("step", [1, 2, 5, 1000])
def test_echoed_source_tags_become_citations_however_the_stream_is_split(step):
    from rag.generation.citations import EchoedTags

    raw = ('<source n="1">LOKI: A Benchmark</source> introduces LOKI. <source n="2">It has 18K questions [2].'
           '</source> Plain: x < y, a<b. <source n="3">Never closed')
    tags, stream = EchoedTags(), StreamFilter({1, 2, 3})
    shown = "".join(stream.feed(tags.feed(raw[i:i + step])) for i in range(0, len(raw), step))
    shown += stream.feed(tags.finish())
    end, cleaned = stream.finish()
    assert shown + end == cleaned.text == ("LOKI: A Benchmark [1] introduces LOKI. It has 18K questions [2]. "
                                           "Plain: x < y, a<b. Never closed [3]")
    assert cleaned.cited == [1, 2, 3]


def test_finished_part_drops_only_an_unfinished_last_sentence():
    from rag.generation.citations import finished_part

    assert finished_part("One claim [1]. Two is cut off in the mid") == "One claim [1]."
    assert finished_part("One claim [1]. Two done [2].") == "One claim [1]. Two done [2]."
    assert finished_part("A quote.” [1]") == "A quote.” [1]"  # a citation after the closing quote ends it too
    assert finished_part("第一句话[1]。第二句") == "第一句话[1]。"
    assert finished_part("Intro [1].\n\n- item one\n- item two cut") == "Intro [1]."
    assert finished_part("Only one unfinished") == "" and finished_part("") == ""
