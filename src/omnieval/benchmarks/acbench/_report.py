"""The OmniACBench ``report.html``: the section 7 leaderboard per system x condition, the paper's
reference row and random baselines, the decomposition's failure attribution, and the deviations."""

from __future__ import annotations

import html
import json
from collections.abc import Collection
from typing import TYPE_CHECKING

from omnieval.benchmarks.acbench._aggregate import failure_attribution, report_html_section

if TYPE_CHECKING:
    from omnieval.benchmarks._base import ReportJob
    from omnieval.config import SuiteConfig

INPUTS_SEEN: dict[str, tuple[str, ...]] = {"oracle-control": (), "neutral": ()}
"""Inputs the reference systems read: neither listens to the instruction nor looks at the image
(``oracle-control`` reads the target itself, ``neutral`` ignores the context), so the channel
comparisons of the decomposition say nothing about them."""


def inputs_seen(config: SuiteConfig) -> dict[str, Collection[str]]:
    """System id -> inputs it receives, for the systems whose kind is known."""
    return {sid: INPUTS_SEEN[spec.kind] for sid, spec in config.systems.items() if spec.kind in INPUTS_SEEN}


def write_acbench_report(job: ReportJob, *, deviations: list[str]) -> None:
    """Write one self-contained HTML page (atomically)."""
    path, config, document, run_id = job.path, job.config, job.document, job.run_id
    attribution = failure_attribution(document, inputs_seen=inputs_seen(config))
    section = report_html_section(document, attribution=attribution, heading_level=2)
    notes = "".join(f"<li>{html.escape(d)}</li>" for d in deviations)
    raw = html.escape(json.dumps(dict(document), indent=1)[:20000])
    run = (
        f"MLflow run <code>{html.escape(run_id)}</code> (experiment {html.escape(config.experiment)})."
        if run_id
        else ""
    )
    doc = f"""<!doctype html><html><head><meta charset="utf-8"><title>omnieval {html.escape(config.suite)}</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;
padding:3px 6px;text-align:right}}pre{{background:#f6f6f6;padding:1em;overflow:auto}}</style></head>
<body><h1>omnieval — suite {html.escape(config.suite)} (acbench)</h1>
<p>Dataset {html.escape(config.dataset_name)} at {html.escape(str(config.dataset_path))}, digest
<code>{html.escape(str(document.get("dataset_digest", "")))}</code>. {run}
Input conditions: {html.escape(", ".join(config.run_conditions))}. Values in percent except delta-WPM
(words per minute); valid rows only; a metric that could not be computed is shown as "-" and listed
as not computed.</p>
{section}
<h2>Deviations from the paper's protocol</h2><ul>{notes}</ul>
<h2>Raw data</h2><pre>{raw}</pre>
</body></html>"""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(doc, encoding="utf-8")
    tmp.replace(path)
