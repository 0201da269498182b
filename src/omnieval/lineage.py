"""Run lineage: which data, code, models and judges produced a number (run folder ``lineage.json``),
and the run's deviation ledger: where it departs from its benchmark's paper (FORMATS.md section 12).
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from omnieval.errors import DataError

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


DEVIATIONS_KEY = "deviations"
"""The ledger's key in ``lineage.json``: a list of ``{"id", "what", "effect"}``; empty = the run
followed its paper's protocol."""

DEVIATIONS_TAG = "omnieval.deviations"
"""MLflow tag of a suite's parent run: the ledger's ids, comma-separated (``none`` for an empty one)."""

NO_EFFECT = "none"
"""``effect`` of a deviation that leaves every reported number as the paper's protocol would."""

_SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


@dataclass(frozen=True)
class Deviation:
    """One way a run departs from its benchmark's paper (an entry of the deviation ledger).

    Attributes:
        id: Stable slug (lower-case words joined by ``-``, e.g. ``judge-substitute-cpu``): the same
            departure keeps its id from run to run, so runs can be filtered and compared by it.
        what: One sentence: what the run does instead of the paper's protocol.
        effect: What it does to the reported numbers, or ``none`` (:data:`NO_EFFECT`).

    Example:
        >>> Deviation("per-subset-limit", "Only 2 instances per subset are judged.", "Means over 2.").as_dict()
        {'id': 'per-subset-limit', 'what': 'Only 2 instances per subset are judged.', 'effect': 'Means over 2.'}
    """

    id: str
    what: str
    effect: str

    def __post_init__(self) -> None:
        # A declaration error is the benchmark author's, found by its first run or test.
        if not _SLUG.match(self.id):
            raise ValueError(f"deviation id {self.id!r} is not a slug (lower-case words joined by '-')")
        if not self.what.strip() or not self.effect.strip():
            raise ValueError(
                f"deviation {self.id}: 'what' and 'effect' must be non-empty ('none' for no effect)"
            )

    def as_dict(self) -> dict[str, str]:
        """The ledger entry as written in ``lineage.json``."""
        return {"id": self.id, "what": self.what, "effect": self.effect}


def check_ledger(deviations: Iterable[Deviation]) -> list[Deviation]:
    """The ledger as a list, refusing an id that appears twice (ids name one departure each).

    Raises:
        ValueError: two entries share an id.
    """
    ledger = list(deviations)
    seen: set[str] = set()
    for deviation in ledger:
        if deviation.id in seen:
            raise ValueError(f"deviation id {deviation.id!r} is declared twice for one run")
        seen.add(deviation.id)
    return ledger


def deviations_tag(deviations: Iterable[Deviation]) -> str:
    """The :data:`DEVIATIONS_TAG` value: ids comma-separated, ``none`` for an empty ledger.

    Example:
        >>> deviations_tag([Deviation("prompt-paraphrase", "w", "e"), Deviation("dataset-limit", "w", "e")])
        'prompt-paraphrase,dataset-limit'
        >>> deviations_tag([])
        'none'
    """
    return ",".join(d.id for d in deviations) or "none"


def read_deviations(lineage: Mapping[str, Any], source: str) -> list[Deviation] | None:
    """The ledger of a ``lineage.json`` document; None when it has none (written before the ledger).

    Args:
        lineage: The parsed document.
        source: Its path, for messages.

    Raises:
        DataError: ``deviations`` is not a list of ``{"id", "what", "effect"}`` objects of slugs and
            non-empty strings; the message names the entry and field.
    """
    if DEVIATIONS_KEY not in lineage:
        return None
    entries = lineage[DEVIATIONS_KEY]
    if not isinstance(entries, list):
        raise DataError(f"{source}, field 'deviations': expected a list, got {type(entries).__name__}")
    out: list[Deviation] = []
    for i, entry in enumerate(entries):
        where = f"{source}, deviations[{i}]"
        if not isinstance(entry, dict):
            raise DataError(f"{where}: expected an object with id, what and effect")
        for key in ("id", "what", "effect"):
            if not isinstance(entry.get(key), str) or not entry[key].strip():
                raise DataError(f"{where}, field {key!r}: expected a non-empty string")
        try:
            out.append(Deviation(entry["id"], entry["what"], entry["effect"]))
        except ValueError as exc:
            raise DataError(f"{where}: {exc}") from None
    return out


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
    deviations: Iterable[Deviation] = (),
) -> dict[str, Any]:
    """The run folder's ``lineage.json`` document (the track stage adds ``run_id``).

    ``deviations``: the run's deviation ledger (:class:`Deviation`), written under ``deviations``.
    """
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
        DEVIATIONS_KEY: [d.as_dict() for d in check_ledger(deviations)],
    }
