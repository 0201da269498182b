"""Prefect's run loggers keep a failed stage's one-line message but drop the traceback of a user error."""

from __future__ import annotations

import logging
import sys

import pytest

from omnieval.errors import GateFailed
from omnieval.flows._env import quiet_user_errors


def _record(exc: BaseException) -> logging.LogRecord:
    try:
        raise exc
    except BaseException:
        info = sys.exc_info()
    return logging.LogRecord("prefect.task_runs", logging.ERROR, __file__, 1, "failed: %r", (exc,), info)


@pytest.mark.parametrize("logger_name", ["prefect.task_runs", "prefect.flow_runs"])
def test_user_errors_lose_the_traceback_other_errors_keep_it(logger_name: str) -> None:
    quiet_user_errors()
    quiet_user_errors()  # idempotent: one filter
    logger = logging.getLogger(logger_name)
    assert len([f for f in logger.filters if type(f).__name__ == "_UserErrorsWithoutTraceback"]) == 1
    formatter = logging.Formatter("%(message)s")

    gate = _record(GateFailed("gate candidates failed: row 3, field image"))
    assert logger.filter(gate)
    text = formatter.format(gate)
    assert "gate candidates failed: row 3, field image" in text and "Traceback" not in text

    crash = _record(ValueError("a bug"))
    assert logger.filter(crash)
    assert "Traceback" in formatter.format(crash)
