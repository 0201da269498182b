"""The flows-facing API: what ``omnieval run``/``serve`` and the Prefect flows call.

The Prefect flow itself lives in ``flows/nightly.py`` (scheduling, retries, concurrency only);
this module finds and loads it and syncs DVC's lock afterwards so ``dvc repro`` sees a run made by
the flow as up to date.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

from omnieval.errors import OmnievalError


def project_root(start: Path | None = None) -> Path:
    """The nearest folder (from ``start`` or CWD upwards) that holds ``flows/nightly.py``."""
    env = os.environ.get("OMNIEVAL_PROJECT_ROOT")
    if env:
        return Path(env)
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "flows" / "nightly.py").is_file():
            return folder
    raise OmnievalError("cannot find flows/nightly.py: run omnieval from the project folder")


def load_flow_module(name: str = "nightly") -> ModuleType:
    path = project_root() / "flows" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"omnieval_flows_{name}", path)
    if spec is None or spec.loader is None:
        raise OmnievalError(f"cannot load flow {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def prepare_prefect_env() -> None:
    """Run flows without a Prefect server: a temporary local one, no analytics, a project-local home."""
    os.environ.setdefault("PREFECT_HOME", str(Path.cwd() / ".prefect"))
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    # The temporary server needs 11-17 s on an idle 2-core machine; the default 20 s limit is too
    # tight when the machine is busy.
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
    os.environ.setdefault("DO_NOT_TRACK", "true")


def run_suite(suite_path: Path, *, sync_dvc: bool = True) -> dict[str, Any]:
    """Run the nightly flow on ``suite_path`` in this process; return its summary.

    ``sync_dvc`` records the outputs in ``dvc.lock`` afterwards (off for suites outside the DAG).
    """
    from omnieval.config import load_suite
    from omnieval.errors import DataError, GateFailed

    config = load_suite(suite_path)  # fail on a bad config before Prefect starts
    prepare_prefect_env()
    module = load_flow_module("nightly")
    try:
        summary: dict[str, Any] = module.nightly(str(suite_path))
    except (DataError, GateFailed) as exc:
        _record_gate_failure(config, str(exc))
        raise
    if sync_dvc:
        sync_dvc_lock()
    return summary


NIGHTLY_DVC_STAGES = ("validate", "generate", "metrics", "judge", "report", "track")
"""The ``dvc.yaml`` stages the nightly flow runs (``train_evaluator`` is not one of them)."""


def sync_dvc_lock() -> None:
    """Record the outputs the flow just produced in ``dvc.lock`` (``dvc commit``).

    The flow runs exactly the stage functions that ``dvc.yaml`` declares, so committing their
    current deps and outs makes ``dvc status`` clean and ``dvc repro`` a no-op after a run. Only
    those stages are committed: committing ``train_evaluator`` here would record the checkpoints
    on disk as the product of whatever training code is current, without having trained them.
    """
    root = project_root()
    dvc = shutil.which("dvc")
    if dvc is None or not (root / "dvc.yaml").is_file() or not (root / ".dvc").is_dir():
        return
    subprocess.run(
        [dvc, "commit", "--force", "--quiet", *NIGHTLY_DVC_STAGES], cwd=root, check=False, timeout=600
    )


def _record_gate_failure(config: Any, reason: str) -> None:
    """Save the failed gate results as a FAILED MLflow run, so nothing looks like a successful run."""
    from omnieval.stages._common import state_paths
    from omnieval.tracking import log_failed_run

    gates = state_paths(config).gates
    artifacts = sorted(gates.glob("*.json")) if gates.is_dir() else []
    run_id = log_failed_run(
        experiment=config.experiment,
        suite=config.suite,
        reason=reason.splitlines()[0],
        artifacts=artifacts,
        tags={"omnieval.dataset.path": str(config.dataset.path)},
    )
    print(f"gate failed; results saved in {gates} and MLflow run {run_id} (status FAILED)", flush=True)
