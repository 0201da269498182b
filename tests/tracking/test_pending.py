"""Runs kept while the tracking server was unreachable (``omnieval.tracking.pending``): what counts as
unreachable, the offline switch, and the pending record's round trip and errors."""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pytest
import requests
import urllib3.exceptions
from mlflow.exceptions import MlflowException, RestException

from omnieval.errors import DataError
from omnieval.tracking.pending import (
    OFFLINE_ENV,
    PENDING_DATASET_FILE,
    PENDING_FILE,
    PendingUpload,
    TrackingUnreachable,
    is_offline,
    local_run_id,
    offline,
    read_pending,
    unreachable,
    write_pending,
)

# MLflow's own wording when its retries run out (rest_utils.http_request), unchained.
GAVE_UP = (
    "API request to http://127.0.0.1:5999/api/2.0/mlflow/runs/create failed with exception "
    "HTTPConnectionPool(host='127.0.0.1', port=5999): Max retries exceeded with url: /api/2.0/mlflow/runs/create "
    "(Caused by NewConnectionError(\"HTTPConnection(host='127.0.0.1', port=5999): Failed to establish a new "
    'connection: [Errno 111] Connection refused"))'
)


def test_connection_failures_count_as_unreachable_and_refusals_do_not() -> None:
    assert unreachable(MlflowException(GAVE_UP))
    assert unreachable(requests.exceptions.ConnectionError("reset"))
    assert unreachable(urllib3.exceptions.ProtocolError("Connection aborted."))
    assert unreachable(ConnectionRefusedError(111, "Connection refused"))
    wrapped = RuntimeError("logging failed")
    wrapped.__cause__ = requests.exceptions.ConnectTimeout("timed out")
    assert unreachable(wrapped)
    # A server that answered: a permission or a bad request is the user's to fix, not to keep for later.
    denied = RestException({"error_code": "PERMISSION_DENIED", "message": "Permission denied"})
    assert not unreachable(denied)
    assert not unreachable(MlflowException("Invalid metric name: 'a b'"))
    assert not unreachable(ValueError("Connection settings are wrong"))


def test_offline_is_scoped_and_restores_what_was_there(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(OFFLINE_ENV, raising=False)
    assert not is_offline()
    with offline():
        assert is_offline()
        with pytest.raises(KeyError), offline():
            raise KeyError("x")
        assert is_offline()  # the inner block's exit leaves the outer one offline
    assert not is_offline() and OFFLINE_ENV not in os.environ
    monkeypatch.setenv(OFFLINE_ENV, "0")
    with offline():
        assert is_offline()
    assert os.environ[OFFLINE_ENV] == "0"


def test_the_server_lookups_ask_nothing_while_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    from omnieval.compare import tracking_server

    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:5999")
    assert tracking_server() == "http://127.0.0.1:5999"
    with offline():
        assert tracking_server() is None


def test_local_run_ids_sort_by_time_and_differ() -> None:
    moment = datetime(2026, 12, 7, 21, 30, 5, tzinfo=UTC)
    first, second = local_run_id(moment), local_run_id(moment)
    assert re.fullmatch(r"local-20261207T213005Z-[0-9a-f]{6}", first)
    assert first != second
    assert local_run_id(datetime(2026, 12, 8, tzinfo=UTC)) > first


def _pending(**changes: object) -> PendingUpload:
    values: dict[str, object] = {
        "experiment": "omnieval/nightly",
        "suite": "nightly",
        "tracking_uri": "http://team:5000",
        "reason": "Connection refused",
        "started_at": "2026-12-07T21:30:05+00:00",
        "partial_run_id": None,
        "arguments": {"tags": {"omnieval.benchmark": "storybench"}, "system_metrics": {"oracle": {"x": 1.5}}},
    }
    values.update(changes)
    return PendingUpload(**values)  # type: ignore[arg-type]


def test_a_pending_record_reads_back_as_written(tmp_path: Path) -> None:
    frame = pd.DataFrame({"instance": ["a", "b"], "n": [1, 2]})
    write_pending(tmp_path, _pending(partial_run_id="abc123"), frame)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([PENDING_FILE, PENDING_DATASET_FILE])
    assert read_pending(tmp_path) == _pending(partial_run_id="abc123")
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / PENDING_DATASET_FILE), frame)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"suite": "nightly"}, "field 'experiment' must be a string"),
        ({**_pending().__dict__, "arguments": []}, "field 'arguments' must be an object"),
        ({**_pending().__dict__, "partial_run_id": 3}, "field 'partial_run_id' must be a string or null"),
        ([1, 2], "expected a JSON object"),
    ],
)
def test_a_malformed_record_names_its_field(tmp_path: Path, document: object, message: str) -> None:
    (tmp_path / PENDING_FILE).write_text(json.dumps(document))
    (tmp_path / PENDING_DATASET_FILE).write_bytes(b"")
    with pytest.raises(DataError, match=re.escape(message)) as caught:
        read_pending(tmp_path)
    assert str(tmp_path / PENDING_FILE) in str(caught.value)


def test_a_folder_without_a_record_says_why_there_is_nothing_to_upload(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=re.escape("no tracking_pending.json")):
        read_pending(tmp_path)
    (tmp_path / "mlflow.json").write_text("{}")
    with pytest.raises(DataError, match="already tracked"):
        read_pending(tmp_path)
    write_pending(tmp_path, _pending(), pd.DataFrame({"a": [1]}))
    (tmp_path / PENDING_DATASET_FILE).unlink()
    with pytest.raises(DataError, match=re.escape("tracking_pending_dataset.parquet is missing")):
        read_pending(tmp_path)


def test_unreachable_is_final_for_the_flow_and_exits_1() -> None:
    from omnieval.flows.nightly import _transient

    class Failed:
        def __init__(self, error: BaseException) -> None:
            self.error = error

        def result(self, raise_on_failure: bool = False) -> BaseException:
            return self.error

    assert TrackingUnreachable.exit_code == 1
    assert not _transient(None, None, Failed(TrackingUnreachable("gone")))
    assert _transient(None, None, Failed(RuntimeError("flaky")))
