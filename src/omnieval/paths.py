"""Where each stage of one suite writes: the layout of ``state/<suite>/``.

A core module (it needs nothing but a folder) so that every layer can name a state file: the
stages write there, and the benchmarks' reports and the judges' drift check read from there
without importing the stages or the suite config. ``StatePaths(config.state)`` is the layout of a
suite; :func:`omnieval.stages._common.state_paths` is that call for the stages.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class StatePaths:
    """Where each stage of one suite writes (all under ``root``, by default ``state/<suite>/``)."""

    root: Path

    @property
    def stamps(self) -> Path:
        return self.root / ".stamps"

    @property
    def dataset_manifest(self) -> Path:
        return self.root / "dataset" / "manifest.json"

    @property
    def gates(self) -> Path:
        return self.root / "gates"

    def candidates(self, system: str, condition: str = "") -> Path:
        """Candidate folder of one system (and input condition, for benchmarks that have them)."""
        folder = self.root / "candidates" / system
        return folder / condition if condition else folder

    def summary(self, system: str) -> Path:
        """The generate stage's ``<system>.summary.json`` (its lineage, per condition when it has any)."""
        return self.root / "candidates" / f"{system}.summary.json"

    def metrics(self, system: str) -> Path:
        return self.root / "metrics" / f"{system}.parquet"

    def metrics_lineage(self, system: str) -> Path:
        return self.root / "metrics" / f"{system}.lineage.json"

    @property
    def judge_dir(self) -> Path:
        return self.root / "judge"

    @property
    def report_dir(self) -> Path:
        return self.root / "report"

    @property
    def tracking(self) -> Path:
        return self.root / "tracking.json"

    @property
    def cache(self) -> Path:
        """The shared cache beside the suites' state folders (``state/.cache``)."""
        return self.root.parent / ".cache"
