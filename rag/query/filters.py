"""Filters: the decisions and author an answer's papers were restricted to, and which of them the question's own
words set (`rag.query.intent`). One frozen value per question: a list widened to any decision is a new value
(`dataclasses.replace`), not the old one changed. `to_dict` is the "filters" object of `Answer.to_dict()`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Filters:
    decisions: tuple[str, ...] = ()  # the decisions searched ("Accept (Oral)", ...); () for any
    author: str | None = None  # a substring of an author's name
    from_question: tuple[str, ...] = ()  # the kinds ("decisions", "author") the question's words set
    widened: tuple[str, ...] = ()  # the kinds dropped because no paper matched with them ("decisions")
    sorted_by: str = ""  # a topics answer: what its topics are ranked by ("orals", "papers")
    recorded: bool = True  # False: an answer that searched nothing (it asks to name a paper): its JSON is {}

    def to_dict(self) -> dict[str, Any]:
        """The JSON object the shells emit: {} when not recorded; "widened" and "sorted_by" only when set."""
        if not self.recorded:
            return {}
        out: dict[str, Any] = {"decisions": list(self.decisions), "author": self.author,
                               "from_question": list(self.from_question)}
        if self.widened:
            out["widened"] = list(self.widened)
        if self.sorted_by:
            out["sorted_by"] = self.sorted_by
        return out


#: The filters of an answer that searched nothing.
NOT_RECORDED = Filters(recorded=False)
