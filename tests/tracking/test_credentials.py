"""MLflow credentials from the environment or a 0600 file, and URIs written without passwords."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from omnieval.errors import ConfigError
from omnieval.security import redact
from omnieval.tracking import (
    apply_credentials,
    credentials_text,
    read_credentials,
    tracking_uri,
    without_password,
    write_private,
)
from omnieval.tracking.open_runs import mark_open, read_open


def test_write_private_makes_a_0600_file_that_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "c" / "viewer.ini"
    write_private(path, credentials_text("viewer", "pw-0123456789"))
    assert path.stat().st_mode & 0o777 == 0o600
    assert read_credentials(path) == ("viewer", "pw-0123456789")


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660])
def test_a_file_others_or_the_group_can_read_is_refused_naming_it(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "loose.ini"
    path.write_text(credentials_text("evaluator", "pw-0123456789"))
    os.chmod(path, mode)
    with pytest.raises(ConfigError, match=f"credentials file {path} has permissions {mode:04o}"):
        read_credentials(path)


def test_a_file_without_both_values_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "half.ini"
    write_private(path, "[mlflow]\nmlflow_tracking_username = viewer\n")
    with pytest.raises(ConfigError, match="needs \\[mlflow\\]"):
        read_credentials(path)


def test_the_environment_wins_over_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "viewer.ini"
    write_private(path, credentials_text("viewer", "pw-from-file-1234"))
    monkeypatch.setenv("OMNIEVAL_MLFLOW_CREDENTIALS", str(path))
    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", "evaluator")
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", "pw-from-env-5678")
    assert apply_credentials() == "evaluator"
    assert os.environ["MLFLOW_TRACKING_PASSWORD"] == "pw-from-env-5678"
    monkeypatch.delenv("MLFLOW_TRACKING_USERNAME")
    monkeypatch.delenv("MLFLOW_TRACKING_PASSWORD")
    assert apply_credentials() == "viewer"
    assert os.environ["MLFLOW_TRACKING_PASSWORD"] == "pw-from-file-1234"


def test_the_file_is_read_only_with_a_tracking_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loose = tmp_path / "loose.ini"
    loose.write_text(credentials_text("viewer", "pw-0123456789"))
    os.chmod(loose, 0o644)
    monkeypatch.setenv("OMNIEVAL_MLFLOW_CREDENTIALS", str(loose))
    monkeypatch.delenv("MLFLOW_TRACKING_USERNAME", raising=False)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:1")
    with pytest.raises(ConfigError, match="permissions 0644"):
        tracking_uri()
    monkeypatch.delenv("MLFLOW_TRACKING_URI")
    monkeypatch.chdir(tmp_path)
    assert tracking_uri().startswith("sqlite:///")  # the embedded default is unchanged


def test_uris_lose_their_password() -> None:
    assert without_password("http://viewer:s3cret-pw@10.0.0.5:5000") == "http://viewer@10.0.0.5:5000"
    assert without_password("postgresql+psycopg2://u:p%40ss@h:5433/db") == "postgresql+psycopg2://u@h:5433/db"
    assert without_password("http://127.0.0.1:5000") == "http://127.0.0.1:5000"
    assert redact("connect postgresql://omnieval:pw-abc@127.0.0.1:5433/mlflow failed", secrets=()) == (
        "connect postgresql://***@127.0.0.1:5433/mlflow failed"
    )
    assert (
        redact("see http://127.0.0.1:5000/#/experiments/1", secrets=())
        == "see http://127.0.0.1:5000/#/experiments/1"
    )


def test_the_open_runs_marker_keeps_no_password(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://evaluator:pw-in-uri-99@127.0.0.1:5000")
    monkeypatch.delenv("OMNIEVAL_MLFLOW_CREDENTIALS", raising=False)
    marker = tmp_path / "mlflow.open.json"
    mark_open(marker, ["r1"])
    assert "pw-in-uri-99" not in marker.read_text()
    assert (read_open(marker) or {})["tracking_uri"] == "http://evaluator@127.0.0.1:5000"


def test_pgpassword_is_a_secret_and_the_credentials_path_is_not(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGPASSWORD", "pg-secret-123456")
    monkeypatch.setenv("OMNIEVAL_MLFLOW_CREDENTIALS", "/srv/team/credentials/viewer.ini")
    assert redact("pw pg-secret-123456 file /srv/team/credentials/viewer.ini") == (
        "pw *** file /srv/team/credentials/viewer.ini"
    )
