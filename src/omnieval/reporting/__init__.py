"""Building blocks of the human-readable ``report.html`` every benchmark writes.

A page leads with the verdict (``regression.json``) and the pictures a person looks for: the
leaderboard with bootstrap CIs, per-component bars, what moved since the previous run, the judges'
validity ledger and health; each analysis is one figure with a one-line reading generated from its
numbers, and the raw JSON is linked, never dumped into the page.

The markup is Jinja2 templates (``templates/`` here, and a benchmark's own ``templates/`` for its
sections, rendered with :func:`render`); values are autoescaped, and HTML already built is passed
in with :func:`trusted`.
"""

from omnieval.reporting._blocks import (
    Artifact,
    Delta,
    analyses_href,
    analysis_artifacts,
    artifact_links,
    baseline_href,
    bootstrap_reading,
    delta_reading,
    deviations_block,
    fmt,
    generation_block,
    judge_health_block,
    known_set_block,
    leaderboard_ci,
    ledger_reading,
    pct,
    regression_deltas,
    validity_ledger_block,
    verdict_banner,
    what_moved,
)
from omnieval.reporting._compared import COMPARED_ROUTE, changed_modalities, changed_outputs, output_digests
from omnieval.reporting._figures import (
    Interval,
    Panel,
    ci_chart,
    delta_chart,
    figure,
    histograms,
    panel_bars,
    plot,
    stacked_bars,
)
from omnieval.reporting._instances import (
    DATASET_ROUTE,
    INSTANCES_PAGE,
    InstanceInputs,
    InstancesSource,
    build_instances_page,
    instances_href,
    write_instances_page,
)
from omnieval.reporting._ledger import LEDGER_STATUSES, LedgerRow, read_ledger, validity_ledger
from omnieval.reporting._page import RUN_FOOTER, Section, esc, render_page, table, write_page, write_run_page
from omnieval.reporting._readings import analysis_reading, analysis_summary
from omnieval.reporting._templates import render, trusted
from omnieval.reporting._usage import usage_block

__all__ = [
    "COMPARED_ROUTE",
    "DATASET_ROUTE",
    "INSTANCES_PAGE",
    "LEDGER_STATUSES",
    "RUN_FOOTER",
    "Artifact",
    "Delta",
    "InstanceInputs",
    "InstancesSource",
    "Interval",
    "LedgerRow",
    "Panel",
    "Section",
    "analyses_href",
    "analysis_artifacts",
    "analysis_reading",
    "analysis_summary",
    "artifact_links",
    "baseline_href",
    "bootstrap_reading",
    "build_instances_page",
    "changed_modalities",
    "changed_outputs",
    "ci_chart",
    "delta_chart",
    "delta_reading",
    "deviations_block",
    "esc",
    "figure",
    "fmt",
    "generation_block",
    "histograms",
    "instances_href",
    "judge_health_block",
    "known_set_block",
    "leaderboard_ci",
    "ledger_reading",
    "output_digests",
    "panel_bars",
    "pct",
    "plot",
    "read_ledger",
    "regression_deltas",
    "render",
    "render_page",
    "stacked_bars",
    "table",
    "trusted",
    "usage_block",
    "validity_ledger",
    "validity_ledger_block",
    "verdict_banner",
    "what_moved",
    "write_instances_page",
    "write_page",
    "write_run_page",
]
