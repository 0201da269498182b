"""Gather a run folder's instance viewer (``instances.html``) from what the folder holds.

The track stage calls this once the run folder has its candidates, ``scores.parquet``,
``judgments.parquet`` and ``regression.json``; ``omnieval view`` calls it for a folder written before
the viewer existed. Everything comes from the folder itself except the task inputs, which the
benchmark rebuilds from the dataset (a system's visible task, never a target field).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from omnieval.errors import OmnievalError
from omnieval.jsonio import read_json
from omnieval.progress import note

if TYPE_CHECKING:
    import pandas as pd

    from omnieval.benchmarks import Benchmark
    from omnieval.reporting import InstanceInputs


def _task_inputs(bench: Benchmark, dataset_path: Path, scores: pd.DataFrame) -> list[InstanceInputs]:
    """The visible task of every instance and condition in ``scores`` (empty when unavailable).

    A dataset that moved or no longer validates leaves the viewer without inputs rather than
    failing a run whose scores are already written; the note says why.
    """
    from omnieval.reporting import InstanceInputs

    wanted = set(scores["instance_id"].astype(str))
    conditions = sorted(set(scores["condition"].astype(str))) if "condition" in scores.columns else [""]
    try:
        instances = bench.instances(bench.load(dataset_path))
    except (OmnievalError, OSError) as exc:
        note(f"[instances] task inputs not shown: dataset {dataset_path}: {type(exc).__name__}: {exc}")
        return []
    out: list[InstanceInputs] = []
    for instance in instances:
        if str(instance.id) not in wanted:
            continue
        for condition in conditions:
            try:
                task = bench.visible_task(instance, condition)
            except OmnievalError as exc:
                note(f"[instances] task inputs not shown: {exc}")
                return out
            fields = {
                k: v for k, v in task.fields().items() if k not in ("benchmark", "index", "id", "condition")
            }
            media = frozenset(str(p) for p in task.media())
            out.append(InstanceInputs(str(instance.id), condition, fields, media))
    return out


def compared_run(folder: Path) -> tuple[str, Path | None]:
    """The compared run's id and its run folder (a sibling of ``folder``), from ``regression.json``.

    The folder is None when the run was not compared, or when the compared run's folder is gone
    (neither the sibling nor the recorded folder still has its ``scores.parquet``).
    """
    regression_path = folder / "regression.json"
    if not regression_path.is_file():
        return "", None
    baseline = read_json(regression_path).get("baseline")
    # ``{"run_id", "folder"}``, or a bare id in older files.
    run_id = str(baseline.get("run_id") or "") if isinstance(baseline, dict) else str(baseline or "")
    if not run_id:
        return "", None
    candidates = [folder.parent / run_id]
    if isinstance(baseline, dict) and baseline.get("folder"):
        candidates.append(Path(str(baseline["folder"])))
    found = next((c for c in candidates if (c / "scores.parquet").is_file()), None)
    return run_id, found


def write_run_instances(
    bench: Benchmark, folder: Path, *, dataset_path: Path | None, suite: str, run_id: str, **options: Any
) -> Path:
    """Write ``instances.html`` into the run folder ``folder``; returns its path.

    Args:
        bench: the run's benchmark (rebuilds the task inputs from ``dataset_path``).
        folder: the run folder (FORMATS.md section 4).
        dataset_path: the dataset folder, or None to show no task inputs.
        suite: the suite's name (the page title).
        run_id: the run's id (the page title).
        options: passed to :func:`omnieval.reporting.write_instances_page` (chunking limits).
    """
    import pandas as pd

    from omnieval.reporting import InstancesSource, write_instances_page
    from omnieval.scores import read_scores

    scores = read_scores(folder / "scores.parquet")
    judgments_path = folder / "judgments.parquet"
    judgments = pd.read_parquet(judgments_path) if judgments_path.is_file() else None
    baseline, baseline_folder = compared_run(folder)
    previous = previous_judgments = None
    if baseline_folder is not None:
        previous = read_scores(baseline_folder / "scores.parquet")
        if (baseline_folder / "judgments.parquet").is_file():
            previous_judgments = pd.read_parquet(baseline_folder / "judgments.parquet")
    inputs = _task_inputs(bench, dataset_path, scores) if dataset_path is not None else []
    source = InstancesSource(
        folder=folder,
        scores=scores,
        judgments=judgments,
        inputs=inputs,
        dataset_root=dataset_path,
        previous=previous,
        baseline=baseline,
        title=f"{suite} · {run_id}" if run_id else suite,
        run_id=run_id,
        previous_folder=baseline_folder,
        previous_judgments=previous_judgments,
    )
    return write_instances_page(source, **options)
