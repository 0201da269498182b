"""Detached server processes of team mode: started in their own session, stopped by process group.

Each service is recorded with its pid and the process's start time (``/proc/<pid>/stat``), so
``team down`` never signals an unrelated process that reused a pid after a reboot.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path

from omnieval.processes import pid_alive


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (``/proc/<pid>/stat`` field 22), or None."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its last ')'.
    fields = text.rsplit(")", 1)[-1].split()
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def is_zombie(pid: int) -> bool:
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    fields = text.rsplit(")", 1)[-1].split()
    return bool(fields) and fields[0] == "Z"


def alive(pid: int, started: int | None = None) -> bool:
    """Whether ``pid`` runs (not a zombie) and, when ``started`` is given, is the process recorded."""
    return pid_alive(pid) and (started is None or start_time(pid) == started)


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes of process group ``pgid``."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        fields = text.rsplit(")", 1)[-1].split()
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] != "Z":
            members.append(int(entry.name))
    return members


def spawn(command: Sequence[str], env: Mapping[str, str], log: Path, cwd: Path) -> subprocess.Popen[bytes]:
    """Start ``command`` detached (own session and process group), output appended to ``log``."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        return subprocess.Popen(
            list(command),
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def stop_group(pid: int, started: int | None, *, grace_s: float = 20.0) -> bool:
    """SIGTERM the process group led by ``pid``, SIGKILL what is left after ``grace_s``.

    Returns whether anything was running. A recorded pid whose start time no longer matches (the
    process is gone and the pid reused) is left alone.
    """
    if not alive(pid, started) and not group_members(pid):
        return False
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if not group_members(pid):
            return True
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10.0
    while group_members(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    return True


def port_free(host: str, port: int) -> bool:
    """Whether nothing listens on ``host:port`` (a bind succeeds)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def port_open(host: str, port: int, timeout_s: float = 1.0) -> bool:
    """Whether a TCP connection to ``host:port`` succeeds."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def http_ok(url: str, timeout_s: float = 2.0) -> bool:
    """Whether ``GET url`` answers 200."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            return int(response.status) == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False
