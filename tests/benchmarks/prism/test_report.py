"""The PRISM-Bench report page and radar chart."""

from __future__ import annotations

import base64
import io
import json
import re
from pathlib import Path
from types import SimpleNamespace

from PIL import Image

from benchmarks.prism._tables import make_prism_scores
from omnieval.analysis._runner import write_json
from omnieval.benchmarks import Deviation, ReportJob
from omnieval.benchmarks.prism._aggregate import aggregate_prism
from omnieval.benchmarks.prism._report import radar_png, write_prism_report
from omnieval.benchmarks.prism._stability import judge_ablation, stability


def _config() -> SimpleNamespace:
    return SimpleNamespace(
        suite="prism-nightly",
        dataset_name="prism-sample",
        dataset_path=Path("data/prism-sample"),
        experiment="omnieval/prism-nightly",
    )


def test_radar_png_has_one_panel_per_subset(tmp_path: Path) -> None:
    doc = aggregate_prism(make_prism_scores(seed=1, items_per_subset=4))
    path = radar_png(doc, tmp_path / "radar.png")
    with Image.open(path) as image:
        width, height = image.size
    assert path.is_file() and width > 2.5 * height  # three polar panels side by side
    single = aggregate_prism(make_prism_scores(seed=1, items_per_subset=4, subsets=("mixed",)))
    with Image.open(radar_png(single, tmp_path / "one.png")) as image:
        assert image.size[0] < 1.5 * image.size[1]


def test_report_page(tmp_path: Path) -> None:
    table = make_prism_scores(
        seed=2, items_per_subset=5, judges=(("gemini", "pro"), ("cascade", "cpu")), invalid_rate=0.05
    )
    doc = {"suite": "prism-nightly", "dataset_digest": "abc123", **aggregate_prism(table)}
    analyses = tmp_path / "analyses"
    write_json(
        analyses / "judge_ablation.json",
        {"analysis": "judge_ablation", "status": "ok", **judge_ablation(table)},
    )
    page = tmp_path / "report.html"
    cascade = Deviation(
        "judge-substitute-cpu", "Judged by a CPU cascade, not the paper's judge <Gemini>.", "Smoke test."
    )
    job = ReportJob(page, _config(), doc, analyses, run_id="run42", deviations=[cascade])  # type: ignore[arg-type]
    radar = write_prism_report(
        job,
        stability=stability(table),
        swap={"flip_rate": 0.125, "pairs_checked": 16},
        unavailable=["av_coherence: unavailable: needs an omni model"],
    )
    assert radar == tmp_path / "report_radar.png" and radar.is_file()
    html = page.read_text(encoding="utf-8")
    for anchor in ("leaderboard", "radar", "stability", "ablation", "swap", "coverage", "artifacts"):
        assert f'id="{anchor}"' in html
    assert "human" not in re.findall(r'id="(\w+)"', html)  # no human_preference.json
    assert "12.5%" in html and "pairs_checked" in html
    assert "needs an omni model" in html
    assert "&lt;Gemini&gt;" in html and "<Gemini>" not in html
    # The ledger sits under the verdict, before the leaderboard; the coverage section no longer lists it.
    ledger = html.index('id="deviations"')
    assert html.index('id="verdict"') < ledger < html.index('id="leaderboard"')
    assert "<code>judge-substitute-cpu</code>" in html and "Smoke test." in html
    assert "Deviations" not in html.split('id="coverage"')[1]
    assert "run42" in html and "abc123" in html
    text = re.sub(r'src="data:image/png;base64,[^"]+"', "", html)
    assert "NaN" not in text and "nan<" not in text and "inf<" not in text
    # Leaderboard: systems by final within each subset, after the ground-truth reference row.
    on = html.split("<h3>On-screen</h3>")[1].split("</table>")[0]
    order = sorted(doc["systems"], key=lambda s: -doc["systems"][s]["subsets"]["on_screen"]["final"])
    positions = [on.index(f">{s}<") for s in order]
    assert on.index("Ground Truth") < positions[0] and positions == sorted(positions)
    final = doc["systems"][order[0]]["subsets"]["on_screen"]["final"]
    assert f"<b>{final:.2f}</b>" in on
    # Stability tables carry the figures.
    d_bias = stability(table)["subsets"]["mixed"]["d_bias"]
    assert f"{d_bias:.3f}" in html.split('id="stability"')[1]
    # Every image is an inline PNG that decodes.
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', html)
    assert images
    for data in images:
        with Image.open(io.BytesIO(base64.b64decode(data))) as image:
            assert image.format == "PNG"


def test_report_falls_back_to_analyses_folder_and_handles_no_systems(tmp_path: Path) -> None:
    table = make_prism_scores(seed=3, items_per_subset=3)
    analyses = tmp_path / "analyses"
    write_json(analyses / "stability.json", {"analysis": "stability", "status": "ok", **stability(table)})
    write_json(
        analyses / "human_preference.json",
        {
            "analysis": "human_preference",
            "status": "ok",
            "tie_rule": "ties agree with ties",
            "rater_rule": "raters vote by majority",
            "mean_dimension_agreement": 0.75,
            "gt_vs_model": {
                "cells": {
                    "overall": {
                        "n": 4,
                        "agree": 3,
                        "rate": 0.75,
                        "n_untied": 4,
                        "agree_untied": 3,
                        "rate_untied": 0.75,
                    },
                    "by_subset": {},
                    "by_dimension": {},
                    "by_system": {},
                }
            },
            "model_vs_model": {},
        },
    )
    page = tmp_path / "r.html"
    write_prism_report(
        ReportJob(page, _config(), aggregate_prism(table), analyses),  # type: ignore[arg-type]
        stability=None,
        swap=None,
        unavailable=[],
    )
    html = page.read_text(encoding="utf-8")
    assert 'id="stability"' in html and "d<sub>bias</sub>" in html
    assert 'id="human"' in html and "75.0%" in html and "raters vote by majority" in html
    assert 'id="swap"' not in html
    empty = {"benchmark": "prism", "systems": {}, "ground_truth": {"subsets": {}}, "not_computed": []}
    write_prism_report(
        ReportJob(tmp_path / "e.html", _config(), empty, tmp_path / "none"),  # type: ignore[arg-type]
        stability=None,
        swap=None,
        unavailable=["every dimension: unavailable: needs an omni model"],
    )
    text = (tmp_path / "e.html").read_text(encoding="utf-8")
    assert "No systems were scored" in text and "needs an omni model" in text
    json.dumps(empty)


def test_swap_check_shows_each_stages_flip_rate_as_the_judge_reports_it() -> None:
    from omnieval.benchmarks.prism._report import swap_html

    html = swap_html({"panel": "cpu-cascade", "stage_1": {"flip_rate": 0.25}, "stage_2": {"flip_rate": 0.0}})
    assert "stage 1: <b>25.0%</b>" in html and "stage 2: <b>0.0%</b>" in html


def test_the_page_lists_uncomputed_cells_once_and_what_no_judge_could_judge_apart(tmp_path: Path) -> None:
    """ "Could not be judged here" names what a panel could not judge (the judge stage's lineage);
    "Cells not computed" names the aggregate's cells; a cell is never listed under both."""
    from omnieval.benchmarks.prism._report import unavailable_judging

    table = make_prism_scores(seed=3, items_per_subset=3)
    document = {
        **aggregate_prism(table),
        "not_computed": ["muted off_screen expressiveness/music: ratio undefined"],
    }
    lineage = {
        "panels": {"omni": {"unavailable": "av_coherence: needs an omni model"}, "cpu": {"unavailable": []}}
    }
    page = tmp_path / "r.html"
    write_prism_report(
        ReportJob(page, _config(), document, tmp_path / "analyses"),  # type: ignore[arg-type]
        stability=None,
        swap=None,
        unavailable=unavailable_judging(lineage),
    )
    html = page.read_text(encoding="utf-8")
    assert html.count("muted off_screen expressiveness/music") == 1
    judged, cells = html.split("Could not be judged here")[1].split("Cells not computed")
    assert "omni: av_coherence: needs an omni model" in judged and "ratio undefined" in cells
