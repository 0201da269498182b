"""The PRISM-Bench ``report.html`` and its radar chart.

One self-contained page (PNG images inline): the leaderboard per subset (systems x dimension totals +
final, by final), the radar of calibrated cells (the paper's Figure 1: one spoke per (dimension,
audio type), one panel per subset), the judge-stability tables (appendix A), the judge ablation
(appendix B) and human preference agreement when the analyses produced them, the blind-order swap
check, what could not be judged and why; the run's deviations from the paper's protocol sit under
the verdict.

The markup of each section is a Jinja2 template in this package's ``templates/`` folder (rendered
with the shared report environment: autoescaping on); the functions here pick the numbers.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omnieval.benchmarks.prism._aggregate import (
    DIMENSION_LABELS,
    GT_LABEL,
    SUBSET_LABELS,
    board_rows,
    ranked_systems,
    subsets_of,
)
from omnieval.benchmarks.prism._tags import AUDIO_TYPES, DIMENSIONS

if TYPE_CHECKING:
    from omnieval.benchmarks._base import ReportJob

_TEMPLATES = "omnieval.benchmarks.prism"
"""The package whose ``templates/`` folder holds this page's section templates."""


def _render(name: str, /, **context: Any) -> str:
    """Render one of this page's section templates (trusted HTML values wrapped with ``trusted``)."""
    from omnieval.reporting import render

    return render(name, package=_TEMPLATES, **context)


def _spokes(document: Mapping[str, Any], subset: str) -> list[tuple[str, str]]:
    """(dimension, audio type) pairs present in ``subset``, in the paper's order."""
    found: set[tuple[str, str]] = set()
    entries = [e["subsets"][subset] for e in document["systems"].values() if subset in e["subsets"]]
    gt = document.get("ground_truth", {}).get("subsets", {}).get(subset)
    for entry in [*entries, *([gt] if gt else [])]:
        for dim, cells in entry["cells"].items():
            found |= {(dim, t) for t in cells}
    return [(d, t) for d in DIMENSIONS for t in AUDIO_TYPES if (d, t) in found]


def radar_bytes(document: Mapping[str, Any]) -> bytes:
    """The radar chart as PNG bytes: one polar panel per subset, one closed line per system (and
    the ground-truth reference dashed), radius = calibrated cell (0-10; a null cell is a gap)."""
    import numpy as np

    from omnieval.reporting import plot

    subsets = subsets_of(document)
    n = max(1, len(subsets))
    systems = sorted(document["systems"])
    with plot(size=(5.2 * n, 5.6)) as canvas:
        fig = canvas.fig
        for ax in canvas.axes[0]:
            ax.remove()
        colours = _colours(len(systems))
        for k, subset in enumerate(subsets):
            ax = fig.add_subplot(1, n, k + 1, projection="polar")
            spokes = _spokes(document, subset)
            angles = np.linspace(0.0, 2.0 * np.pi, len(spokes), endpoint=False)
            closed = np.concatenate([angles, angles[:1]])
            top = 10.0
            rows: list[tuple[str, Mapping[str, Any], dict[str, Any]]] = []
            gt = document.get("ground_truth", {}).get("subsets", {}).get(subset)
            if gt is not None:
                rows.append((GT_LABEL, gt, {"color": "black", "linestyle": "--", "linewidth": 1.2}))
            for s, colour in zip(systems, colours, strict=True):
                entry = document["systems"][s]["subsets"].get(subset)
                if entry is not None:
                    rows.append((s, entry, {"color": colour, "linewidth": 1.4}))
            for label, entry, style in rows:
                values = [entry["cells"].get(d, {}).get(t) for d, t in spokes]
                radii = np.array([np.nan if v is None else float(v) for v in values] + [np.nan])
                radii[-1] = radii[0]
                top = max(top, float(np.nanmax(radii)) if np.isfinite(radii).any() else top)
                ax.plot(closed, radii, label=label, **style)
                if label != GT_LABEL:
                    ax.fill(closed, np.nan_to_num(radii), alpha=0.04, color=style["color"])
            ax.set_xticks(angles, [f"{DIMENSION_LABELS[d]}\n{t}" for d, t in spokes], fontsize=7)
            ax.set_ylim(0.0, math.ceil(top))
            ax.tick_params(axis="y", labelsize=6)
            ax.set_title(SUBSET_LABELS.get(subset, subset), fontsize=11, pad=14)
            if k == n - 1:
                ax.legend(loc="upper left", bbox_to_anchor=(1.05, 1.05), fontsize=7)
    return canvas.png


def _colours(k: int) -> list[Any]:
    import matplotlib

    cmap = matplotlib.colormaps["tab10" if k <= 10 else "tab20"]
    return [cmap(i % cmap.N) for i in range(k)]


def radar_png(document: Mapping[str, Any], out_path: Path) -> Path:
    """Write the radar chart (:func:`radar_bytes`) to ``out_path`` atomically and return the path
    (for logging as an MLflow artifact)."""
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_name(out_path.stem + ".tmp.png")
    tmp.write_bytes(radar_bytes(document))
    tmp.replace(out_path)
    return out_path


# -- sections ---------------------------------------------------------------------------------------


def leaderboard_html(document: Mapping[str, Any]) -> str:
    """One table per subset: systems by final, the dimension totals and final, cells on hover rows."""
    from markupsafe import Markup

    from omnieval.reporting import fmt, table, trusted

    parts: list[tuple[str, Markup]] = []
    for subset in subsets_of(document):
        spokes = _spokes(document, subset)
        dims = [d for d in DIMENSIONS if any(sd == d for sd, _ in spokes)]
        head: list[str] = ["system"]
        for d in dims:
            head += [str(Markup("{} {}").format(DIMENSION_LABELS[d], t)) for sd, t in spokes if sd == d]
            head.append(str(Markup("<b>{} total</b>").format(DIMENSION_LABELS[d])))
        head.append("<b>Final</b>")
        rows: list[list[str]] = []
        for name, entry, mark in board_rows(document, subset):
            label = "<i>{}</i>" if name == GT_LABEL else "{} <small>[diagnostic]</small>" if mark else "{}"
            row = [str(Markup(label).format(name))]
            for d in dims:
                row += [fmt(entry["cells"].get(d, {}).get(t)) for sd, t in spokes if sd == d]
                row.append(str(Markup("<b>{}</b>").format(fmt(entry["dimensions"].get(d)))))
            row.append(str(Markup("<b>{}</b>").format(fmt(entry["final"]))))
            rows.append(row)
        parts.append((SUBSET_LABELS.get(subset, subset), trusted(table(head, rows))))
    return _render("leaderboard.html.j2", subsets=parts)


def _stats_row(label: str, block: Mapping[str, Any] | None) -> list[str]:
    from omnieval.reporting import esc, fmt

    block = block or {}  # cells are numbers; only the label needs escaping
    return [
        esc(label),
        *(fmt(block.get(k), 3) for k in ("std", "d_bias", "d_signal")),
        fmt(block.get("snr")),
    ]


STATS_HEAD = ["", "Std", "d<sub>bias</sub>", "d<sub>signal</sub>", "SNR"]


def stability_html(doc: Mapping[str, Any]) -> str:
    """The subset table (Table 2), the per-dimension table (Table 3 by dimension) and the pairs."""
    from omnieval.reporting import esc, fmt, table, trusted

    if doc.get("not_computed"):
        return _list([], f"Not computed: {doc['not_computed']}.")
    subsets = [s for s in doc.get("subsets", {})]
    by_subset = table(STATS_HEAD, [_stats_row(SUBSET_LABELS.get(s, s), doc["subsets"][s]) for s in subsets])
    rows: list[list[str]] = []
    for s in subsets:
        for dim, block in doc.get("dimensions", {}).get(s, {}).items():
            rows.append(_stats_row(f"{SUBSET_LABELS.get(s, s)} / {DIMENSION_LABELS.get(dim, dim)}", block))
            for atype, cell in doc.get("cells", {}).get(s, {}).get(dim, {}).items():
                rows.append(_stats_row(f"    {atype}", cell))
    pair_rows = [
        [
            esc(SUBSET_LABELS.get(p["subset"], p["subset"])),
            esc(p["system_a"]),
            esc(p["system_b"]),
            fmt(p.get("d_bias"), 3),
            fmt(p.get("d_signal"), 3),
            fmt(p.get("snr")),
        ]
        for p in doc.get("pairs", [])
    ]
    pairs = table(
        ["subset", "system a", "system b", "d<sub>bias</sub>", "d<sub>signal</sub>", "SNR"], pair_rows, left=3
    )
    return _render(
        "stability.html.j2",
        subsets=trusted(by_subset),
        dimensions=trusted(table(STATS_HEAD, rows)),
        pairs=trusted(pairs),
    )


def ablation_html(doc: Mapping[str, Any]) -> str:
    """Subset figures per judge panel and judge, side by side (appendix B)."""
    from omnieval.reporting import table

    if doc.get("not_computed"):
        return _list([], f"Not computed: {doc['not_computed']}.")
    rows: list[list[str]] = []
    for entry in doc.get("judges", []):
        who = entry["panel"] + ("" if entry.get("judge") is None else f" / {entry['judge']}")
        if entry.get("judge") is None and entry.get("n_judges", 1) > 1:
            who += f" (mean of {entry['n_judges']} judges)"
        for subset, block in entry.get("subsets", {}).items():
            rows.append(_stats_row(f"{who} — {SUBSET_LABELS.get(subset, subset)}", block))
    return table(["judge — subset", *STATS_HEAD[1:]], rows)


def _agreement_rows(block: Mapping[str, Any], grouping: str) -> list[list[str]]:
    from omnieval.reporting import esc, pct

    def row(label: str, a: Mapping[str, Any]) -> list[str]:
        return [
            esc(label),
            str(a.get("n", 0)),
            pct(a.get("rate"), 1),
            str(a.get("n_untied", 0)),
            pct(a.get("rate_untied"), 1),
        ]

    rows = [row("overall", block["overall"])]
    for key in ("by_subset", "by_dimension", grouping):
        for name, a in block.get(key, {}).items():
            rows.append(row(f"{key[3:]}: {SUBSET_LABELS.get(name, DIMENSION_LABELS.get(name, name))}", a))
    return rows


def human_html(doc: Mapping[str, Any]) -> str:
    """Preference-direction agreement tables: GT-vs-model and model-vs-model, per cell and total."""
    from omnieval.reporting import table, trusted

    head = ["", "comparisons", "agreement", "untied", "agreement (untied)"]
    tables = []
    for kind, grouping, title in (
        ("gt_vs_model", "by_system", "Ground truth vs model"),
        ("model_vs_model", "by_pair", "Model vs model"),
    ):
        for level in ("cells", "totals"):
            block = doc.get(kind, {}).get(level)
            if block:
                per = "cell" if level == "cells" else "item total"
                tables.append((f"{title}, per {per}", trusted(table(head, _agreement_rows(block, grouping)))))
    return _render(
        "human.html.j2",
        mean=doc.get("mean_dimension_agreement"),
        tie_rule=doc.get("tie_rule", ""),
        rater_rule=doc.get("rater_rule", ""),
        tables=tables,
    )


def swap_html(swap: Mapping[str, Any]) -> str:
    """The blind-order swap check: the flip rate of each stage first, then every figure it reports.

    ``swap`` is the judge's summary (``{"stage_1": {"flip_rate", ...}, "stage_2": {...}}``, possibly
    with a ``panel`` key) or a flat mapping with a top-level ``flip_rate``.
    """
    from omnieval.reporting import esc, fmt, table, trusted

    def finite(value: Any) -> bool:
        return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(float(value))

    stages = {k: v for k, v in swap.items() if isinstance(v, Mapping)}
    rates: dict[str, Any] = {k: v.get("flip_rate") for k, v in stages.items()}
    if "flip_rate" in swap:
        rates["all"] = swap["flip_rate"]
    shown = [(k.replace("_", " "), f"{100 * float(r):.1f}%") for k, r in rates.items() if finite(r)]
    rows = []
    for key, value in swap.items():
        if key == "flip_rate":
            continue
        figures = value.items() if isinstance(value, Mapping) else [("", value)]
        for name, figure in figures:
            label = f"{key}.{name}" if name else key
            text = fmt(figure, 4) if finite(figure) else json.dumps(figure, default=str)[:200]
            rows.append([esc(label), esc(text)])
    return _render(
        "swap.html.j2", rates=shown, table=trusted(table(["figure", "value"], rows) if rows else "")
    )


def _list(items: Sequence[str], empty: str) -> str:
    return _render("blocks/items.html.j2", items=list(items), empty=empty)


def _analysis(analyses_dir: Path, name: str) -> tuple[dict[str, Any] | None, str | None]:
    """(the analysis document ``<name>.json``, None when absent, unreadable or skipped; the reason
    it was skipped, None when it was not)."""
    path = analyses_dir / f"{name}.json"
    try:
        doc = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    except (OSError, ValueError):
        return None, None
    if not isinstance(doc, dict):
        return None, None
    return (None, doc.get("reason")) if doc.get("status") == "skipped" else (doc, None)


def _headline(document: Mapping[str, Any], stability: Mapping[str, Any] | None) -> list[str]:
    from omnieval.reporting import fmt

    lines = []
    for subset in subsets_of(document):
        ranked = ranked_systems(document, subset)
        if ranked:
            top = document["systems"][ranked[0]]["subsets"][subset]
            gt = document.get("ground_truth", {}).get("subsets", {}).get(subset, {})
            lines.append(
                f"{SUBSET_LABELS.get(subset, subset)}: {ranked[0]} leads with Final {fmt(top['final'])} "
                f"(ground-truth reference {fmt(gt.get('final'))})."
            )
    if stability:
        for subset, block in stability.get("subsets", {}).items():
            lines.append(
                f"{SUBSET_LABELS.get(subset, subset)} stability: d_bias {fmt(block.get('d_bias'), 3)} vs "
                f"d_signal {fmt(block.get('d_signal'), 3)}."
            )
    return lines


def unavailable_judging(judge_lineage: Mapping[str, Any]) -> list[str]:
    """``<panel>: <reason>`` for each thing a panel could not judge here (the judge stage's
    ``lineage.json`` ``panels.<name>.unavailable``: a list, or one ``; ``-joined string).

    >>> unavailable_judging({"panels": {"omni": {"unavailable": "av: needs an omni model"}, "cpu": {"unavailable": []}}})
    ['omni: av: needs an omni model']
    """
    found: list[str] = []
    panels = judge_lineage.get("panels")
    for name, panel in (panels if isinstance(panels, Mapping) else {}).items():
        entries = panel.get("unavailable") if isinstance(panel, Mapping) else None
        if isinstance(entries, str):
            entries = entries.split("; ")
        found += [f"{name}: {entry}" for entry in entries or [] if str(entry).strip()]
    return found


def write_prism_report(
    job: ReportJob,
    *,
    stability: Mapping[str, Any] | None,
    swap: Mapping[str, Any] | None,
    unavailable: list[str],
) -> Path:
    """Write the self-contained ``report.html`` (atomically) and the radar PNG beside it.

    Args:
        job: Where to write and the aggregate document (:func:`aggregate_prism` + run facts).
        stability: The :func:`stability` document; default ``stability.json`` of ``job.analyses_dir``.
        swap: The blind-order swap check (its ``flip_rate`` and any other figures), or None.
        unavailable: What could not be judged here, with the reason (one sentence each).

    Returns:
        The radar PNG's path (``<report stem>_radar.png`` beside the page), for MLflow.
    """
    from omnieval.reporting import (
        Artifact,
        Section,
        analysis_artifacts,
        artifact_links,
        figure,
        generation_block,
        judge_health_block,
        trusted,
        usage_block,
        validity_ledger_block,
        verdict_banner,
        write_run_page,
    )

    path, config, document = job.path, job.config, dict(job.document)
    analyses_dir, page_dir = job.analyses_dir, job.path.parent
    stability_file, stability_skipped = _analysis(analyses_dir, "stability")
    stability_doc = stability if stability is not None else stability_file
    ablation, _ = _analysis(analyses_dir, "judge_ablation")
    human, _ = _analysis(analyses_dir, "human_preference")

    radar_path = radar_png(document, page_dir / f"{path.stem}_radar.png")
    has_systems = bool(document.get("systems"))
    radar = (
        figure(
            radar_path.read_bytes(),
            "Each spoke is one (dimension, audio type) cell, GT-calibrated on the 0-10 scale; farther out is "
            "better, and the dashed line is the ground-truth reference.",
            alt="radar of calibrated cells per system and subset",
            title="Calibrated cells per system (cf. the paper's Figure 1)",
        )
        if has_systems
        else leaderboard_html(document)  # the same "no systems" sentence
    )
    not_computed = list(document.get("not_computed", []))
    gaps = _render(
        "coverage.html.j2",
        unavailable=trusted(_list(unavailable, "Every configured judge ran.")),
        not_computed=trusted(_list(not_computed, "Every active cell was computed.")),
    )
    sections = [
        Section(
            "verdict",
            "Verdict",
            verdict_banner(
                job.regression, headline=_headline(document, stability_doc), deviations=job.deviations
            ),
        ),
        Section("leaderboard", "Leaderboard", leaderboard_html(document)),
        Section("radar", "Radar", radar),
        Section(
            "stability",
            "Judge stability",
            stability_html(stability_doc)
            if stability_doc
            else _list(
                [],
                f"Not computed: {stability_skipped or 'no stability analysis ran'}.",
            ),
        ),
    ]
    if ablation:
        sections.append(Section("ablation", "Judge ablation", ablation_html(ablation)))
    if human:
        sections.append(Section("human", "Human preference agreement", human_html(human)))
    if swap:
        sections.append(Section("swap", "Blind-order swap check", swap_html(swap)))
    if any("generation" in entry for entry in (document.get("systems") or {}).values()):
        sections.append(Section("generation", "Generation", generation_block(document["systems"])))
    sections.append(Section("coverage", "What was not judged", gaps))
    if job.judgments_path is not None or job.judge_health is not None:
        sections.append(
            Section(
                "judges",
                "Judges",
                _render(
                    "blocks/judges.html.j2",
                    ledger=trusted(validity_ledger_block(job.judgments_path)),
                    health=trusted(judge_health_block(job.judge_health)),
                ),
            )
        )
    artifacts = [
        Artifact("leaderboard.json", "calibrated cells, totals and final per system and subset"),
        Artifact("scores.parquet", "the scores table"),
        Artifact("judgments.parquet", "raw judge responses and statuses"),
        Artifact(radar_path.name, "the radar chart"),
    ]
    artifacts += analysis_artifacts(analyses_dir, page_dir)
    sections.append(Section("usage", "Tokens, time and cost", usage_block(job.document.get("usage"))))
    sections.append(Section("artifacts", "Raw data", artifact_links(page_dir, artifacts)))
    facts = _render(
        "facts.html.j2",
        dataset=config.dataset_name,
        path=config.dataset_path,
        digest=document.get("dataset_digest", ""),
        judges=", ".join(document.get("judges", [])) or "none",
        run_id=job.run_id,
        experiment=config.experiment,
    )
    write_run_page(
        path, suite=config.suite, benchmark="PRISM-Bench", facts=facts, sections=sections, footer=""
    )
    return radar_path
