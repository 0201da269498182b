"""The report's "Tokens, time and cost" block: what each judge and generating system spent.

It reads the ``usage`` block the track stage puts in the run folder's ``leaderboard.json`` (the
run's ``usage.json``). Token counts a backend did not report are shown as "not reported", never
as 0, and cost appears only for models the suite priced (``costs:``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from omnieval.reporting._page import esc, table


def _tokens(value: Any) -> str:
    return "not reported" if value is None else f"{int(value):,}"


def _cost(entry: Mapping[str, Any]) -> str:
    if entry.get("cost") is None:
        return "n/a"
    return f"{float(entry['cost']):.4f} {esc(entry.get('currency') or '')}".strip()


def usage_block(usage: Mapping[str, Any] | None) -> str:
    """A table of calls, cache hits, prompt and completion tokens, seconds and cost per judge and
    per generating system, with a one-line total; a sentence when the run recorded no usage."""
    if not usage or not (usage.get("judges") or usage.get("systems")):
        return "<p>No model usage recorded for this run (no judges, and no system that calls a language model).</p>"
    rows: list[list[str]] = []
    for kind, group in (("judge", "judges"), ("system", "systems")):
        for name, entry in sorted((usage.get(group) or {}).items()):
            rows.append(
                [
                    esc(kind),
                    esc(name),
                    esc(entry.get("model") or ""),
                    f"{int(entry.get('calls', 0)):,}",
                    f"{int(entry.get('cached_calls', 0)):,}",
                    _tokens(entry.get("prompt_tokens")),
                    _tokens(entry.get("completion_tokens")),
                    f"{float(entry.get('seconds', 0.0)):.1f}",
                    _cost(entry),
                ]
            )
    head = [
        "kind",
        "name",
        "model",
        "calls",
        "cached",
        "prompt tokens",
        "completion tokens",
        "seconds",
        "cost",
    ]
    total = usage.get("total") or {}
    costs = total.get("cost") or {}
    money = "; cost " + ", ".join(f"{v:.4f} {esc(c)}" for c, v in sorted(costs.items())) if costs else ""
    reused = (
        " The judge output was reused from an earlier run: the judges' figures are what producing it cost."
        if usage.get("judge_output_reused")
        else ""
    )
    reading = (
        f"<p>{int(total.get('calls', 0)):,} model calls ({int(total.get('cached_calls', 0)):,} answered from "
        f"the cache at no cost), {_tokens(total.get('prompt_tokens'))} prompt and "
        f"{_tokens(total.get('completion_tokens'))} completion tokens, "
        f"{float(total.get('seconds', 0.0)):.1f} s{money}.{reused}</p>"
    )
    return reading + table(head, rows, left=3)


__all__ = ["usage_block"]
