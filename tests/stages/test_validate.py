"""The validate stage reruns the (slow) dataset gate only when the dataset or its expectations change."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from omnieval.config import load_suite


def _suite(tmp_path: Path, dataset: Path) -> Path:
    path = tmp_path / "suite.yaml"
    suite = {
        "suite": "validate-cache",
        "dataset": {"path": str(dataset), "limit": 2},
        "systems": {"oracle": {"kind": "oracle"}},
        "judges": {"panels": []},
        "state_dir": str(tmp_path / "state"),
    }
    path.write_text(yaml.safe_dump(suite), encoding="utf-8")
    return path


def test_dataset_gate_runs_again_only_when_the_dataset_changes(
    tmp_path: Path, sample_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from omnieval.benchmarks.storybench import StoryBench
    from omnieval.stages import validate

    calls: list[Path] = []
    real_gate = StoryBench.gate

    def counting_gate(self: Any, root: Path, out_json: Path | None) -> Any:
        calls.append(root)
        return real_gate(self, root, out_json)

    monkeypatch.setattr(StoryBench, "gate", counting_gate)
    config = load_suite(_suite(tmp_path, sample_copy))
    first = validate.run(config)
    second = validate.run(config)
    assert len(calls) == 1 and first.digest == second.digest
    # A changed picture is a new dataset: the gate runs again.
    from PIL import Image

    picture = sorted(sample_copy.rglob("*.png"))[0]
    with Image.open(picture) as img:
        changed = img.convert("RGB")
    changed.putpixel((0, 0), tuple(255 - v for v in changed.getpixel((0, 0))))  # type: ignore[union-attr]
    changed.save(picture)
    third = validate.run(config)
    assert len(calls) == 2 and third.digest != first.digest
