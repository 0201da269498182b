"""Human-readable outputs: the terminal leaderboard and the self-contained report.html."""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from omnieval.config import SuiteConfig
    from omnieval.stages._common import StatePaths

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


def _order(board: dict[str, Any]) -> list[str]:
    systems: dict[str, Any] = board.get("systems", {})

    def key(name: str) -> float:
        value = systems[name].get("valid_only", {}).get("total_average")
        return -float(value) if value is not None else float("inf")

    return sorted(systems, key=key)


def leaderboard_table(board: dict[str, Any]) -> str:
    """Render both policies side by side (valid-only / zero-filled); automatic metrics x10 as in the total."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{board.get('benchmark', '')} leaderboard — valid-only / zero-filled (0-10 scale)")
    table.add_column("system")
    for _key, label, _scale in COMPONENTS:
        table.add_column(label, justify="right")
    covered: list[str] = []
    for name in _order(board):
        entry = board["systems"][name]
        valid, zero = entry.get("valid_only", {}), entry.get("zero_filled", {})
        covered = list(valid.get("total_average_components", covered))
        cells = [f"{_fmt(valid.get(k), s)} / {_fmt(zero.get(k), s)}" for k, _l, s in COMPONENTS]
        table.add_row(name, *cells)
    console = Console(width=180, record=True, force_terminal=False)
    with console.capture() as capture:
        console.print(table)
        console.print(
            f"Total Average covers: {', '.join(covered) or 'nothing'}"
            + ("" if len(covered) == 7 else f"  ({7 - len(covered)} of 7 components not computable here)")
        )
    return capture.get()


def _img_tag(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode()
    return f'<img alt="{html.escape(path.stem)}" src="data:image/png;base64,{data}" style="max-width:720px">'


def write_report_html(
    path: Path,
    *,
    config: SuiteConfig,
    leaderboard: dict[str, Any],
    analyses_dir: Path,
    state: StatePaths,
    analysis_runs: dict[str, str] | None = None,
    run_id: str | None = None,
) -> None:
    """Write one self-contained HTML page: leaderboard, completeness, analyses with plots, lineage notes."""
    rows = []
    for name in _order(leaderboard):
        entry = leaderboard["systems"][name]
        cells = "".join(
            f"<td>{_fmt(entry['valid_only'].get(k), s)}</td><td class=z>{_fmt(entry['zero_filled'].get(k), s)}</td>"
            for k, _l, s in COMPONENTS
        )
        rows.append(f"<tr><th>{html.escape(name)}</th>{cells}</tr>")
    head = "".join(f"<th colspan=2>{html.escape(label)}</th>" for _k, label, _s in COMPONENTS)
    sub = "<th>valid</th><th class=z>zero</th>" * len(COMPONENTS)
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
<p>Dataset {html.escape(config.dataset.name)} at {html.escape(str(config.dataset.path))},
digest <code>{html.escape(str(leaderboard.get("dataset_digest", "")))}</code>.
{f"MLflow run <code>{html.escape(run_id)}</code> (experiment {html.escape(config.experiment)})." if run_id else ""}
Automatic metrics are scaled x10 as in the Total Average. Both aggregation policies side by side:
valid-only (mean over valid records) and zero-filled (missing or invalid records count 0).</p>
<h2>Leaderboard</h2><table><tr><th></th>{head}</tr><tr><th></th>{sub}</tr>{"".join(rows)}</table>
<h2>Analyses</h2>{"".join(sections) or "<p>No analyses were run.</p>"}
<h2>Raw data</h2><pre>{html.escape(json.dumps(leaderboard, indent=1)[:20000])}</pre>
</body></html>"""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(doc, encoding="utf-8")
    tmp.replace(path)
