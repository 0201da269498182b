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


def _total_cost(entry: Mapping[str, Any]) -> str:
    cost = entry.get("cost")
    if isinstance(cost, Mapping):
        return ", ".join(f"{float(v):.4f} {esc(c)}" for c, v in sorted(cost.items())) or "n/a"
    return _cost(entry)


def _steps(entry: Mapping[str, Any]) -> str:
    steps = entry.get("seconds_by_step") or {}
    return ", ".join(f"{esc(step)} {float(s):.1f}" for step, s in sorted(steps.items())) or "—"


def stage_block(usage: Mapping[str, Any] | None) -> str:
    """Cost by stage: per system (and for the run) what generating its candidates and judging them
    took, side by side; empty when the usage has no ``by_system`` split.

    >>> html = stage_block({"by_system": {"gen": {
    ...     "generation": {"calls": 2, "prompt_tokens": None, "completion_tokens": None, "seconds": 3.0,
    ...                    "seconds_by_step": {"plan": 2.0, "speech": 1.0}, "examples_generated": 2,
    ...                    "examples_reused": 0, "examples_withheld": 1},
    ...     "judging": {"calls": 4, "cached_calls": 0, "prompt_tokens": 40, "completion_tokens": 8, "seconds": 0.5}}}})
    >>> "plan 2.0, speech 1.0" in html and "2 / 0 / 1" in html and "40 / 8" in html
    True
    """
    doc: Mapping[str, Any] = usage or {}
    by_system = doc.get("by_system")
    if not isinstance(by_system, Mapping) or not by_system:
        return ""
    parts = [(esc(name), entry) for name, entry in sorted(by_system.items()) if isinstance(entry, Mapping)]
    if isinstance(doc.get("generation"), Mapping) and isinstance(doc.get("judging"), Mapping):
        parts.append(("<strong>run</strong>", {"generation": doc["generation"], "judging": doc["judging"]}))
    rows: list[list[str]] = []
    for name, entry in parts:
        gen = entry.get("generation") or {}
        judging = entry.get("judging") or {}
        rows.append(
            [
                name,
                f"{int(gen.get('examples_generated') or 0)} / {int(gen.get('examples_reused') or 0)} / "
                f"{int(gen.get('examples_withheld') or 0)}",
                f"{int(gen.get('calls') or 0):,}",
                f"{_tokens(gen.get('prompt_tokens'))} / {_tokens(gen.get('completion_tokens'))}",
                f"{float(gen.get('seconds') or 0.0):.1f}",
                _steps(gen),
                f"{int(judging.get('calls') or 0):,} ({int(judging.get('cached_calls') or 0):,} cached)",
                f"{_tokens(judging.get('prompt_tokens'))} / {_tokens(judging.get('completion_tokens'))}",
                f"{float(judging.get('seconds') or 0.0):.1f}",
                f"{_total_cost(gen)}; {_total_cost(judging)}",
            ]
        )
    head = [
        "system",
        "examples generated / reused / withheld",
        "generation calls",
        "generation tokens (prompt / completion)",
        "generation seconds",
        "seconds by step",
        "judge calls",
        "judge tokens (prompt / completion)",
        "judging seconds",
        "cost (generation; judging)",
    ]
    reading = (
        "<p>Cost by stage. Generation counts the examples generated in this run (reused examples "
        "come from the example cache at no cost; withheld ones were left out by "
        "<code>generation.budget</code> and are missing); its seconds are wall time per step "
        "(planner, experts, command). Judging counts the judge calls spent on each system's "
        "candidates.</p>"
    )
    reused = [
        esc(name)
        for name, entry in sorted(by_system.items())
        if isinstance(entry, Mapping) and (entry.get("generation") or {}).get("output_reused")
    ]
    if reused:
        reading += (
            f"<p>Candidates reused whole from an earlier run: {', '.join(reused)}; their generation "
            "figures are what producing them cost then.</p>"
        )
    return reading + table(head, rows, left=1, left_cols=(5,))


def usage_block(usage: Mapping[str, Any] | None) -> str:
    """A table of calls, cache hits, prompt and completion tokens, seconds and cost per judge and
    per generating system, with a one-line total, then the cost by stage (:func:`stage_block`); a
    sentence when the run recorded no usage."""
    stages = stage_block(usage)
    if not usage or not (usage.get("judges") or usage.get("systems")):
        if stages:
            return stages
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
    return reading + table(head, rows, left=3) + stages


__all__ = ["stage_block", "usage_block"]
