"""What the page's cards and chat messages are made of (`rag.web.render`), for records an attacker wrote: links
named by their real host, bounded author lists, no bidi controls, and [n] links only for the app's own citations.
The same records are checked in a real browser in test_web.py / test_map_web.py."""

from __future__ import annotations

import os
import re
import shutil

import pytest

from rag.text import link_label, strip_bidi
from rag.web.render import answer_markdown, paper_card, source_cards

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def source(n: int, **fields) -> dict:
    base = {"n": n, "paper_id": f"p{n}", "title": f"Paper number {n}", "authors": ["Ada Lovelace"],
            "decision": "Accept (Poster)", "url": f"https://openreview.net/forum?id=p{n}", "score": 0.9,
            "text": f"Abstract of paper {n}.", "snippet": f"Abstract of paper {n}.", "has_title": True}
    return {**base, **fields}


def answer(text: str, sources: list[dict], cited: list[int], mode: str = "extractive") -> dict:
    return {"question": "q", "answer": text, "mode": mode, "model": "m", "abstained": False, "notices": [],
            "sources": sources, "citations": [s for s in sources if s["n"] in cited], "fabricated": 0,
            "timings": {"total_ms": 1.0}, "filters": {}}


def test_only_an_openreview_net_link_is_called_openreview_any_other_shows_its_host():
    assert link_label("https://openreview.net/forum?id=x") == "OpenReview"
    assert link_label("https://www.openreview.net/pdf?id=x") == "OpenReview"
    for url, host in [("https://openreview.net.evil.example/forum", "openreview.net.evil.example"),
                      ("https://openreview.net@evil.example/forum", "evil.example"),
                      ("http://EVIL.example:8080/x", "evil.example"),
                      ("https://openrev\u0456ew.net/forum", "xn--openrevew-"),  # a Cyrillic і
                      ]:
        assert link_label(url).startswith(host), (url, link_label(url))
    card = paper_card(source(1, url="https://phish.example/login?openreview"))
    link = re.search(r'<a href="([^"]+)"[^>]*>([^<]*)</a>', card)
    assert link and link.group(1) == "https://phish.example/login?openreview" and link.group(2) == "phish.example"
    assert "OpenReview" not in card
    assert ">OpenReview</a>" in source_cards(answer("x [1].", [source(1)], [1]), 0)


def test_a_card_bounds_what_it_shows_of_a_huge_author_list():
    authors = [f"Author {i} " + "x" * 2000 for i in range(2500)]  # 5 MB of "authors"
    card = source_cards(answer("x [1].", [source(1, authors=authors)], [1]), 0)
    assert len(card) < 30_000, len(card)
    assert "(+2492)" in card and "and 2400 more" in card
    assert "Author 99 " in card and "Author 100 " not in card
    meta = paper_card({**source(1), "authors": authors})
    assert len(meta) < 30_000


def test_bidi_controls_are_taken_out_of_cards():
    evil = "Alice \u202eecilA"
    s = source(1, title=f"Zebra {evil} stripes", authors=[evil, "Bob \u2066x\u2069"], text=f"We {evil} study.",
               snippet=f"We {evil} study.", decision="Accept (Oral)\u202e")
    for html in (source_cards(answer("x [1].", [s], [1]), 0), paper_card(s)):
        assert strip_bidi(html) == html and "Alice ecilA" in html
    assert strip_bidi("a\u202bb\u202cc\u2067d") == "abcd" and strip_bidi("שלום") == "שלום"  # letters stay


def test_only_the_apps_own_citation_markers_link_to_cards():
    quoted = "Narwhal tusks sense salinity gradients [1] as shown in [2]"
    sources = [source(1, text=f"{quoted}. We record tusks.", snippet=f"{quoted}."), source(2), source(3)]
    # The extractive answer quotes the sentence and puts its own [1] before the full stop.
    md = answer_markdown(answer(f"{quoted} [1]. Other sentence [3].", sources, [1, 3]), 0)
    links = re.findall(r'<a href="#src-0-(\d+)">', md)
    assert links == ["1", "3"], md  # the quoted [1] and [2] stay text; the app's [1] and [3] are links
    assert "gradients &#91;1&#93; as shown in &#91;2&#93; [" in md
    # A number no citation has is never a link, whatever the mode.
    md = answer_markdown(answer("Tusks sense salt [1] and depth [7].", sources, [1], mode="llm"), 0)
    assert re.findall(r'<a href="#src-0-(\d+)">', md) == ["1"] and "&#91;7&#93;" in md


def test_the_markdown_export_is_plain_text_and_renders_as_that_text_with_nothing_live():
    """The export once spelled "Accept (Oral)" as "Accept &#40;Oral&#41;": unreadable pasted as text. It is plain
    text now, with a backslash only before Markdown's own markup; rendered (markdown-it, CommonMark with GitHub's
    tables and strikethrough) it shows exactly the text, and nothing in it is HTML, a link or an image."""
    import html

    from markdown_it import MarkdownIt

    from rag.text import readable
    from rag.web.render import export_markdown

    said = "Time-MoE (2.4B parameters): sparse mixture-of-experts - scales well [1]."
    hostile = ('<script>window.__pwned = 1</script> [x](http://evil.example) ![i](http://evil.example/i.png) '
               '**bold** `code` ~~gone~~ a|b &amp; see https://evil.example or www.evil.example or a@evil.example')
    lines = ["# Not a heading", "> not a quote", "- not a list", "1. not a numbered list", "    not code", "==="]
    record = answer(f"{said}\n\n{hostile} [2].\n" + "\n".join(lines),
                    [source(1, title="Time-MoE: Billion-Scale Time Series Foundation Models",
                            decision="Accept (Oral)"), source(2, title="<b>Evil</b> *title*")], [1, 2])
    record["question"] = "What is Time-MoE (the model): does it scale?"
    md = export_markdown([record])
    assert "&#" not in md
    assert "## Q1: What is Time-MoE (the model): does it scale?" in md
    assert said in md  # ( : - as typed, and the app's own [1]
    assert "- [1] Time-MoE: Billion-Scale Time Series Foundation Models (Accept (Oral), " \
           "<https://openreview.net/forum?id=p1>)" in md
    rendered = MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(md)
    assert re.findall(r"<(\w+)", rendered) and not {tag for tag in re.findall(r"<(\w+)", rendered)} - {
        "h1", "h2", "p", "ul", "li", "em", "a"}, rendered
    assert re.findall(r'<a href="([^"]+)"', rendered) == ["https://openreview.net/forum?id=p1",
                                                          "https://openreview.net/forum?id=p2"]
    text = html.unescape(re.sub(r"<[^>]+>", "", rendered))
    # (`readable` shows TeX and **emphasis** of paper text as plain text, in the export as on the page)
    assert said in text and f"{readable(hostile)} [2]." in text and "<b>Evil</b> title" in text
    assert all(line.strip() in text for line in lines)


def test_the_outcome_label_and_headings_follow_the_language_and_paper_text_stays_as_written():
    from rag.web.i18n import SERVER_WORDS, language
    from rag.web.render import sources_panel

    assert language("zh-CN,zh;q=0.9,en;q=0.8") == "zh" and language("en-US,en;q=0.9") == "en"
    assert language("fr-FR,zh;q=0.5,en;q=0.7") == "en" and language("fr, zh-TW;q=0.8") == "zh"
    assert language(None) == "en" and language("de;q=bad") == "en"
    assert all(zh and en != zh for en, zh in SERVER_WORDS.values())  # every phrase has its Chinese
    hostile = source(1, title="<b>Zebra</b> stripes [x](http://evil.example)")
    for outcome, zh in (("answered", "已根据论文回答"), ("unsure", "不确定"), ("not_covered", "论文集未涉及")):
        record = {**answer("Zebra stripes confuse flies [1].", [hostile], [1]), "outcome": outcome,
                  "abstained": outcome == "not_covered"}
        md = answer_markdown(record, 0, "zh")
        assert f'<span class="outcome outcome-{outcome}">{zh}' in md
        assert "Zebra stripes confuse flies" in md and "Answered" not in md
        assert ("最接近的论文：" in md) == (outcome == "not_covered")
        assert answer_markdown(record, 0).count("outcome-") == 1 and "已根据" not in answer_markdown(record, 0)
    # The sentence that only says the outcome is the label's: not said twice on the page (the CLI keeps it).
    from rag.answering.extractive import abstention_text, unsure_text
    from rag.answering.records import Source

    cards = [Source(n=1, paper_id="p1", title="Zebra stripes", authors=[], decision="", url="", text="Flies.",
                    snippet="Flies.", score=0.5)]
    for lang in ("en", "zh"):
        unsure = {**answer(unsure_text(cards, lang=lang)[0], [source(1, title="Zebra stripes")], [1]),
                  "outcome": "unsure"}
        md = answer_markdown(unsure, 0, lang)
        assert "none of the papers" not in md and "没有一篇论文" not in md and "Zebra stripes" in md and "[" in md
        refused = {**answer(abstention_text(cards, lang), [source(1, title="Zebra stripes")], []),
                   "outcome": "not_covered", "abstained": True}
        md = answer_markdown(refused, 0, lang)
        assert "does not appear" not in md and "似乎没有" not in md and md.count("Zebra stripes") == 1
    # the line under an answer: its words in the page's language too (a newcomer's "extractive · 356 ms")
    from rag.web.render import footer

    timed = {**answer("x [1].", [source(1)], [1]), "timings": {"total_ms": 356, "ttft_ms": 120},
             "usage": {"prompt_tokens": None}, "mode": "extractive"}
    assert footer(timed, "zh").startswith("抽取式回答 · 首个词元 120 ms · 356 ms") and "extractive" not in footer(
        timed, "zh")
    assert footer(timed).startswith("extractive · first token 120 ms · 356 ms")
    panel = sources_panel([answer("x [1].", [hostile], [1])], lang="zh")
    assert "<h3>回答 1 的来源</h3>" in panel and "&lt;b&gt;Zebra&lt;/b&gt; stripes" in panel and "<b>" not in panel
    assert "Sources of answer 1" in sources_panel([answer("x [1].", [hostile], [1])])
    assert "最新回答" in sources_panel([], lang="zh")
    # The cards' own words too; English cards are as they were.
    many = [source(i, authors=[f"A{j}" for j in range(12)]) for i in range(1, 8)]
    zh_cards, en_cards = (source_cards(answer("x [1].", many, [1]), 0, lang=lang) for lang in ("zh", "en"))
    for word in ("得分 0.90", "已引用", "<summary>摘要</summary>", "再显示 2 个来源（第 6–7 个，共 7 个）"):
        assert word in zh_cards, word
    assert "score 0.90 · cited" in en_cards and "Show 2 more sources (6–7 of 7)" in en_cards
    assert "Abstract of paper 1." in zh_cards  # the paper's text as written
    filtered = {**answer("x [1].", [source(1)], [1]), "focus": ["p1", "p2"],
                "filters": {"from_question": ["author"], "author": "Ada <b>"}}
    assert "检索范围：仅限 Ada &#60;b&#62; 的论文；在上一个回答的 2 篇论文之内" in answer_markdown(filtered, 0, "zh")
    assert "Searched: only papers by Ada &#60;b&#62;; within the previous answer's 2 papers" in answer_markdown(
        filtered, 0)
    # A decision the question's words set is named in the page's language (a newcomer saw "仅限 Accept (Oral)").
    orals = {**answer("x [1].", [source(1)], [1]),
             "filters": {"from_question": ["decisions"], "decisions": ["Accept (Oral)", "Accept (Spotlight)"]}}
    assert "检索范围：仅限 口头报告（Oral） 或 亮点论文（Spotlight）" in answer_markdown(orals, 0, "zh")
    assert "Searched: only Accept &#40;Oral&#41; or Accept &#40;Spotlight&#41;" in answer_markdown(orals, 0)


def test_the_sources_panel_of_a_long_session_stays_bounded_and_every_shown_link_has_its_target():
    """Issue 49 #8: each answer re-sent every earlier answer's cards (with their related papers): 80 questions at
    k=20 made the 80th answer 30 MB. The panel holds the latest FULL_TURNS answers' cards, the LISTED_TURNS before
    as a line per source (still the targets of their [n] links), and counts the rest."""
    from rag.web.render import FULL_TURNS, LISTED_TURNS, sources_panel

    abstract = "We study sparse autoencoders at scale. " * 40  # ~1,500 characters, like a real abstract
    sources = [[source(n, paper_id=f"t{t}p{n}", text=abstract, snippet=abstract[:39]) for n in range(1, 21)]
               for t in range(80)]
    answers = [{**answer(f"Answer {t} [1], [2].", sources[t], [1, 2]), "question": f"Question {t}?"}
               for t in range(80)]
    related = {s["paper_id"]: [{**source(0, paper_id=f"{s['paper_id']}r{i}", abstract=abstract), "score": 0.5}
                               for i in range(5)] for a in answers for s in a["sources"]}
    one_turn = len(sources_panel(answers[:1], related))
    sizes = {turns: len(sources_panel(answers[:turns], related)) for turns in (10, 40, 80)}
    assert sizes[80] < (FULL_TURNS + 1) * one_turn and sizes[80] - sizes[40] < 200, (one_turn, sizes)
    panel = sources_panel(answers, related, "en")
    for turn in range(80):  # the chat's [n] links of each answer still shown land on a card or a line
        targets = set(re.findall(r'href="#(src-\d+-\d+)"', answer_markdown(answers[turn], turn)))
        shown = turn >= 80 - FULL_TURNS - LISTED_TURNS
        assert targets and all((f'id="{t}"' in panel) == shown for t in targets), turn
    assert panel.count('class="src-card"') == FULL_TURNS * 20  # the rest as lines: no abstracts, no related papers
    older = 80 - FULL_TURNS - LISTED_TURNS  # answers 1..older only counted
    assert f"The sources of answers 1–{older} are in the export" in panel
    assert f"Question {older - 1}?" not in panel and f"Question {older}?" in panel  # (questions count from 0)
    assert f"回答 1–{older} 的来源在导出文件中" in sources_panel(answers, related, "zh")


# Links whose host Python's urlsplit and a browser read differently: a backslash, which a browser reads as "/" in an
# http(s) URL, so the "@openreview.net" after it is path, not host (a card links only URLs without whitespace).
TRICKY_URLS = ["https://evil.example\\@openreview.net/forum?id=x", "https://evil.example\\\\@openreview.net/x",
               "https://evil.example\\.openreview.net/x", "https://openreview.net\\@evil.example/x",
               "https://evil.example\\@www.openreview.net/x", "https://openreview.net/forum?id=x"]


def test_a_link_is_named_by_the_host_a_browser_opens_not_the_one_python_parses():
    assert link_label("https://evil.example\\@openreview.net/forum?id=x") == "evil.example"
    assert link_label(" \x01https://evil.example\\@openreview.net/x") == "evil.example"  # leading C0 controls
    assert link_label("https://openreview.net\\@evil.example/x") == "OpenReview"  # the browser opens openreview.net


@pytest.mark.browser
@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="chromium is installed by `make test`")
def test_in_chromium_each_card_link_is_named_by_the_host_it_opens():
    """The card's link text against the host chromium itself resolves the link's href to."""
    from playwright.sync_api import sync_playwright

    cards = "".join(paper_card(source(i, url=url)) for i, url in enumerate(TRICKY_URLS, start=1))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page()
            page.set_content(f"<html><body>{cards}</body></html>")
            links = page.eval_on_selector_all(".rel-card a[href]", "els => els.map(a => [a.hostname, a.textContent])")
        finally:
            browser.close()
    assert len(links) == len(TRICKY_URLS), links
    for (host, label), url in zip(links, TRICKY_URLS, strict=False):
        expected = "OpenReview" if host == "openreview.net" or host.endswith(".openreview.net") else host
        assert label == expected, (url, host, label)


def test_in_the_markdown_export_only_the_apps_own_citations_are_markup_no_quoted_link_or_image():
    """The export escaped "[" "]" and then unescaped every "\\[n\\]", so "[1](https://evil.example/phish)" in an
    answer, an abstract or a title became a live link, and "![1](http://.../pixel.png)" an image fetched when the
    file is viewed (checked with markdown-it, a CommonMark renderer)."""
    from markdown_it import MarkdownIt

    from rag.web.render import export_markdown

    link, pixel = "[1](https://evil.example/phish)", "![1](http://127.0.0.1:18002/pixel.png)"
    quoted = f"As shown in [2], RLHF is unstable {link}"  # an abstract's sentence, quoted with its own numbers
    record = answer(f"The model said {link} and {pixel} [1].\n[1]: https://evil.example/def\n"
                    f"{quoted} [1]. Also [1][1] and [3].",
                    [source(1, title=f"Pixel {pixel} title", text=f"{quoted}. More text here."), source(2)], [1])
    md = export_markdown([record])
    rendered = MarkdownIt("commonmark").render(md)
    assert "<img" not in rendered, rendered
    assert re.findall(r'<a href="([^"]+)"', rendered) == ["https://openreview.net/forum?id=p1"], rendered
    assert "evil.example" in rendered and "pixel.png" in rendered  # shown, as text
    assert " [1].\n" in md  # the app's own citation still reads [1]
    assert "in \\[2\\]" in md and "and \\[3\\]" in md  # a number it does not cite stays escaped text
