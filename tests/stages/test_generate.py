"""The generate stage for a benchmark with input conditions: one candidate folder per condition."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from omnieval.config import load_suite
from omnieval.stages import generate, validate

ROOT = Path(__file__).resolve().parents[2]


def _suite(tmp_path: Path, systems: dict[str, dict[str, str]], conditions: list[str]) -> Path:
    path = tmp_path / "suite.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "suite": "gen",
                "benchmark": "acbench",
                "dataset": {"path": str(ROOT / "data" / "acbench-sample"), "limit": 3},
                "systems": systems,
                "conditions": conditions,
                "state_dir": str(tmp_path / "state"),
            }
        )
    )
    return path


@pytest.mark.parametrize("per_condition", [True, False])
def test_import_reads_one_subfolder_per_condition_or_one_for_all(tmp_path: Path, per_condition: bool) -> None:
    made = tmp_path / "made-elsewhere"
    wav = next((ROOT / "data" / "acbench-sample" / "instructions").glob("*.wav"))
    for condition in ("original", "oracle"):
        base = made / condition if per_condition else made
        for index in range(2):  # index 2 is missing on purpose
            target = base / "speech" / str(index) / "generated.wav"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(wav, target)
    config = load_suite(
        _suite(tmp_path, {"ext": {"kind": "import", "path": str(made)}}, ["original", "oracle"])
    )
    state = validate.run(config)
    outcome = generate.run(config, "ext", state.instances, state.digest)
    assert set(outcome.roots) == {"original", "oracle"}
    for condition, root in outcome.roots.items():
        expected = made / condition if per_condition else made
        assert root == expected.resolve()
        gate = (tmp_path / "state" / "gates" / f"candidates-ext-{condition}.json").read_text()
        assert '"success": true' in gate
    again = generate.run(config, "ext", state.instances, state.digest)
    assert again.skipped and again.roots == outcome.roots
