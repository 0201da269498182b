"""The environment every Prefect flow of omnieval runs in (set before Prefect is imported)."""

from __future__ import annotations

import os
from pathlib import Path


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
