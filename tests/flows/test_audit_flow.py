"""``omnieval audit data/storybench-sample`` through the Prefect flow, its default output folder, and
the duplicate-cluster sensitivity analysis finding that output on its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from omnieval.analysis import AnalysisConfig, run_analyses
from omnieval.cli import main
from omnieval_testkit.storybench_synthetic import make_scores


@pytest.mark.usefixtures("prefect_api")
def test_audit_of_the_sample_feeds_the_sensitivity_analysis(
    sample_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["audit", str(sample_root), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    out = tmp_path / "state" / "audit" / "storybench-sample"
    assert Path(summary["out"]).resolve() == out.resolve()
    assert {p.name for p in out.iterdir()} == {"clusters.json", "overlaps.json", "audit.html"}
    clusters = json.loads((out / "clusters.json").read_text())
    overlaps = json.loads((out / "overlaps.json").read_text())
    # The sample's four books share no text and no picture across books, and no condition quotes
    # another page: nothing is flagged, and every transition is listed.
    assert clusters["n_instances"] == 20 and clusters["clusters"] == []
    assert clusters["method"]["image"]["n_hashed"] == 24
    assert len(overlaps["instances"]) == 20 and overlaps["summary"]["n_shared_spans"] == 0
    assert overlaps["summary"]["longest_span_with_target_median"] is not None

    ids = clusters["instance_ids"]
    frame = make_scores(benchmark="storybench", n_systems=3, n_instances=len(ids), seed=0)
    frame["instance_id"] = frame["instance_id"].map(
        dict(zip(sorted(frame["instance_id"].unique()), ids, strict=True))
    )
    outputs = run_analyses(
        frame, tmp_path / "analyses", only=["duplicate_sensitivity"], config=AnalysisConfig()
    )
    result = outputs["duplicate_sensitivity"]
    # read from the audit (no --duplicates): it holds no cluster, and the reason names the file
    assert result.status == "skipped"
    assert "state/audit/storybench-sample/clusters.json holds no cluster" in str(result.reason)


def test_audit_refuses_bad_options_and_unknown_folders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["audit", str(tmp_path), "--engine", "local", "--out", str(tmp_path / "o")]) == 2
    assert "no registered benchmark" in capsys.readouterr().err
    assert main(["audit", str(tmp_path), "--span-words", "1"]) == 2
    assert "--span-words" in capsys.readouterr().err
