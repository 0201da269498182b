"""Whole report pages: storybench (verdict, figures with readings, judges, links) and acbench."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from tests.reporting.test_blocks import figures_of, health, regression

from omnieval.analysis import AnalysisConfig, run_analyses
from omnieval.benchmarks import ReportJob, RunFacts
from omnieval.config import SuiteConfig, load_suite
from omnieval.stages._deviations import run_deviations
from omnieval_testkit.storybench_synthetic import make_scores

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A report folder like the report stage's: leaderboard.json, analyses/, judgments.parquet."""
    folder = tmp_path_factory.mktemp("report")
    config = load_suite(ROOT / "pipelines" / "nightly.yaml")
    scores = make_scores(n_systems=4, n_instances=20, benchmark="storybench", seed=2)
    board = config.bench.leaderboard(scores, RunFacts(20)).document
    (folder / "leaderboard.json").write_text(json.dumps(board))
    run_analyses(
        scores,
        folder / "analyses",
        only=["bootstrap", "bottleneck", "correlations", "zero_filled_sensitivity", "human_agreement"],
        config=AnalysisConfig(bootstrap_draws=200),
    )
    judgments = scores[scores["component"] == "judge"][["panel", "judge", "track", "status", "instance_id"]]
    judgments = judgments.drop_duplicates(["panel", "judge", "track", "instance_id"]).copy()
    judgments["system"] = "x"
    judgments.to_parquet(folder / "judgments.parquet")
    return {"folder": folder, "config": config, "board": board}


def page(story: dict[str, Any], name: str, **extra: Any) -> str:
    folder: Path = story["folder"]
    config: SuiteConfig = story["config"]
    job = ReportJob(
        folder / name,
        config,
        story["board"],
        folder / "analyses",
        {"bootstrap": "mlflow-run-7"},
        "parent-1",
        judgments_path=folder / "judgments.parquet",
        **extra,
    )
    config.bench.write_report(job)
    return (folder / name).read_text()


def test_storybench_page_leads_with_the_verdict(story: dict[str, Any]) -> None:
    html = page(story, "with.html", regression=regression("NO-GO"), judge_health=health(True))
    banner = html.index('class="banner v-nogo"')
    assert banner < html.index('id="leaderboard"') < html.index('id="analyses"')
    assert 'href="../run-0/report.html"' in html
    assert '<span class="flag">DEGENERATE</span>' in html and "cpu/bad" in html
    assert "Judge health: 1 of 2 judges degenerate (cpu/bad)." in html


def test_storybench_page_lists_the_deviation_ledger_under_the_verdict(story: dict[str, Any]) -> None:
    config: SuiteConfig = story["config"]
    ledger = run_deviations(
        config, {s: {"metrics": {"image_similarity": {"backbone": "clip-vit-b-32"}}} for s in config.systems}
    )
    html = page(story, "ledger.html", regression=regression("GO"), deviations=ledger)
    verdict = html.split('id="verdict"')[1].split("<section")[0]
    assert verdict.index('class="banner v-go"') < verdict.index("Deviations from the paper's protocol")
    for deviation in ledger:
        assert f"<code>{deviation.id}</code>: {deviation.what}" in verdict.replace("&#39;", "'")
        assert deviation.effect in verdict.replace("&#39;", "'")
    assert "metric-backbone-image" not in verdict  # CLIP was recorded: no image deviation
    # One list: the coverage section no longer has its own.
    assert "Deviations" not in html.split('id="coverage"')[1]
    followed = page(story, "followed.html", deviations=[])
    assert "None: this run followed the paper's protocol." in followed
    assert 'id="deviations"' not in page(story, "unknown.html")  # no ledger given: nothing claimed


def test_storybench_page_without_regression_says_so(story: dict[str, Any]) -> None:
    html = page(story, "without.html")
    assert "No previous run compared" in html and 'class="banner v-none"' in html
    assert "No judge health for this run" in html


def test_figures_have_readings_and_no_json_dump(story: dict[str, Any]) -> None:
    html = page(story, "report.html", regression=regression("GO"), judge_health=health(False))
    figs = figures_of(html)
    # leaderboard CI, what moved, components, bottleneck x2, validity, health, correlations, zero-filled
    assert len(figs) >= 9
    for fig in figs:
        assert fig["images"] >= 1 and len(fig["caption"].replace("Reading:", "").strip()) > 20, fig
    board = story["board"]
    leader = max(board["systems"], key=lambda s: board["systems"][s]["valid_only"]["total_average"])
    assert any(fig["caption"].startswith(f"Reading: {leader} leads") for fig in figs)
    assert "<pre" not in html
    assert json.dumps(board, indent=1)[:200] not in html
    assert '"valid_only": {' not in html
    # Raw JSON is linked relatively, never inlined.
    for target in (
        "leaderboard.json",
        "judgments.parquet",
        "analyses/bootstrap.json",
        "analyses/human_agreement.json",
    ):
        assert f'href="{target}"' in html, target
    assert "MLflow run <code>mlflow-run-7</code>" in html
    # Skipped analyses are listed with their reason; a TOC links every section.
    assert "no human ratings given" in html
    toc = re.search(r'<nav class="toc">(.*?)</nav>', html, re.S)
    assert toc is not None
    for anchor in (
        "verdict",
        "moved",
        "leaderboard",
        "components",
        "bottleneck",
        "judges",
        "analyses",
        "artifacts",
    ):
        assert f'href="#{anchor}"' in toc.group(1) and f'id="{anchor}"' in html


def test_storybench_page_keeps_coverage_and_unavailable_tracks(tmp_path: Path) -> None:
    config = load_suite(ROOT / "pipelines" / "nightly.yaml")
    scores = make_scores(
        n_systems=3, n_instances=12, benchmark="storybench", seed=1, not_applicable_tracks=["image"]
    )
    lineage = {"cpu": {"unavailable": {"image": "unavailable: no vision-language model here"}}}
    board = config.bench.leaderboard(scores, RunFacts(12, lineage)).document
    job = ReportJob(tmp_path / "report.html", config, board, tmp_path / "analyses")
    config.bench.write_report(job)
    html = (tmp_path / "report.html").read_text()
    assert "No analyses were run." in html
    assert "no vision-language model here" in html
    assert "judge.image" in html and "Total Average covers" in html
    assert "this suite runs no judge panels" in html


def test_acbench_page_renders_with_shared_blocks(tmp_path: Path) -> None:
    from tests.benchmarks.acbench.test_aggregate import synthetic_scores

    config = load_suite(ROOT / "pipelines" / "acbench.yaml")
    document = config.bench.leaderboard(synthetic_scores(0)).document
    (tmp_path / "leaderboard.json").write_text(json.dumps(document))
    ledger = run_deviations(config, {})
    job = ReportJob(
        tmp_path / "report.html", config, document, tmp_path / "analyses", None, "run-9", deviations=ledger
    )
    config.bench.write_report(job)
    html = (tmp_path / "report.html").read_text()
    assert "Deviations from the paper" in html and "Reference Scores (paper)" in html
    under_verdict = html.split('id="verdict"')[1].split("<section")[0]
    assert "<code>per-word-level</code>" in under_verdict and "not comparable" in under_verdict
    assert "No previous run compared" in html
    assert 'href="leaderboard.json"' in html and "<pre" not in html
    assert html.count("data:image/png;base64,") >= 4
    config.bench.write_report(
        ReportJob(tmp_path / "go.html", config, document, tmp_path / "analyses", regression=regression("GO"))
    )
    assert 'class="banner v-go"' in (tmp_path / "go.html").read_text()


def test_judgments_are_read_only_for_the_columns_needed(story: dict[str, Any]) -> None:
    frame = pd.read_parquet(story["folder"] / "judgments.parquet")
    assert {"panel", "judge", "track", "status"} <= set(frame.columns)
