"""Human-readable outputs: the terminal leaderboard and the self-contained report.html."""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from omnieval.analysis._rankings import CoverageRanking
    from omnieval.benchmarks._base import ReportJob

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
    from omnieval.analysis._rankings import leaderboard_ranking

    return leaderboard_ranking(board)


def _order(board: dict[str, Any]) -> list[str]:
    """Systems in leaderboard order: by coverage group, then valid-only Total Average."""
    return [row.system for row in _ranking(board).rows]


def coverage_lines(board: dict[str, Any]) -> list[str]:
    """What a leaderboard prints under its table: coverage, components not computed, missing judges.

    When the systems' totals cover different components the first line is the not-comparable note
    of :func:`omnieval.analysis._rankings.rank_by_coverage` (ranks are then per coverage group).
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
    (:func:`omnieval.analysis._rankings.rank_by_coverage`); the lines under the table say what the
    totals cover, which components were not computed and which configured judges gave no valid record.
    """
    from rich.console import Console
    from rich.table import Table

    ranking = _ranking(board)
    table = Table(title=f"{board.get('benchmark', '')} leaderboard — valid-only / zero-filled (0-10 scale)")
    table.add_column("rank", justify="right")
    table.add_column("system")
    for _key, label, _scale in COMPONENTS:
        table.add_column(label, justify="right")
    table.add_column("covers", justify="right")
    for row in ranking.rows:
        entry = board["systems"][row.system]
        valid, zero = entry.get("valid_only", {}), entry.get("zero_filled", {})
        cells = [f"{_fmt(valid.get(k), s)} / {_fmt(zero.get(k), s)}" for k, _l, s in COMPONENTS]
        covers = f"{len(valid.get('total_average_components', []))}/{ranking.n_components}"
        table.add_row(row.label, row.system, *cells, covers)
    console = Console(width=200, record=True, force_terminal=False)
    with console.capture() as capture:
        console.print(table)
        for line in coverage_lines(board):
            console.print(line, markup=False, highlight=False)
    return capture.get()


def _img_tag(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode()
    return f'<img alt="{html.escape(path.stem)}" src="data:image/png;base64,{data}" style="max-width:720px">'


def write_report_html(job: ReportJob) -> None:
    """Write one self-contained HTML page: leaderboard, completeness, analyses with plots, lineage notes."""
    path, config, analyses_dir = job.path, job.config, job.analyses_dir
    analysis_runs, run_id, leaderboard = job.analysis_runs, job.run_id, dict(job.document)
    rows = []
    for row in _ranking(leaderboard).rows:
        entry = leaderboard["systems"][row.system]
        cells = "".join(
            f"<td>{_fmt(entry['valid_only'].get(k), s)}</td><td class=z>{_fmt(entry['zero_filled'].get(k), s)}</td>"
            for k, _l, s in COMPONENTS
        )
        rows.append(f"<tr><td>{html.escape(row.label)}</td><th>{html.escape(row.system)}</th>{cells}</tr>")
    head = "".join(f"<th colspan=2>{html.escape(label)}</th>" for _k, label, _s in COMPONENTS)
    sub = "<th>valid</th><th class=z>zero</th>" * len(COMPONENTS)
    coverage = "<br>".join(html.escape(line) for line in coverage_lines(leaderboard))
    sections = []
    if analyses_dir.is_dir():
        for json_path in sorted(analyses_dir.glob("*.json")):
            body = json.loads(json_path.read_text())
            text = json.dumps(body, indent=1)
            if len(text) > 6000:
                text = text[:6000] + "\n... (truncated; full JSON in the run's artifacts)"
            link = ""
            if analysis_runs and json_path.stem in analysis_runs:
                link = f" <small>(MLflow run {html.escape(analysis_runs[json_path.stem])})</small>"
            plots = "".join(_img_tag(p) for p in sorted(analyses_dir.glob(f"{json_path.stem}*.png")))
            sections.append(
                f"<details><summary>{html.escape(json_path.stem)}{link}</summary>{plots}"
                f"<pre>{html.escape(text)}</pre></details>"
            )
    doc = f"""<!doctype html><html><head><meta charset="utf-8"><title>omnieval {html.escape(config.suite)}</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;
padding:3px 6px;text-align:right}}.z{{color:#777}}pre{{background:#f6f6f6;padding:1em;overflow:auto}}</style></head>
<body><h1>omnieval — suite {html.escape(config.suite)} ({html.escape(leaderboard.get("benchmark", ""))})</h1>
<p>Dataset {html.escape(config.dataset_name)} at {html.escape(str(config.dataset_path))},
digest <code>{html.escape(str(leaderboard.get("dataset_digest", "")))}</code>.
{f"MLflow run <code>{html.escape(run_id)}</code> (experiment {html.escape(config.experiment)})." if run_id else ""}
Automatic metrics are scaled x10 as in the Total Average. Both aggregation policies side by side:
valid-only (mean over valid records) and zero-filled (missing or invalid records count 0).</p>
<h2>Leaderboard</h2><table><tr><th>rank</th><th></th>{head}</tr><tr><th></th><th></th>{sub}</tr>{"".join(rows)}</table>
<p>{coverage}</p>
<h2>Analyses</h2>{"".join(sections) or "<p>No analyses were run.</p>"}
<h2>Raw data</h2><pre>{html.escape(json.dumps(leaderboard, indent=1)[:20000])}</pre>
</body></html>"""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(doc, encoding="utf-8")
    tmp.replace(path)


def aggregate_table(doc: dict[str, Any]) -> str:
    """``omnieval aggregate`` without ``--json``: every component on its native scale, both totals.

    Totals over different component sets are ranked only within their coverage group.
    """
    from rich.console import Console
    from rich.table import Table

    from omnieval.analysis._rankings import leaderboard_ranking

    ranking = leaderboard_ranking(doc)
    table = Table(title=f"{doc['benchmark']}: {doc['n_instances']} instances")
    table.add_column("rank", justify="right")
    table.add_column("system")
    for c in doc["components"]:
        table.add_column(c, justify="right")
    table.add_column("total (valid-only)", justify="right")
    table.add_column("total (zero-filled)", justify="right")
    table.add_column("covers", justify="right")
    for row in ranking.rows:
        entry = doc["systems"][row.system]
        vo, zf = entry["valid_only"], entry["zero_filled"]
        table.add_row(
            row.label,
            row.system,
            *(_num_text(vo[c]) for c in doc["components"]),
            _num_text(vo["total_average"]),
            _num_text(zf["total_average"]),
            f"{len(vo['total_average_components'])}/{ranking.n_components}",
        )
    console = Console(width=200)
    with console.capture() as capture:
        console.print(table)
        for line in coverage_lines(doc):
            console.print(line, markup=False, highlight=False)
    return capture.get().rstrip("\n")


def _num_text(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"
