"""Runs whose tracking server could not be reached: kept on disk, uploaded later.

MLflow's REST client already retries each request with exponential backoff and jitter
(``MLFLOW_HTTP_REQUEST_MAX_RETRIES``, default 7 tries; ``MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR``,
default 2 s, doubling; ``MLFLOW_HTTP_REQUEST_BACKOFF_JITTER``), connection errors and resets
included, so a tracking server that is killed and restarted within those few minutes costs a run
nothing: the request that failed is sent again, and the store drops a metric it already holds. When
the retries run out, the track stage writes the run folder under a local id
(``runs/<suite>/local-<UTC time>-<hex>``), records here what the MLflow runs would have held
(:data:`PENDING_FILE`), and fails with :class:`TrackingUnreachable`; ``omnieval track RUN`` logs the
kept folder once the server answers again (``omnieval.stages.track.upload_pending``).

While such a folder is written, :func:`offline` tells the code that would ask the server (the
previous run on the server, the slow-drift history, the verdict tags) not to: each would otherwise
wait out its own retries.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from omnieval.errors import DataError, OmnievalError
from omnieval.jsonio import read_json_object

PENDING_FILE = "tracking_pending.json"
"""In a run folder written while the server was unreachable: what :func:`read_pending` reads."""
PENDING_DATASET_FILE = "tracking_pending_dataset.parquet"
"""The dataset table the suite run logs as its MLflow dataset input, kept for the upload."""
PENDING_FILES = (PENDING_FILE, PENDING_DATASET_FILE)
LOCAL_RUN_PREFIX = "local-"
OFFLINE_ENV = "OMNIEVAL_TRACKING_OFFLINE"


class TrackingUnreachable(OmnievalError):
    """The tracking server did not answer after MLflow's retries; the run folder was kept (a flow
    retry of the stage would only keep a second copy)."""

    exit_code = 1
    final = True


@dataclass(frozen=True)
class PendingUpload:
    """What ``log_suite_run`` would have been given, in JSON types (``tracking_pending.json``).

    Attributes:
        experiment, suite: Where the runs go.
        tracking_uri: The server that did not answer, password removed (for the message).
        reason: The last error, first line.
        started_at: The suite execution's start (ISO 8601, UTC).
        partial_run_id: A parent run the server did create before it went away (it stays there,
            unfinished or FAILED; the upload makes a new one and tags it ``omnieval.replaces_run``),
            or None.
        arguments: ``log_suite_run``'s keyword arguments that are plain data (config, tags,
            system metrics and params, panels, patterns, usage, deviations as dicts, dataset name,
            source and digest, git_dirty).
    """

    experiment: str
    suite: str
    tracking_uri: str
    reason: str
    started_at: str
    partial_run_id: str | None
    arguments: dict[str, Any] = field(default_factory=dict)


def unreachable(exc: BaseException) -> bool:
    """True when ``exc`` (or an exception it was raised from) says the server could not be reached:
    a refused, reset or timed-out connection after MLflow's retries, not a refusal by a server
    that answered (401/403, a bad request).

    Example:
        >>> unreachable(ConnectionRefusedError(111, "Connection refused"))
        True
        >>> unreachable(ValueError("bad metric name"))
        False
    """
    import requests
    import urllib3.exceptions

    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(
            current,
            ConnectionError
            | TimeoutError
            | requests.exceptions.ConnectionError
            | requests.exceptions.Timeout
            | urllib3.exceptions.MaxRetryError
            | urllib3.exceptions.ProtocolError,
        ):
            return True
        text = str(current)
        # MLflow re-raises a failed request as MlflowException("API request to ... failed with
        # exception HTTPConnectionPool(...): Max retries exceeded ...") without chaining it.
        if "failed with exception" in text and ("Max retries exceeded" in text or "Connection" in text):
            return True
        current = current.__cause__ or current.__context__
    return False


@contextmanager
def offline() -> Iterator[None]:
    """Within this block :func:`is_offline` is true: nothing asks the tracking server."""
    before = os.environ.get(OFFLINE_ENV)
    os.environ[OFFLINE_ENV] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(OFFLINE_ENV, None)
        else:
            os.environ[OFFLINE_ENV] = before


def is_offline() -> bool:
    """Whether a run folder is being written without the tracking server (:func:`offline`)."""
    return os.environ.get(OFFLINE_ENV) == "1"


def local_run_id(moment: datetime | None = None) -> str:
    """A run folder name for a run the server has not numbered, e.g. ``local-20261207T213005Z-3fa2c1``
    (the UTC time it was written, then 6 random hex digits)."""
    stamp = (moment or datetime.now(UTC)).astimezone(UTC)
    return f"{LOCAL_RUN_PREFIX}{stamp:%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


def write_pending(folder: Path, pending: PendingUpload, dataset_frame: Any) -> None:
    """Record ``pending`` (and the dataset table) in ``folder``; the JSON goes last, atomically, so
    a folder with :data:`PENDING_FILE` always has everything the upload needs."""
    dataset_frame.to_parquet(folder / PENDING_DATASET_FILE, index=False)
    tmp = folder / f".{PENDING_FILE}.tmp"
    tmp.write_text(
        json.dumps(asdict(pending), indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8"
    )
    tmp.replace(folder / PENDING_FILE)


def read_pending(folder: Path) -> PendingUpload:
    """The pending upload recorded in ``folder``.

    Raises:
        DataError: ``folder`` has no :data:`PENDING_FILE` (it is not a run kept for upload: already
            tracked, or not a run folder), or the file is malformed (the field is named).
    """
    path = folder / PENDING_FILE
    if not path.is_file():
        tracked = (folder / "mlflow.json").is_file()
        raise DataError(
            f"{folder}: nothing to upload: "
            + (
                "the run is already tracked (its mlflow.json names its MLflow runs)"
                if tracked
                else f"no {PENDING_FILE} (only a run whose tracking server could not be reached has one)"
            )
        )
    document = read_json_object(path)
    required = {"experiment": str, "suite": str, "tracking_uri": str, "reason": str, "started_at": str}
    for name, kind in required.items():
        if not isinstance(document.get(name), kind):
            raise DataError(f"{path}: field '{name}' must be a string")
    if not isinstance(document.get("arguments"), Mapping):
        raise DataError(f"{path}: field 'arguments' must be an object")
    partial = document.get("partial_run_id")
    if partial is not None and not isinstance(partial, str):
        raise DataError(f"{path}: field 'partial_run_id' must be a string or null")
    if not (folder / PENDING_DATASET_FILE).is_file():
        raise DataError(f"{folder}: {PENDING_DATASET_FILE} is missing (the dataset input of the run)")
    return PendingUpload(
        experiment=document["experiment"],
        suite=document["suite"],
        tracking_uri=document["tracking_uri"],
        reason=document["reason"],
        started_at=document["started_at"],
        partial_run_id=partial,
        arguments=dict(document["arguments"]),
    )
