"""Human-readable outputs: the terminal leaderboard and the self-contained report.html.

The page's markup is Jinja2 templates in this package's ``templates/`` folder and the shared blocks
of :mod:`omnieval.reporting` (autoescaping on); the functions here pick and shape the numbers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    from markupsafe import Markup
    from rich.console import Console
    from rich.table import Table

    from omnieval.benchmarks._base import ReportJob
    from omnieval.benchmarks.storybench._rankings import CoverageRank, CoverageRanking
    from omnieval.paths import StatePaths
    from omnieval.reporting import Panel

COMPONENTS: tuple[tuple[str, str, float], ...] = (
    ("bertscore_f1", "BERTScore", 10.0),
    ("image_similarity", "ImgSim", 10.0),
    ("speech_meta_accuracy", "SpeechAcc", 10.0),
    ("judge.text", "J.text", 1.0),
    ("judge.image", "J.image", 1.0),
    ("judge.speech", "J.speech", 1.0),
    ("judge.integrated", "J.integ", 1.0),
    ("total_average", "Total", 1.0),
)


def _fmt(value: Any, scale: float = 1.0) -> str:
    if value is None:
        return "n/a"
    return f"{float(value) * scale:.2f}"


def _ranking(board: dict[str, Any]) -> CoverageRanking:
    from omnieval.benchmarks.storybench._rankings import leaderboard_ranking

    return leaderboard_ranking(board)


def _order(board: dict[str, Any]) -> list[str]:
    """Systems in leaderboard order: by coverage group, then valid-only Total Average."""
    return [row.system for row in _ranking(board).rows]


def coverage_lines(board: dict[str, Any]) -> list[str]:
    """What a leaderboard prints under its table: coverage, components not computed, missing judges.

    When the systems' totals cover different components the first line is the not-comparable note
    of :func:`omnieval.benchmarks.storybench._rankings.rank_by_coverage` (ranks are then per coverage group).
    """
    ranking = _ranking(board)
    lines: list[str] = []
    note = ranking.note()
    if note is not None:
        lines.append(note)
    else:
        covered = list(ranking.groups[0]) if ranking.groups else []
        n = ranking.n_components
        lines.append(
            f"Total Average covers: {', '.join(covered) or 'nothing'}"
            + ("" if len(covered) == n else f"  ({n - len(covered)} of {n} components not computable here)")
        )
    not_computed = list(board.get("not_computed", []))
    if not_computed:
        lines.append("Not computed (left out of every Total Average, or of its track's judge mean):")
        lines += [f"  - {line}" for line in not_computed]
    # Judges missing for some systems only: table-wide gaps are already in the list above.
    table_wide: dict[str, Any] = board.get("missing_judges", {})
    for name in _order(board):
        per_system: dict[str, dict[str, str]] = board["systems"][name].get("missing_judges", {})
        extra = [
            f"judge.{track}/{judge}: {why}"
            for track, judges in per_system.items()
            for judge, why in judges.items()
            if judge not in table_wide.get(track, {})
        ]
        if extra:
            lines.append(f"{name}: judges without a valid record (left out of its valid-only judge mean):")
            lines += [f"  - {line}" for line in extra]
    return lines


def leaderboard_table(board: dict[str, Any]) -> str:
    """Render both policies side by side (valid-only / zero-filled); automatic metrics x10 as in the total.

    Systems are ranked by valid-only Total Average within groups of equal coverage
    (:func:`omnieval.benchmarks.storybench._rankings.rank_by_coverage`); the lines under the table say what the
    totals cover, which components were not computed and which configured judges gave no valid record.
    """
    from rich.console import Console

    ranking = _ranking(board)
    table = _ranked_table(
        f"{board.get('benchmark', '')} leaderboard — valid-only / zero-filled (0-10 scale)",
        ranking,
        [label for _key, label, _scale in COMPONENTS],
        lambda row: [f"{valid} / {zero}" for valid, zero in _policy_cells(board["systems"][row.system])],
    )
    lines = [*coverage_lines(board), *completeness_lines(board)]
    return _console_text(Console(width=200, record=True, force_terminal=False), table, lines)


def _policy_cells(entry: dict[str, Any]) -> list[tuple[str, str]]:
    """(valid-only, zero-filled) per component of :data:`COMPONENTS`, formatted on the 0-10 scale."""
    valid, zero = entry.get("valid_only", {}), entry.get("zero_filled", {})
    return [(_fmt(valid.get(k), s), _fmt(zero.get(k), s)) for k, _l, s in COMPONENTS]


def _ranked_table(
    title: str, ranking: CoverageRanking, columns: list[str], cells: Callable[[CoverageRank], list[str]]
) -> Table:
    """A terminal table of ``ranking``'s rows: rank, system, ``cells(row)`` under ``columns``, coverage."""
    from rich.table import Table

    table = Table(title=title)
    table.add_column("rank", justify="right")
    table.add_column("system")
    for column in columns:
        table.add_column(column, justify="right")
    table.add_column("covers", justify="right")
    for row in ranking.rows:
        table.add_row(row.label, row.system, *cells(row), f"{len(row.components)}/{ranking.n_components}")
    return table


def _console_text(console: Console, table: Table, lines: list[str]) -> str:
    """``table`` and the plain-text ``lines`` under it, as ``console`` renders them."""
    with console.capture() as capture:
        console.print(table)
        for line in lines:
            console.print(line, markup=False, highlight=False)
    return capture.get()


#: Planning failure causes in the order of Omni-StoryBench's tables (FORMATS.md section 9).
FAILURE_CAUSES: tuple[str, ...] = (
    "unparseable_json",
    "missing_field",
    "unusable_prompt",
    "refusal",
    "timeout",
)
_MODALITIES: tuple[tuple[str, str], ...] = (("text", "T"), ("image", "I"), ("speech", "S"))


@dataclass(frozen=True)
class CompletenessRow:
    """One system's row of the completeness table (the paper's tables 13-14, plus our columns).

    Attributes:
        system: The system id.
        examples: Instances the system was asked for.
        missing: Modality -> outputs missing (from the scores table; the generation block otherwise).
        failures: Cause -> failed plans; None for systems that do not plan (reference systems, imports).
        seconds_per_example: Step -> mean generation seconds per example (generating systems only).
        valid_total: Total Average, valid-only.
        zero_total: Total Average, zero-filled.
    """

    system: str
    examples: int
    missing: dict[str, int]
    failures: dict[str, int] | None
    seconds_per_example: dict[str, float]
    valid_total: float | None
    zero_total: float | None

    @property
    def delta(self) -> float | None:
        """Valid-only minus zero-filled Total Average: what missing and invalid records cost."""
        if self.valid_total is None or self.zero_total is None:
            return None
        return float(self.valid_total) - float(self.zero_total)


def completeness_rows(board: dict[str, Any]) -> list[CompletenessRow]:
    """The completeness table's rows in leaderboard order (see :class:`CompletenessRow`).

    Example:
        >>> board = {"n_instances": 4, "systems": {"orch": {
        ...     "valid_only": {"total_average": 6.0}, "zero_filled": {"total_average": 4.5},
        ...     "completeness": {"outputs": {"text": {"n_instances": 4, "missing": 1}}},
        ...     "generation": {"planning_failures": {"refusal": 1}, "seconds": {"plan": 8.0, "image": 2.0},
        ...                    "completeness": {"examples": 4, "missing": {"text": 1, "image": 1, "speech": 1}}}}}}
        >>> row = completeness_rows(board)[0]
        >>> row.missing, row.failures, row.seconds_per_example, row.delta
        ({'text': 1, 'image': 1, 'speech': 1}, {'refusal': 1}, {'plan': 2.0, 'image': 0.5}, 1.5)
    """
    systems: dict[str, Any] = board.get("systems", {})
    try:
        order = [s for s in _order(board) if s in systems]
    except (KeyError, TypeError, ValueError):
        order = []
    rows: list[CompletenessRow] = []
    for name in order + [s for s in systems if s not in order]:
        entry = systems[name]
        generation = entry.get("generation")
        outputs = (entry.get("completeness") or {}).get("outputs") or {}
        gen_done = (generation or {}).get("completeness") or {}
        examples = int(gen_done.get("examples") or 0) or int(
            next((o.get("n_instances", 0) for o in outputs.values()), 0) or board.get("n_instances") or 0
        )
        gen_missing = gen_done.get("missing") or {}
        missing = {
            m: int(outputs[m].get("missing", 0) if m in outputs else gen_missing.get(m, 0))
            for m, _letter in _MODALITIES
        }
        seconds: dict[str, float] = {}
        if generation is not None and examples:
            seconds = {k: float(v) / examples for k, v in (generation.get("seconds") or {}).items()}
        rows.append(
            CompletenessRow(
                system=name,
                examples=examples,
                missing=missing,
                failures=dict(generation.get("planning_failures") or {}) if generation is not None else None,
                seconds_per_example=seconds,
                valid_total=(entry.get("valid_only") or {}).get("total_average"),
                zero_total=(entry.get("zero_filled") or {}).get("total_average"),
            )
        )
    return rows


def _failures_text(failures: dict[str, int] | None) -> str:
    if failures is None:
        return "not planned"
    total = sum(failures.values())
    if not total:
        return "0"
    causes = [c for c in FAILURE_CAUSES if failures.get(c)] + sorted(set(failures) - set(FAILURE_CAUSES))
    return f"{total} (" + ", ".join(f"{c} {failures[c]}" for c in causes if failures.get(c)) + ")"


def _seconds_text(seconds: dict[str, float]) -> str:
    return ", ".join(f"{step} {value:.2f}" for step, value in seconds.items()) or "-"


def completeness_lines(board: dict[str, Any]) -> list[str]:
    """The completeness table as text lines (printed under the terminal leaderboard).

    Only boards with at least one generating system (a ``generation`` block) get lines.
    """
    rows = completeness_rows(board)
    if not any(r.failures is not None for r in rows):
        return []
    lines = ["Completeness (missing T/I/S of N), planning failures by cause, generation seconds per example:"]
    for r in rows:
        missing = "/".join(str(r.missing[m]) for m, _l in _MODALITIES)
        delta = "n/a" if r.delta is None else f"{r.delta:+.2f}"
        line = (
            f"  {r.system}: missing {missing} of {r.examples}; planning failures {_failures_text(r.failures)}"
        )
        if r.failures is not None:
            line += f"; s/example {_seconds_text(r.seconds_per_example)}"
        lines.append(line + f"; Total valid-only - zero-filled {delta}")
    return lines


_TEMPLATES = "omnieval.benchmarks.storybench"
"""The package whose ``templates/`` folder holds this page's section templates."""


def _render(name: str, /, **context: Any) -> str:
    """Render one of this page's templates (already-built HTML values wrapped with ``trusted``)."""
    from omnieval.reporting import render

    return render(name, package=_TEMPLATES, **context)


def completeness_html(board: dict[str, Any], labels: dict[str, str] | None = None) -> str:
    """The completeness table (missing T / I / S per system, planning failures by cause, seconds per
    example per step) with the valid-only vs zero-filled Total Average beside it."""
    from omnieval.reporting import esc, fmt, table, trusted

    rows = completeness_rows(board)
    if not rows:
        return _render("blocks/note.html.j2", text="No systems.", code=None, tail="")
    labels = labels or {}
    steps = sorted(
        {k for r in rows for k in r.seconds_per_example}, key=lambda k: (k not in ("plan", "backbone"), k)
    )
    head = [
        "system",
        "how it generates",
        "N",
        *(f"missing {letter}" for _m, letter in _MODALITIES),
        "failed plans",
        *FAILURE_CAUSES,
        *(f"s/example {step}" for step in steps),
        "Total valid-only",
        "Total zero-filled",
        "delta",
    ]
    body = []
    for r in rows:
        failures = r.failures
        body.append(
            [
                esc(r.system),
                esc(
                    labels.get(
                        r.system, "generates" if failures is not None else "reference or imported outputs"
                    )
                ),
                str(r.examples),
                *(str(r.missing[m]) for m, _l in _MODALITIES),
                str(sum(failures.values())) if failures is not None else "-",
                *((str(failures.get(c, 0)) if failures is not None else "-") for c in FAILURE_CAUSES),
                *(fmt(r.seconds_per_example[s]) if s in r.seconds_per_example else "-" for s in steps),
                fmt(r.valid_total),
                fmt(r.zero_total),
                fmt(r.delta, signed=True),
            ]
        )
    return _render("completeness.html.j2", table=trusted(table(head, body, left=2)))


def _system_files(
    job: ReportJob, systems: list[str], path: Callable[[StatePaths, str], Path]
) -> dict[str, Any]:
    """system -> the JSON document at ``path(paths, system)``, for the systems that have one."""
    from omnieval.jsonio import read_json
    from omnieval.paths import StatePaths

    paths = StatePaths(job.config.state)
    return {system: read_json(path(paths, system)) for system in systems if path(paths, system).is_file()}


def _generation_labels(job: ReportJob, systems: list[str]) -> dict[str, str]:
    """system -> the generating system's own description (``lineage.label`` of its summary file)."""
    from omnieval.paths import StatePaths

    out: dict[str, str] = {}
    for system, summary in _system_files(job, systems, StatePaths.summary).items():
        parts = summary.get("conditions") or {"": summary}
        for part in parts.values():
            label = (part.get("lineage") or {}).get("label") if isinstance(part, dict) else None
            if label:
                out[system] = str(label)
                break
    return out


def _read_json(path: Path) -> Any:
    from omnieval.errors import DataError

    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(f"{path}: not readable JSON ({exc})") from None


def _analyses(analyses_dir: Path) -> dict[str, Any]:
    """Analysis name -> its JSON document, in name order (empty when the folder does not exist)."""
    if not analyses_dir.is_dir():
        return {}
    return {p.stem: _read_json(p) for p in sorted(analyses_dir.glob("*.json"))}


def _pngs(analyses_dir: Path, name: str) -> list[bytes]:
    """The plots of one analysis: ``<name>.png`` then ``<name>_<suffix>.png``."""
    paths = [analyses_dir / f"{name}.png", *sorted(analyses_dir.glob(f"{name}_*.png"))]
    return [p.read_bytes() for p in paths if p.is_file()]


def _ok(doc: Any) -> bool:
    return doc is not None and not (isinstance(doc, dict) and doc.get("status") == "skipped")


def _scaled(entry: dict[str, Any], key: str, scale: float) -> float | None:
    value = entry.get(key)
    return None if value is None else float(value) * scale


def _component_panels(board: dict[str, Any], order: list[str]) -> list[Panel]:
    """One panel per component of :data:`COMPONENTS` on the 0-10 scale: valid-only values,
    zero-filled markers."""
    from omnieval.reporting import Panel

    return [
        Panel(
            label,
            {s: _scaled(board["systems"][s].get("valid_only", {}), key, scale) for s in order},
            {s: _scaled(board["systems"][s].get("zero_filled", {}), key, scale) for s in order},
        )
        for key, label, scale in COMPONENTS
    ]


def component_reading(panels: list[Panel]) -> str:
    """Who is best per computed component, what is not computed, how far zero-filling lowers values
    (``panels``: :func:`_component_panels`, whose last one, the Total Average, is left out)."""
    from omnieval.reporting import fmt

    best: dict[str, tuple[str, float]] = {}
    not_computed: list[str] = []
    gap = 0.0
    for panel in panels[:-1]:
        values = {s: v for s, v in panel.values.items() if v is not None}
        if not values:
            not_computed.append(panel.title)
            continue
        top = max(values, key=lambda s: (values[s], s))
        best[panel.title] = (top, values[top])
        for s, v in values.items():
            z = panel.markers[s]
            if z is not None:
                gap = max(gap, v - z)
    if not best:
        return "No component was computed."
    leaders = {s for s, _v in best.values()}
    if len(leaders) == 1:
        text = f"{next(iter(leaders))} is best on all {len(best)} computed components"
    else:
        text = "Best per component: " + ", ".join(f"{c} {s} ({fmt(v)})" for c, (s, v) in best.items())
    if not_computed:
        text += f"; not computed: {', '.join(not_computed)}"
    text += (
        f"; zero-filling (ticks) lowers a value by up to {fmt(gap)} points."
        if gap > 1e-9
        else "; zero-filled (ticks) equals valid-only everywhere (no missing or invalid records)."
    )
    return text


def _component_section(board: dict[str, Any], order: list[str]) -> str:
    from omnieval.reporting import figure, panel_bars

    panels = _component_panels(board, order)
    png = panel_bars(panels, order, xlim=(0.0, 10.0), bar_label="valid-only", marker_label="zero-filled")
    return figure(
        png,
        component_reading(panels),
        alt="per-component scores per system",
        title="Per component, 0-10 scale (bars: valid-only; ticks: zero-filled)",
    )


def diagnostics_reading(doc: dict[str, Any]) -> str:
    """Which modality each bottleneck diagnostic singles out; a diagnostic naming every modality is a tie."""
    d = doc["valid_only"]
    mods = list(d["modalities"])
    signal = d.get("strongest_signal") or {}
    pointed, tied = [], []
    for key, label in (
        ("weakest_count", "weakest-modality count"),
        ("mean_weakest_rank_gap_pp", "rank gap"),
        ("iqr", "IQR"),
        ("max_total_bottom", "max Total in the bottom tercile"),
    ):
        named = list(signal.get(key) or [])
        if named and len(named) < len(mods):
            pointed.append(f"{label} points to {' and '.join(named)}")
        elif named:
            tied.append(label)
    text = "; ".join(pointed) if pointed else "No diagnostic singles out a modality"
    if tied:
        text += f"; tied across all modalities: {', '.join(tied)}"
    return text + "."


def _bottleneck_section(doc: Any, pngs: list[bytes], order: list[str]) -> str:
    from omnieval.reporting import Panel, analysis_reading, figure, panel_bars

    if not _ok(doc):
        why = doc.get("reason", "") if isinstance(doc, dict) else "the analysis was not run"
        return _render(
            "blocks/note.html.j2", text=f"No modality-bottleneck diagnostics: {why}.", code=None, tail=""
        )
    d = doc["valid_only"]
    listed = [row["system"] for row in d["systems"]]
    systems = [s for s in order if s in listed] + [s for s in listed if s not in order]
    mods = list(d["modalities"])
    panels = [Panel(m, {row["system"]: row["scores"].get(m) for row in d["systems"]}) for m in mods]
    parts = [
        figure(
            panel_bars(panels, systems, xlim=(0.0, 10.0), ncols=len(mods)),
            analysis_reading("bottleneck", doc),
            alt="modality scores per system",
            title="Modality scores per system (valid-only, 0-10)",
        )
    ]
    if pngs:
        parts.append(
            figure(
                pngs[0],
                diagnostics_reading(doc),
                alt="bottleneck diagnostics",
                title="Bottleneck diagnostics per modality (E.6)",
                more=pngs[1:],
            )
        )
    return "".join(parts)


SHOWN_ABOVE: dict[str, tuple[str, str]] = {
    "bootstrap": ("leaderboard", "Leaderboard"),
    "bottleneck": ("bottleneck", "Modality bottleneck"),
}
"""Analyses whose figures have their own section; the analyses list only points to them."""


def _analysis_cards(
    docs: dict[str, Any], analyses_dir: Path, links_base: str | None, runs: dict[str, str]
) -> str:
    from omnieval.reporting import analysis_reading, analysis_summary, esc, figure, table, trusted

    cards: list[Markup] = []
    skipped: list[list[str]] = []
    for name, doc in docs.items():
        data = {
            "href": f"{links_base}/{name}.json" if links_base is not None else None,
            "name": name,
            "run": runs.get(name),
        }
        if not _ok(doc):
            skipped.append(
                [esc(name), esc(doc.get("reason", "")), _render("analysis_data.html.j2", card=False, **data)]
            )
            continue
        reading = analysis_reading(name, doc)
        title = f"{name}: {analysis_summary(name)}" if analysis_summary(name) else name
        has_data = data["href"] is not None or data["run"] is not None
        extra = _render("analysis_data.html.j2", card=True, **data) if has_data else ""
        pngs = _pngs(analyses_dir, name)
        anchor, section = SHOWN_ABOVE.get(name, (None, None))
        if anchor is None and pngs:
            cards.append(trusted(figure(pngs[0], reading, alt=name, title=title, extra=extra, more=pngs[1:])))
        else:
            card = _render(
                "card.html.j2",
                title=title,
                reading=reading,
                anchor=anchor,
                section=section,
                extra=trusted(extra),
            )
            cards.append(trusted(card))
    skipped_table = table(["analysis", "why", "data"], skipped, left=3) if skipped else ""
    return _render("analyses.html.j2", cards=cards, skipped=trusted(skipped_table))


def _leaderboard_html(board: dict[str, Any]) -> str:
    rows = [
        {"label": row.label, "system": row.system, "cells": _policy_cells(board["systems"][row.system])}
        for row in _ranking(board).rows
    ]
    return _render("policies.html.j2", components=[label for _k, label, _s in COMPONENTS], rows=rows)


def _coverage_html(board: dict[str, Any]) -> str:
    items: list[tuple[str, list[str]]] = []
    for line in coverage_lines(board):
        if line.startswith("  - ") and items:
            items[-1][1].append(line[4:])
        else:
            items.append((line, []))
    return _render("coverage_list.html.j2", items=items)


def _headline(board: dict[str, Any], bootstrap: Any, job: ReportJob) -> list[str]:
    from omnieval.reporting import fmt, pct, read_ledger

    lines: list[str] = []
    ranking = _ranking(board)
    if ranking.rows:
        top = ranking.rows[0].system
        valid = board["systems"][top].get("valid_only", {})
        ci = ""
        if _ok(bootstrap) and top in bootstrap.get("systems", {}):
            lo, hi = bootstrap["systems"][top].get("ci95") or [None, None]
            ci = f" (95% CI {fmt(lo)} to {fmt(hi)})"
        covers = len(valid.get("total_average_components", []))
        lines.append(
            f"Leader: {top}, Total Average {fmt(valid.get('total_average'))}{ci} over {covers} of "
            f"{ranking.n_components} components (valid-only)."
        )
    not_computed = list(board.get("not_computed", []))
    if not_computed:
        lines.append(f"Not computed: {'; '.join(not_computed)}.")
    health = job.judge_health
    if health is not None:
        judges = health.get("judges") or {}
        bad = sorted(
            set(health.get("degenerate") or []) | {k for k, v in judges.items() if v.get("degenerate")}
        )
        lines.append(
            f"Judge health: {len(bad)} of {len(judges)} judges degenerate ({', '.join(bad)})."
            if bad
            else f"Judge health: none of {len(judges)} judges degenerate."
        )
    if job.judgments_path is not None and job.judgments_path.is_file():
        rows = read_ledger(job.judgments_path)
        owed, valid_n = sum(r.owed for r in rows), sum(r.valid for r in rows)
        if owed:
            lines.append(f"Judgments: {valid_n} of {owed} owed are valid ({pct(valid_n / owed, 1)}).")
    return lines


ARTIFACTS: tuple[tuple[str, str], ...] = (
    ("leaderboard.json", "both policies per system and component"),
    ("regression.json", "comparison with the previous run"),
    ("scores.parquet", "the scores table"),
    ("judgments.parquet", "raw judge responses and statuses"),
    ("lineage.json", "dataset, code, model and prompt versions"),
    ("config.resolved.yaml", "the exact configuration"),
    ("mlflow.json", "MLflow run ids"),
)
"""Files a report links to when they sit beside it (run folder or report state folder)."""


def speech_status_lines(metrics_lineages: dict[str, Any]) -> list[str]:
    """One line per system with speech clips that hold no speech, from the metrics stage's lineage.

    Args:
        metrics_lineages: system -> the metrics lineage (its ``speech_status_counts``: status -> clips).

    Example:
        >>> speech_status_lines({"a": {"speech_status_counts": {"ok": 3, "no_speech": 1}}, "b": {}})
        ['a: 1 of 4 speech clips held no speech (noise, music or silence): scored as missing output, i.e. excluded in valid-only and 0 in zero-filled']
    """
    lines = []
    for system in sorted(metrics_lineages):
        counts = dict(metrics_lineages[system].get("speech_status_counts") or {})
        n = int(counts.get("no_speech", 0))
        if n:
            lines.append(
                f"{system}: {n} of {sum(int(v) for v in counts.values())} speech clips held no speech "
                "(noise, music or silence): scored as missing output, i.e. excluded in valid-only and 0 in "
                "zero-filled"
            )
    return lines


def _metrics_lineages(job: ReportJob, systems: list[str]) -> dict[str, Any]:
    """system -> its metrics lineage, for the systems whose metrics stage left one."""
    from omnieval.paths import StatePaths

    found = _system_files(job, systems, StatePaths.metrics_lineage)
    return {system: dict(doc.get("lineage") or {}) for system, doc in found.items()}


def write_report_html(job: ReportJob) -> None:
    """Write one self-contained HTML page that leads with the verdict and the pictures.

    Sections: verdict banner (``job.regression``) with the run's deviation ledger under it
    (``job.deviations``), what moved since the previous run, the leaderboard with bootstrap CIs and
    both policies, per-component bars, the modality bottleneck, the judges' validity ledger and
    health, each analysis as a figure with a one-line reading, what was not computed (and why), and
    links to the raw JSON artifacts.
    """
    from omnieval.reporting import (
        Artifact,
        Section,
        analyses_href,
        analysis_artifacts,
        artifact_links,
        judge_health_block,
        leaderboard_ci,
        trusted,
        usage_block,
        validity_ledger_block,
        verdict_banner,
        what_moved,
        write_run_page,
    )

    path, config, analyses_dir = job.path, job.config, job.analyses_dir
    runs, run_id, board = dict(job.analysis_runs or {}), job.run_id, dict(job.document)
    page_dir = path.parent
    docs = _analyses(analyses_dir)
    bootstrap = docs.get("bootstrap")
    order = _order(board)
    totals = {s: board["systems"][s].get("valid_only", {}).get("total_average") for s in order}
    links_base = analyses_href(analyses_dir, page_dir)

    leaderboard = _render(
        "leaderboard.html.j2",
        chart=trusted(leaderboard_ci(bootstrap, totals, order, scale="Total Average (valid-only, 0-10)")),
        policies=trusted(_leaderboard_html(board)),
        coverage=coverage_lines(board)[0],
    )
    judges = _render(
        "blocks/judges.html.j2",
        ledger=trusted(validity_ledger_block(job.judgments_path)),
        health=trusted(judge_health_block(job.judge_health)),
    )
    missing: dict[str, Any] = board.get("missing_judges", {})
    gaps = _render(
        "gaps.html.j2",
        unavailable=[
            (track, None if judge == "unavailable" else judge, why)
            for track, judges_ in missing.items()
            for judge, why in judges_.items()
        ],
        coverage=trusted(_coverage_html(board)),
        notes=[*board.get("notes", []), *speech_status_lines(_metrics_lineages(job, order))],
    )
    artifacts = [Artifact(name, what) for name, what in ARTIFACTS]
    artifacts += analysis_artifacts(analyses_dir, page_dir)
    sections = [
        Section(
            "verdict",
            "Verdict",
            verdict_banner(
                job.regression, headline=_headline(board, bootstrap, job), deviations=job.deviations
            ),
        ),
        Section("moved", "What moved since the previous run", what_moved(job.regression)),
        Section("leaderboard", "Leaderboard", leaderboard),
        Section(
            "completeness",
            "Completeness and generation",
            completeness_html(board, _generation_labels(job, order)),
        ),
        Section(
            "components",
            "Per component",
            _component_section(board, order)
            if order
            else _render("blocks/paragraph.html.j2", text="No systems."),
        ),
        Section(
            "bottleneck",
            "Modality bottleneck",
            _bottleneck_section(docs.get("bottleneck"), _pngs(analyses_dir, "bottleneck"), order),
        ),
        Section("judges", "Judges: validity and health", judges),
        Section(
            "analyses",
            "Analyses",
            _analysis_cards(docs, analyses_dir, links_base, runs)
            if docs
            else _render("blocks/paragraph.html.j2", text="No analyses were run."),
        ),
        Section("coverage", "Not computed and unavailable", gaps),
        Section("usage", "Tokens, time and cost", usage_block(job.document.get("usage"))),
        Section("artifacts", "Raw artifacts", artifact_links(page_dir, artifacts)),
    ]
    facts = _render(
        "facts.html.j2",
        dataset=config.dataset_name,
        path=config.dataset_path,
        digest=board.get("dataset_digest", ""),
        n_instances=board.get("n_instances", "n/a"),
        n_systems=len(order),
        run_id=run_id,
        experiment=config.experiment,
    )
    benchmark = board.get("benchmark", "")
    write_run_page(path, suite=config.suite, benchmark=benchmark, facts=facts, sections=sections)


def aggregate_table(doc: dict[str, Any]) -> str:
    """``omnieval aggregate`` without ``--json``: every component on its native scale, both totals.

    Totals over different component sets are ranked only within their coverage group.
    """
    from rich.console import Console

    def cells(row: CoverageRank) -> list[str]:
        vo, zf = doc["systems"][row.system]["valid_only"], doc["systems"][row.system]["zero_filled"]
        return [
            *(_num_text(vo[c]) for c in doc["components"]),
            *map(_num_text, (vo["total_average"], zf["total_average"])),
        ]

    columns = [*doc["components"], "total (valid-only)", "total (zero-filled)"]
    table = _ranked_table(
        f"{doc['benchmark']}: {doc['n_instances']} instances", _ranking(doc), columns, cells
    )
    return _console_text(Console(width=200), table, coverage_lines(doc)).rstrip("\n")


def _num_text(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"
