"""The page's own words in each language it speaks (English, Chinese): the labels and buttons the browser
translates (Gradio's `gr.I18n`), and the words of the HTML the server renders (outcome labels, source panel,
indexing line), chosen by the request's Accept-Language. Paper text and model text are never translated.

Two ways, because Gradio's i18n works only on what the page's config carries: a component's label, placeholder or
initial value given as `PAGE("key")` is looked up in the browser against `navigator.language`. What an event
handler returns (an answer's Markdown with its outcome label, the source cards, the indexing line with its
numbers) is built on the server, so the handler reads the browser's language from the same request's
`Accept-Language` header (`language`), which browsers send with every fetch and which follows the same setting as
`navigator.language`; no script on the page is needed, and the rendered HTML stays a pure function of the record
and the language (`rag.web.render`).

Kept free of a Gradio import (rag.web.render uses these words and stays light); `page_i18n` imports it."""

from __future__ import annotations

import re
from typing import Any

from rag.answering.wording import KINDS_ZH  # the decisions' Chinese names, as the answers give them

LANGUAGES = ("en", "zh")

# Words of the page's components, translated in the browser (keys given to components as PAGE("key")).
PAGE_WORDS: dict[str, tuple[str, str]] = {
    "chat": ("Conversation", "对话"),
    "question": ("Ask about the papers…", "就这些论文提问…"),
    "ask": ("Ask", "提问"),
    "examples": ("Examples", "示例问题"),
    "export_md": ("Export Markdown", "导出 Markdown"),
    "export_json": ("Export JSON", "导出 JSON"),
    "md_file": ("Markdown file", "Markdown 文件"),
    "json_file": ("JSON file", "JSON 文件"),
    "clear": ("New conversation", "新对话"),
    "add_papers": ("Add papers", "添加论文"),
    "model": ("Model", "模型"),
    "filters": ("Filters", "筛选"),
    "decision": ("Decision (none = all)", "录用类型（不选 = 全部）"),
    # the decision filter's choices (their values stay the records' "Accept (Oral)" ...)
    **{f"Accept ({kind.title()})": (f"Accept ({kind.title()})", name) for kind, name in KINDS_ZH.items()},
    "author": ("Author name contains", "作者姓名包含"),
    "k": ("Papers to retrieve", "检索的论文数"),
    "map": ("Map of the collection", "论文集地图"),
    "sources_empty": ("Sources of the latest answer appear here.", "最新回答的来源会显示在这里。"),
}

# Words of the HTML the server renders, by the request's language (`words`). `{n}`-style fields are filled in.
SERVER_WORDS: dict[str, tuple[str, str]] = {
    "outcome_answered": ("Answered from the papers", "已根据论文回答"),
    "outcome_unsure": ("Unsure: no paper clearly answers this", "不确定：没有论文明确回答这个问题"),
    "outcome_not_covered": ("Not covered by the collection", "论文集未涉及此问题"),
    "footer_not_covered": ("not covered by the collection", "论文集未涉及"),
    "footer_unsure": ("unsure: the closest papers, none clearly answering",
                      "不确定：列出最接近的论文，没有一篇明确回答"),
    "sources_empty": PAGE_WORDS["sources_empty"],
    "searched": ("Searched: ", "检索范围："),
    "english_terms": ("English search terms", "英文检索词"),
    "semicolon": ("; ", "；"),
    "or": (" or ", " 或 "),
    "only_decisions": ("only {decisions}", "仅限 {decisions}"),
    "widened": (", then any decision (none matched)", "，随后放宽到任何录用类型（没有匹配的论文）"),
    "only_author": ("only papers by {author}", "仅限 {author} 的论文"),
    "by_author": ("by {author}", "作者 {author}"),
    "focus_one": ("within the previous answer's paper", "在上一个回答的论文之内"),
    "focus_many": ("within the previous answer's {n} papers", "在上一个回答的 {n} 篇论文之内"),
    "list_more": ("Show {n} more papers", "再显示 {n} 篇论文"),
    "show_more": ("Show {n} more sources ({first}–{last} of {total})",
                  "再显示 {n} 个来源（第 {first}–{last} 个，共 {total} 个）"),
    "related": ("Related ({n})", "相关论文（{n}）"),
    "similarity": ("similarity {score}", "相似度 {score}"),
    "related_close": ("close", "相近"),
    "related_loose": ("loosely related", "关联较弱"),
    "score": ("score {score}", "得分 {score}"),
    "match": ("match {score} (retrieval, not an answer)", "匹配度 {score}（检索得分，不代表回答）"),
    "match_title": ("how well this paper matches the words of the question, relative to the best match; it does not "
                    "say that the paper answers it",
                    "这篇论文与问题用词的匹配程度（相对于最佳匹配）；并不表示论文回答了问题"),
    "cited": ("cited", "已引用"),
    "cited_closest": ("cited as closest", "作为最接近的论文引用"),
    "title_only": ("Title and authors only: the sources have no abstract for this paper.",
                   "只有标题和作者：来源中没有这篇论文的摘要。"),
    "abstract": ("Abstract", "摘要"),
    "authors_unknown": ("authors unknown", "作者未知"),
    "authors_unordered": ("Authors (order not known): ", "作者（顺序未知）："),
    "and_more": (" … and {n} more", " … 另有 {n} 位"),
    "sources_of": ("Sources of answer {n}", "回答 {n} 的来源"),
    "sources_older": ("The sources of answers 1–{n} are in the export (Export Markdown or JSON).",
                      "回答 1–{n} 的来源在导出文件中（导出 Markdown 或 JSON）。"),
    "nearest": ("Nearest papers:", "最接近的论文："),
    "type_a_question": ("Type a question first.", "请先输入问题。"),
    "footer_extractive": ("extractive", "抽取式回答"),
    "footer_first_token": ("first token {ms} ms", "首个词元 {ms} ms"),
    "footer_tokens": ("{prompt} + {completion} tokens", "{prompt} + {completion} 个词元"),
    "footer_no_tokens": ("tokens not reported by the server", "服务器未报告词元数"),
    "indexing_progress": ("Indexing the collection: {done} of {total} papers indexed; answers meanwhile search "
                          "those indexed so far.",
                          "正在索引论文集：已索引 {done} / {total} 篇；在此期间的回答只检索已索引的论文。"),
    "indexing_reading": ("Reading the collection to index…", "正在读取要索引的论文集…"),
    # English: `rag.store.index.paper_count`'s words; Chinese: the same numbers, its own words.
    "indexed": ("{count} indexed.", "已索引 {n} 篇论文。"),
    "indexed_title_only": ("{count} indexed.",
                           "已索引 {n} 篇论文（其中 {t} 篇只有标题：可按标题和作者找到，但没有摘要可据以回答）。"),
    "session": ("This session: ", "本次会话："),
    "session_answers": ("{n} answer{s}", "{n} 个回答"),
    "session_tokens": ("{i} tokens in + {o} out", "输入 {i} tokens + 输出 {o}"),
    "nothing_to_export": ("Nothing to export yet: ask a question first.", "还没有可导出的内容：请先提问。"),
    "feedback_saved": ("Thanks, feedback saved.", "谢谢，反馈已保存。"),
    "feedback_again": ("Feedback on this answer is already saved.", "对这个回答的反馈已经保存过了。"),
    "feedback_full": ("Feedback is not being saved right now (the server's feedback file is full).",
                      "目前无法保存反馈（服务器的反馈文件已满）。"),
    "still_indexing": ("The collection is still being indexed; add your papers when that has finished (the line "
                       "above shows the progress).",
                       "论文集仍在索引中；请在索引完成后再添加论文（上方一行显示进度）。"),
    "reading_files": ("Reading the files", "正在读取文件"),
    "embedding": ("Embedding {done} of {todo} papers", "正在嵌入论文：{done} / {todo}"),
    "added": ("**Added papers** from {files}: {summary}.", "**已添加论文**，来自 {files}：{summary}。"),
    "skipped": ("skipped {problem}", "已跳过 {problem}"),
}


def header(mode_en: str, mode_zh: str) -> tuple[str, str]:
    """The page's heading and the line saying which mode answers, in each language."""
    return (f"## Ask the ICLR 2025 abstracts\n{mode_en}. Every claim cites a retrieved paper as [n].",
            f"## 向 ICLR 2025 论文摘要提问\n{mode_zh}。每个论断都以 [n] 引用检索到的论文。")


def language(accept_language: str | None) -> str:
    """The first of LANGUAGES that an Accept-Language header prefers ("zh-CN,zh;q=0.9,en;q=0.8" -> "zh"), by its
    q-values; "en" when it names none of them or is missing."""
    ranked = []
    for i, part in enumerate((accept_language or "").split(",")):
        tag, _, params = part.strip().partition(";")
        q = re.search(r"q\s*=\s*([0-9.]+)", params)
        try:
            weight = float(q.group(1)) if q else 1.0
        except ValueError:
            weight = 0.0
        ranked.append((-weight, i, tag.strip().lower().split("-")[0]))
    return next((tag for _, _, tag in sorted(ranked) if tag in LANGUAGES), "en")


def request_language(request: Any) -> str:
    """The language of a Gradio request (`gr.Request`, or None outside one): see `language`."""
    headers = getattr(request, "headers", None)
    try:
        return language(headers.get("accept-language") if headers is not None else None)
    except AttributeError:
        return "en"


def words(key: str, lang: str = "en", **fields: Any) -> str:
    """A server-rendered phrase in `lang` (English when the language is not one of LANGUAGES), fields filled."""
    pair = SERVER_WORDS[key]
    return pair[LANGUAGES.index(lang) if lang in LANGUAGES else 0].format(**fields)


def page_i18n(extra: dict[str, tuple[str, str]] | None = None):
    """The `gr.I18n` of the page (for `launch(i18n=...)`): PAGE_WORDS plus this server's own `extra` (its heading,
    which names the model)."""
    import gradio as gr

    table = {**PAGE_WORDS, **(extra or {})}
    return gr.I18n(**{lang: {key: pair[i] for key, pair in table.items()} for i, lang in enumerate(LANGUAGES)})
