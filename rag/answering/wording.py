"""Wording: what an extractive answer says around its quotes, in the question's language (English, or Chinese for a
question written in Chinese).

A Chinese question's quotes are English (the abstracts are English, and a quote stays as written), but the frame
around them ("Unsure: none of the papers clearly answers this. The closest are:", "5 papers match (each has ...)")
is the app's own text, so it follows the question (on the Chinese page, whose own labels are Chinese, an English
frame stands out), as an LLM's answer does (`rag.generation.prompts.answer_language`). Titles, quotes, decisions
and links stay as the list has them. Notices stay English: they name settings and commands.

One table, by key, English then Chinese; `say` fills a phrase with str.format (values are not parsed again, so a
title's braces are safe). Written here, not with gettext: the strings are few, the answering wing has no locale,
and the page's own labels already live in `rag.web.i18n`.
"""

from __future__ import annotations

from rag.generation.prompts import language_of

PHRASES: dict[str, tuple[str, str]] = {
    "not_covered": ("Not covered: the collection does not appear to cover this question.",
                    "未涵盖：这个论文集似乎没有涉及这个问题。"),
    "nearest": (" The nearest papers are: {titles}.", "最接近的论文：{titles}。"),
    "not_in_abstract": ("Not covered: the abstract of “{title}” does not appear to say.",
                        "未涵盖：“{title}”的摘要似乎没有提到。"),
    "unsure": ("Unsure: none of the papers clearly answers this.", "不确定：没有一篇论文明确回答这个问题。"),
    "closest_are": (" The closest are:", "最接近的是："),
    "unsure_reader": ("Unsure: the LLM found no answer in these papers. The passages closest to the question:",
                      "不确定：LLM 在这些论文中没有找到答案。与问题最接近的段落："),
    "quoted": ("In the paper's words:", "论文原文："),
    "also_close": ("Also close to the question:", "与问题同样接近的还有："),
    "title_only": ("(title only: the list has no abstract for it)", "（只有标题：列表中没有它的摘要）"),
    "found": ("{n} {papers} found:", "找到 {n} 篇论文："),
    "synthesis": ("In short (written by the LLM from the papers listed):", "概括（LLM 根据上面列出的论文所写）："),
    "on_topic": ("{n} {papers}{topic}:", "关于{topic}的论文有 {n} 篇："),
    "of_them": (", {k} of them {kinds}:", "，其中 {k} 篇是{kinds}："),
    "more_shown": ("… and {more} more (Show more on the page, `rag ask --all`, or `limit` in the API).",
                   "……还有 {more} 篇（页面上点“Show more”，或 `rag ask --all`，或 API 的 `limit`）。"),
    "at_least": ("At least ", "至少"),
    "side_by_side": ("Side by side, each paper's sentence closest to the question:",
                     "逐篇对照，每篇论文中与问题最接近的句子："),
    "more_narrower": ("(Papers ranked near the {checked}th of those checked still belong, so there are likely more: "
                      "ask about a narrower topic.)",
                      "（排名接近第 {checked} 篇的论文仍然符合，可能还有更多：请把主题问得更窄一些。）"),
    "no_authors": ("The list gives no authors for {title}.", "列表中没有 {title} 的作者。"),
    "authors": ("{title} is by {names} (the list gives the authors in no particular order).",
                "{title} 的作者是 {names}（列表中的作者不分先后）。"),
    "no_link": ("The list gives no link for {title}.", "列表中没有 {title} 的链接。"),
    "on_openreview": ("{title} is on OpenReview: {url}", "{title} 在 OpenReview 上：{url}"),
    "at_url": ("{title} is at {url}", "{title} 的链接：{url}"),
    "no_decision": ("The list gives no decision for {title}.", "列表中没有 {title} 的录用结果。"),
    "accepted": ("{title} was accepted at ICLR 2025 as {article} {kind} ({decision}).",
                 "{title} 被 ICLR 2025 接收为 {kind}（{decision}）。"),
    "accepted_yes": ("Yes: {title} was accepted at ICLR 2025 as {article} {kind} ({decision}).",
                     "是的：{title} 被 ICLR 2025 接收为 {kind}（{decision}）。"),
    "accepted_no": ("No: {title} was accepted at ICLR 2025 as {article} {kind} ({decision}), not as {asked_article} "
                    "{asked}.", "不是：{title} 被 ICLR 2025 接收为 {kind}（{decision}），而不是 {asked}。"),
    "which_none": ("None of the {total} papers is {article_kind}:", "这 {total} 篇论文都不是{kind}："),
    "which_one": ("One of the {total} papers is {article_kind}:", "这 {total} 篇论文中有 1 篇是{kind}："),
    "which_some": ("{n} of the {total} papers are {kinds}:", "这 {total} 篇论文中有 {n} 篇是{kind}："),
    "nearest_to": ("The {kinds}papers nearest to “{title}” [1] (by the similarity of their whole abstracts):",
                   "与“{title}” [1] 最接近的{kinds}论文（按整篇摘要的相似度）："),
    "none_near": ("No other {kinds}paper in the list is near “{title}” [1].",
                  "列表中没有其他{kinds}论文与“{title}” [1] 接近。"),
    "similarity": ("similarity", "相似度"),
}
# A decision's kind as a Chinese reader calls it (the decision itself, "Accept (Oral)", is shown as the list has it).
KINDS_ZH = {"oral": "口头报告（Oral）", "spotlight": "亮点论文（Spotlight）", "poster": "海报（Poster）"}


def language(question: str) -> str:
    """ "zh" for a question written in Chinese (more Chinese characters than Latin words), else "en"."""
    return "zh" if language_of(question) == "Chinese" else "en"


def say(key: str, lang: str = "en", **values: object) -> str:
    """The phrase `key` in `lang` ("en" or "zh"), filled with `values`."""
    english, chinese = PHRASES[key]
    return (chinese if lang == "zh" else english).format(**values)


def kind_name(kind: str, lang: str = "en") -> str:
    """A decision kind ("oral", "spotlight", "poster") as the answer names it."""
    return KINDS_ZH.get(kind, kind) if lang == "zh" else kind
