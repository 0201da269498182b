"""Fixtures: the PRISM-Bench sample (the committed one, else generated once) and small copies to corrupt."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

SAMPLE = Path(__file__).resolve().parents[3] / "data" / "prism-sample"

#: Sample clips copied into :func:`prism_small`: speech on screen, all three on-screen sources,
#: ambience off screen, and a mixed speaker + narrator clip.
SMALL_IDS: tuple[str, ...] = ("on-01", "on-07", "off-03", "mix-01")


@pytest.fixture(scope="session")
def prism_sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``data/prism-sample``; generated into a temporary folder when the checkout lacks it."""
    if (SAMPLE / "manifest.jsonl").is_file():
        return SAMPLE
    from omnieval.benchmarks.prism._sample import write_prism_sample

    return write_prism_sample(tmp_path_factory.mktemp("prism") / "prism-sample").root


def copy_subset(sample: Path, ids: tuple[str, ...], dest: Path) -> Path:
    """A dataset folder at ``dest`` with only the sample lines (and clips) of ``ids``, in sample order."""
    dest.mkdir(parents=True)
    kept = []
    for line in (sample / "manifest.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["id"] in ids:
            kept.append(line)
            target = dest / record["reference_video"]
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(sample / record["reference_video"], target)
    (dest / "manifest.jsonl").write_text("\n".join(kept) + "\n", encoding="utf-8")
    return dest


@pytest.fixture
def prism_small(prism_sample: Path, tmp_path: Path) -> Path:
    """A private four-clip dataset (:data:`SMALL_IDS`) that a test may corrupt."""
    return copy_subset(prism_sample, SMALL_IDS, tmp_path / "prism")
