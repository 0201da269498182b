"""The installed ``omnieval`` console script, run the way a user runs it, for the end-to-end modules.

Each command is a new process that inherits this process's environment (the module fixtures'
MLflow store, project root and PATH), so it reads the very run folders and MLflow runs the flow
of the module wrote.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

OMNIEVAL = Path(sys.executable).with_name("omnieval")


def omnieval(args: Sequence[object], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Run ``omnieval ARGS`` in ``cwd``; it must exit 0 without a traceback."""
    argv = [str(a) for a in args]
    done = subprocess.run(
        [str(OMNIEVAL), *argv],
        cwd=cwd,
        env=os.environ.copy(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, (argv, done.returncode, done.stdout[-3000:], done.stderr[-5000:])
    assert "Traceback" not in done.stderr, (argv, done.stderr[-5000:])
    return done


def omnieval_all(commands: Mapping[str, Sequence[object]], cwd: Path) -> dict[str, str]:
    """Several independent commands, three at a time (each pays the package's import): name -> stdout."""
    with ThreadPoolExecutor(max_workers=3) as pool:
        futures = {name: pool.submit(omnieval, args, cwd) for name, args in commands.items()}
        return {name: future.result().stdout for name, future in futures.items()}


def run_summary(stdout: str) -> dict[str, Any]:
    """The summary ``omnieval run SUITE --json`` prints last (an indented JSON object after the
    stages' progress lines)."""
    lines = stdout.splitlines()
    start = max(i for i, line in enumerate(lines) if line == "{")
    summary: dict[str, Any] = json.loads("\n".join(lines[start:]))
    return summary


def run_suite_cli(suite: Path, cwd: Path, timeout: float = 1700) -> dict[str, Any]:
    """``omnieval run SUITE --json`` in a new process; its summary."""
    done = subprocess.run(
        [str(OMNIEVAL), "run", str(suite), "--json"],
        cwd=cwd,
        env=os.environ.copy(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, (done.returncode, done.stdout[-3000:], done.stderr[-8000:])
    return run_summary(done.stdout)


@contextmanager
def viewing(folder: Path, cwd: Path, options: Sequence[str] = ()) -> Iterator[str]:
    """``omnieval view FOLDER --port 0 [OPTIONS]`` serving until the block ends; yields the URL it printed."""
    view = subprocess.Popen(
        [str(OMNIEVAL), "view", str(folder), "--port", "0", *options],
        cwd=cwd,
        env=os.environ.copy(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert view.stdout is not None
        yield view.stdout.readline().strip()
    finally:
        view.terminate()
        view.wait(timeout=30)


def fetch(url: str) -> bytes:
    """The body of a GET that must answer 200."""
    with urllib.request.urlopen(url, timeout=30) as response:
        assert response.status == 200, url
        body: bytes = response.read()
        return body
