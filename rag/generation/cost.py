"""Cost: what an LLM answer costs, from the tokens the endpoint reported and the prices the user set
(`llm_price_in` / `llm_price_out`, USD per million tokens, RAG_LLM_PRICE_IN / RAG_LLM_PRICE_OUT). No price set,
no cost shown: the app never guesses a model's price. A side with no price counts as free (a local model's
prompt tokens, say), but at least one price must be set.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Iterable

from rag.config import Settings


def answer_cost(usage: dict[str, Any] | None, settings: Settings) -> float | None:
    """USD for one answer's tokens, or None if no price is set or the endpoint reported no usage."""
    if settings.llm_price_in is None and settings.llm_price_out is None:
        return None
    if not usage or usage.get("prompt_tokens") is None:
        return None
    tokens_in, tokens_out = usage.get("prompt_tokens") or 0, usage.get("completion_tokens") or 0
    return (tokens_in * (settings.llm_price_in or 0.0) + tokens_out * (settings.llm_price_out or 0.0)) / 1e6


def totals(answers: Iterable[dict[str, Any]], settings: Settings) -> dict[str, Any]:
    """Running totals of a session's answers (as `Answer.to_dict()`): answers, LLM answers, prompt and completion
    tokens, seconds spent answering, and the cost when prices are set."""
    out: dict[str, Any] = {"answers": 0, "llm_answers": 0, "prompt_tokens": 0, "completion_tokens": 0,
                           "seconds": 0.0, "cost_usd": None}
    for answer in answers:
        out["answers"] += 1
        out["seconds"] += (answer.get("timings") or {}).get("total_ms", 0) / 1000
        usage = answer.get("usage") or {}
        if usage.get("prompt_tokens") is not None:
            out["llm_answers"] += 1
            out["prompt_tokens"] += usage["prompt_tokens"] or 0
            out["completion_tokens"] += usage.get("completion_tokens") or 0
        cost = answer_cost(usage, settings)
        if cost is not None:
            out["cost_usd"] = (out["cost_usd"] or 0.0) + cost
    return out


def money(usd: float) -> str:
    """$0.0123 for small sums (four decimals, so a cheap answer is not shown as $0.00), $1.23 from a dollar up."""
    return f"${usd:,.2f}" if usd >= 1 else f"${usd:.4f}"
