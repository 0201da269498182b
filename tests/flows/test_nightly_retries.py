"""The nightly flow retries transient failures only: a failed gate or bad data fails at once."""

from __future__ import annotations

import contextlib

from prefect import flow, task

from omnieval.errors import DataError, GateFailed
from omnieval.flows.nightly import _transient


def test_bad_data_and_failed_gates_are_not_retried_but_flaky_work_is() -> None:
    calls = {"data": 0, "gate": 0, "flaky": 0}

    @task(retries=2, retry_delay_seconds=0, retry_condition_fn=_transient)
    def bad_data() -> None:
        calls["data"] += 1
        raise DataError("row 3: speech_speed: unknown label")

    @task(retries=2, retry_delay_seconds=0, retry_condition_fn=_transient)
    def failed_gate() -> None:
        calls["gate"] += 1
        raise GateFailed("scores gate failed")

    @task(retries=2, retry_delay_seconds=0, retry_condition_fn=_transient)
    def flaky() -> int:
        calls["flaky"] += 1
        if calls["flaky"] < 3:
            raise RuntimeError("connection reset")
        return 1

    @flow
    def nightly_like() -> int:
        for step in (bad_data, failed_gate):
            with contextlib.suppress(DataError, GateFailed):
                step()
        return flaky()

    assert nightly_like() == 1
    assert calls == {"data": 1, "gate": 1, "flaky": 3}
