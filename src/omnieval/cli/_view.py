"""``omnieval view RUN``: serve a run folder's ``instances.html`` on localhost.

Browsers refuse many ``file://`` media loads and the task inputs live in the dataset folder, not the
run folder, so the viewer is best read through a small HTTP server: the run folder at ``/`` and the
run's dataset folder (``dataset.path`` of its ``config.resolved.yaml``) at ``/_dataset/``, and the
compared run's ``candidates/`` folder (``regression.json``'s baseline) at ``/_compared/candidates/``
for the viewer's A/B candidates. Nothing else is served, and only on the loopback interface unless
``--host`` says otherwise.
"""

from __future__ import annotations

import argparse
import errno
import sys
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from omnieval.errors import ConfigError


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser(
        "view",
        help="serve a run folder's instance viewer (instances.html) on localhost",
        description=(
            "Serve the run folder RUN (runs/<suite>/<run id>/) over HTTP so instances.html can play "
            "its candidates and show the task inputs (the run's dataset folder is served under "
            "/_dataset/). Writes instances.html first when the folder has none (a run from before the "
            "viewer) or with --rebuild. Prints the URL and serves until interrupted (Ctrl-C)."
        ),
    )
    parser.add_argument("run", type=Path, metavar="RUN", help="a run folder (runs/<suite>/<run id>)")
    parser.add_argument(
        "--port",
        type=port_number,
        default=8765,
        help="port to listen on, 1-65535 (0: any free port; default 8765)",
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1: this machine only)"
    )
    parser.add_argument("--rebuild", action="store_true", help="write instances.html again before serving")
    parser.set_defaults(func=_handle)


def port_number(text: str) -> int:
    """``--port``: a TCP port 1-65535, or 0 for any free one (argparse reports a bad value, exit 2).

    >>> port_number("8765"), port_number("0")
    (8765, 0)
    >>> port_number("99999")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: invalid port 99999: expected 1-65535 (or 0 for any free port)
    """
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid port {text!r}: expected a number 1-65535") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"invalid port {port}: expected 1-65535 (or 0 for any free port)")
    return port


def dataset_root(folder: Path) -> Path | None:
    """The dataset folder a run used, from its ``config.resolved.yaml`` (None when not found).

    A relative ``dataset.path`` was relative to where the run started (usually the project root):
    it is looked up from the current directory, then from each folder above the run folder.
    """
    import yaml

    config_path = folder / "config.resolved.yaml"
    if not config_path.is_file():
        return None
    try:
        config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None  # the page still serves; only the task inputs are not found
    dataset = config.get("dataset") if isinstance(config, dict) else None
    raw = dataset.get("path") if isinstance(dataset, dict) else None
    if not raw:
        return None
    path = Path(str(raw))
    if path.is_absolute():
        return path if path.is_dir() else None
    for base in (Path.cwd(), *folder.resolve().parents):
        if (base / path).is_dir():
            return (base / path).resolve()
    return None


def _ensure_page(folder: Path, *, rebuild: bool) -> None:
    import yaml

    from omnieval.cli._registries import registered_benchmark
    from omnieval.reporting import INSTANCES_PAGE
    from omnieval.stages import write_run_instances

    if (folder / INSTANCES_PAGE).is_file() and not rebuild:
        return
    if not (folder / "scores.parquet").is_file():
        raise ConfigError(f"{folder} is not a run folder: it has no scores.parquet")
    config_path = folder / "config.resolved.yaml"
    if not config_path.is_file():
        raise ConfigError(f"{folder} is not a run folder: it has no config.resolved.yaml")
    try:
        config = yaml.safe_load(config_path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"{config_path}: cannot read: {exc}") from None
    if not isinstance(config, dict) or not config.get("benchmark"):
        raise ConfigError(f"{folder}/config.resolved.yaml names no benchmark")
    try:
        bench = registered_benchmark(str(config["benchmark"]))
    except ConfigError as exc:
        raise ConfigError(f"{config_path}: benchmark: {exc}") from None
    print(f"writing {folder / INSTANCES_PAGE}", file=sys.stderr, flush=True)
    write_run_instances(
        bench,
        folder,
        dataset_path=dataset_root(folder),
        suite=str(config.get("suite", "")),
        run_id=folder.name,
    )


class ViewHandler(SimpleHTTPRequestHandler):
    """Static files of the run folder, of the dataset folder under ``/_dataset/`` and of the compared
    run's candidates under ``/_compared/candidates/``."""

    dataset: Path | None = None
    compared: Path | None = None
    """The compared run's ``candidates/`` folder (None: not compared, or its folder is gone)."""

    def translate_path(self, path: str) -> str:
        from omnieval.reporting import COMPARED_ROUTE, DATASET_ROUTE

        plain = urlsplit(path).path
        for route, root in (
            (f"/{DATASET_ROUTE}", self.dataset),
            (f"/{COMPARED_ROUTE}/candidates", self.compared),
        ):
            if root is not None and (plain == route or plain.startswith(route + "/")):
                # The parent class keeps the result inside self.directory (it normalizes the path
                # and drops '..' segments), so nothing above ``root`` is reachable.
                own = self.directory
                self.directory = str(root)
                try:
                    return super().translate_path(path[len(route) :] or "/")
                finally:
                    self.directory = own
        return super().translate_path(path)

    def log_message(self, format: str, *args: Any) -> None:
        """Requests are not logged: a page with many players would flood the terminal."""


def make_server(folder: Path, *, host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    """An HTTP server for ``folder`` (not yet serving); ``server.server_address`` has the real port."""
    from omnieval.stages import compared_run

    _, compared = compared_run(folder)
    attributes = {
        "dataset": dataset_root(folder),
        "compared": (compared / "candidates").resolve() if compared is not None else None,
    }
    handler = type("RunViewHandler", (ViewHandler,), attributes)
    return ThreadingHTTPServer((host, port), partial(handler, directory=str(folder.resolve())))


def _handle(args: argparse.Namespace) -> int:
    from omnieval.reporting import INSTANCES_PAGE

    folder: Path = args.run
    if not folder.is_dir():
        raise ConfigError(f"run folder {folder} does not exist")
    _ensure_page(folder, rebuild=args.rebuild)
    try:
        server = make_server(folder, host=args.host, port=args.port)
    except OSError as exc:
        why = exc.strerror or str(exc)
        if exc.errno == errno.EADDRINUSE:
            why += " (another program listens there: pick another --port, or --port 0 for any free one)"
        raise ConfigError(f"cannot listen on {args.host}:{args.port}: {why}") from None
    host, port = str(server.server_address[0]), int(server.server_address[1])
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else host
    print(f"http://{shown}:{port}/{INSTANCES_PAGE}", flush=True)
    print("serving until interrupted (Ctrl-C)", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()
    return 0
