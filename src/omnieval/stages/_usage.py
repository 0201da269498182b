"""``usage.json``: the tokens, seconds and (with a price table) cost of one run's judges and systems.

The judge stage writes ``<state>/judge/usage.json`` from its panels' lineage (each panel runner
counts per judge, :meth:`omnieval.judges.CallRunner.usage_json`); the track stage adds the
generating systems' usage (from their generation summaries) and writes the run folder's
``usage.json``, the ``usage`` block of ``leaderboard.json`` and the MLflow metrics from it.

Prices come from the suite's ``costs:`` table, looked up by the judge's or system's id first and
then by its model name, so one entry can price every judge that runs the same model.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from omnieval.backends.llm import TokenPrice, Usage, merge_usage_json

USAGE_FILE = "usage.json"


def price_for(costs: Mapping[str, TokenPrice], name: str, model: str = "") -> TokenPrice | None:
    """The price of ``name`` (a judge or system id), else of its ``model``; None when unpriced."""
    return costs.get(name) or (costs.get(model) if model else None)


def _priced(
    entries: Mapping[str, Usage], models: Mapping[str, str], costs: Mapping[str, TokenPrice]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in sorted(entries):
        entry = entries[name].to_json(price_for(costs, name, models.get(name, "")))
        if models.get(name):
            entry["model"] = models[name]
        out[name] = entry
    return out


def _total(entries: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Sums over entries; cost per currency (prices in different currencies are never added)."""
    usage = merge_usage_json(entries)
    total = Usage()
    for one in usage.values():
        total.merge(one)
    out = total.to_json()
    cost: dict[str, float] = {}
    for entry in entries.values():
        if "cost" in entry:
            cost[entry["currency"]] = round(cost.get(entry["currency"], 0.0) + float(entry["cost"]), 6)
    if cost:
        out["cost"] = cost
    return out


def judge_usage(
    panels_lineage: Mapping[str, Mapping[str, Any]], costs: Mapping[str, TokenPrice], *, output_reused: bool
) -> dict[str, Any]:
    """The judge stage's ``usage.json`` from its lineage's ``panels`` (each with a ``usage`` table).

    ``judges`` sums each judge over the panels it sits on; ``panels`` keeps the split.
    ``output_reused``: this run reused the judge output whole, so it made none of these calls.
    """
    models: dict[str, str] = {}
    per_panel: dict[str, dict[str, Any]] = {}
    for panel, lineage in panels_lineage.items():
        for judge_id, info in (lineage.get("judges") or {}).items():
            if isinstance(info, Mapping) and info.get("model"):
                models.setdefault(judge_id, str(info["model"]))
        per_panel[panel] = _priced(merge_usage_json(lineage.get("usage") or {}), models, costs)
    judges = _priced(merge_usage_json(*per_panel.values()), models, costs)
    return {
        "output_reused": output_reused,
        "judges": judges,
        "panels": per_panel,
        "total": _total(judges),
    }


def system_usage(
    summaries: Mapping[str, Mapping[str, Any]], costs: Mapping[str, TokenPrice]
) -> dict[str, Any]:
    """``{system: entry}`` for the generating systems whose summary lineage carries ``usage``
    (systems that call a language model: openai-omni, the orchestration planners)."""
    entries: dict[str, Usage] = {}
    models: dict[str, str] = {}
    for system, summary in summaries.items():
        lineage = summary.get("lineage") if isinstance(summary.get("lineage"), Mapping) else summary
        found = lineage.get("usage") if isinstance(lineage, Mapping) else None
        if isinstance(found, Mapping) and found:
            entries[system] = Usage.from_json(found)
            if found.get("model"):
                models[system] = str(found["model"])
    return _priced(entries, models, costs)


def run_usage(judge_usage_json: Mapping[str, Any] | None, systems: Mapping[str, Any]) -> dict[str, Any]:
    """The run folder's ``usage.json`` (and ``leaderboard.json``'s ``usage`` block)."""
    judges = dict((judge_usage_json or {}).get("judges") or {})
    return {
        "judges": judges,
        "systems": dict(systems),
        "judge_output_reused": bool((judge_usage_json or {}).get("output_reused", False)),
        "total": _total(
            {**{f"judge:{k}": v for k, v in judges.items()}, **{f"system:{k}": v for k, v in systems.items()}}
        ),
    }


def read_usage(path: Path) -> dict[str, Any] | None:
    """A ``usage.json`` (None when absent)."""
    import json

    if not path.is_file():
        return None
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


__all__ = ["USAGE_FILE", "judge_usage", "price_for", "read_usage", "run_usage", "system_usage"]
