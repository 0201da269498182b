"""``omnieval team up|down|status``: PostgreSQL, MLflow (with accounts), Prefect and Dask for a team.

Layout of the team folder (``--dir``, default ``team/``; git-ignored)::

    team/
      team.json            what runs where: ports, pids (no secret)
      credentials/         0700
        team.ini           every password (PostgreSQL superuser, MLflow admin/evaluator/viewer,
                           the MLflow server's session key), 0600; reused by every later `team up`
        evaluator.ini      MLflow credentials file of the evaluator account, 0600
        viewer.ini         ... of the viewer account, 0600
        admin.ini          ... of the admin account, 0600
      postgres/            the cluster (owned by the 'postgres' user when started by root)
      mlflow/              basic_auth.ini (no secret) and artifacts/
      prefect/             PREFECT_HOME of the Prefect server
      logs/                one log per server
"""

from __future__ import annotations

import configparser
import json
import os
import secrets
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from omnieval.errors import ConfigError, OmnievalError
from omnieval.team import _accounts, _postgres
from omnieval.team._processes import alive, http_ok, port_free, port_open, spawn, start_time, stop_group
from omnieval.tracking import check_private, credentials_text, write_private

STATE_NAME = "team.json"
MASTER_NAME = "team.ini"
DEFAULT_DIR = Path("team")
ACCOUNTS = ("admin", "evaluator", "viewer")
SERVICES = ("mlflow", "prefect", "dask-scheduler", "dask-workers")


class TeamConfig(BaseModel):
    """Where team mode keeps its data and which loopback (or other) addresses its servers take."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    folder: Path = DEFAULT_DIR
    host: str = "127.0.0.1"
    postgres_port: int = Field(default=5433, ge=1, le=65535)
    mlflow_port: int = Field(default=5000, ge=1, le=65535)
    prefect_port: int = Field(default=4200, ge=1, le=65535)
    dask_port: int = Field(default=8786, ge=1, le=65535)
    dask: bool = True
    dask_workers: int = Field(default=2, ge=0)
    mlflow_workers: int = Field(default=1, ge=1)
    startup_timeout_s: float = Field(default=180.0, gt=0)


@dataclass(frozen=True)
class Secrets:
    """The team's passwords (never printed, never logged; only in the 0600 ``team.ini``)."""

    postgres: str
    admin: str
    evaluator: str
    viewer: str
    session_key: str

    def account(self, name: str) -> str:
        return str(getattr(self, name))


def _new_password() -> str:
    return secrets.token_urlsafe(24)


def _paths(folder: Path) -> dict[str, Path]:
    root = folder.resolve()
    return {
        "root": root,
        "state": root / STATE_NAME,
        "credentials": root / "credentials",
        "master": root / "credentials" / MASTER_NAME,
        "postgres": root / "postgres",
        "mlflow": root / "mlflow",
        "artifacts": root / "mlflow" / "artifacts",
        "prefect": root / "prefect",
        "logs": root / "logs",
    }


def load_or_create_secrets(folder: Path) -> tuple[Secrets, bool]:
    """The team's passwords from ``credentials/team.ini`` (0600), generated and written on first use.

    Returns (secrets, created).

    Raises:
        ConfigError: the file exists with permissions looser than 0600, or lacks a value.
    """
    paths = _paths(folder)
    master = paths["master"]
    if master.exists():
        check_private(master)
        parser = configparser.ConfigParser(interpolation=None)
        parser.read_string(master.read_text(encoding="utf-8"), source=str(master))
        try:
            values = {
                "postgres": parser["postgres"]["password"],
                "admin": parser["admin"]["password"],
                "evaluator": parser["evaluator"]["password"],
                "viewer": parser["viewer"]["password"],
                "session_key": parser["mlflow"]["session_key"],
            }
        except KeyError as exc:
            raise ConfigError(f"credentials file {master} lacks {exc.args[0]!r}") from None
        return Secrets(**values), False
    made = Secrets(_new_password(), _new_password(), _new_password(), _new_password(), secrets.token_hex(32))
    paths["credentials"].mkdir(parents=True, exist_ok=True)
    os.chmod(paths["credentials"], 0o700)
    text = (
        "# omnieval team passwords: keep this file 0600; `omnieval team up` reuses them.\n"
        f"[postgres]\nuser = {_postgres.SUPERUSER}\npassword = {made.postgres}\n"
        + "".join(f"[{name}]\nusername = {name}\npassword = {made.account(name)}\n" for name in ACCOUNTS)
        + f"[mlflow]\nsession_key = {made.session_key}\n"
    )
    write_private(master, text)
    return made, True


def _write_account_files(folder: Path, made: Secrets) -> dict[str, Path]:
    files = {}
    for name in ACCOUNTS:
        path = _paths(folder)["credentials"] / f"{name}.ini"
        write_private(path, credentials_text(name, made.account(name)))
        files[name] = path
    return files


def _public_host(host: str) -> str:
    return socket.gethostname() if host in ("0.0.0.0", "::") else host


def _probe_host(host: str) -> str:
    return "127.0.0.1" if host in ("0.0.0.0", "::") else host


def urls(config: TeamConfig) -> dict[str, str]:
    """The addresses clients use (``MLFLOW_TRACKING_URI``, ``PREFECT_API_URL``, the Dask scheduler)."""
    host = _public_host(config.host)
    found = {
        "MLFLOW_TRACKING_URI": f"http://{host}:{config.mlflow_port}",
        "PREFECT_API_URL": f"http://{host}:{config.prefect_port}/api",
    }
    if config.dask:
        found["DASK_SCHEDULER_ADDRESS"] = f"tcp://{host}:{config.dask_port}"
    return found


def read_state(folder: Path) -> dict[str, Any] | None:
    try:
        document = json.loads(_paths(folder)["state"].read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return document if isinstance(document, dict) else None


def _write_state(folder: Path, document: dict[str, Any]) -> None:
    path = _paths(folder)["state"]
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _service_env(extra: dict[str, str]) -> dict[str, str]:
    """The servers' environment: this one without client settings or credentials, plus ``extra``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MLFLOW_TRACKING_", "PREFECT_API_", "OMNIEVAL_MLFLOW_CREDENTIALS", "PG"))
    }
    env.update(
        {
            "MLFLOW_DISABLE_TELEMETRY": "true",
            "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",
            "DO_NOT_TRACK": "true",
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        }
    )
    env.update(extra)
    return env


def _wait(what: str, ready: Any, process: Any, log: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if ready():
            return
        if process is not None and process.poll() is not None:
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
            raise OmnievalError(
                f"{what} exited with code {process.returncode} while starting (log {log}):\n{tail}"
            )
        time.sleep(0.5)
    raise OmnievalError(f"{what} did not become ready within {timeout_s:.0f} s (log {log})")


def _check_ports(config: TeamConfig, state: dict[str, Any] | None) -> None:
    wanted = [
        ("--postgres-port", "127.0.0.1", config.postgres_port, "postgres"),
        ("--mlflow-port", config.host, config.mlflow_port, "mlflow"),
        ("--prefect-port", config.host, config.prefect_port, "prefect"),
    ]
    if config.dask:
        wanted.append(("--dask-port", config.host, config.dask_port, "dask-scheduler"))
    services = (state or {}).get("services", {})
    for flag, host, port, name in wanted:
        mine = services.get(name) or {}
        running = (
            bool(_postgres.running_pid(_paths(config.folder)["postgres"]))
            if name == "postgres"
            else bool(mine) and alive(int(mine["pid"]), mine.get("started"))
        )
        if running:
            if mine.get("port") not in (None, port):
                raise ConfigError(
                    f"{flag}: {name} of {config.folder} already runs on port {mine['port']}; "
                    "omnieval team down first to move it"
                )
            continue
        if not port_free(host, port):
            raise ConfigError(f"{flag}: port {port} on {host} is in use; pick another")


def _record(process: Any) -> dict[str, Any]:
    return {"pid": process.pid, "started": start_time(process.pid)}


def _start_server(
    config: TeamConfig,
    services: dict[str, Any],
    timings: dict[str, float],
    *,
    name: str,
    what: str,
    argv: list[str],
    env: dict[str, str],
    port: int,
    ready: Callable[[], bool],
) -> None:
    """Start the server ``name`` (its log ``logs/<name>.log``), record it in the state file before
    waiting (so ``team down`` finds a server that never became ready) and wait until ``ready``."""
    paths = _paths(config.folder)
    log = paths["logs"] / f"{name}.log"
    process = spawn([sys.executable, "-m", *argv], _service_env(env), log, paths["root"])
    services[name] = {**_record(process), "port": port}
    _write_state(config.folder, _document(config, services, timings))
    _wait(what, ready, process, log, config.startup_timeout_s)


def up(config: TeamConfig) -> dict[str, Any]:
    """Start whatever of the team's servers is not running; return the state (no secret in it).

    Raises:
        ConfigError: a port is taken, the folder is unusable or the credentials file too open.
        OmnievalError: a server failed to start (its log is named).
    """
    paths = _paths(config.folder)
    if paths["root"].exists() and not paths["root"].is_dir():
        raise ConfigError(f"--dir: {config.folder} is a file; give a folder")
    state = read_state(config.folder)
    _check_ports(config, state)
    paths["root"].mkdir(parents=True, exist_ok=True)
    # Root runs PostgreSQL as 'postgres', which must reach postgres/ through this folder.
    os.chmod(paths["root"], 0o711 if os.geteuid() == 0 else 0o700)
    made, _ = load_or_create_secrets(config.folder)
    account_files = _write_account_files(config.folder, made)
    for name in ("logs", "mlflow", "artifacts", "prefect"):
        paths[name].mkdir(parents=True, exist_ok=True)
    services: dict[str, Any] = dict((state or {}).get("services", {}))
    timings: dict[str, float] = {}

    started = time.monotonic()
    _postgres.initialise(paths["postgres"], made.postgres, paths["logs"] / "postgres-init.log")
    if not _postgres.running_pid(paths["postgres"]):
        _postgres.start(paths["postgres"], config.postgres_port, paths["postgres"] / "server.log")
    _postgres.create_databases(config.postgres_port, made.postgres)
    services["postgres"] = {"pid": _postgres.running_pid(paths["postgres"]), "port": config.postgres_port}
    timings["postgres"] = round(time.monotonic() - started, 1)

    probe = _probe_host(config.host)
    pg_env = {"PGPASSWORD": made.postgres}
    auth_ini = paths["mlflow"] / "basic_auth.ini"
    auth_ini.write_text(
        "# written by omnieval team up: no secret here (the admin password reaches MLflow through\n"
        "# MLFLOW_AUTH_ADMIN_PASSWORD, the database password through PGPASSWORD)\n"
        "[mlflow]\n"
        "default_permission = READ\n"
        f"database_uri = {_postgres.uri(config.postgres_port, 'mlflow_auth', 'postgresql+psycopg2')}\n"
        "admin_username = admin\n"
        "authorization_function = mlflow.server.auth:authenticate_request_basic_auth\n"
        "# A password check (PBKDF2) per request made a run's tracking stage several times slower;\n"
        "# a changed password takes effect within this many seconds.\n"
        "auth_cache_ttl_seconds = 60\n",
        encoding="utf-8",
    )
    mlflow_url = f"http://{probe}:{config.mlflow_port}"
    started = time.monotonic()
    if not _running(services.get("mlflow")):
        _start_server(
            config,
            services,
            timings,
            name="mlflow",
            what="the MLflow server",
            argv=[
                "mlflow",
                "server",
                "--backend-store-uri",
                _postgres.uri(config.postgres_port, "mlflow", "postgresql+psycopg2"),
                "--artifacts-destination",
                str(paths["artifacts"]),
                "--serve-artifacts",
                "--app-name",
                "basic-auth",
                "--host",
                config.host,
                "--port",
                str(config.mlflow_port),
                "--workers",
                str(config.mlflow_workers),
            ],
            env={
                **pg_env,
                "MLFLOW_AUTH_CONFIG_PATH": str(auth_ini),
                "MLFLOW_AUTH_ADMIN_USERNAME": "admin",
                "MLFLOW_AUTH_ADMIN_PASSWORD": made.admin,
                "MLFLOW_FLASK_SERVER_SECRET_KEY": made.session_key,
            },
            port=config.mlflow_port,
            ready=lambda: http_ok(f"{mlflow_url}/health"),
        )
    created = _accounts.ensure_accounts(
        mlflow_url, ("admin", made.admin), {name: made.account(name) for name in ("evaluator", "viewer")}
    )
    timings["mlflow"] = round(time.monotonic() - started, 1)

    started = time.monotonic()
    prefect_url = f"http://{probe}:{config.prefect_port}/api"
    if not _running(services.get("prefect")):
        _start_server(
            config,
            services,
            timings,
            name="prefect",
            what="the Prefect server",
            argv=["prefect", "server", "start", "--host", config.host, "--port", str(config.prefect_port)],
            env={
                **pg_env,
                "PREFECT_HOME": str(paths["prefect"]),
                "PREFECT_API_DATABASE_CONNECTION_URL": _postgres.uri(
                    config.postgres_port, "prefect", "postgresql+asyncpg"
                ),
                "PREFECT_SERVER_API_HOST": config.host,
                "PREFECT_SERVER_API_PORT": str(config.prefect_port),
                "PREFECT_SERVER_SERVICES_SCHEDULER_ENABLED": "true",
            },
            port=config.prefect_port,
            ready=lambda: http_ok(f"{prefect_url}/health"),
        )
    timings["prefect"] = round(time.monotonic() - started, 1)

    if config.dask:
        started = time.monotonic()
        if not _running(services.get("dask-scheduler")):
            _start_server(
                config,
                services,
                timings,
                name="dask-scheduler",
                what="the Dask scheduler",
                argv=[
                    "distributed.cli.dask_scheduler",
                    "--host",
                    config.host,
                    "--port",
                    str(config.dask_port),
                    "--no-dashboard",
                ],
                env={},
                port=config.dask_port,
                ready=lambda: port_open(probe, config.dask_port),
            )
        if config.dask_workers and not _running(services.get("dask-workers")):
            log = paths["logs"] / "dask-workers.log"
            process = spawn(
                [
                    sys.executable,
                    "-m",
                    "distributed.cli.dask_worker",
                    f"tcp://{probe}:{config.dask_port}",
                    "--nworkers",
                    str(config.dask_workers),
                    "--nthreads",
                    "1",
                    "--host",
                    probe,
                    "--no-dashboard",
                ],
                _service_env({"PREFECT_API_URL": prefect_url}),
                log,
                Path.cwd(),
            )
            services["dask-workers"] = {**_record(process), "count": config.dask_workers}
        timings["dask"] = round(time.monotonic() - started, 1)

    document = _document(config, services, timings)
    document["accounts"] = {name: str(path) for name, path in account_files.items()}
    document["accounts_created"] = created
    _write_state(config.folder, document)
    return document


def _running(entry: dict[str, Any] | None) -> bool:
    return entry is not None and alive(int(entry["pid"]), entry.get("started"))


def _document(config: TeamConfig, services: dict[str, Any], timings: dict[str, float]) -> dict[str, Any]:
    return {
        "folder": str(_paths(config.folder)["root"]),
        "config": json.loads(config.model_dump_json()),
        "services": services,
        "urls": urls(config),
        "seconds": timings,
    }


def down(folder: Path) -> dict[str, bool]:
    """Stop every server of the team folder (Dask, Prefect, MLflow, then PostgreSQL).

    Returns service -> whether it was running. Idempotent.
    """
    paths = _paths(folder)
    state = read_state(folder) or {}
    services = state.get("services", {})
    stopped: dict[str, bool] = {}
    for name in SERVICES:
        entry = services.get(name)
        if entry:
            stopped[name] = stop_group(int(entry["pid"]), entry.get("started"))
    stopped["postgres"] = (
        _postgres.stop(paths["postgres"]) if (paths["postgres"] / "PG_VERSION").is_file() else False
    )
    if state:
        state["services"] = {}
        _write_state(folder, state)
    return stopped


def status(folder: Path) -> dict[str, Any]:
    """What runs where: service -> {running, pid, port/url}, plus the client variables."""
    paths = _paths(folder)
    state = read_state(folder) or {}
    services = state.get("services", {})
    report: dict[str, Any] = {}
    pg_pid = _postgres.running_pid(paths["postgres"])
    report["postgres"] = {
        "running": bool(pg_pid),
        "pid": pg_pid,
        "address": f"127.0.0.1:{state.get('config', {}).get('postgres_port', '?')}",
        "data": str(paths["postgres"]),
    }
    urls_now = state.get("urls", {})
    where = {
        "mlflow": urls_now.get("MLFLOW_TRACKING_URI"),
        "prefect": urls_now.get("PREFECT_API_URL"),
        "dask-scheduler": urls_now.get("DASK_SCHEDULER_ADDRESS"),
        "dask-workers": urls_now.get("DASK_SCHEDULER_ADDRESS"),
    }
    for name in SERVICES:
        entry = services.get(name)
        report[name] = {
            "running": _running(entry),
            "pid": entry.get("pid") if entry else None,
            "address": where[name],
        }
    return {
        "folder": str(paths["root"]),
        "services": report,
        "urls": urls_now,
        "accounts": state.get("accounts", {}),
    }
