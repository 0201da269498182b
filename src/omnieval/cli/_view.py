"""``omnieval view RUN``: serve a run folder's ``instances.html`` on localhost.

Browsers refuse many ``file://`` media loads and the task inputs live in the dataset folder, not the
run folder, so the viewer is best read through a small HTTP server: the run folder at ``/``, the
run's dataset folder at ``/_dataset/`` and the compared run's ``candidates/`` folder at
``/_compared/candidates/`` for the viewer's A/B candidates.

The served set is closed, because a run folder is often someone else's (a team shares them) and the
paths written inside it are not to be trusted: the dataset folder (``dataset.path`` of
``config.resolved.yaml``) is served only when it resolves (symlinks followed) inside the project's
``data/`` folder, the compared run (``regression.json``'s baseline) only when it resolves inside the
project's ``runs/`` folder or beside the viewed run; ``--dataset`` and ``--compare`` name either
explicitly. Every file served must resolve inside its folder too (a symlink out is not followed).
Only the loopback interface is served unless ``--host`` names another and ``--expose`` confirms it.
"""

from __future__ import annotations

import argparse
import errno
import ipaddress
import json
import os
import posixpath
import re
import socket
import sys
from dataclasses import dataclass
from functools import partial
from http import HTTPStatus
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from io import BytesIO
from pathlib import Path
from typing import Any, BinaryIO, ClassVar
from urllib.parse import unquote, unquote_to_bytes

from omnieval.errors import ConfigError, OmnievalError
from omnieval.security import inside

MAX_TARGET_CHARS = 4096
"""Longest request target (path and query, in characters) answered; a longer one gets 400. Every
path a page links is far shorter; the limit only keeps a hostile request from costing work."""

_PERCENT_ENCODED = re.compile(r"(?:[^%]|%[0-9A-Fa-f]{2})*")
"""A path whose every ``%`` starts a two-hex-digit escape."""

_WILDCARD_HOSTS = ("", "0.0.0.0", "::")
"""``--host`` values that listen on every interface."""


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser(
        "view",
        help="serve a run folder's instance viewer (instances.html) on localhost",
        description=(
            "Serve the run folder RUN (runs/<suite>/<run id>/) over HTTP so instances.html can play "
            "its candidates and show the task inputs (the run's dataset folder is served under "
            "/_dataset/, the compared run's candidates under /_compared/candidates/). The dataset "
            "and the compared run named inside the run folder are served only when they lie inside "
            "the project's data/ and runs/ folders (or beside RUN); --dataset and --compare name "
            "them explicitly. Writes instances.html first when the folder has none (a run from "
            "before the viewer) or with --rebuild. Prints the URL and serves until interrupted "
            "(Ctrl-C)."
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
        "--host",
        default="127.0.0.1",
        help=(
            "interface to bind (default 127.0.0.1: this machine only); any other than 127.0.0.0/8, "
            "::1 or localhost (an empty host or 0.0.0.0: every interface) needs --expose"
        ),
    )
    parser.add_argument(
        "--expose",
        action="store_true",
        help=(
            "allow a --host other machines can reach: anyone who reaches it reads the run folder, "
            "its dataset and the compared run's candidates (directory listings are off)"
        ),
    )
    parser.add_argument(
        "--dataset",
        type=Path,
        metavar="DIR",
        help=(
            "serve DIR as the run's dataset folder (/_dataset/), wherever it lies (default: the "
            "run's dataset.path, if inside the project's data/ folder)"
        ),
    )
    parser.add_argument(
        "--compare",
        type=Path,
        metavar="RUN",
        help=(
            "serve the run folder RUN's candidates as the compared run's (/_compared/candidates/), "
            "wherever it lies (default: regression.json's baseline, if inside the project's runs/ "
            "folder or beside the viewed run)"
        ),
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


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the server on this machine: 127.0.0.0/8, ::1 or ``localhost``.

    Anything else, a name included (it may resolve to any address), counts as reachable from other
    machines; an empty host is every interface.

    >>> [is_loopback(h) for h in ("127.0.0.1", "127.8.0.1", "::1", "[::1]", "localhost")]
    [True, True, True, True, True]
    >>> [is_loopback(h) for h in ("", "0.0.0.0", "::", "10.0.0.5", "example.org")]
    [False, False, False, False, False]
    """
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.removeprefix("[").removesuffix("]")).is_loopback
    except ValueError:
        return False


def request_problem(target: str) -> str:
    """Why the request target ``target`` (path and query, as sent) is malformed; ``""`` when it is not.

    >>> request_problem("/instances.html?x=1"), request_problem("/_dataset/p%C3%A9ge%201.png")
    ('', '')
    >>> request_problem("/%00")
    'the path holds a control character (NUL or below space)'
    >>> request_problem("/%zz"), request_problem("/%ff")
    ('the path has a bad percent-encoding', 'the path is not UTF-8 once percent-decoded')
    """
    if len(target) > MAX_TARGET_CHARS:
        return f"the request path is longer than {MAX_TARGET_CHARS} characters"
    if not target.startswith("/"):
        return "the path must start with /"
    if any(not "!" <= c <= "~" for c in target):
        # Browsers percent-encode everything else; a raw byte here is a hand-made request.
        return "the path holds a character that must be percent-encoded"
    path = target.split("?", 1)[0].split("#", 1)[0]
    if not _PERCENT_ENCODED.fullmatch(path):
        return "the path has a bad percent-encoding"
    try:
        decoded = unquote_to_bytes(path).decode("utf-8")
    except UnicodeDecodeError:
        return "the path is not UTF-8 once percent-decoded"
    if any(c < " " or c == "\x7f" for c in decoded):
        return "the path holds a control character (NUL or below space)"
    return ""


def _read_config(folder: Path) -> dict[str, Any] | None:
    """``config.resolved.yaml`` of ``folder`` (None: the folder has none).

    Raises:
        ConfigError: the file is unreadable, not YAML or not a mapping (exit 2, naming the file).
    """
    import yaml

    config_path = folder / "config.resolved.yaml"
    if not config_path.is_file():
        return None
    try:
        config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"{config_path}: cannot read: {exc}") from None
    if config is None:
        return {}
    if not isinstance(config, dict):
        raise ConfigError(f"{config_path}: expected a mapping of config keys, got {type(config).__name__}")
    return config


def _check_regression(folder: Path) -> None:
    """``regression.json`` of ``folder``, when present, must be a JSON object with a usable ``baseline``.

    Raises:
        ConfigError: unreadable, not JSON, not an object, or a baseline that is neither an id nor
            an object (exit 2, naming the file).
    """
    path = folder / "regression.json"
    if not path.is_file():
        return
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{path}: invalid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from None
    if not isinstance(document, dict):
        raise ConfigError(f"{path}: expected a JSON object, got {_json_kind(document)}")
    baseline = document.get("baseline")
    if baseline is not None and not isinstance(baseline, (str, dict)):
        raise ConfigError(f"{path}: baseline: expected a run id or an object, got {_json_kind(baseline)}")


def _json_kind(value: object) -> str:
    """The JSON name of a decoded value's type (``an array``, ``a string``...)."""
    kinds = {list: "an array", str: "a string", bool: "a boolean", int: "a number", float: "a number"}
    return "null" if value is None else kinds.get(type(value), type(value).__name__)


def dataset_root(folder: Path) -> Path | None:
    """The dataset folder a run names, from its ``config.resolved.yaml`` (None when not found).

    A relative ``dataset.path`` was relative to where the run started (usually the project root):
    it is looked up from the current directory, then from each folder above the run folder. The
    folder is what the run *says*; :func:`served_folders` decides whether it is served.

    Raises:
        ConfigError: ``config.resolved.yaml`` is unreadable or not a mapping.
    """
    config = _read_config(folder)
    dataset = config.get("dataset") if config is not None else None
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


@dataclass(frozen=True)
class Served:
    """What ``omnieval view`` serves: resolved folders, and why a named folder is not served."""

    run: Path
    """The run folder (``/``)."""
    dataset: Path | None = None
    """The dataset folder (``/_dataset/``); None: none named, or refused."""
    compared: Path | None = None
    """The compared run's ``candidates/`` folder (``/_compared/candidates/``); None: not compared,
    its folder is gone, or refused."""
    dataset_refused: str = ""
    """Why the dataset folder the run names is not served ("" when it is, or none is named)."""
    compared_refused: str = ""
    """Why the compared run regression.json names is not served ("" when it is, or none is named)."""
    listings: bool = True
    """Whether a folder without ``index.html`` is answered with a listing (off with ``--expose``)."""

    @property
    def warnings(self) -> list[str]:
        """The lines printed on start, one per refused folder."""
        return [f"warning: {why}" for why in (self.dataset_refused, self.compared_refused) if why]


def project_roots() -> tuple[Path | None, Path | None]:
    """The project's ``data/`` and ``runs/`` folders, resolved (None each when there is no project).

    The project is the one the user works in (``OMNIEVAL_PROJECT_ROOT``, else the nearest folder
    holding ``dvc.yaml`` above the current directory), never one found from the viewed run folder:
    that folder may come from someone else, and so may a ``dvc.yaml`` above it.
    """
    from omnieval.runner import project_root

    try:
        root = project_root()
    except OmnievalError:
        return None, None
    return (root / "data").resolve(), (root / "runs").resolve()


def served_folders(
    folder: Path, *, dataset: Path | None = None, compare: Path | None = None, listings: bool = True
) -> Served:
    """Which folders ``omnieval view folder`` serves (see the module docstring for the rules).

    Args:
        folder: the run folder.
        dataset: ``--dataset``: the dataset folder, served wherever it lies (None: the run's own,
            when inside the project's ``data/``).
        compare: ``--compare``: the compared run's folder, served wherever it lies (None:
            ``regression.json``'s baseline, when inside the project's ``runs/`` or beside ``folder``).
        listings: answer a folder without ``index.html`` with a listing.

    Raises:
        ConfigError: ``config.resolved.yaml`` or ``regression.json`` is malformed, or ``--dataset``
            / ``--compare`` is not a folder (exit 2).
    """
    from omnieval.stages import compared_run

    run = folder.resolve()
    data_root, runs_root = project_roots()
    served_dataset: Path | None = None
    dataset_refused = ""
    if dataset is not None:
        if not dataset.is_dir():
            raise ConfigError(f"--dataset: {dataset} is not a folder")
        served_dataset = dataset.resolve()
        _read_config(folder)  # a malformed config.resolved.yaml is an error all the same
    else:
        named = dataset_root(folder)
        if named is not None:
            if data_root is not None and inside(data_root, named):
                served_dataset = named.resolve()
            else:
                where = f"the project's data folder {data_root}" if data_root else "a project (no dvc.yaml)"
                dataset_refused = (
                    f"not serving the dataset folder {named.resolve()} (dataset.path of "
                    f"{folder / 'config.resolved.yaml'}): it lies outside {where}; "
                    "name it with --dataset DIR to serve it"
                )

    _check_regression(folder)
    served_compared: Path | None = None
    compared_refused = ""
    if compare is not None:
        if not (compare / "candidates").is_dir():
            raise ConfigError(f"--compare: {compare} is not a run folder: it has no candidates/ folder")
        served_compared = (compare / "candidates").resolve()
    else:
        _, found = compared_run(folder)
        if found is not None:
            roots = [run.parent, *([runs_root] if runs_root is not None else [])]
            real = found.resolve()
            candidates = (found / "candidates").resolve()
            if not any(inside(root, real) for root in roots):
                shown = " or ".join(str(r) for r in roots)
                compared_refused = (
                    f"not serving the compared run {real} (baseline of {folder / 'regression.json'}): "
                    f"it lies outside {shown}; name it with --compare RUN to serve it"
                )
            elif not inside(real, candidates):
                compared_refused = (
                    f"not serving the compared run's candidates {candidates}: its candidates/ folder "
                    f"links outside {real}; name the run with --compare RUN to serve it"
                )
            else:
                served_compared = candidates
    return Served(
        run=run,
        dataset=served_dataset,
        compared=served_compared,
        dataset_refused=dataset_refused,
        compared_refused=compared_refused,
        listings=listings,
    )


def _ensure_page(folder: Path, *, rebuild: bool, dataset: Path | None) -> None:
    """Write ``instances.html`` when the folder has none (or ``rebuild``), with ``dataset``'s inputs."""
    from omnieval.cli._registries import registered_benchmark
    from omnieval.reporting import INSTANCES_PAGE
    from omnieval.stages import write_run_instances

    if (folder / INSTANCES_PAGE).is_file() and not rebuild:
        return
    if not (folder / "scores.parquet").is_file():
        raise ConfigError(f"{folder} is not a run folder: it has no scores.parquet")
    config = _read_config(folder)
    config_path = folder / "config.resolved.yaml"
    if config is None:
        raise ConfigError(f"{folder} is not a run folder: it has no config.resolved.yaml")
    if not config.get("benchmark"):
        raise ConfigError(f"{config_path} names no benchmark")
    try:
        bench = registered_benchmark(str(config["benchmark"]))
    except ConfigError as exc:
        raise ConfigError(f"{config_path}: benchmark: {exc}") from None
    print(f"writing {folder / INSTANCES_PAGE}", file=sys.stderr, flush=True)
    write_run_instances(
        bench,
        folder,
        dataset_path=dataset,
        suite=str(config.get("suite", "")),
        run_id=folder.name,
    )


@dataclass(frozen=True)
class _Target:
    """Where a request path leads: the served folder it falls in and the path's words inside it."""

    root: Path | None
    """The served folder (None: the route serves nothing)."""
    words: tuple[str, ...]
    refused: str = ""
    """Why the route's folder is not served (answered 403)."""


class ViewHandler(SimpleHTTPRequestHandler):
    """Static files of the run folder, of the dataset folder under ``/_dataset/`` and of the compared
    run's candidates under ``/_compared/candidates/``; each file must resolve inside its folder."""

    served: ClassVar[Served]

    def _target(self, path: str) -> _Target:
        """The folder and words ``path`` (a well-formed request target) leads to.

        The path is percent-decoded once and normalized; ``.`` and ``..`` words are dropped (as the
        parent class does), so the words never climb out of their folder by themselves.
        """
        from omnieval.reporting import COMPARED_ROUTE, DATASET_ROUTE

        plain = unquote(path.split("?", 1)[0].split("#", 1)[0], errors="strict")
        words = tuple(w for w in posixpath.normpath(plain).split("/") if w not in ("", ".", ".."))
        served = self.served
        # The reasons name no folder: the answer may go to another machine (--expose), and the
        # status line is Latin-1; the start warning on the viewer's stderr names the folder.
        if words[:1] == (DATASET_ROUTE,):
            why = "the run's dataset folder is not served (see the viewer's start warning)"
            return _Target(served.dataset, words[1:], why if served.dataset_refused else "")
        if words[:2] == (COMPARED_ROUTE, "candidates"):
            why = "the compared run is not served (see the viewer's start warning)"
            return _Target(served.compared, words[2:], why if served.compared_refused else "")
        if words[:1] == (COMPARED_ROUTE,):
            return _Target(None, words[1:])  # only the compared run's candidates are served
        return _Target(served.run, words)

    def translate_path(self, path: str) -> str:
        target = self._target(path)
        # send_head answers such a route itself; for any other caller "" names no file, so the run
        # folder's own file of that name is never read in its place.
        if target.root is None:
            return ""
        root = target.root
        trailing = "/" if path.split("?", 1)[0].split("#", 1)[0].endswith("/") else ""
        return os.path.join(root, *target.words) + trailing

    def send_head(self) -> BytesIO | BinaryIO | None:
        problem = request_problem(self.path)
        if problem:
            self.send_error(HTTPStatus.BAD_REQUEST, problem)
            return None
        target = self._target(self.path)
        if target.refused:
            self.send_error(HTTPStatus.FORBIDDEN, target.refused)
            return None
        if target.root is None:
            self.send_error(HTTPStatus.NOT_FOUND, "not served")
            return None
        path = Path(self.translate_path(self.path))
        # A folder is answered with its index page when it has one (the parent class's choice):
        # that file must stay inside too.
        index_pages = [path / name for name in ("index.html", "index.htm")] if path.is_dir() else []
        try:
            contained = all(inside(target.root, p) for p in (path, *index_pages))
        except (OSError, RuntimeError, ValueError):  # a symlink loop, an unreadable folder
            contained = False
        if not contained:
            self.send_error(HTTPStatus.NOT_FOUND, "File not found")  # a symlink out: as if absent
            return None
        return super().send_head()

    def list_directory(self, path: str | os.PathLike[str]) -> BytesIO | None:
        if not self.served.listings:
            self.send_error(HTTPStatus.FORBIDDEN, "directory listings are off (--expose)")
            return None
        return super().list_directory(path)

    def log_message(self, format: str, *args: Any) -> None:
        """Requests are not logged: a page with many players would flood the terminal."""


class ViewServer(ThreadingHTTPServer):
    """The viewer's server: a failed request is one line on stderr, never a traceback."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, ConnectionError):
            return  # the browser dropped a media request it no longer needed (seeking, closing)
        where = client_address[0] if isinstance(client_address, tuple) else client_address
        print(
            f"view: a request from {where} failed: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True
        )


class _ViewServer6(ViewServer):
    address_family = socket.AF_INET6


def make_server(
    folder: Path, *, host: str = "127.0.0.1", port: int = 0, served: Served | None = None
) -> ThreadingHTTPServer:
    """An HTTP server for ``folder`` (not yet serving); ``server.server_address`` has the real port.

    ``served``: what to serve (default :func:`served_folders` of ``folder``, listings on).
    """
    chosen = served if served is not None else served_folders(folder)
    handler = type("RunViewHandler", (ViewHandler,), {"served": chosen})
    bare = host.removeprefix("[").removesuffix("]")
    server_class = _ViewServer6 if ":" in bare else ViewServer
    return server_class((bare, port), partial(handler, directory=str(chosen.run)))


def _url_host(host: str) -> str:
    """The host part of the URL printed for a server bound to ``host``.

    Every interface is named by this machine's host name (other machines reach it so; on this
    machine 127.0.0.1 works too); an IPv6 address is bracketed.
    """
    if host in _WILDCARD_HOSTS:
        return socket.gethostname()
    return f"[{host}]" if ":" in host else host


def _handle(args: argparse.Namespace) -> int:
    from omnieval.reporting import INSTANCES_PAGE

    host: str = args.host
    if not is_loopback(host) and not args.expose:
        shown = "every interface" if host in _WILDCARD_HOSTS else host
        raise ConfigError(
            f"--host {host!r} listens on {shown}, where other machines can read the run folder: "
            "add --expose to serve it there, or leave --host out (127.0.0.1: this machine only)"
        )
    folder: Path = args.run
    if not folder.is_dir():
        raise ConfigError(f"run folder {folder} does not exist")
    served = served_folders(folder, dataset=args.dataset, compare=args.compare, listings=not args.expose)
    for line in served.warnings:
        print(line, file=sys.stderr, flush=True)
    _ensure_page(folder, rebuild=args.rebuild, dataset=served.dataset)
    try:
        server = make_server(folder, host=host, port=args.port, served=served)
    except OSError as exc:
        why = exc.strerror or str(exc)
        if exc.errno == errno.EADDRINUSE:
            why += " (another program listens there: pick another --port, or --port 0 for any free one)"
        raise ConfigError(f"cannot listen on {host}:{args.port}: {why}") from None
    bound, port = str(server.server_address[0]), int(server.server_address[1])
    wildcard = host in _WILDCARD_HOSTS
    if not is_loopback(host):
        where = f"every interface ({bound})" if wildcard else f"the interface {bound}"
        local = "[::1]" if ":" in bound else "127.0.0.1"
        here = f" (on this machine: http://{local}:{port}/{INSTANCES_PAGE})" if wildcard else ""
        print(
            f"warning: --expose: listening on {where} port {port}: anyone who can reach this machine "
            "there can read the run folder, its dataset folder and the compared run's candidates; "
            f"directory listings are off{here}",
            file=sys.stderr,
            flush=True,
        )
    print(f"http://{_url_host(host if wildcard else bound)}:{port}/{INSTANCES_PAGE}", flush=True)
    print("serving until interrupted (Ctrl-C)", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()
    return 0
