"""End to end: the report stage gates the collected scores table; a tampered table stops it with exit 2.

The acbench suite's state is built for real (the validate stage on the bundled sample) except the
metrics, which are synthesized rows on the sample's instances (the metrics need Whisper).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from omnieval.config import SuiteConfig, load_suite
from omnieval.scores import read_scores, write_scores
from omnieval.stages import report, validate
from omnieval.stages._common import state_paths

from .conftest import ACBENCH_SAMPLE, ROOT, acbench_table

SYSTEMS = ("oracle-control", "neutral")


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, SuiteConfig]:
    tmp = tmp_path_factory.mktemp("acbench-gate")
    shipped = yaml.safe_load((ROOT / "pipelines" / "acbench.yaml").read_text())
    body = {
        **shipped,
        # The reference systems only: their metrics rows are synthesized below.
        "systems": {s: shipped["systems"][s] for s in SYSTEMS},
        "suite": "acbench-gate",
        "state_dir": str(tmp / "state"),
        "runs_dir": str(tmp / "runs"),
        "conditions": ["original"],
        "tracking": {"experiment": "omnieval/acbench-gate"},
        "dataset": {"name": "acbench-sample", "path": str(ACBENCH_SAMPLE)},
    }
    path = tmp / "acbench-gate.yaml"
    path.write_text(yaml.safe_dump(body))
    config = load_suite(path)
    state = validate.run(config)
    paths = state_paths(config)
    table = acbench_table(state.instances, SYSTEMS, ("original",), seed=17)
    for system in SYSTEMS:
        write_scores(table[table["system"] == system], paths.metrics(system))
    return path, config


def _run_report(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    capsys.readouterr()
    code = report.main(["--suite", str(path)])
    return code, capsys.readouterr().err


def _tamper(config: SuiteConfig, system: str, edit: Any) -> None:
    target = state_paths(config).metrics(system)
    frame = pd.read_parquet(target)
    frame = edit(frame)
    tmp = target.with_suffix(".tampered")
    frame.to_parquet(tmp, index=False)
    tmp.replace(target)


def test_clean_then_tampered_table(
    suite: tuple[Path, SuiteConfig], capsys: pytest.CaptureFixture[str]
) -> None:
    path, config = suite
    paths = state_paths(config)
    gate_json = paths.gates / "scores.json"

    code, err = _run_report(path, capsys)
    assert code == 0, err
    saved = json.loads(gate_json.read_text())
    assert saved["success"] is True
    assert saved["details"]["coverage"]["rows_per_system"] == {
        s: len(read_scores(paths.metrics(s))) for s in sorted(SYSTEMS)
    }
    board_before = (paths.report_dir / "leaderboard.json").read_text()

    # A WER below zero and a repeated row: both stop the stage before aggregation.
    def damage(frame: pd.DataFrame) -> pd.DataFrame:
        wer = frame.index[(frame["component"] == "wer") & (frame["status"] == "ok")]
        frame.loc[wer[0], "value"] = -0.25
        return pd.concat([frame, frame.loc[[wer[1]]]], ignore_index=True)

    _tamper(config, "neutral", damage)
    code, err = _run_report(path, capsys)
    assert code == 2
    assert "Traceback" not in err
    assert err.startswith("error: gate scores_table failed on scores table of suite acbench-gate")
    assert "wer values within 0..inf" in err and "e.g. -0.25" in err
    assert "expect_compound_columns_to_be_unique" in err and "system=neutral" in err
    saved = json.loads(gate_json.read_text())
    assert saved["success"] is False and saved["n_failed"] == 2
    # Nothing was aggregated from the bad table.
    assert (paths.report_dir / "leaderboard.json").read_text() == board_before


def test_unknown_status_is_a_gate_failure_too(
    suite: tuple[Path, SuiteConfig], capsys: pytest.CaptureFixture[str]
) -> None:
    path, config = suite

    def damage(frame: pd.DataFrame) -> pd.DataFrame:
        frame.loc[3, "status"] = "excellent"
        return frame

    _tamper(config, "oracle-control", damage)
    code, err = _run_report(path, capsys)
    assert code == 2 and "Traceback" not in err
    assert "table_is_readable" in err and "unknown status values ['excellent']" in err
    saved = json.loads((state_paths(config).gates / "scores.json").read_text())
    assert saved["success"] is False
