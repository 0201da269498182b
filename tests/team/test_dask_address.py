"""The Dask address `omnieval team up` prints reaches the flow's task runner."""

from __future__ import annotations

import pytest

from omnieval.config import ExecutionConfig
from omnieval.flows import dask_task_runner


def test_dask_scheduler_address_is_used_when_the_suite_names_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", "tcp://127.0.0.1:18786")
    runner = dask_task_runner(ExecutionConfig(runner="dask"))
    assert runner.address == "tcp://127.0.0.1:18786"
    # The suite's own address wins.
    named = dask_task_runner(ExecutionConfig(runner="dask", address="tcp://10.0.0.5:8786"))
    assert named.address == "tcp://10.0.0.5:8786"
