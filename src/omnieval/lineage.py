"""Run lineage: which data, code, models and judges produced a number (run folder ``lineage.json``)."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

LINEAGE_PACKAGES = (
    "torch",
    "transformers",
    "mlflow",
    "dvc",
    "prefect",
    "great-expectations",
    "bert-score",
    "faster-whisper",
    "llama-cpp-python",
    "librosa",
    "pandas",
    "numpy",
)


def git_info(cwd: Path | None = None) -> dict[str, Any]:
    """Commit SHA and whether the working tree has changes; ``unknown`` outside a git checkout."""

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=20, check=False
        )
        return done.stdout.strip() if done.returncode == 0 else ""

    sha = git("rev-parse", "HEAD") or "unknown"
    dirty = bool(git("status", "--porcelain", "--untracked-files=no", "--", "src", "pipelines", "flows"))
    return {"sha": sha, "dirty": dirty}


def dvc_md5(dvc_file: Path = Path("data.dvc")) -> str:
    """The md5 DVC recorded for the tracked data folder, or ``untracked``."""
    import yaml

    if not dvc_file.is_file():
        return "untracked"
    try:
        doc = yaml.safe_load(dvc_file.read_text(encoding="utf-8"))
        return str(doc["outs"][0]["md5"])
    except (KeyError, IndexError, TypeError, yaml.YAMLError):
        return "unreadable"


def package_versions() -> dict[str, str]:
    versions = {"python": sys.version.split()[0]}
    for name in LINEAGE_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def build_lineage(
    *,
    suite: str,
    dataset_name: str,
    dataset_path: Path,
    dataset_digest: str,
    code_digest: str,
    metrics: dict[str, Any],
    judges: dict[str, Any],
    systems: dict[str, Any],
    seeds: dict[str, Any],
) -> dict[str, Any]:
    git = git_info()
    return {
        "suite": suite,
        "dataset": {
            "name": dataset_name,
            "path": str(dataset_path),
            "version": dataset_digest,
            "dvc_md5": dvc_md5(),
            "git_rev": git["sha"],
        },
        "code": {"git_sha": git["sha"], "git_dirty": git["dirty"], "package_digest": code_digest},
        "systems": systems,
        "metrics": metrics,
        "judges": judges,
        "seeds": seeds,
        "packages": package_versions(),
    }
