"""run_analyses and ``omnieval analyze`` end to end, including tables that cannot support everything."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from omnieval.analysis import AnalysisConfig, analysis_names, run_analyses
from omnieval.benchmarks.storybench._names import TRACKS
from omnieval.cli import main
from omnieval.errors import ConfigError
from omnieval.scores import write_scores
from omnieval_testkit.storybench_synthetic import make_scores

ALL = set(analysis_names("storybench"))


def _load(folder: Path) -> dict[str, object]:
    return {p.stem: json.loads(p.read_text()) for p in folder.glob("*.json")}


@pytest.mark.parametrize("image_similarity", [False, True])
def test_sample_shaped_table_never_crashes(tmp_path: Path, image_similarity: bool) -> None:
    # Like the bundled sample: 4 systems, 16 transitions, one CPU judge for text and speech only.
    frame = make_scores(
        benchmark="storybench",
        n_systems=4,
        n_instances=16,
        n_judges=1,
        not_applicable_tracks=("integrated", *(() if image_similarity else ("image",))),
        not_applicable_fields=("emotion",),
        seed=1,
    )
    if image_similarity:
        frame = frame[~((frame["component"] == "judge") & (frame["track"] == "image"))]
    outputs = run_analyses(frame, tmp_path, config=AnalysisConfig(bootstrap_draws=200))
    assert set(outputs) == ALL
    docs = _load(tmp_path)
    assert set(docs) == ALL
    status = {n: o.status for n, o in outputs.items()}
    for name in (
        "bootstrap",
        "bottleneck",
        "correlations",
        "zero_filled_sensitivity",
        "aggregation_sensitivity",
    ):
        assert status[name] == "ok", (name, outputs[name].reason)
    for name in ("human_agreement", "duplicate_sensitivity", "integrated_categories", "inter_judge"):
        assert status[name] == "skipped"
        assert docs[name]["status"] == "skipped" and docs[name]["reason"]  # type: ignore[index]
    assert status["partial_correlations"] == ("ok" if image_similarity else "skipped")
    boot = docs["bootstrap"]
    assert set(boot["systems"]) == {"sys00", "sys01", "sys02", "sys03"}  # type: ignore[index]
    assert (tmp_path / "bootstrap.png").is_file()
    assert json.loads((tmp_path / "_params" / "bootstrap.json").read_text())["draws"] == 200


@pytest.mark.parametrize("n_systems", [1, 2])
def test_tiny_tables_skip_instead_of_crashing(tmp_path: Path, n_systems: int) -> None:
    frame = make_scores(benchmark="storybench", n_systems=n_systems, n_instances=6, seed=0)
    outputs = run_analyses(frame, tmp_path, config=AnalysisConfig(bootstrap_draws=20))
    assert set(outputs) == ALL
    for out in outputs.values():
        if out.status == "skipped":
            assert out.reason


def test_unknown_analysis_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown analyses"):
        run_analyses(
            make_scores(benchmark="storybench", n_systems=2, n_instances=3), tmp_path, only=["bootstrapp"]
        )


def test_cli_analyze_and_seed_reproducibility(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scores = tmp_path / "scores.parquet"
    write_scores(make_scores(benchmark="storybench", n_systems=6, n_instances=25, seed=8), scores)
    args = [
        "analyze",
        str(scores),
        "--only",
        "bootstrap,partial_correlations",
        "--draws",
        "150",
        "--seed",
        "4",
    ]
    assert main([*args, "--out", str(tmp_path / "a")]) == 0
    assert main([*args, "--out", str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    assert "bootstrap" in out and "wrote 2 analyses" in out
    a = (tmp_path / "a" / "bootstrap.json").read_text()
    assert a == (tmp_path / "b" / "bootstrap.json").read_text()
    boot = json.loads(a)
    for entry in boot["systems"].values():
        assert {"total_average", "ci95", "rank_interval"} <= set(entry)
    partial = json.loads((tmp_path / "a" / "partial_correlations.json").read_text())
    assert isinstance(partial, list) and partial
    assert {"x", "y", "controls", "r", "p"} <= set(partial[0])
    assert {(e["x"], e["y"]) for e in partial} >= {("text", "image"), ("text", "speech"), ("image", "speech")}


def test_cli_analyze_list_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", "--list"]) == 0
    listed = capsys.readouterr().out
    assert ALL, "no analysis is registered"
    assert all(name in listed for name in ALL)
    scores = tmp_path / "scores.parquet"
    write_scores(make_scores(benchmark="storybench", n_systems=3, n_instances=4, seed=0), scores)
    assert (
        main(["analyze", str(scores), "--out", str(tmp_path / "o"), "--humans", str(tmp_path / "none.json")])
        == 2
    )
    assert f"--humans: {tmp_path / 'none.json'} does not exist" in capsys.readouterr().err
    assert main(["analyze", str(scores), "--out", str(tmp_path / "o"), "--only", "nope"]) == 2
    assert "unknown analyses" in capsys.readouterr().err
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("bootstrap_draws: 3\n")
    assert main(["analyze", str(scores), "--out", str(tmp_path / "o"), "--config", str(cfg)]) == 2
    assert "bootstrap_draws" in capsys.readouterr().err


def _identical_systems() -> pd.DataFrame:
    f = make_scores(benchmark="storybench", n_systems=1, n_instances=8, seed=0)
    return pd.concat([f.assign(system=f"s{k}") for k in range(4)], ignore_index=True)


def _one_system_without_outputs() -> pd.DataFrame:
    f = make_scores(benchmark="storybench", n_systems=4, n_instances=8, seed=0)
    gone = f["system"] == "sys01"
    f.loc[gone, "status"] = "missing_output"
    f.loc[gone, "value"] = np.nan
    return f


@pytest.mark.parametrize(
    "make",
    [
        _identical_systems,
        _one_system_without_outputs,
        lambda: make_scores(benchmark="storybench", n_systems=5, n_instances=1, seed=0),
        lambda: make_scores(
            benchmark="storybench", n_systems=5, n_instances=8, missing_rate=0.6, invalid_rate=0.5, seed=0
        ),
        lambda: make_scores(
            benchmark="storybench", n_systems=5, n_instances=8, not_applicable_tracks=TRACKS, seed=0
        ),
    ],
)
def test_degenerate_tables_never_crash(tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    outputs = run_analyses(make(), tmp_path, config=AnalysisConfig(bootstrap_draws=30))
    assert set(outputs) == ALL
    docs = _load(tmp_path)
    for name, out in outputs.items():
        if out.status == "skipped":
            assert out.reason and docs[name]["status"] == "skipped"  # type: ignore[index]


def test_cli_analyze_refuses_a_table_no_analysis_applies_to(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every shipped benchmark registers analyses, so the toy benchmark (none) stands in, registered
    # for this test only; tests/cli/test_fresh_shell_sweep.py runs the shipped ones from a fresh shell.
    from benchmarks.toy_caption import TOY_BENCHMARKS
    from omnieval.benchmarks import BENCHMARKS

    monkeypatch.setitem(BENCHMARKS._items, "toy_caption", TOY_BENCHMARKS.get("toy_caption"))
    frame = make_scores(benchmark="storybench", n_systems=2, n_instances=3, seed=0)
    scores = tmp_path / "scores.parquet"
    write_scores(frame.assign(benchmark="toy_caption"), scores)
    out = tmp_path / "o"
    assert main(["analyze", str(scores), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{scores}: no registered analysis applies to toy_caption scores tables" in err
    assert not out.exists()
