"""The environment every Prefect flow of omnieval runs in (set before Prefect is imported)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from omnieval.errors import OmnievalError

# The loggers Prefect's task and flow engines report a failed run on, each with a traceback.
_RUN_LOGGERS = ("prefect.task_runs", "prefect.flow_runs")


class _UserErrorsWithoutTraceback(logging.Filter):
    """Drop the traceback Prefect attaches when a stage raises one of omnieval's user-facing errors.

    A gate that rejects a dataset is bad input, not a crash: the command ends with the error's own
    message (file, row, field) and exit 2; a traceback in the log above it only buries that message.
    Any other exception keeps its traceback.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], OmnievalError):
            record.exc_info = None
            record.exc_text = None
        return True


def quiet_user_errors() -> None:
    """Install :class:`_UserErrorsWithoutTraceback` on Prefect's run loggers (idempotent)."""
    for name in _RUN_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, _UserErrorsWithoutTraceback) for f in logger.filters):
            logger.addFilter(_UserErrorsWithoutTraceback())


def prepare_prefect_env() -> None:
    """Run flows without a Prefect server: a temporary local one, no analytics, a project-local home."""
    os.environ.setdefault("PREFECT_HOME", str(Path.cwd() / ".prefect"))
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    # The temporary server needs 11-17 s on an idle 2-core machine; the default 20 s limit is too
    # tight when the machine is busy.
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
    os.environ.setdefault("DO_NOT_TRACK", "true")
    # Loopback unless told otherwise: `prefect server start` and a runner's webserver would otherwise
    # follow whatever the environment says (the runner's default "localhost" may also mean ::1).
    # The temporary server Prefect starts for a run binds 127.0.0.1 itself.
    os.environ.setdefault("PREFECT_SERVER_API_HOST", "127.0.0.1")
    os.environ.setdefault("PREFECT_RUNNER_SERVER_HOST", "127.0.0.1")
    quiet_user_errors()
