"""The OmniACBench ``report.html``: the section 7 leaderboard per system x condition, the paper's
reference row and random baselines, the decomposition's failure attribution, and the deviations.

The page's own pieces are Jinja2 templates in this package's ``templates/`` folder, rendered with
the shared report environment (autoescaping on)."""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from omnieval.benchmarks.acbench._aggregate import failure_attribution, report_html_section

if TYPE_CHECKING:
    from omnieval.benchmarks._base import ReportJob, ReportSuite

INPUTS_SEEN: dict[str, tuple[str, ...]] = {"oracle-control": (), "neutral": ()}
"""Inputs the reference systems read: neither listens to the instruction nor looks at the image
(``oracle-control`` reads the target itself, ``neutral`` ignores the context), so the channel
comparisons of the decomposition say nothing about them."""


#: A generating system's per-example input names (``raw/<index>/generated_raw.json``'s
#: ``inputs_seen``) -> the decomposition's input names.
_SEEN_AS: dict[str, str] = {
    "instruction_audio": "speech",
    "instruction_text": "instruction_text",
    "image": "image",
    "image_keywords": "image_keywords",
    "target_statement": "target_statement",
}


def system_inputs(config: ReportSuite) -> tuple[dict[str, Collection[str]], dict[str, dict[str, str]]]:
    """What each system read, for the failure attribution: ``(seen, not_seen)``.

    ``seen``: system id -> inputs it read: the reference kinds' fixed sets, and for generating
    systems the inputs their examples actually took in (the ``inputs`` facts of
    ``candidates/<id>.summary.json``, counted from each example's raw file). ``not_seen``: system id
    -> input -> why its examples could not take it in (e.g. ``image not seen: no vision backend``),
    from the same facts.
    """
    from omnieval.jsonio import read_json
    from omnieval.paths import StatePaths

    paths = StatePaths(config.state)
    seen: dict[str, Collection[str]] = {
        sid: INPUTS_SEEN[spec.kind] for sid, spec in config.systems.items() if spec.kind in INPUTS_SEEN
    }
    not_seen: dict[str, dict[str, str]] = {}
    for sid in config.systems:
        path = paths.summary(sid)
        if not path.is_file():
            continue
        summary = read_json(path)
        parts = (summary.get("conditions") or {"": summary}).values()
        # the per-condition ``inputs`` facts of its generation summary (when it has them)
        facts = [
            p["lineage"]["inputs"] for p in parts if isinstance(p, dict) and "inputs" in p.get("lineage", {})
        ]
        if not facts:
            continue
        names = {name for part in facts for name, n in part.get("seen", {}).items() if n}
        seen[sid] = sorted(_SEEN_AS[n] for n in names if n in _SEEN_AS)
        for part in facts:
            for name, reasons in part.get("not_seen", {}).items():
                if name in _SEEN_AS and reasons:
                    not_seen.setdefault(sid, {})[_SEEN_AS[name]] = "; ".join(sorted(reasons))
    return seen, not_seen


def write_acbench_report(job: ReportJob) -> None:
    """Write one self-contained HTML page (atomically).

    Sections: the verdict banner with the run's deviation ledger under it (``job.deviations``) and
    what moved since the previous run (when the run folder has a ``regression.json``), the section 7
    table with the paper's reference rows, the failure attribution and the charts, and links to the
    raw JSON (never dumped in the page).
    """
    from omnieval.reporting import (
        Artifact,
        Section,
        analysis_artifacts,
        artifact_links,
        generation_block,
        render,
        trusted,
        usage_block,
        verdict_banner,
        what_moved,
        write_run_page,
    )

    path, config, document, run_id = job.path, job.config, job.document, job.run_id
    seen, not_seen = system_inputs(config)
    attribution = failure_attribution(document, inputs_seen=seen, inputs_not_seen=not_seen)
    section = report_html_section(document, attribution=attribution, heading_level=3)
    package = "omnieval.benchmarks.acbench"
    facts = render(
        "facts.html.j2",
        package=package,
        dataset=config.dataset_name,
        path=config.dataset_path,
        digest=document.get("dataset_digest", ""),
        run_id=run_id,
        experiment=config.experiment,
    )
    systems = list(document.get("systems", {}))
    headline = [
        f"{len(systems)} systems ({', '.join(systems)}) under {len(config.run_conditions)} input conditions "
        f"({', '.join(config.run_conditions)})."
    ]
    leaderboard = render(
        "leaderboard.html.j2",
        package=package,
        conditions=", ".join(config.run_conditions),
        section=trusted(section),
    )
    artifacts = [
        Artifact("leaderboard.json", "per system and condition (FORMATS.md section 7)"),
        Artifact("regression.json", "comparison with the previous run"),
        Artifact("scores.parquet", "the scores table"),
        Artifact("lineage.json", "dataset, code and model versions, deviations"),
        Artifact("config.resolved.yaml", "the exact configuration"),
        Artifact("mlflow.json", "MLflow run ids"),
        *analysis_artifacts(job.analyses_dir, path.parent),
    ]
    sections = [
        Section(
            "verdict", "Verdict", verdict_banner(job.regression, headline=headline, deviations=job.deviations)
        ),
        Section("moved", "What moved since the previous run", what_moved(job.regression)),
        Section("leaderboard", "Leaderboard and failure attribution", leaderboard),
        Section("generation", "Generation", generation_block(document.get("systems") or {})),
        Section("usage", "Tokens, time and cost", usage_block(job.document.get("usage"))),
        Section("artifacts", "Raw artifacts", artifact_links(path.parent, artifacts)),
    ]
    write_run_page(path, suite=config.suite, benchmark="acbench", facts=facts, sections=sections)
