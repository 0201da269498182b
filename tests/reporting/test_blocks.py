"""Shared report blocks: verdict banner, what moved, judge health, readings, links."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from omnieval.errors import DataError
from omnieval.lineage import Deviation
from omnieval.reporting import (
    Artifact,
    artifact_links,
    bootstrap_reading,
    delta_reading,
    figure,
    judge_health_block,
    regression_deltas,
    validity_ledger_block,
    verdict_banner,
    what_moved,
)

PNG = b"\x89PNG\r\n\x1a\nfake"


class Figures(HTMLParser):
    """Collects each ``<figure>``'s image count and caption text."""

    def __init__(self) -> None:
        super().__init__()
        self.figures: list[dict[str, Any]] = []
        self._in_caption = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "figure":
            self.figures.append({"images": 0, "caption": ""})
        elif tag == "img" and self.figures:
            self.figures[-1]["images"] += 1
        elif tag == "figcaption":
            self._in_caption = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "figcaption":
            self._in_caption = False

    def handle_data(self, data: str) -> None:
        if self._in_caption:
            self.figures[-1]["caption"] += data


def figures_of(html: str) -> list[dict[str, Any]]:
    parser = Figures()
    parser.feed(html)
    return parser.figures


def regression(verdict: str = "NO-GO", baseline: str | None = "run-0") -> dict[str, Any]:
    return {
        "verdict": verdict,
        "reasons": ["copy-current judge.text fell by 0.80 points"],
        "baseline": baseline,
        "systems": {
            "a": {
                "total_average": {"a": 5.0, "b": 5.2, "delta": 0.2, "ci95": [-0.1, 0.5], "p_holm": 0.40},
                "judge.text": {"a": 7.0, "b": 6.2, "delta": -0.8, "ci95": [-1.2, -0.4], "p_holm": 0.004},
            },
            "b": {
                "total_average": {"a": 4.0, "b": 5.5, "delta": 1.5, "ci95": [-0.2, 3.2], "p_holm": 0.30},
                "judge.text": {"a": 6.0, "b": 6.1, "delta": 0.1, "ci95": [-0.3, 0.5], "p_holm": 0.90},
            },
        },
        "changed": {"dataset": False, "code": True, "prompts": ["text"]},
        "top_movers": [
            {
                "system": "a",
                "component": "judge.text",
                "instance_id": "book/p01__p02",
                "a": 10,
                "b": 1,
                "delta": -9,
            }
        ],
    }


def test_figure_carries_its_reading() -> None:
    html = figure(PNG, "oracle leads by 3.5 points.", alt="x", title="t")
    (fig,) = figures_of(html)
    assert fig["images"] == 1 and "oracle leads by 3.5 points." in fig["caption"]
    assert 'src="data:image/png;base64,' in html
    with pytest.raises(ValueError):
        figure(PNG, "  ", alt="x")


@pytest.mark.parametrize(
    ("verdict", "cls"), [("GO", "v-go"), ("NO-GO", "v-nogo"), ("INCONCLUSIVE", "v-inconclusive")]
)
def test_verdict_banner_colour_reasons_and_baseline_link(verdict: str, cls: str) -> None:
    html = verdict_banner(regression(verdict), headline=["Leader: a."])
    assert f'class="banner {cls}"' in html and f">{verdict}<" in html
    assert "copy-current judge.text fell by 0.80 points" in html
    assert 'href="../run-0/report.html"' in html
    assert "Leader: a." in html


def test_baseline_as_written_by_the_nightly_comparison_links_its_run_id() -> None:
    doc = {**regression("GO"), "baseline": {"run_id": "abc123", "folder": "runs/nightly/abc123"}}
    html = verdict_banner(doc)
    assert 'href="../abc123/report.html"' in html and "{" not in html.split("Compared with run", 1)[1][:80]


def test_banner_shows_the_slow_drift_plot_when_the_nightly_drew_one() -> None:
    drawn = {**regression("GO"), "trend": {"file": "trend.json", "figure": "report_trend.png"}}
    assert '<img src="report_trend.png"' in verdict_banner(drawn)
    assert "<img" not in verdict_banner({**regression("GO"), "trend": {"figure": None}})
    assert "<img" not in verdict_banner({**regression("GO"), "trend": {"figure": "../../etc/x.png"}})


def test_no_regression_says_no_previous_run() -> None:
    html = verdict_banner(None)
    assert "v-none" in html and "No previous run compared" in html
    assert "No previous run compared" in what_moved(None)
    first = verdict_banner(regression("INCONCLUSIVE", baseline=None))
    assert "No previous run to compare with" in first and "href" not in first


def test_the_deviation_ledger_follows_the_banner_escaped() -> None:
    ledger = [
        Deviation("judge-substitute-cpu", "A 1.5B <model> judges.", "Compare only with cpu runs."),
        Deviation("dataset-limit", "Only 2 instances.", "none"),
    ]
    for report in (regression("NO-GO"), None):
        html = verdict_banner(report, headline=["oracle leads"], deviations=ledger)
        assert html.index('class="banner') < html.index("oracle leads") < html.index('id="deviations"')
        items = re.findall(r"<li><code>([a-z-]+)</code>: (.*?) <i>Effect:</i> (.*?)</li>", html)
        assert items == [
            ("judge-substitute-cpu", "A 1.5B &lt;model&gt; judges.", "Compare only with cpu runs."),
            ("dataset-limit", "Only 2 instances.", "none"),
        ]
    assert "this run followed the paper's protocol" in verdict_banner(None, deviations=[])
    assert "deviations" not in verdict_banner(regression("GO"))


def test_unknown_verdict_is_a_data_error() -> None:
    with pytest.raises(DataError, match=r"regression\.json, field 'verdict'"):
        verdict_banner({"verdict": "MAYBE"})


def test_deltas_significance_and_reading() -> None:
    deltas = regression_deltas(regression())
    assert [(d.system, d.component, d.significant) for d in deltas] == [
        ("a", "total_average", False),
        ("a", "judge.text", True),
        ("b", "total_average", False),
        ("b", "judge.text", False),
    ]
    # The largest significant delta is named, not the larger non-significant one (b +1.5).
    assert delta_reading(deltas) == (
        "1 of 4 system/component deltas are significant after Holm (p < 0.05); "
        "the largest is a judge.text -0.80 [-1.20, -0.40]."
    )
    nothing = [d for d in deltas if not d.significant]
    assert delta_reading(nothing).startswith("None of 3") and "b total_average +1.50" in delta_reading(
        nothing
    )
    with pytest.raises(DataError, match=r"systems\.a\.x"):
        regression_deltas({"systems": {"a": {"x": {"delta": "big"}}}})


def test_what_moved_has_chart_movers_and_changes() -> None:
    html = what_moved(regression())
    (fig,) = figures_of(html)
    assert "1 of 4 system/component deltas are significant" in fig["caption"]
    assert "book/p01__p02" in html and "-9.00" in html
    # Each top mover opens its (instance, system) pair in the run folder's instance viewer.
    assert 'href="instances.html#book/p01__p02/a"' in html
    assert re.search(r"code</td><td[^>]*><span class=\"flag\">changed", html)
    assert re.search(r"dataset</td><td[^>]*>unchanged", html)


def health(degenerate: bool) -> dict[str, Any]:
    def judge(flag: bool) -> dict[str, Any]:
        hist = {"1": 50, "10": 50} if flag else {str(k): 10 for k in range(1, 11)}
        return {
            "n_verdicts": 100,
            "histogram": hist,
            "identical_share": 0.9 if flag else 0.1,
            "distinct_values": 2 if flag else 10,
            "rationale_chars": {"mean": 40.0, "p50": 35, "max": 90},
            "truncated_share": 0.0,
            "degenerate": flag,
            "reasons": ["90% of verdicts repeat one score on every criterion"] if flag else [],
        }

    return {
        "judges": {"cpu/bad": judge(degenerate), "cpu/good": judge(False)},
        "degenerate": ["cpu/bad"] if degenerate else [],
    }


def test_health_flags_a_degenerate_judge() -> None:
    html = judge_health_block(health(True))
    assert '<span class="flag">DEGENERATE</span>' in html
    (fig,) = figures_of(html)
    assert "1 of 2 judges look degenerate: cpu/bad" in fig["caption"]
    assert "90% of verdicts repeat one score" in html and "<td>90%</td>" in html
    clean = judge_health_block(health(False))
    assert "DEGENERATE" not in clean
    assert "No judge is degenerate: all 2 spread their verdicts over 10-10 distinct values." in clean
    assert "No judge health" in judge_health_block(None)


def test_validity_block_reads_the_table(tmp_path: Path) -> None:
    path = tmp_path / "judgments.parquet"
    statuses = ["ok"] * 6 + ["repaired", "parse_error", "inference_error", "not_applicable"]
    pd.DataFrame({"panel": "p", "judge": "j", "track": "text", "status": statuses}).to_parquet(path)
    html = validity_ledger_block(path)
    (fig,) = figures_of(html)
    # 9 owed (the not_applicable one is not), 7 valid of them.
    assert (
        "7 of 9 owed judgments are valid (77.8%, 1 after repair); 1 parse_error, 1 inference_error."
        in fig["caption"]
    )
    assert "Weakest: p/j on text (77.8% valid)." in fig["caption"]
    assert "this suite runs no judge panels" in validity_ledger_block(None)
    assert "has not run" in validity_ledger_block(tmp_path / "absent.parquet")


def test_bootstrap_reading_uses_the_numbers() -> None:
    doc = {
        "draws": 1000,
        "systems": {"x": {}, "y": {}},
        "leader": {
            "system": "x",
            "runner_up": "y",
            "difference": 3.5163,
            "ci95": [2.8336, 4.2104],
            "share_leader_beats_runner_up": 0.987,
        },
        "n_pairs": 1,
        "n_significant_holm": 1,
    }
    assert bootstrap_reading(doc) == (
        "x leads y by 3.52 points (95% CI 2.83 to 4.21; the CI excludes 0; ahead in 99% of 1000 draws); "
        "1 of 1 pairwise differences are significant after Holm."
    )
    doc["leader"]["ci95"] = [-0.5, 1.0]
    assert "the CI includes 0" in bootstrap_reading(doc)


def test_artifact_links_are_relative_and_only_existing(tmp_path: Path) -> None:
    (tmp_path / "leaderboard.json").write_text("{}")
    (tmp_path / "analyses").mkdir()
    (tmp_path / "analyses" / "bootstrap.json").write_text("{}")
    html = artifact_links(
        tmp_path,
        [
            Artifact("leaderboard.json", "both policies"),
            Artifact("regression.json", "x"),
            Artifact("analyses/bootstrap.json", "b"),
        ],
    )
    assert 'href="leaderboard.json"' in html and 'href="analyses/bootstrap.json"' in html
    assert "regression.json" not in html
