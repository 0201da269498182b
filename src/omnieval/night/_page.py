"""``night.html``: the night's verdict, one coloured banner per suite, what moved, links to each report.

The page sits beside ``night.json`` in ``<runs_dir>/nights/<date>/`` and is self-contained (the
reports' CSS inlined); links to a suite's ``report.html`` and ``instances.html`` are relative, so
the page keeps working when the whole ``runs`` folder is moved or served. What moved is read from
each suite's ``regression.json`` (its largest deltas against the suite's previous run).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

from omnieval.night._record import (
    NIGHT_PAGE,
    REGRESSION_FILE,
    NightRecord,
    NightUsage,
    SuiteNight,
    UsageTotal,
    deciders,
    night_folder,
)
from omnieval.reporting import fmt, render, write_page

TEMPLATES = "omnieval.night"
"""The package whose ``templates/`` holds ``night.html.j2`` (the reports' CSS is shared)."""

BANNER_CLASS: dict[str, str] = {"GO": "v-go", "NO-GO": "v-nogo", "INCONCLUSIVE": "v-inconclusive"}
"""The reports' verdict colours, by verdict."""

MOVED_ROWS = 6
"""At most this many (system, component) rows of what moved per suite."""


def _href(target: Path, page_folder: Path) -> str:
    """``target`` relative to the page's folder, as a URL path."""
    return quote(Path(os.path.relpath(target, page_folder)).as_posix(), safe="/")


def _usage_rows(usage: NightUsage) -> list[dict[str, str]]:
    def row(what: str, total: UsageTotal) -> dict[str, str]:
        cost = ", ".join(f"{amount:g} {currency}" for currency, amount in total.cost.items())
        return {
            "what": what,
            "calls": str(total.calls),
            "cached": str(total.cached_calls),
            "prompt": "not reported" if total.prompt_tokens is None else str(total.prompt_tokens),
            "completion": "not reported" if total.completion_tokens is None else str(total.completion_tokens),
            "seconds": fmt(total.seconds, 1),
            "cost": cost or "unpriced",
        }

    return [row("generation", usage.generation), row("judging", usage.judging)]


def _regression(suite: SuiteNight) -> Mapping[str, Any] | None:
    if suite.run_folder is None:
        return None
    try:
        doc = json.loads((Path(suite.run_folder) / REGRESSION_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _finite(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and math.isfinite(float(value)) else None


def what_moved(regression: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The (system, component) cells of ``regression.json`` that moved most, trusted regressions first.

    >>> rows = what_moved({"systems": {"s": {"c": {"a": 1, "b": 0.5, "delta": -0.5, "ci95": [-0.7, -0.3],
    ...                                            "mde": 0.2}}},
    ...                    "tests": [{"system": "s", "component": "c", "worse": True, "significant": True,
    ...                               "unsafe": []}]})
    >>> rows[0]["label"], rows[0]["delta"], rows[0]["regressed"]
    ('s / c', '-0.500', True)
    """
    regressed = {
        (str(t.get("system")), str(t.get("component")))
        for t in regression.get("tests") or []
        if isinstance(t, Mapping) and t.get("worse") and t.get("significant") and not t.get("unsafe")
    }
    cells: list[tuple[bool, float, dict[str, Any]]] = []
    for system, per in (regression.get("systems") or {}).items():
        if not isinstance(per, Mapping):
            continue
        for component, cell in per.items():
            delta = _finite(cell.get("delta")) if isinstance(cell, Mapping) else None
            if delta is None or (delta == 0.0 and (system, component) not in regressed):
                continue
            ci = cell.get("ci95") or [None, None]
            flagged = (str(system), str(component)) in regressed
            cells.append(
                (
                    flagged,
                    abs(delta),
                    {
                        "label": f"{system} / {component}",
                        "a": fmt(cell.get("a"), 3),
                        "b": fmt(cell.get("b"), 3),
                        "delta": fmt(delta, 3, signed=True),
                        "ci": f"[{fmt(ci[0], 3, signed=True)}, {fmt(ci[1], 3, signed=True)}]",
                        "mde": fmt(cell.get("mde"), 3),
                        "regressed": flagged,
                    },
                )
            )
    cells.sort(key=lambda c: (not c[0], -c[1]))
    return [row for _, _, row in cells[:MOVED_ROWS]]


def _changed(regression: Mapping[str, Any]) -> list[str]:
    """What changed under the suite since its previous run, one short phrase per input."""
    out: list[str] = []
    for key, value in (regression.get("changed") or {}).items():
        if not value:
            continue
        if isinstance(value, Mapping):
            out.append(f"{key} ({', '.join(str(k) for k in value)})")
        elif isinstance(value, list):
            out.append(f"{key} ({len(value)})")
    return out


def night_page(record: NightRecord, page_folder: Path) -> str:
    """The HTML of ``night.html`` for ``record``, its links relative to ``page_folder``."""
    folder = page_folder.resolve()
    suites = []
    for name, suite in record.suites.items():
        regression = _regression(suite)
        run_folder = Path(suite.run_folder) if suite.run_folder else None
        suites.append(
            {
                "name": name,
                "anchor": re.sub(r"[^A-Za-z0-9_-]", "-", name),
                "verdict": suite.verdict,
                "css": BANNER_CLASS[suite.verdict],
                "failed": run_folder is None,
                "reasons": list(suite.reasons),
                "run_id": suite.run_id or "",
                "report_href": _href(run_folder / "report.html", folder) if run_folder else "",
                "viewer_href": _href(run_folder / "instances.html", folder) if run_folder else "",
                "mde_max": None if suite.mde_max is None else fmt(suite.mde_max, 3),
                "moved": what_moved(regression) if regression else [],
                "changed": _changed(regression) if regression else [],
            }
        )
    return render(
        "night.html.j2",
        package=TEMPLATES,
        date=record.date,
        verdict=record.verdict,
        css=BANNER_CLASS[record.verdict],
        reasons=list(record.reasons),
        deciders=deciders(record),
        usage=_usage_rows(record.usage),
        suites=suites,
    )


def write_night_page(record: NightRecord, nights_dir: Path | str) -> Path:
    """Write ``<nights_dir>/<date>/night.html`` atomically; return its path."""
    path = night_folder(nights_dir, record.date) / NIGHT_PAGE
    write_page(path, night_page(record, path.parent))
    return path
