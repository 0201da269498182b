"""MLflow credentials for a tracking server with accounts (``omnieval team up``; docs/team.md).

MLflow's client reads ``MLFLOW_TRACKING_USERNAME`` and ``MLFLOW_TRACKING_PASSWORD`` from the
environment. Instead of exporting a password, a user may name a credentials file in
``OMNIEVAL_MLFLOW_CREDENTIALS``: MLflow's own INI format (``~/.mlflow/credentials``)::

    [mlflow]
    mlflow_tracking_username = evaluator
    mlflow_tracking_password = ...

The file must be readable by its owner only (``chmod 600``): a file that the group or others can
read is refused (exit 2, naming it) before anything talks to the server. Passwords stay in the
process environment, which omnieval never writes anywhere: run folders, lineage and MLflow tags are
built from the suite config, and every log line goes through :func:`omnieval.security.redact`.
"""

from __future__ import annotations

import configparser
import os
import stat
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from omnieval.errors import ConfigError

CREDENTIALS_ENV = "OMNIEVAL_MLFLOW_CREDENTIALS"
"""Names a 0600 credentials file for the MLflow tracking server."""

USERNAME_ENV = "MLFLOW_TRACKING_USERNAME"
PASSWORD_ENV = "MLFLOW_TRACKING_PASSWORD"
SECTION = "mlflow"


def check_private(path: Path) -> Path:
    """``path``, when it is a regular file that only its owner can read or write.

    Raises:
        ConfigError: the file is missing, not a file, or its permissions let the group or others in.
    """
    try:
        info = path.stat()
    except FileNotFoundError:
        raise ConfigError(f"credentials file {path} does not exist") from None
    if not stat.S_ISREG(info.st_mode):
        raise ConfigError(f"credentials file {path} is not a regular file")
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o077:
        raise ConfigError(
            f"credentials file {path} has permissions {mode:04o}; it must be readable by its owner "
            f"only (chmod 600 {path})"
        )
    return path


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` with permissions 0600 from its first byte (then renamed into place)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    descriptor = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(descriptor, 0o600)
        os.write(descriptor, text.encode("utf-8"))
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
    os.replace(tmp, path)


def credentials_text(username: str, password: str) -> str:
    """A credentials file in MLflow's INI format (also valid as ``~/.mlflow/credentials``)."""
    return (
        "# MLflow credentials written by omnieval team up: keep this file 0600.\n"
        f"[{SECTION}]\n"
        f"mlflow_tracking_username = {username}\n"
        f"mlflow_tracking_password = {password}\n"
    )


def read_credentials(path: Path) -> tuple[str, str]:
    """(username, password) from a 0600 credentials file.

    Raises:
        ConfigError: the file is too open, unreadable, or lacks either value.
    """
    check_private(path)
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(path.read_text(encoding="utf-8"), source=str(path))
    except (OSError, UnicodeDecodeError, configparser.Error) as exc:
        raise ConfigError(f"credentials file {path} cannot be read: {type(exc).__name__}") from None
    section = parser[SECTION] if parser.has_section(SECTION) else None
    username = section.get("mlflow_tracking_username", "").strip() if section else ""
    password = section.get("mlflow_tracking_password", "").strip() if section else ""
    if not username or not password:
        raise ConfigError(
            f"credentials file {path} needs [{SECTION}] mlflow_tracking_username and mlflow_tracking_password"
        )
    return username, password


def apply_credentials() -> str | None:
    """Put the credentials file's account into MLflow's environment variables; return the username.

    Nothing changes when ``MLFLOW_TRACKING_USERNAME`` is already set (the environment wins) or when
    ``OMNIEVAL_MLFLOW_CREDENTIALS`` is unset.

    Raises:
        ConfigError: the named file is missing, too open or incomplete.
    """
    if os.environ.get(USERNAME_ENV):
        return os.environ[USERNAME_ENV]
    named = os.environ.get(CREDENTIALS_ENV)
    if not named:
        return None
    username, password = read_credentials(Path(named).expanduser())
    os.environ[USERNAME_ENV] = username
    os.environ[PASSWORD_ENV] = password
    return username


def without_password(uri: str) -> str:
    """``uri`` with any password in its user part removed (safe to write down or print).

    >>> without_password("postgresql://omnieval:s3cret@127.0.0.1:5433/mlflow")
    'postgresql://omnieval@127.0.0.1:5433/mlflow'
    >>> without_password("sqlite:////tmp/mlflow.db")
    'sqlite:////tmp/mlflow.db'
    """
    try:
        parts = urlsplit(uri)
    except ValueError:
        return uri
    if "@" not in parts.netloc or parts.password is None:
        return uri
    userinfo, _, hostport = parts.netloc.rpartition("@")
    user = userinfo.split(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{user}@{hostport}" if user else hostport))
