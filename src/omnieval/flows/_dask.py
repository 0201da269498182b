"""The Dask task runner of the nightly flow (``execution: {runner: dask}`` or ``--runner dask``).

Prefect's ``prefect-dask`` integration runs the flow's submitted tasks on Dask workers: a
``LocalCluster`` of worker processes on this machine (scheduler and workers bound to 127.0.0.1,
no dashboard), or an existing scheduler named by ``execution.address`` or, failing that,
``DASK_SCHEDULER_ADDRESS``. Worker processes report
task states to the flow's Prefect API, so one temporary API server is started for the whole run
when none is configured (without it every worker would start its own).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from omnieval.config import ExecutionConfig

SCHEDULER_ADDRESS_ENV = "DASK_SCHEDULER_ADDRESS"
"""Dask's own variable for its scheduler (``scheduler-address``): used when the suite's
``execution.address`` is unset (``omnieval team up`` prints it; docs/team.md)."""


def dask_task_runner(execution: ExecutionConfig) -> Any:
    """A ``DaskTaskRunner`` for ``execution`` (imports Dask)."""
    from prefect_dask.task_runners import DaskTaskRunner

    address = execution.address or os.environ.get(SCHEDULER_ADDRESS_ENV) or None
    if address:
        return DaskTaskRunner(address=address)
    # Worker processes compiling one numba kernel at once can corrupt its on-disk cache.
    from omnieval.flows.numba_warm import warm_numba_kernels

    warm_numba_kernels()
    return DaskTaskRunner(
        cluster_class="distributed.LocalCluster",
        cluster_kwargs={
            "n_workers": execution.n_workers,
            "threads_per_worker": execution.threads_per_worker,
            "processes": True,
            "host": "127.0.0.1",
            "dashboard_address": None,
        },
    )


@contextmanager
def shared_prefect_api(startup_timeout_s: float = 180.0) -> Iterator[str | None]:
    """Make one Prefect API reachable by the flow and its workers for the duration of a run.

    With ``PREFECT_API_URL`` set (a real server) nothing is started. Otherwise a temporary server
    is started on 127.0.0.1 and its address exported before the cluster's workers are spawned, so
    they inherit it; it is stopped afterwards.
    """
    if os.environ.get("PREFECT_API_URL"):
        yield os.environ["PREFECT_API_URL"]
        return
    from prefect.server.api.server import SubprocessASGIServer

    from omnieval.flows._env import prepare_prefect_env

    prepare_prefect_env()
    server = SubprocessASGIServer()
    server.start(timeout=int(startup_timeout_s))
    os.environ["PREFECT_API_URL"] = server.api_url
    try:
        yield server.api_url
    finally:
        os.environ.pop("PREFECT_API_URL", None)
        server.stop()
