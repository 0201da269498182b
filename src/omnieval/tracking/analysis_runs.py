"""Analyses as MLflow runs tagged ``omnieval.kind=analysis`` (FORMATS.md section 5).

Each analysis becomes one run (nested under the suite's parent run when one is given) holding its
parameters (seeds, draws, alpha, ...), a few headline metrics, its JSON and its plots. This module and
:mod:`omnieval.tracking._mlflow` are the only places that import mlflow.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PARAMS_DIR = "_params"


@dataclass(frozen=True)
class _Item:
    name: str
    json_path: Path
    plots: tuple[Path, ...]
    params: dict[str, Any]
    status: str
    reason: str | None


def _params_for(json_path: Path, doc: Any) -> dict[str, Any]:
    side = json_path.parent / PARAMS_DIR / json_path.name
    if side.is_file():
        loaded = json.loads(side.read_text(encoding="utf-8"))
        if isinstance(loaded, dict):
            return loaded
    if isinstance(doc, dict) and isinstance(doc.get("params"), dict):
        return dict(doc["params"])
    return {}


def _plots_for(json_path: Path) -> tuple[Path, ...]:
    folder, stem = json_path.parent, json_path.stem
    found = [folder / f"{stem}.png", *sorted(folder.glob(f"{stem}_*.png"))]
    return tuple(p for p in found if p.is_file())


def _item_from_json(name: str, json_path: Path) -> _Item:
    doc = json.loads(json_path.read_text(encoding="utf-8"))
    status = str(doc.get("status", "ok")) if isinstance(doc, dict) else "ok"
    reason = doc.get("reason") if isinstance(doc, dict) else None
    return _Item(name, json_path, _plots_for(json_path), _params_for(json_path, doc), status, reason)


def _items(results: Mapping[str, Any] | Path) -> list[_Item]:
    if isinstance(results, Path):
        if not results.is_dir():
            raise FileNotFoundError(f"{results}: no analyses folder")
        return [_item_from_json(p.stem, p) for p in sorted(results.glob("*.json"))]
    items = []
    for name, value in results.items():
        json_path = getattr(value, "json_path", None)
        if json_path is not None:  # an AnalysisOutput
            items.append(
                _Item(
                    name,
                    Path(json_path),
                    tuple(Path(p) for p in value.plots),
                    dict(value.params),
                    str(value.status),
                    value.reason,
                )
            )
        elif isinstance(value, str | Path):
            items.append(_item_from_json(name, Path(value)))
        else:
            raise TypeError(
                f"analysis {name!r}: expected an AnalysisOutput or a JSON path, got {type(value)!r}"
            )
    return items


def _flatten(prefix: str, value: Any, out: dict[str, str]) -> None:
    if isinstance(value, Mapping):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    else:
        text = json.dumps(value) if isinstance(value, list | tuple) else str(value)
        out[prefix] = text[:500]


def log_analysis_runs(
    results: Mapping[str, Any] | Path,
    *,
    parent_run_id: str | None = None,
    experiment: str,
    tags: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Log every analysis as its own MLflow run and return ``{analysis name: run id}``.

    Args:
        results: what :func:`omnieval.analysis.run_analyses` returned, a mapping of analysis name ->
            JSON path, or the analyses folder itself (``<name>.json``, ``<name>*.png`` and
            ``_params/<name>.json``).
        parent_run_id: nest the runs under this run (its experiment is used); None = top-level runs
            in ``experiment``.
        experiment: MLflow experiment name (created when missing, with the project's artifact store).
        tags: extra tags for every run (dataset version, git sha, ...).

    Each run is tagged ``omnieval.kind=analysis``, ``omnieval.analysis=<name>`` and
    ``omnieval.analysis.status`` (``ok``/``skipped``), holds the analysis parameters as params, its
    headline figures as metrics, and the JSON and PNG files as artifacts.
    """
    import mlflow
    from mlflow.entities import Metric, Param, RunTag

    from omnieval.analysis import headline_metrics
    from omnieval.tracking._store import configure_mlflow

    if mlflow.active_run() is None:
        configure_mlflow(experiment)
    client = mlflow.MlflowClient()
    if parent_run_id is not None:
        experiment_id = client.get_run(parent_run_id).info.experiment_id
    else:
        found = client.get_experiment_by_name(experiment)
        experiment_id = found.experiment_id if found is not None else configure_mlflow(experiment)
    run_ids: dict[str, str] = {}
    for item in _items(results):
        run_tags = {
            "omnieval.kind": "analysis",
            "omnieval.analysis": item.name,
            "omnieval.analysis.status": item.status,
            **({"omnieval.analysis.skip_reason": item.reason[:250]} if item.reason else {}),
            **({"mlflow.parentRunId": parent_run_id} if parent_run_id else {}),
            **dict(tags or {}),
        }
        run = client.create_run(experiment_id, run_name=f"analysis: {item.name}", tags=run_tags)
        run_id = run.info.run_id
        try:
            params: dict[str, str] = {}
            _flatten("", item.params, params)
            doc = json.loads(item.json_path.read_text(encoding="utf-8"))
            metrics = headline_metrics(item.name, doc) if item.status == "ok" else {}
            now = int(time.time() * 1000)
            client.log_batch(
                run_id,
                metrics=[Metric(k, v, now, 0) for k, v in metrics.items()],
                params=[Param(k, v) for k, v in params.items()],
                tags=[RunTag("mlflow.note.content", f"omnieval analysis {item.name} ({item.status})")],
            )
            client.log_artifact(run_id, str(item.json_path))
            for png in item.plots:
                client.log_artifact(run_id, str(png), artifact_path="plots")
        except Exception:
            client.set_terminated(run_id, status="FAILED")
            raise
        client.set_terminated(run_id, status="FINISHED")
        run_ids[item.name] = run_id
    return run_ids
