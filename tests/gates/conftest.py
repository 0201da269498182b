"""Fixtures: the committed sample dataset and private copies of it to corrupt."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "storybench-sample"


@pytest.fixture(scope="session")
def sample_root() -> Path:
    assert (SAMPLE / "data" / "omni_storybench.parquet").is_file(), (
        "sample missing: run `python -m omnieval.sample --out data/storybench-sample`"
    )
    return SAMPLE


@pytest.fixture
def sample_copy(tmp_path: Path) -> Path:
    """A private copy of the sample that a test may corrupt."""
    root = tmp_path / "storybench"
    shutil.copytree(SAMPLE, root)
    return root
