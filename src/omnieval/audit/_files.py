"""Where an audit's files go and how an analysis finds the clusters of the dataset it is looking at.

``omnieval audit DATASET`` writes to ``state/audit/<dataset folder name>/`` by default: beside the
suites' state folders (``state/<suite>/``), outside the dataset folder (whose files are data, not
results). The duplicate-cluster sensitivity analysis, given no cluster file, looks there for an
audit whose instances cover the scores table's (:func:`find_audit_clusters`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omnieval.jsonio import write_json_atomic

AUDIT_ROOT = Path("state") / "audit"
"""The default folder of audits (relative to the working directory, like ``state/<suite>``)."""
CLUSTERS = "clusters.json"
OVERLAPS = "overlaps.json"
REPORT = "audit.html"


def default_audit_dir(dataset: Path, root: Path = AUDIT_ROOT) -> Path:
    """``root/<name of the dataset folder>``: the default ``--out`` of ``omnieval audit``."""
    return root / Path(dataset).resolve().name


def write_documents(out: Path, clusters: dict[str, Any], overlaps: dict[str, Any]) -> tuple[Path, Path]:
    """Write ``clusters.json`` and ``overlaps.json`` into ``out`` (each atomically)."""
    return write_json_atomic(out / CLUSTERS, clusters), write_json_atomic(out / OVERLAPS, overlaps)


@dataclass(frozen=True)
class FoundClusters:
    """The outcome of looking for an audit's clusters: the file, or why there is none.

    Attributes:
        path: the ``clusters.json`` chosen, or None.
        reason: why none was chosen (None when one was).
    """

    path: Path | None
    reason: str | None = None


def find_audit_clusters(instance_ids: Iterable[str], root: Path = AUDIT_ROOT) -> FoundClusters:
    """The ``clusters.json`` under ``root/*/`` whose audited instances include every id given.

    A scores table names instances, not the dataset folder, so the audit is matched by its
    ``instance_ids``. Several matching audits of the same data (same ``dataset_digest``) are
    equivalent and the first by folder name is used; matching audits of different data are
    ambiguous, and none is chosen.
    """
    wanted = set(instance_ids)
    if not root.is_dir():
        return FoundClusters(None, f"no audit folder {root} (run `omnieval audit DATASET`)")
    matches: list[tuple[Path, str]] = []
    for path in sorted(root.glob(f"*/{CLUSTERS}")):
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        ids = doc.get("instance_ids") if isinstance(doc, dict) else None
        if isinstance(ids, list) and wanted <= set(ids):
            matches.append((path, str(doc.get("dataset_digest", ""))))
    if not matches:
        return FoundClusters(
            None, f"no audit under {root} covers this table's instances (run `omnieval audit DATASET`)"
        )
    digests = {d for _, d in matches}
    if len(digests) > 1:
        names = ", ".join(str(p) for p, _ in matches)
        return FoundClusters(None, f"several audits of different data match this table ({names}); pass one")
    return FoundClusters(matches[0][0])
