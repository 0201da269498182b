"""Fixtures: the OmniACBench sample (the committed one, else generated once) and copies to corrupt."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

SAMPLE = Path(__file__).resolve().parents[3] / "data" / "acbench-sample"


@pytest.fixture(scope="session")
def ac_sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``data/acbench-sample``; generated into a temporary folder when the checkout lacks it."""
    if (SAMPLE / "manifest.jsonl").is_file():
        return SAMPLE
    from omnieval.benchmarks.acbench._sample import write_acbench_sample

    return write_acbench_sample(tmp_path_factory.mktemp("acbench") / "acbench-sample").root


@pytest.fixture
def ac_copy(ac_sample: Path, tmp_path: Path) -> Path:
    """A private copy of the sample that a test may corrupt."""
    root = tmp_path / "acbench"
    shutil.copytree(ac_sample, root)
    return root
