"""Gate results into MLflow: one metric pair and one tag per gate, the result files as artifacts.

Each ``gates/<stage>.json`` (FORMATS.md section 4) becomes, on the suite's parent run:

* metrics ``gate.<stage>.success`` (1 passed, 0 failed) and ``gate.<stage>.failed_expectations``;
* tag ``omnieval.gate.<stage>`` = ``passed`` or ``failed``, and ``omnieval.gates.failed`` listing the
  failed stages (``none`` when all passed), so the runs table can filter on it;
* the file itself as an artifact under ``gates/``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_UNSAFE = re.compile(r"[^A-Za-z0-9_\-. /]")


@dataclass(frozen=True)
class GateSummary:
    """What one gate result file says, as logged.

    Attributes:
        stage: the file's stem (``dataset``, ``candidates-oracle``, ``judgments``, ``scores``).
        success: whether the gate passed.
        failed_expectations: how many expectations (or, for a dataset that failed strict validation,
            problems) failed.
        path: the result file.
    """

    stage: str
    success: bool
    failed_expectations: int
    path: Path


def read_gate_results(gates_dir: Path) -> list[GateSummary]:
    """Summaries of every ``*.json`` gate result in ``gates_dir`` (sorted by stage; none if absent).

    A file that is not a gate result (unreadable JSON, no ``success``) counts as a failed gate, so a
    damaged result never reads as a pass.
    """
    folder = Path(gates_dir)
    if not folder.is_dir():
        return []
    out: list[GateSummary] = []
    for path in sorted(folder.glob("*.json")):
        try:
            obj: Any = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            obj = None
        if not isinstance(obj, dict) or not isinstance(obj.get("success"), bool):
            out.append(GateSummary(path.stem, False, 1, path))
            continue
        failed = obj.get("n_failed")
        if not isinstance(failed, int):
            failed = len(obj.get("failed") or obj.get("problems") or [])
        out.append(GateSummary(path.stem, bool(obj["success"]), int(failed), path))
    return out


def gate_metrics(summaries: list[GateSummary]) -> dict[str, float]:
    """``gate.<stage>.success`` and ``gate.<stage>.failed_expectations`` of each gate."""
    metrics: dict[str, float] = {}
    for g in summaries:
        name = _safe(g.stage)
        metrics[f"gate.{name}.success"] = 1.0 if g.success else 0.0
        metrics[f"gate.{name}.failed_expectations"] = float(g.failed_expectations)
    return metrics


def gate_tags(summaries: list[GateSummary]) -> dict[str, str]:
    """``omnieval.gate.<stage>`` (passed/failed) and ``omnieval.gates.failed`` (comma list or ``none``)."""
    tags = {f"omnieval.gate.{_safe(g.stage)}": "passed" if g.success else "failed" for g in summaries}
    failed = [g.stage for g in summaries if not g.success]
    if summaries:
        tags["omnieval.gates.failed"] = ",".join(failed)[:250] if failed else "none"
    return tags


def log_gate_results(run_id: str, gates_dir: Path) -> list[GateSummary]:
    """Log the gate results in ``gates_dir`` on the (possibly finished) MLflow run ``run_id``.

    Args:
        run_id: the suite's parent run.
        gates_dir: a folder of ``<stage>.json`` gate results (the run folder's ``gates/``).

    Returns:
        What was logged, one summary per gate (empty when the folder is absent or empty).
    """
    import mlflow
    from mlflow.entities import Metric, RunTag

    from omnieval.tracking._store import tracking_uri

    summaries = read_gate_results(gates_dir)
    if not summaries:
        return summaries
    client = mlflow.MlflowClient(tracking_uri())
    info = client.get_run(run_id).info
    # Stamped at the run's end (or start): the gates belong to that execution, not to "now".
    timestamp = int(info.end_time or info.start_time or 0)
    client.log_batch(
        run_id,
        metrics=[Metric(k, v, timestamp, 0) for k, v in gate_metrics(summaries).items()],
        tags=[RunTag(k, v) for k, v in gate_tags(summaries).items()],
    )
    for g in summaries:
        client.log_artifact(run_id, str(g.path), artifact_path="gates")
    return summaries


def _safe(stage: str) -> str:
    """MLflow keys allow letters, digits, ``_ - . /`` and spaces; anything else becomes ``_``."""
    return _UNSAFE.sub("_", stage)
