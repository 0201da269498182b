"""The team's PostgreSQL cluster: Debian's server binaries, a data folder of the team's, loopback only.

PostgreSQL refuses to run as root. A root caller runs ``initdb``, ``pg_ctl`` and the server as the
``postgres`` user that Debian's package creates (``runuser -u postgres``); the data folder is then
owned by that user, so the team folder's parents must let it through (``o+x``). Any other caller
runs them as itself.

The cluster listens on 127.0.0.1 only (the servers that use it run beside it) and takes no Unix
socket; every connection authenticates with SCRAM. The superuser is ``omnieval``, its password
comes from the team's 0600 credentials file and reaches the servers through ``PGPASSWORD`` in their
environment, never through a command line or a connection URI.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from omnieval.errors import ConfigError, OmnievalError

SUPERUSER = "omnieval"
"""The cluster's superuser (and the role MLflow and Prefect connect as)."""

DATABASES = ("mlflow", "mlflow_auth", "prefect")
"""MLflow's tracking store, MLflow's account store (basic-auth app) and Prefect's database."""

SERVICE_USER = "postgres"
"""The account a root caller runs PostgreSQL as (created by Debian's postgresql-common)."""


def bin_dir() -> Path:
    """The newest ``/usr/lib/postgresql/<major>/bin`` holding ``initdb`` and ``pg_ctl``, or the PATH's.

    Raises:
        OmnievalError: PostgreSQL's server binaries are not installed.
    """
    root = Path("/usr/lib/postgresql")
    majors = sorted(
        (p for p in root.glob("*/bin") if (p / "initdb").is_file() and (p / "pg_ctl").is_file()),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
    )
    if majors:
        return majors[-1]
    found = shutil.which("pg_ctl")
    if found and shutil.which("initdb"):
        return Path(found).parent
    raise OmnievalError(
        "PostgreSQL's server binaries (initdb, pg_ctl) are not installed: "
        "apt-get install -y postgresql (make setup does it)"
    )


def _as_service_user() -> list[str]:
    """The command prefix that runs a PostgreSQL binary as the right user (empty unless root)."""
    if os.geteuid() != 0:
        return []
    try:
        pwd.getpwnam(SERVICE_USER)
    except KeyError:
        raise OmnievalError(
            f"running as root, PostgreSQL needs the unprivileged '{SERVICE_USER}' user that Debian's "
            "postgresql package creates: apt-get install -y postgresql, or run omnieval team as another user"
        ) from None
    return ["runuser", "-u", SERVICE_USER, "--"]


def _run(
    command: Sequence[str],
    *,
    log: Path | None = None,
    timeout_s: float = 120.0,
    stdin_text: str | None = None,
) -> None:
    done = subprocess.run(
        [*_as_service_user(), *command],
        input=stdin_text,
        stdin=None if stdin_text is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    if log is not None:
        with log.open("a", encoding="utf-8") as out:
            out.write(done.stdout + done.stderr)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-10:])
        raise OmnievalError(f"{Path(command[0]).name} exited with code {done.returncode}:\n{tail}")


def _hand_over(path: Path) -> None:
    """Make ``path`` the service user's (root callers only)."""
    if os.geteuid() == 0:
        entry = pwd.getpwnam(SERVICE_USER)
        os.chown(path, entry.pw_uid, entry.pw_gid)


def _check_reachable(folder: Path) -> None:
    """A root caller's data folder must be reachable by the service user (every parent ``o+x``)."""
    if os.geteuid() != 0:
        return
    done = subprocess.run(
        [*_as_service_user(), "test", "-w", str(folder)], stdin=subprocess.DEVNULL, check=False
    )
    if done.returncode != 0:
        raise ConfigError(
            f"--dir: {folder.parent} cannot be reached by the '{SERVICE_USER}' user that runs PostgreSQL "
            "for root (a parent folder is not o+x); choose a folder under one it can reach, e.g. "
            "/srv/omnieval-team, or run omnieval team as an unprivileged user"
        )


def initialise(data: Path, password: str, log: Path) -> bool:
    """Create the cluster in ``data`` unless one is there; return whether it was created.

    A folder left by an ``initdb`` that did not finish (no ``PG_VERSION``) is emptied first.
    """
    if (data / "PG_VERSION").is_file():
        return False
    if data.exists():
        shutil.rmtree(data)
    data.mkdir(parents=True)
    os.chmod(data, 0o700)
    _hand_over(data)
    _check_reachable(data)
    # initdb reads the superuser's password from a file: one in a private temporary folder of the
    # service user's, removed as soon as initdb is done (never on a command line).
    scratch = Path(tempfile.mkdtemp(prefix="omnieval-initdb-"))
    try:
        pwfile = scratch / "pw"
        descriptor = os.open(pwfile, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(descriptor, (password + "\n").encode("utf-8"))
        os.close(descriptor)
        _hand_over(scratch)
        _hand_over(pwfile)
        _run(
            [
                str(bin_dir() / "initdb"),
                "-D",
                str(data),
                "-U",
                SUPERUSER,
                "--auth=scram-sha-256",
                f"--pwfile={pwfile}",
                "--encoding=UTF8",
                "--locale=C",
            ],
            log=log,
            timeout_s=300.0,
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    # Loopback TCP only, SCRAM for every connection (the file keeps its owner: it is rewritten).
    (data / "pg_hba.conf").write_text(
        "# omnieval team: loopback only, passwords (SCRAM) always\n"
        "host all all 127.0.0.1/32 scram-sha-256\n"
        "host all all ::1/128 scram-sha-256\n",
        encoding="utf-8",
    )
    return True


def start(data: Path, port: int, log: Path, *, timeout_s: float = 60.0) -> None:
    """Start the server on 127.0.0.1:``port`` (no Unix socket) and wait until it accepts connections."""
    binaries = bin_dir()
    options = f"-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories=''"
    _run(
        [
            str(binaries / "pg_ctl"),
            "-D",
            str(data),
            "-l",
            str(log),
            "-o",
            options,
            "-w",
            "-t",
            str(int(timeout_s)),
            "start",
        ],
        timeout_s=timeout_s + 30,
    )


def stop(data: Path, *, timeout_s: float = 60.0) -> bool:
    """Stop the server (fast shutdown); return whether one was running."""
    if not running_pid(data):
        return False
    _run(
        [str(bin_dir() / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "-t", str(int(timeout_s)), "stop"],
        timeout_s=timeout_s + 30,
    )
    return True


def running_pid(data: Path) -> int | None:
    """The postmaster's pid when its ``postmaster.pid`` names a live process, else None."""
    try:
        first = (data / "postmaster.pid").read_text(encoding="utf-8").splitlines()[0]
        pid = int(first.strip())
    except (OSError, ValueError, IndexError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return pid
    return pid


def create_databases(port: int, password: str, *, timeout_s: float = 30.0) -> list[str]:
    """Create the missing :data:`DATABASES`; return the ones created."""
    import psycopg2

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            connection = psycopg2.connect(
                host="127.0.0.1", port=port, user=SUPERUSER, password=password, dbname="postgres"
            )
            break
        except psycopg2.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    created = []
    try:
        connection.autocommit = True
        with connection.cursor() as cursor:
            cursor.execute("SELECT datname FROM pg_database")
            present = {row[0] for row in cursor.fetchall()}
            for name in DATABASES:
                if name not in present:
                    cursor.execute(f'CREATE DATABASE "{name}"')
                    created.append(name)
    finally:
        connection.close()
    return created


def uri(port: int, database: str, driver: str = "postgresql") -> str:
    """A connection URI without a password (the servers get it through ``PGPASSWORD``).

    >>> uri(5433, "prefect", "postgresql+asyncpg")
    'postgresql+asyncpg://omnieval@127.0.0.1:5433/prefect'
    """
    return f"{driver}://{SUPERUSER}@127.0.0.1:{port}/{database}"
