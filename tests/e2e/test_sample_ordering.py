"""On the whole bundled sample the automatic metrics order the reference systems as they must."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from omnieval.config import SuiteConfig
from omnieval.stages import generate, metrics, report, validate

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_oracle_beats_copy_current_beats_shuffled(tmp_path: Path) -> None:
    config = SuiteConfig.model_validate(
        {
            "suite": "ordering",
            "dataset": {"path": str(ROOT / "data" / "storybench-sample")},
            "systems": {
                "oracle": {"kind": "oracle"},
                "copy-current": {"kind": "copy-current"},
                "shuffled": {"kind": "shuffled", "seed": 0},
            },
            "judges": {"panels": []},
            "analyses": {"enabled": False},
            "state_dir": str(tmp_path / "state"),
        }
    )
    state = validate.run(config)
    assert len(state.instances) >= 16
    for system in config.systems:
        generate.run(config, system, state.instances, state.digest)
        metrics.run(config, system, state.instances, state.digest)
    outcome = report.run(config, state.digest)
    board = json.loads(outcome.leaderboard_path.read_text())
    valid = {name: entry["valid_only"] for name, entry in board["systems"].items()}
    for component in ("bertscore_f1", "image_similarity", "speech_meta_accuracy"):
        assert valid["oracle"][component] > valid["shuffled"][component], component
    for component in ("bertscore_f1", "image_similarity"):
        assert valid["oracle"][component] > valid["copy-current"][component] > valid["shuffled"][component]
    assert valid["oracle"]["total_average_components"] == [
        "bertscore_f1",
        "image_similarity",
        "speech_meta_accuracy",
    ]
