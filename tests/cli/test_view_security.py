"""``omnieval view`` serves a closed set, on loopback unless told, and answers bad input cleanly.

A run folder is often someone else's (a team shares them): the paths written inside it (the dataset
of ``config.resolved.yaml``, the baseline of ``regression.json``, a symlink among its files) must
not open the machine's other folders to the browser, or to the network. Each case runs the console
script in a fresh process, as a user does, against a small project folder (``dvc.yaml``, ``data/``,
``runs/``) made here; the instances page is a stand-in (the server does not read it).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

OMNIEVAL = str(Path(sys.executable).with_name("omnieval"))
PAGE = b"<html>the instances page</html>"


@dataclass
class Layout:
    """A project (``OMNIEVAL_PROJECT_ROOT``), the run folder viewed in it and a folder outside it."""

    project: Path
    run: Path
    outside: Path

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "OMNIEVAL_PROJECT_ROOT": str(self.project)}


def _write(path: Path, data: bytes | str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data, encoding="utf-8")


def _run_folder(folder: Path, *, dataset: str, baseline: Any = None) -> None:
    """A run folder with one text candidate, naming ``dataset`` and (when given) a compared ``baseline``."""
    _write(folder / "instances.html", PAGE)
    _write(folder / "scores.parquet", b"not read by the server")
    _write(folder / "candidates" / "alpha" / "text" / "0" / "generated.txt", f"{folder.name} text")
    config = {"suite": "s", "benchmark": "storybench", "dataset": {"path": dataset}}
    _write(folder / "config.resolved.yaml", yaml.safe_dump(config))
    if baseline is not None:
        _write(folder / "regression.json", json.dumps({"verdict": "GO", "baseline": baseline}))


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    """project/ with data/sample and runs/s/run-a, run-b (compared with run-a); outside/ beside it
    with a secret file, a dataset and a run of its own."""
    project, outside = tmp_path / "project", tmp_path / "outside"
    _write(project / "dvc.yaml", "stages: {}\n")
    _write(project / "data" / "sample" / "images" / "p01.png", b"\x89PNG project image")
    _write(outside / "secret.txt", "outside secret")
    _write(outside / "data" / "images" / "p01.png", b"\x89PNG outside image")
    _run_folder(outside / "runs" / "s" / "run-a", dataset="/")
    _write(outside / "runs" / "s" / "run-a" / "candidates" / "secret.txt", "outside run secret")
    _run_folder(project / "runs" / "s" / "run-a", dataset="data/sample")
    run = project / "runs" / "s" / "run-b"
    _run_folder(run, dataset="data/sample", baseline={"run_id": "run-a", "folder": "runs/s/run-a"})
    return Layout(project, run, outside)


@dataclass
class View:
    """A running ``omnieval view``: the URL it printed, and its stderr once it has stopped."""

    url: str
    stderr: str = ""
    base: str = field(init=False)

    def __post_init__(self) -> None:
        port = urlsplit(self.url).port
        self.base = f"http://127.0.0.1:{port}/"

    def status(self, path: str) -> int:
        """The HTTP status of GET ``path`` (as sent, percent-escapes untouched)."""
        try:
            with urllib.request.urlopen(self.base + path.lstrip("/"), timeout=10) as answer:
                return int(answer.status)
        except urllib.error.HTTPError as exc:
            return exc.code

    def body(self, path: str) -> bytes:
        with urllib.request.urlopen(self.base + path.lstrip("/"), timeout=10) as answer:
            assert answer.status == 200
            return bytes(answer.read())


@contextmanager
def viewing(layout: Layout, *options: str) -> Iterator[View]:
    """``omnieval view RUN --port 0 OPTIONS`` in the project folder until the block ends."""
    proc = subprocess.Popen(
        [OMNIEVAL, "view", str(layout.run), "--port", "0", *options],
        cwd=layout.project,
        env=layout.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    if not url:
        _, err = proc.communicate(timeout=30)
        pytest.fail(f"omnieval view exited {proc.returncode} without a URL:\n{err[-3000:]}")
    view = View(url)
    try:
        yield view
    finally:
        proc.terminate()
        _, view.stderr = proc.communicate(timeout=30)


def _outside_named_outright(layout: Layout) -> tuple[Path, Path]:
    """config.resolved.yaml names ``/``; regression.json's baseline is a run outside the project."""
    compared = layout.outside / "runs" / "s" / "run-a"
    _run_folder(layout.run, dataset="/", baseline={"run_id": "gone", "folder": str(compared)})
    return Path("/"), compared


def _outside_through_symlinks(layout: Layout) -> tuple[Path, Path]:
    """The dataset named is data/evil and the compared run the sibling run-z: inside the roots by
    name, but both are symlinks out (to ``/`` and to the outside run)."""
    (layout.project / "data" / "evil").symlink_to("/")
    compared = layout.outside / "runs" / "s" / "run-a"
    (layout.run.parent / "run-z").symlink_to(compared)
    _run_folder(layout.run, dataset=str(layout.project / "data" / "evil"), baseline={"run_id": "run-z"})
    return Path("/"), compared


@pytest.mark.parametrize("hostile", [_outside_named_outright, _outside_through_symlinks])
def test_a_hostile_run_folder_opens_nothing_outside_the_project(layout: Layout, hostile: Any) -> None:
    dataset, compared = hostile(layout)
    # A symlink among the run's own files that leads out of the run folder.
    (layout.run / "candidates" / "leak").symlink_to(layout.outside)
    (layout.run / "candidates" / "beta").mkdir()
    (layout.run / "candidates" / "beta" / "index.html").symlink_to(layout.outside / "secret.txt")
    with viewing(layout) as view:
        assert view.body("instances.html") == PAGE
        assert view.body("candidates/alpha/text/0/generated.txt") == b"run-b text"
        assert view.status("_dataset/etc/passwd") == 403
        assert view.status("_dataset/") == 403
        assert view.status("_compared/candidates/secret.txt") == 403
        assert view.status("_compared/candidates/alpha/text/0/generated.txt") == 403
        assert view.status("candidates/leak/secret.txt") == 404
        assert view.status("candidates/leak/") == 404
        assert view.status("candidates/beta/") == 404  # its index page links out
    assert "Traceback" not in view.stderr, view.stderr
    assert f"warning: not serving the dataset folder {dataset} (dataset.path of " in view.stderr
    assert f"not serving the compared run {compared.resolve()} (baseline of " in view.stderr
    assert "--dataset DIR" in view.stderr and "--compare RUN" in view.stderr


def test_the_projects_dataset_and_the_sibling_run_are_served(layout: Layout) -> None:
    with viewing(layout) as view:
        assert view.body("_dataset/images/p01.png") == b"\x89PNG project image"
        assert view.body("_compared/candidates/alpha/text/0/generated.txt") == b"run-a text"
        assert view.status("_compared/scores.parquet") == 404
        assert view.status("_dataset/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd") == 404
        assert view.status("candidates/") == 200  # a listing: this machine only
    assert "warning" not in view.stderr, view.stderr


def test_folders_named_on_the_command_line_are_served_wherever_they_lie(layout: Layout) -> None:
    _outside_named_outright(layout)
    compared = layout.outside / "runs" / "s" / "run-a"
    with viewing(layout, "--dataset", str(layout.outside / "data"), "--compare", str(compared)) as view:
        assert view.body("_dataset/images/p01.png") == b"\x89PNG outside image"
        assert view.body("_compared/candidates/secret.txt") == b"outside run secret"
        assert view.status("_dataset/%2e%2e/secret.txt") == 404
    assert "not serving" not in view.stderr, view.stderr


def test_malformed_request_paths_get_400_and_no_traceback(layout: Layout) -> None:
    bad = ["%00", "_dataset/images/%00.png", "%zz", "a%2", "%ff", "%C3%28", "%0a", "a" * 5000]
    with viewing(layout) as view:
        assert [view.status(path) for path in bad] == [400] * len(bad)
        assert view.body("instances.html") == PAGE  # and the server still answers
    assert "Traceback" not in view.stderr, view.stderr
    assert "failed" not in view.stderr, view.stderr


def _run(layout: Layout, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [OMNIEVAL, "view", str(layout.run), "--port", "0", *args],
        cwd=layout.project,
        env=layout.env,
        capture_output=True,
        text=True,
        timeout=120,  # a server that started would serve forever: the timeout fails the test
    )


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("host", ["0.0.0.0", "", "::", "192.0.2.7", "example.org"])
def test_a_host_beyond_loopback_without_expose_exits_2_and_starts_nothing(layout: Layout, host: str) -> None:
    (layout.run / "instances.html").unlink()  # a view would write it first
    before = _tree(layout.project)
    done = _run(layout, "--host", host)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert f"--host {host!r}" in done.stderr and "--expose" in done.stderr, done.stderr
    assert "http://" not in done.stdout
    assert _tree(layout.project) == before


def test_expose_says_where_it_listens_and_lists_no_folders(layout: Layout) -> None:
    with viewing(layout, "--host", "0.0.0.0", "--expose") as view:
        assert view.body("instances.html") == PAGE
        assert view.body("_dataset/images/p01.png") == b"\x89PNG project image"
        assert view.status("candidates/") == 403
        assert view.status("_dataset/images/") == 403
    port = urlsplit(view.url).port
    assert view.url == f"http://{socket.gethostname()}:{port}/instances.html"
    assert f"warning: --expose: listening on every interface (0.0.0.0) port {port}" in view.stderr
    assert "directory listings are off" in view.stderr
    assert "Traceback" not in view.stderr, view.stderr


def _regression(text: str) -> Any:
    return lambda run: _write(run / "regression.json", text)


def _config(text: str) -> Any:
    return lambda run: _write(run / "config.resolved.yaml", text)


BAD_RUN_FILES = {
    "regression.json an array": (
        _regression("[1, 2]"),
        "regression.json: expected a JSON object, got an array",
    ),
    "regression.json a string": (
        _regression('"run-a"'),
        "regression.json: expected a JSON object, got a string",
    ),
    "regression.json not JSON": (_regression('{"baseline": '), "regression.json: invalid JSON"),
    "baseline an array": (
        _regression('{"baseline": ["run-a"]}'),
        "regression.json: baseline: expected a run id or an object, got an array",
    ),
    "config a list": (
        _config("- a\n- b\n"),
        "config.resolved.yaml: expected a mapping of config keys, got list",
    ),
    "config not YAML": (_config("dataset: [\n"), "config.resolved.yaml: cannot read"),
}


def test_malformed_run_files_exit_2_naming_the_file(tmp_path: Path) -> None:
    cases: dict[str, tuple[Layout, str]] = {}
    for i, (name, (damage, message)) in enumerate(BAD_RUN_FILES.items()):
        root = tmp_path / str(i)
        project = root / "project"
        _write(project / "dvc.yaml", "stages: {}\n")
        run = project / "runs" / "s" / "run-b"
        _run_folder(run, dataset="data/sample", baseline="run-a")
        damage(run)
        cases[name] = (Layout(project, run, root / "outside"), message)
    with ThreadPoolExecutor(2) as pool:
        done = dict(zip(cases, pool.map(lambda case: _run(case[0]), cases.values()), strict=True))
    for name, (layout, message) in cases.items():
        result = done[name]
        assert result.returncode == 2, (name, result.stderr)
        assert "Traceback" not in result.stderr, (name, result.stderr)
        assert f"error: {layout.run}/{message}" in result.stderr, (name, result.stderr)
        assert "http://" not in result.stdout, name


def test_dataset_and_compare_must_be_folders(layout: Layout) -> None:
    with ThreadPoolExecutor(2) as pool:
        dataset, compare = pool.map(
            lambda args: _run(layout, *args),
            [("--dataset", str(layout.outside / "secret.txt")), ("--compare", str(layout.outside))],
        )
    assert (
        dataset.returncode == 2
        and f"--dataset: {layout.outside / 'secret.txt'} is not a folder" in dataset.stderr
    )
    assert compare.returncode == 2 and f"--compare: {layout.outside} is not a run folder" in compare.stderr
    assert "Traceback" not in dataset.stderr + compare.stderr
