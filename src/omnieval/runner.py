"""The flows-facing API: what ``omnieval run``/``serve``/``train`` call.

The Prefect flows live in :mod:`omnieval.flows` (scheduling, retries, concurrency only; the
top-level ``flows/*.py`` are thin entry points the library never loads). This module imports a
flow, runs it, and syncs DVC's lock afterwards so ``dvc repro`` sees a run made by the flow as up
to date. ``dvc.yaml`` itself is rendered from the suites (:mod:`omnieval.flows.dvc_yaml`,
``omnieval dvc-yaml``); a run says so when the suite's stages there are stale.
"""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from omnieval.errors import OmnievalError
from omnieval.flows import prepare_prefect_env


def project_root(start: Path | None = None) -> Path:
    """The nearest folder (from ``start`` or CWD upwards) that holds ``dvc.yaml``."""
    env = os.environ.get("OMNIEVAL_PROJECT_ROOT")
    if env:
        return Path(env)
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "dvc.yaml").is_file():
            return folder
    raise OmnievalError("cannot find dvc.yaml: run omnieval from the project folder")


FLOWS = ("nightly", "night", "train_evaluators")
"""The flows of :mod:`omnieval.flows`."""


def load_flow_module(name: str = "nightly") -> ModuleType:
    """Import the flow module ``omnieval.flows.<name>`` (this imports Prefect)."""
    if name not in FLOWS:
        raise OmnievalError(f"unknown flow {name!r}; known: {', '.join(FLOWS)}")
    return importlib.import_module(f"omnieval.flows.{name}")


@contextmanager
def prefect_api(url: str | None) -> Iterator[None]:
    """Point Prefect at ``url`` for the block: Prefect reads its settings when it is imported, so an
    address exported afterwards is not seen without this."""
    if not url:
        yield
        return
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: url}):
        yield


RUNNERS = ("default", "dask")
"""Task runners of the nightly flow (``execution.runner`` / ``omnieval run --runner``)."""


def run_suite(suite_path: Path, *, sync_dvc: bool = True, runner: str | None = None) -> dict[str, Any]:
    """Run the nightly flow on ``suite_path`` in this process; return its summary.

    ``sync_dvc`` records the outputs in ``dvc.lock`` afterwards (off for suites outside the DAG).
    ``runner`` overrides the suite's ``execution.runner``: ``default`` (tasks in this process) or
    ``dask`` (per-shard tasks on a Dask cluster; docs/scale.md).
    """
    from omnieval.config import load_suite
    from omnieval.errors import DataError, GateFailed
    from omnieval.flows import EarlyPrefectServer

    prepare_prefect_env()
    # The temporary Prefect server starts while the suite and the flow load (a bad config stops it).
    with EarlyPrefectServer() as server:
        config = load_suite(suite_path)
        chosen = runner or config.execution.runner
        if chosen not in RUNNERS:
            raise OmnievalError(f"unknown runner {chosen!r}; known: {', '.join(RUNNERS)}")
        module = load_flow_module("nightly")
        try:
            if chosen == "dask":
                from omnieval.flows import dask_task_runner, shared_prefect_api

                server.wait()
                with shared_prefect_api(), prefect_api(os.environ.get("PREFECT_API_URL")):
                    flow = module.nightly.with_options(task_runner=dask_task_runner(config.execution))
                    summary: dict[str, Any] = flow(str(suite_path), runner="dask")
            else:
                with prefect_api(server.wait()):
                    summary = module.nightly(str(suite_path), runner="default")
        except (DataError, GateFailed) as exc:
            _record_gate_failure(config, str(exc))
            raise
    if sync_dvc:
        sync_dvc_lock(suite_path)
    return summary


def run_night(
    suite_paths: list[Path],
    *,
    date: str | None = None,
    timezone: str = "UTC",
    nights_dir: Path | None = None,
    sync_dvc: bool = True,
) -> dict[str, Any]:
    """Run the night flow on ``suite_paths`` in this process, now; return its summary.

    The suites run one after another; one that fails is recorded as failed to run and the others
    still run. ``sync_dvc`` records each suite's outputs in ``dvc.lock`` afterwards, as
    :func:`run_suite` does.
    """
    from omnieval.flows import EarlyPrefectServer

    prepare_prefect_env()
    with EarlyPrefectServer() as server:
        module = load_flow_module("night")
        with prefect_api(server.wait()):
            summary: dict[str, Any] = module.night(
                [str(p) for p in suite_paths],
                date=date,
                timezone=timezone,
                nights_dir=None if nights_dir is None else str(nights_dir),
            )
    if sync_dvc:
        for path in suite_paths:
            if Path(path).is_file():
                try:
                    sync_dvc_lock(path)
                except OmnievalError:  # run outside a DVC project: nothing to record, the night stands
                    continue
    return summary


def dvc_stages_for(suite_path: Path, dvc_yaml: Path) -> list[str]:
    """Names of the ``dvc.yaml`` stages whose command runs a stage module on ``suite_path``.

    ``train_evaluator`` never matches (it runs ``omnieval train``), so a suite run does not record
    checkpoints on disk as the product of whatever training code is current.
    """
    import yaml

    try:
        stages = (yaml.safe_load(dvc_yaml.read_text(encoding="utf-8")) or {}).get("stages", {})
    except (OSError, yaml.YAMLError):
        return []
    wanted = f"--suite {Path(suite_path).as_posix()}"
    names = []
    for name, stage in stages.items():
        cmd = str((stage.get("do") or stage).get("cmd", "")) if isinstance(stage, dict) else ""
        if "omnieval.stages." in cmd and (cmd.endswith(wanted) or f"{wanted} " in cmd):
            names.append(name)
    return names


def _beside_interpreter(tool: str) -> str | None:
    """``tool`` installed beside this Python (a virtual environment not on PATH), or None."""
    import sys

    found = Path(sys.executable).with_name(tool)
    return str(found) if found.is_file() else None


def sync_dvc_lock(suite_path: Path = Path("pipelines/nightly.yaml")) -> None:
    """Record the outputs the flow just produced in ``dvc.lock`` (``dvc commit``).

    The flow runs exactly the stage functions that ``dvc.yaml`` declares for the suite, so
    committing their current deps and outs makes ``dvc status`` clean and ``dvc repro`` a no-op
    after a run. Only the suite's own stages are committed. Outside any DVC project (no
    ``dvc.yaml`` from the working directory up) there is no lock to sync: the run stands as it is.
    """
    try:
        root = project_root()
    except OmnievalError:
        return
    dvc = shutil.which("dvc") or _beside_interpreter("dvc")
    if dvc is None or not (root / "dvc.yaml").is_file() or not (root / ".dvc").is_dir():
        return
    try:
        relative = Path(suite_path).resolve().relative_to(root.resolve())
    except ValueError:
        return  # a suite outside the project is not part of its DAG
    if not dvc_stages_for(relative, root / "dvc.yaml"):
        return
    stale = dvc_yaml_drift(relative, root)
    if stale and _rewrite_dvc_yaml(root):
        # The suite changed (a system added or removed, another dataset): its stages follow it, as
        # `omnieval dvc-yaml` would write them, so the lock records what the run just did.
        print(
            f"dvc.yaml: rewrote the stages of {relative.as_posix()} from the suite "
            f"({', '.join(stale)} had changed; `omnieval dvc-yaml --check` compares, commit it with the suite)",
            flush=True,
        )
    stages = dvc_stages_for(relative, root / "dvc.yaml")
    if stages:
        subprocess.run([dvc, "commit", "--force", "--quiet", *stages], cwd=root, check=False, timeout=600)


def _rewrite_dvc_yaml(root: Path) -> bool:
    """Render ``dvc.yaml`` again from the suites it covers; False (and a note) when that fails."""
    from omnieval.flows.dvc_yaml import covered_suites, render, write_atomic

    try:
        text, _ = render(covered_suites(root / "dvc.yaml"), root)
    except (OmnievalError, OSError) as exc:
        print(f"dvc.yaml is stale for this suite and could not be rewritten: {exc}", flush=True)
        return False
    write_atomic(root / "dvc.yaml", text)
    return True


def dvc_yaml_drift(suite: Path, root: Path) -> list[str]:
    """Names of the suite's ``dvc.yaml`` stages that differ from what the suite file gives now
    (``omnieval dvc-yaml`` renders them); empty when they match or the suite is not covered."""
    import yaml

    from omnieval.flows.dvc_yaml import covered_suites, stage_prefix, suite_stages

    dvc_yaml = root / "dvc.yaml"
    try:
        suites = covered_suites(dvc_yaml)
        name = suite.as_posix()
        if name not in suites:
            return []
        wanted = suite_stages(name, root, prefix=stage_prefix(name, root, suites.index(name) == 0)).stages
        have = (yaml.safe_load(dvc_yaml.read_text(encoding="utf-8")) or {}).get("stages") or {}
    except (OmnievalError, OSError, yaml.YAMLError):
        return []  # a suite that does not load fails its run elsewhere; nothing to say here
    return [stage for stage, body in wanted.items() if have.get(stage) != body]


def _record_gate_failure(config: Any, reason: str) -> None:
    """Save the failed gate results as a FAILED MLflow run, so nothing looks like a successful run."""
    from omnieval.stages import state_paths
    from omnieval.tracking import log_failed_run

    gates = state_paths(config).gates
    artifacts = sorted(gates.glob("*.json")) if gates.is_dir() else []
    run_id = log_failed_run(
        experiment=config.experiment,
        suite=config.suite,
        reason=reason.splitlines()[0],
        artifacts=artifacts,
        tags={"omnieval.dataset.path": str(config.dataset_path), "omnieval.benchmark": config.benchmark},
    )
    print(f"gate failed; results saved in {gates} and MLflow run {run_id} (status FAILED)", flush=True)
