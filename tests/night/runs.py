"""Hand-built suite run folders (``regression.json``, ``usage.json``, ``report.html``) for night tests."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

WORSE_WER = (
    "worse: cascade-cpu / original.wer: 10 -> 14 (delta +4, 95% CI [+2, +6], p_holm 0.001, n=8, tolerance 0)"
)
"""A NO-GO reason as ``compare_runs`` words it (system / component first)."""


def usage(judge_calls: int = 0, system_calls: int = 0, *, seconds: float = 1.0) -> dict[str, Any]:
    """A ``usage.json`` as the track stage writes it (judges and generating systems, no split)."""

    def entry(calls: int) -> dict[str, Any]:
        return {
            "calls": calls,
            "cached_calls": 1,
            "prompt_tokens": 100 * calls,
            "completion_tokens": 10 * calls,
            "calls_with_tokens": calls,
            "seconds": seconds,
        }

    judges = {"judge-a": entry(judge_calls)} if judge_calls else {}
    systems = {"planner": entry(system_calls)} if system_calls else {}
    return {"judge_output_reused": False, "judges": judges, "systems": systems, "total": {}}


def write_run(
    runs: Path,
    suite: str,
    run_id: str,
    verdict: str,
    reasons: Sequence[str],
    *,
    mde: Sequence[float] = (0.5,),
    usage_doc: dict[str, Any] | None = None,
    regressed: tuple[str, str] | None = None,
) -> Path:
    """``runs/<suite>/<run_id>/`` with a ``regression.json`` (tests with ``mde``; ``regressed`` as a
    trusted regression), a ``usage.json``, ``report.html`` and ``instances.html``."""
    folder = runs / suite / run_id
    folder.mkdir(parents=True, exist_ok=True)
    tests: list[dict[str, Any]] = [
        {
            "system": "sys",
            "component": f"c{k}",
            "mde": value,
            "worse": False,
            "significant": False,
            "unsafe": [],
        }
        for k, value in enumerate(mde)
    ]
    systems: dict[str, dict[str, Any]] = {
        "sys": {
            f"c{k}": {"a": 1.0, "b": 1.0, "delta": 0.0, "ci95": [0.0, 0.0], "p_holm": 1.0, "mde": v}
            for k, v in enumerate(mde)
        }
    }
    if regressed is not None:
        system, component = regressed
        tests.append(
            {
                "system": system,
                "component": component,
                "mde": 1.0,
                "worse": True,
                "significant": True,
                "unsafe": [],
            }
        )
        systems.setdefault(system, {})[component] = {
            "a": 10.0,
            "b": 14.0,
            "delta": 4.0,
            "ci95": [2.0, 6.0],
            "p_holm": 0.001,
            "mde": 1.0,
        }
    regression = {
        "verdict": verdict,
        "reasons": list(reasons),
        "systems": systems,
        "changed": {"dataset": {}, "code": {"git_sha": {"a": "x", "b": "y"}}, "judges": [], "prompts": []},
        "top_movers": [],
        "tests": tests,
        "suite": suite,
        "run_id": run_id,
        "baseline": {"run_id": "prev", "folder": str(runs / suite / "prev")},
    }
    (folder / "regression.json").write_text(json.dumps(regression))
    (folder / "usage.json").write_text(json.dumps(usage_doc if usage_doc is not None else usage()))
    (folder / "report.html").write_text(f"<!doctype html><title>report {suite}</title><p>{suite}</p>")
    (folder / "instances.html").write_text(f"<!doctype html><title>viewer {suite}</title>")
    return folder
