"""``usage.json``: the tokens, seconds and (with a price table) cost of one run's judges and systems.

The judge stage writes ``<state>/judge/usage.json`` from its panels' lineage (each panel runner
counts per judge, :meth:`omnieval.judges.CallRunner.usage_json`, and per judged system and judge,
``usage_by_system``); the track stage adds the generating systems' usage (from their generation
summaries) and writes the run folder's ``usage.json``, the ``usage`` block of ``leaderboard.json``
and the MLflow metrics from it.

Cost by stage: ``by_system.<system>.generation`` (model calls and tokens of the system's planner or
server, seconds per generation step of the examples generated in this run, examples generated,
reused and withheld) and ``by_system.<system>.judging`` (the judge calls spent on that system's
candidates, per judge and summed), with the run's ``generation`` and ``judging`` totals beside
them (what a night adds up). docs/judges.md, "Tokens, time and cost", has the shape.

Prices come from the suite's ``costs:`` table, looked up by the judge's or system's id first and
then by its model name, so one entry can price every judge that runs the same model.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from omnieval.backends.llm import TokenPrice, Usage, merge_usage_json

USAGE_FILE = "usage.json"
THIS_RUN_SUFFIX = ".this_run.json"
"""``<state>/candidates/<system>.this_run.json``: ``{"output_reused": bool}``, rewritten by every run
of the generate stage, so the run's ``usage.json`` tells generation done now from candidates reused
whole (their figures are then what producing them cost earlier)."""


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
    by_system: dict[str, dict[str, Any]] = {}
    systems = sorted({s for lineage in panels_lineage.values() for s in lineage.get("usage_by_system") or {}})
    for system in systems:
        tables = [
            (lineage.get("usage_by_system") or {}).get(system) or {} for lineage in panels_lineage.values()
        ]
        by_system[system] = _priced(merge_usage_json(*tables), models, costs)
    return {
        "output_reused": output_reused,
        "judges": judges,
        "panels": per_panel,
        "by_system": by_system,
        "total": _total(judges),
    }


def system_usage(
    summaries: Mapping[str, Mapping[str, Any]], costs: Mapping[str, TokenPrice]
) -> dict[str, Any]:
    """``{system: entry}`` for the generating systems whose summary lineage carries ``usage``
    (systems that call a language model: openai-omni, the orchestration and cascade planners);
    for a benchmark with input conditions, the largest condition's (see :func:`_model_usage`)."""
    entries: dict[str, Usage] = {}
    models: dict[str, str] = {}
    for system, summary in summaries.items():
        found = _model_usage(summary)
        if found is not None:
            entries[system] = found[0]
            if found[1]:
                models[system] = found[1]
    return _priced(entries, models, costs)


def _model_usage(summary: Mapping[str, Any]) -> tuple[Usage, str] | None:
    """The usage and model name a generation summary's lineage records (None when it has none).

    A system runs all its input conditions on one load and its lineage counts what its model did
    so far, so the condition with the most calls (the last one run) holds the system's total.
    """
    best: tuple[Usage, str] | None = None
    for part in _parts(summary):
        lineage = part.get("lineage") if isinstance(part.get("lineage"), Mapping) else part
        found = lineage.get("usage") if isinstance(lineage, Mapping) else None
        if isinstance(found, Mapping) and found:
            usage = Usage.from_json(found)
            if best is None or usage.calls >= best[0].calls:
                best = (usage, str(found.get("model") or ""))
    return best


def _parts(summary: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A generation summary's per-condition parts (one part for a benchmark without conditions)."""
    conditions = summary.get("conditions")
    if isinstance(conditions, Mapping):
        return [part for part in conditions.values() if isinstance(part, Mapping)]
    return [summary]


def _add(into: dict[str, Any], more: Mapping[str, Any]) -> None:
    for key, value in more.items():
        into[key] = into.get(key, 0.0) + float(value)


def generation_entry(
    summary: Mapping[str, Any], costs: Mapping[str, TokenPrice], *, system: str, output_reused: bool = False
) -> dict[str, Any]:
    """What one system spent generating, from its generation summary (``candidates/<id>.summary.json``).

    Model calls and tokens are those the system's planner, backbone or server made (its summary
    lineage's ``usage``; with input conditions, see :func:`_model_usage`). ``seconds_by_step``
    sums, over conditions, the step seconds of the examples generated by the run that wrote the
    summary (reused examples cost nothing now); ``seconds`` is their total, the model's wait
    included. A reference system (no ``generation`` block) spends nothing.

    Example:
        >>> summary = {"kind": "command", "lineage": {"generation": {"seconds_generated": {"command": 1.25},
        ...     "completeness": {"examples": 3}, "examples_generated": 2, "examples_reused": 1}}}
        >>> entry = generation_entry(summary, {}, system="ext")
        >>> entry["seconds"], entry["seconds_by_step"], entry["examples_generated"], entry["calls"]
        (1.25, {'command': 1.25}, 2, 0)
    """
    usage = Usage()
    steps: dict[str, Any] = {}
    counts = {"examples": 0, "examples_generated": 0, "examples_reused": 0, "examples_withheld": 0}
    model = ""
    generates = False
    recorded = _model_usage(summary)
    if recorded is not None:
        usage, model = recorded
    for part in _parts(summary):
        lineage = part.get("lineage")
        if not isinstance(lineage, Mapping):
            continue
        block = lineage.get("generation")
        if not isinstance(block, Mapping):
            continue
        generates = True
        made = block.get("seconds_generated")
        if made is None and not block.get("examples_reused"):
            made = block.get("seconds")  # a summary from before seconds_generated: all were generated
        _add(steps, made or {})
        counts["examples"] += int((block.get("completeness") or {}).get("examples", 0))
        for key in ("examples_generated", "examples_reused", "examples_withheld"):
            counts[key] += int(block.get(key) or 0)
    kind = summary.get("kind") or next((str(p.get("kind")) for p in _parts(summary) if p.get("kind")), "")
    entry: dict[str, Any] = {"kind": str(kind or ""), "generates": generates}
    if model:
        entry["model"] = model
    entry.update(usage.to_json(price_for(costs, system, model)))
    # A generation's seconds are its wall time per step (the model's wait is part of one).
    entry["seconds"] = round(float(sum(steps.values())), 3)
    entry["seconds_by_step"] = {step: round(steps[step], 3) for step in sorted(steps)}
    entry.update(counts)
    entry["output_reused"] = output_reused
    return entry


def generation_usage(
    summaries: Mapping[str, Mapping[str, Any]],
    costs: Mapping[str, TokenPrice],
    reused: Mapping[str, bool] | None = None,
) -> dict[str, dict[str, Any]]:
    """``{system: generation entry}`` for every system of ``summaries`` (:func:`generation_entry`);
    ``reused`` names the systems whose generate stage reused its output whole."""
    return {
        system: generation_entry(
            summary, costs, system=system, output_reused=bool((reused or {}).get(system))
        )
        for system, summary in sorted(summaries.items())
    }


_COUNTS = ("examples", "examples_generated", "examples_reused", "examples_withheld")


def _generation_total(entries: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    out = _total(entries)
    steps: dict[str, Any] = {}
    for entry in entries.values():
        _add(steps, entry.get("seconds_by_step") or {})
    out["seconds"] = round(sum(float(e.get("seconds") or 0.0) for e in entries.values()), 3)
    out["seconds_by_step"] = {step: round(steps[step], 3) for step in sorted(steps)}
    for key in _COUNTS:
        out[key] = sum(int(e.get(key) or 0) for e in entries.values())
    return out


def _judging(judges: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    return {**_total(judges), "judges": {name: dict(judges[name]) for name in sorted(judges)}}


def run_usage(
    judge_usage_json: Mapping[str, Any] | None,
    systems: Mapping[str, Any],
    generation: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The run folder's ``usage.json`` (and ``leaderboard.json``'s ``usage`` block).

    ``judges``, ``systems``, ``judge_output_reused`` and ``total`` as before; with ``generation``
    (:func:`generation_usage`, one entry per suite system) also the cost by stage: ``by_system``
    (each system's ``generation`` and ``judging``) and the run's ``generation`` and ``judging``.
    """
    judge_doc = judge_usage_json or {}
    judges = dict(judge_doc.get("judges") or {})
    out: dict[str, Any] = {
        "judges": judges,
        "systems": dict(systems),
        "judge_output_reused": bool(judge_doc.get("output_reused", False)),
        "total": _total(
            {**{f"judge:{k}": v for k, v in judges.items()}, **{f"system:{k}": v for k, v in systems.items()}}
        ),
    }
    if generation is None:
        return out
    judged = judge_doc.get("by_system") or {}
    by_system: dict[str, Any] = {}
    for system in sorted({*generation, *judged}):
        by_system[system] = {
            "generation": dict(generation.get(system) or generation_entry({}, {}, system=system)),
            "judging": _judging(judged.get(system) or {}),
        }
    out["by_system"] = by_system
    out["generation"] = _generation_total({s: e["generation"] for s, e in by_system.items()})
    # Every judge call, also one that named no system (the per-system figures add up to it when
    # every call did, as storybench's and PRISM's do).
    out["judging"] = {**_total(judges), "output_reused": out["judge_output_reused"]}
    return out


def read_usage(path: Path) -> dict[str, Any] | None:
    """A ``usage.json`` (None when absent)."""
    import json

    if not path.is_file():
        return None
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


__all__ = [
    "THIS_RUN_SUFFIX",
    "USAGE_FILE",
    "generation_entry",
    "generation_usage",
    "judge_usage",
    "price_for",
    "read_usage",
    "run_usage",
    "system_usage",
]
