"""Page building blocks shared by every benchmark's report: the verdict banner, what moved since the
previous run, the leaderboard with bootstrap CIs, the validity ledger and health per judge, and the
links to the raw artifacts.

Each block takes the documents the stages already write (``regression.json``, ``health.json``,
``bootstrap.json``, ``judgments.parquet``) and returns trusted HTML; an absent input renders as a
sentence saying so, never as an empty section. The markup of each block is a template under
``templates/blocks/``; the functions here pick and shape the numbers it shows.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from markupsafe import Markup

from omnieval.errors import DataError
from omnieval.lineage import Deviation
from omnieval.reporting._figures import Interval, ci_chart, delta_chart, figure, histograms, stacked_bars
from omnieval.reporting._instances import instances_href
from omnieval.reporting._ledger import LEDGER_STATUSES, LedgerRow, read_ledger
from omnieval.reporting._page import esc, table
from omnieval.reporting._templates import render, trusted

VERDICTS: dict[str, str] = {"GO": "v-go", "NO-GO": "v-nogo", "INCONCLUSIVE": "v-inconclusive"}
"""Verdicts of ``regression.json`` and the banner class (colour) of each."""

ALPHA = 0.05
"""Family-wise level for calling a delta significant (Holm-adjusted p below it)."""

HEALTH_BINS: tuple[str, ...] = tuple(str(k) for k in range(1, 11))


def fmt(value: Any, digits: int = 2, *, signed: bool = False) -> str:
    """A number for a table cell ("n/a" for None/NaN); ``signed`` puts + on positives."""
    if value is None or isinstance(value, bool):
        return "n/a" if value is None else str(value)
    try:
        x = float(value)
    except (TypeError, ValueError):
        return esc(value)
    if not math.isfinite(x):
        return "n/a"
    return f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}"


def pct(share: Any, digits: int = 0) -> str:
    """A 0-1 share as a percentage ("n/a" for None)."""
    if share is None:
        return "n/a"
    return f"{100.0 * float(share):.{digits}f}%"


def _note(text: str, code: str | None = None, tail: str = "") -> str:
    """``<p class="note">``: plain ``text``, then ``code`` as ``<code>`` and ``tail`` when given."""
    return render("blocks/note.html.j2", text=text, code=code, tail=tail)


# -- verdict ----------------------------------------------------------------------------------------


def _check_regression(regression: Mapping[str, Any]) -> str:
    verdict = regression.get("verdict")
    if verdict not in VERDICTS:
        raise DataError(
            f"regression.json, field 'verdict': {verdict!r}; expected one of {', '.join(VERDICTS)}"
        )
    return str(verdict)


def baseline_run_id(baseline: object) -> str:
    """The baseline's run id from ``regression.json`` (``{"run_id", "folder"}``, a bare id, or null)."""
    if isinstance(baseline, Mapping):
        return str(baseline.get("run_id") or "")
    return str(baseline or "")


def baseline_href(baseline: str) -> str:
    """Relative link from one run folder's report to a sibling run's report (``runs/<suite>/<id>/``)."""
    return f"../{baseline}/report.html"


def verdict_banner(
    regression: Mapping[str, Any] | None,
    *,
    headline: Sequence[str] = (),
    deviations: Sequence[Deviation] | None = None,
) -> str:
    """The coloured banner at the top of the page: GO / NO-GO / INCONCLUSIVE, its reasons, the
    baseline, and under it the run's deviations from the paper (:func:`deviations_block`).

    Args:
        regression: the run folder's ``regression.json``, or None when there is none.
        headline: extra plain-text lines (e.g. who leads the leaderboard) shown under the reasons.
        deviations: the run's deviation ledger (``ReportJob.deviations``); None = not known, and
            nothing is said about it.

    Raises:
        DataError: ``regression`` names a verdict other than GO, NO-GO or INCONCLUSIVE.
    """
    ledger = "" if deviations is None else deviations_block(deviations)
    if regression is None:
        return render("blocks/verdict_banner.html.j2", verdict=None, headline=list(headline)) + ledger
    verdict = _check_regression(regression)
    baseline = baseline_run_id(regression.get("baseline"))
    banner = render(
        "blocks/verdict_banner.html.j2",
        verdict=verdict,
        css=VERDICTS[verdict],
        baseline=baseline,
        href=baseline_href(baseline),
        reasons=list(regression.get("reasons") or []),
        headline=list(headline),
        trend_figure=_trend_figure(regression),
    )
    return banner + ledger


def deviations_block(deviations: Sequence[Deviation]) -> str:
    """The run's deviation ledger: each entry's id, what it does and its effect on the numbers; an
    empty ledger says the run followed the paper's protocol."""
    return render("blocks/deviations.html.j2", deviations=list(deviations))


def _trend_figure(regression: Mapping[str, Any]) -> str | None:
    """The slow-drift plot's file name (beside report.html in the run folder), when the nightly drew one."""
    trend = regression.get("trend")
    figure = trend.get("figure") if isinstance(trend, Mapping) else None
    # A bare file name only: the page links it relatively, so nothing outside the run folder.
    return figure if isinstance(figure, str) and figure and "/" not in figure and "\\" not in figure else None


# -- what moved -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Delta:
    """One (system, component) difference between this run and the baseline."""

    system: str
    component: str
    delta: float
    lo: float | None
    hi: float | None
    p_holm: float | None

    @property
    def significant(self) -> bool:
        """Holm-adjusted p below :data:`ALPHA`; without a p, a CI that excludes 0."""
        if self.p_holm is not None:
            return self.p_holm < ALPHA
        return self.lo is not None and self.hi is not None and (self.lo > 0 or self.hi < 0)


def _num(value: Any) -> float | None:
    if value is None:
        return None
    x = float(value)
    return x if math.isfinite(x) else None


def regression_deltas(regression: Mapping[str, Any]) -> list[Delta]:
    """Every (system, component) delta of ``regression.json`` in document order.

    Raises:
        DataError: an entry's ``delta`` or ``ci95`` is not a number / a pair of numbers.
    """
    out: list[Delta] = []
    for system, comps in (regression.get("systems") or {}).items():
        for component, cell in comps.items():
            where = f"regression.json, systems.{system}.{component}"
            try:
                delta = _num(cell.get("delta"))
                ci = cell.get("ci95") or [None, None]
                lo, hi = _num(ci[0]), _num(ci[1])
                p = _num(cell.get("p_holm"))
            except (TypeError, ValueError, IndexError, AttributeError):
                raise DataError(f"{where}: 'delta', 'ci95' and 'p_holm' must be numbers") from None
            if delta is None:
                continue
            out.append(Delta(str(system), str(component), delta, lo, hi, p))
    return out


def delta_reading(deltas: Sequence[Delta]) -> str:
    """One sentence: how many deltas are significant and which moved most."""
    if not deltas:
        return "The comparison holds no system/component deltas."
    sig = [d for d in deltas if d.significant]
    pool = sig or list(deltas)
    top = max(pool, key=lambda d: abs(d.delta))
    ci = f" [{fmt(top.lo, signed=True)}, {fmt(top.hi, signed=True)}]" if top.lo is not None else ""
    where = f"{top.system} {top.component} {fmt(top.delta, signed=True)}{ci}"
    if sig:
        return (
            f"{len(sig)} of {len(deltas)} system/component deltas are significant after Holm "
            f"(p < {ALPHA}); the largest is {where}."
        )
    return f"None of {len(deltas)} system/component deltas is significant after Holm (p < {ALPHA}); the largest is {where}."


def _changed_cell(value: Any) -> str:
    if isinstance(value, bool):
        state, detail = ("changed" if value else "unchanged"), None
    elif value is None:
        state, detail = "unknown", None
    elif isinstance(value, Mapping | list | tuple) and not value:
        state, detail = "unchanged", None
    else:
        text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
        state, detail = "changed", text[:300]
    return render("blocks/changed_cell.html.j2", state=state, detail=detail)


def what_moved(regression: Mapping[str, Any] | None) -> str:
    """ "What moved since the previous run": delta chart with CIs, top movers, what changed."""
    if regression is None:
        return render("blocks/what_moved.html.j2", compared=False)
    _check_regression(regression)
    chart = movers_table = changed_table = ""
    deltas = regression_deltas(regression)
    if deltas:
        panels: dict[str, list[Interval]] = {}
        for d in deltas:
            panels.setdefault(d.component, []).append(Interval(d.system, d.delta, d.lo, d.hi, d.significant))
        chart = figure(
            delta_chart(panels),
            delta_reading(deltas),
            alt="delta per system and component with 95% CI",
            title="Delta vs the baseline per system and component (bar: delta, line: 95% CI; grey: not significant)",
        )
    movers = list(regression.get("top_movers") or [])
    if movers:
        rows = [
            [
                esc(m.get("system", "")),
                esc(m.get("component", "")),
                str(
                    Markup('<a href="{}"><code>{}</code></a>').format(
                        instances_href(str(m.get("instance_id", "")), str(m.get("system", ""))),
                        m.get("instance_id", ""),
                    )
                ),
                fmt(m.get("a")),
                fmt(m.get("b")),
                fmt(m.get("delta"), signed=True),
            ]
            for m in movers
        ]
        movers_table = table(
            ["system", "component", "instance", "baseline", "this run", "delta"], rows, left=3
        )
    changed = regression.get("changed") or {}
    if changed:
        rows = [[esc(k), _changed_cell(v)] for k, v in changed.items()]
        changed_table = table(["input", "status"], rows, left=2)
    return render(
        "blocks/what_moved.html.j2",
        compared=True,
        no_baseline=not regression.get("baseline"),
        chart=trusted(chart),
        movers=trusted(movers_table),
        changed=trusted(changed_table),
    )


# -- leaderboard with CIs ---------------------------------------------------------------------------


def leaderboard_ci(
    bootstrap: Mapping[str, Any] | None,
    totals: Mapping[str, float | None],
    order: Sequence[str],
    *,
    scale: str,
) -> str:
    """The leaderboard as points with 95% bootstrap CIs, best on top, with a one-line reading.

    Args:
        bootstrap: ``bootstrap.json`` (per system ``total_average``, ``ci95``, ``rank_interval``;
            ``leader`` with ``difference``, ``ci95``, ``share_leader_beats_runner_up``), or None.
        totals: system -> total from the leaderboard, used when there is no bootstrap.
        order: systems in leaderboard order.
        scale: the x-axis label (what the total is and its range).
    """
    ok = bootstrap is not None and bootstrap.get("status", "ok") == "ok" and "systems" in bootstrap
    rows: list[Interval] = []
    if ok:
        assert bootstrap is not None
        systems = bootstrap["systems"]
        ranked = [s for s in bootstrap.get("ranking", order) if s in systems] or [
            s for s in order if s in systems
        ]
        for name in ranked:
            e = systems[name]
            ci = e.get("ci95") or [None, None]
            ri = e.get("rank_interval")
            label = (
                f"{name}  (rank {ri[0]}-{ri[1]})"
                if ri and ri[0] != ri[1]
                else f"{name}  (rank {ri[0]})"
                if ri
                else name
            )
            value = _num(e.get("total_average"))
            if value is not None:
                rows.append(Interval(label, value, _num(ci[0]), _num(ci[1])))
        reading = bootstrap_reading(bootstrap)
    else:
        for name in order:
            value = _num(totals.get(name))
            if value is not None:
                rows.append(Interval(name, value))
        why = (
            f"bootstrap skipped: {bootstrap.get('reason', '')}"
            if bootstrap is not None
            else "bootstrap not run"
        )
        reading = f"Totals without confidence intervals ({why})."
    if not rows:
        return _note("No system has a total to chart.")
    return figure(
        ci_chart(rows, xlabel=scale),
        reading,
        alt="leaderboard with 95% bootstrap confidence intervals",
        title="Total Average with 95% bootstrap CI and rank interval",
    )


def bootstrap_reading(doc: Mapping[str, Any]) -> str:
    """E.g. "oracle leads copy-current by 3.52 points (95% CI 2.83 to 4.21; ahead in 100% of 10000
    draws); 3 of 3 pairwise differences are significant after Holm."."""
    systems = doc["systems"]
    leader = doc.get("leader") or {}
    if not leader.get("runner_up"):
        only = leader.get("system") or next(iter(systems), None)
        return f"{only} is the only system with a total." if only else "No system has a total."
    ci = leader.get("ci95") or [None, None]
    share = leader.get("share_leader_beats_runner_up")
    draws = doc.get("draws")
    excl = ""
    if ci[0] is not None and ci[1] is not None:
        excl = "; the CI excludes 0" if (ci[0] > 0 or ci[1] < 0) else "; the CI includes 0"
    text = (
        f"{leader['system']} leads {leader['runner_up']} by {fmt(leader.get('difference'))} points "
        f"(95% CI {fmt(ci[0])} to {fmt(ci[1])}{excl}"
        + (f"; ahead in {pct(share)} of {draws} draws)" if share is not None and draws else ")")
    )
    if doc.get("n_pairs"):
        text += f"; {doc.get('n_significant_holm', 0)} of {doc['n_pairs']} pairwise differences are significant after Holm."
    else:
        text += "."
    return text


# -- judges -----------------------------------------------------------------------------------------


def ledger_reading(rows: Sequence[LedgerRow]) -> str:
    """One sentence: valid share over all owed judgments, failures by kind, the weakest judge/track."""
    owed = sum(r.owed for r in rows)
    if not owed:
        return "No judgment was owed: every judge row is not applicable (tracks unavailable here)."
    valid = sum(r.valid for r in rows)
    repaired = sum(r.counts.get("repaired", 0) for r in rows)
    fails = {
        s: sum(r.counts.get(s, 0) for r in rows)
        for s in LEDGER_STATUSES
        if s not in ("ok", "repaired", "not_applicable")
    }
    fail_text = ", ".join(f"{n} {s}" for s, n in fails.items() if n) or "no failures"
    scored = [r for r in rows if r.owed]
    worst = min(scored, key=lambda r: (r.valid_share or 0.0, r.judge, r.track))
    text = f"{valid} of {owed} owed judgments are valid ({pct(valid / owed, 1)}, {repaired} after repair); {fail_text}."
    if worst.valid_share is not None and worst.valid_share < 1.0:
        text += f" Weakest: {worst.judge} on {worst.track} ({pct(worst.valid_share, 1)} valid)."
    return text


def validity_ledger_block(judgments_path: Path | None) -> str:
    """Stacked status bars per judge and track, the count table and a reading.

    Raises:
        DataError: the judgments table exists but cannot be read or holds an unknown status.
    """
    if judgments_path is None:
        return _note("No judgments table: this suite runs no judge panels.")
    if not judgments_path.is_file():
        return _note("No judgments table at ", judgments_path.name, "; the judge stage has not run.")
    rows = read_ledger(judgments_path)
    if not rows:
        return _note("The judgments table is empty.")
    chart = stacked_bars([(f"{r.judge} · {r.track}", r.counts) for r in rows], LEDGER_STATUSES)
    used = [s for s in LEDGER_STATUSES if any(r.counts.get(s, 0) for r in rows)]
    body = [
        [
            esc(r.judge),
            esc(r.track),
            *(str(r.counts.get(s, 0)) for s in used),
            str(r.total),
            pct(r.valid_share, 1),
        ]
        for r in rows
    ]
    return figure(
        chart,
        ledger_reading(rows),
        alt="validity ledger per judge and track",
        title="Judgment status per judge and track",
    ) + table(["judge", "track", *used, "total", "valid of owed"], body, left=2)


def judge_health_block(health: Mapping[str, Any] | None) -> str:
    """A verdict histogram per judge, its numbers, and a red flag on judges marked degenerate.

    Args:
        health: the judge stage's ``health.json`` (``judges``: ``<panel>/<judge id>`` -> ``n_verdicts``,
            ``histogram`` {"1".."10": n}, ``identical_share``, ``distinct_values``,
            ``rationale_chars`` {mean, p50, max}, ``truncated_share``, ``degenerate``, ``reasons``).

    Raises:
        DataError: a histogram count is not an integer.
    """
    if health is None:
        return _note("No judge health for this run (the judge stage wrote no ", "health.json", ").")
    judges: Mapping[str, Any] = health.get("judges") or {}
    known = known_set_block(health.get("meta_eval"))
    if not judges:
        return _note("The judge health file lists no judges.") + known
    flagged = set(health.get("degenerate") or []) | {k for k, v in judges.items() if v.get("degenerate")}
    hists: list[tuple[str, list[int], bool]] = []
    rows: list[list[str]] = []
    for key, h in judges.items():
        hist = h.get("histogram") or {}
        try:
            counts = [int(hist.get(b, 0)) for b in HEALTH_BINS]
        except (TypeError, ValueError):
            raise DataError(f"health.json, judges.{key}.histogram: counts must be integers") from None
        bad = key in flagged
        hists.append((key, counts, bad))
        chars = h.get("rationale_chars") or {}
        kinds = h.get("scores") or {}  # greedy scores and judge_expected are judged apart: show both
        status = render(
            "blocks/health_status.html.j2", bad=bad, kinds=", ".join(f"{k}: {v}" for k, v in kinds.items())
        )
        reasons = "; ".join(str(r) for r in h.get("reasons") or [])
        rows.append(
            [
                esc(key),
                status,
                str(h.get("n_verdicts", "n/a")),
                str(h.get("distinct_values", "n/a")),
                # The judge stage writes ``identical_share``; the draft called it ``identical_criteria_share``.
                pct(h.get("identical_share", h.get("identical_criteria_share"))),
                f"{fmt(chars.get('mean'), 0)} / {fmt(chars.get('p50'), 0)} / {fmt(chars.get('max'), 0)}",
                pct(h.get("truncated_share")),
                esc(reasons),
            ]
        )
    if flagged:
        names = ", ".join(sorted(flagged))
        first = next((judges[k].get("reasons") for k in sorted(flagged) if k in judges), None) or []
        why = f" ({first[0]})" if first else ""
        reading = f"{len(flagged)} of {len(judges)} judges look degenerate: {names}{why}; their scores deserve no trust until fixed."
    else:
        spread = [int(h.get("distinct_values", 0) or 0) for h in judges.values()]
        reading = (
            f"No judge is degenerate: all {len(judges)} spread their verdicts over "
            f"{min(spread)}-{max(spread)} distinct values."
        )
    html_rows = table(
        [
            "judge",
            "health",
            "verdicts",
            "distinct values",
            "identical criteria",
            "rationale chars mean / p50 / max",
            "truncated",
            "reasons",
        ],
        rows,
        left=2,
        left_cols=(7,),
    )
    chart = figure(
        histograms(hists, bins=HEALTH_BINS),
        reading,
        alt="verdict histogram per judge",
        title="Verdict distribution per judge (1-10)",
    )
    return render(
        "blocks/judge_health.html.j2",
        flagged=", ".join(sorted(flagged)),
        chart=trusted(chart),
        table=trusted(html_rows),
        caveats=[str(c) for c in health.get("caveats") or []],
        known=trusted(known),
    )


def known_set_block(section: Mapping[str, Any] | None) -> str:
    """The judges' check on the benchmark's known set (``health.json``'s ``meta_eval``): per judge and
    track the accuracy and agreement against the floor, a red flag on those below it, the panels
    whose check could not run, and the tie rule. Empty when the suite ran no check.

    Args:
        section: ``{"judges": {"<panel>/<judge>": {track: {"status", "n_pairs", "correct", "ties",
            "wrong", "invalid", "accuracy", "agreement", "floor", "reason"}}}, "below_floor": [...],
            "panels": {panel: {"set": {"name", "sha256"}, "unavailable", "error", ...}}, "rule"}``.
    """
    if not section:
        return ""
    rows: list[list[str]] = []
    for judge, tracks in (section.get("judges") or {}).items():
        for track, e in tracks.items():
            if e.get("status") == "unavailable":
                status = "unavailable"
            elif e.get("status") == "below_floor":
                status = '<span class="flag">BELOW FLOOR</span>'
            else:
                status = '<span class="ok">ok</span>'
            rows.append(
                [
                    esc(judge),
                    esc(track),
                    str(e.get("n_pairs", "n/a")),
                    str(e.get("correct", "n/a")),
                    str(e.get("ties", "n/a")),
                    fmt(e.get("accuracy")),
                    fmt(e.get("agreement"), signed=True),
                    fmt((e.get("expected") or {}).get("accuracy")),
                    fmt(e.get("floor")),
                    status,
                    esc(e.get("reason", "")),
                ]
            )
    notes: list[str] = []
    for panel, info in (section.get("panels") or {}).items():
        info = info or {}
        if info.get("error"):
            notes.append(f"panel {panel}: the check could not run: {str(info['error']).splitlines()[0]}")
            continue
        known = info.get("set") or {}
        skipped = ", ".join(f"{t} ({why})" for t, why in (info.get("unavailable") or {}).items())
        reused = "result reused" if info.get("reused") else f"{info.get('model_calls', 0)} model calls"
        notes.append(
            f"panel {panel}: set {known.get('name', '?')} (sha256 {str(known.get('sha256', ''))[:12]}, "
            f"{known.get('pairs', '?')} known pairs), {reused}"
            + (f"; not checked: {skipped}" if skipped else "")
        )
    below = section.get("below_floor") or []
    if below:
        first = below[0]
        reading = (
            f"{len(below)} judge/track(s) below their floor on the known set, e.g. {first.get('judge')} on "
            f"{first.get('track')} (accuracy {fmt(first.get('accuracy'))} < {fmt(first.get('floor'))}): their "
            "scores tonight deserve no trust, and the night's verdict cannot be GO."
        )
    elif rows:
        reading = "Every checked judge ranks the ground truth above its damaged copies at least as often as its floor asks."
    else:
        reading = "No judge could be checked on the known set here."
    html = table(
        [
            "judge",
            "track",
            "pairs",
            "right",
            "ties",
            "accuracy",
            "agreement",
            "accuracy (judge_expected)",
            "floor",
            "status",
            "why",
        ],
        rows,
        left=2,
        left_cols=(9, 10),
    )
    return render(
        "blocks/known_set.html.j2",
        reading=reading,
        table=trusted(html) if rows else "",
        notes=notes,
        rule=str(section.get("rule") or ""),
    )


# -- artifacts --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Artifact:
    """A file the page links to: its path relative to the page and what it holds."""

    path: str
    what: str


def artifact_links(page_dir: Path, artifacts: Sequence[Artifact]) -> str:
    """A list of relative links to the artifacts that exist beside the page (others are left out)."""
    items = [a for a in artifacts if (page_dir / a.path).is_file()]
    return render("blocks/artifact_links.html.j2", items=items)


def analyses_href(analyses_dir: Path, page_dir: Path) -> str | None:
    """Relative folder of the analyses' JSON as seen from the page, or None when none is reachable.

    The analyses folder itself when it lies under the page's folder (the report state folder),
    else ``analyses/`` beside the page when present (the run folder holds a copy of the JSON).
    """
    try:
        return analyses_dir.resolve().relative_to(page_dir.resolve()).as_posix()
    except ValueError:
        return "analyses" if (page_dir / "analyses").is_dir() else None


def analysis_artifacts(analyses_dir: Path, page_dir: Path) -> list[Artifact]:
    """Every ``<name>.json`` of the analyses, as links relative to ``page_dir`` (see :func:`analyses_href`)."""
    base = analyses_href(analyses_dir, page_dir)
    if base is None:
        return []
    return [
        Artifact(f"{base}/{p.name}", f"{p.stem} analysis") for p in sorted((page_dir / base).glob("*.json"))
    ]


def generation_block(systems: Mapping[str, Any]) -> str:
    """Generating systems' accounting (FORMATS.md section 9): per system the examples it generated
    or reused, missing outputs per modality, planning failures by cause and mean generation seconds
    per example and step; per input condition too where the benchmark has conditions.

    Args:
        systems: ``leaderboard.json``'s ``systems`` map; entries without ``generation`` are skipped.

    >>> html = generation_block({"a": {"generation": {"planning_failures": {"timeout": 1},
    ...     "seconds": {"command": 6.0}, "completeness": {"examples": 3, "missing": {"video": 1}},
    ...     "examples_generated": 3, "examples_reused": 0}}})
    >>> "timeout 1" in html and "2.00" in html and "video 1" in html
    True
    """
    rows: list[list[str]] = []
    for name, entry in systems.items():
        generation = entry.get("generation") if isinstance(entry, Mapping) else None
        if not isinstance(generation, Mapping):
            continue
        parts: list[tuple[str, Mapping[str, Any]]] = [("all", generation)]
        by_condition = generation.get("by_condition") or {}
        parts += [(str(c), block) for c, block in by_condition.items() if isinstance(block, Mapping)]
        for condition, block in parts:
            done = block.get("completeness") or {}
            examples = int(done.get("examples") or 0)
            missing = done.get("missing") or {}
            failures = block.get("planning_failures") or {}
            seconds = block.get("seconds") or {}
            per_example = (
                ", ".join(f"{esc(step)} {float(s) / examples:.2f}" for step, s in sorted(seconds.items()))
                if examples
                else "—"
            )
            rows.append(
                [
                    esc(name),
                    esc(condition) if by_condition else "",
                    str(examples),
                    f"{int(block.get('examples_generated') or 0)} / {int(block.get('examples_reused') or 0)}"
                    + (
                        f" ({int(block['examples_withheld'])} withheld)"
                        if block.get("examples_withheld")
                        else ""
                    ),
                    ", ".join(f"{esc(m)} {int(n)}" for m, n in sorted(missing.items()) if int(n)) or "none",
                    ", ".join(f"{esc(c)} {int(n)}" for c, n in sorted(failures.items()) if int(n)) or "none",
                    per_example,
                ]
            )
    if not rows:
        return render("blocks/generation.html.j2", table="")
    head = [
        "system",
        "condition",
        "examples",
        "generated / reused",
        "missing outputs",
        "planning failures",
        "seconds per example",
    ]
    return render("blocks/generation.html.j2", table=trusted(table(head, rows, left=2, left_cols=(4, 5, 6))))
