"""Benchmarks from outside the package: a folder named by a suite, or an installed plugin.

A suite's ``benchmark:`` may be a path to a folder (relative to the suite file) that holds
``benchmark.yaml`` and the hooks module(s) (FORMATS.md section 10). The folder is imported where it
lies, nothing is copied: as a package of its own under this module's name, so the hooks may import
each other relatively and two folders never share a module. The package's name encodes the folder's
absolute path, so any process (a fresh stage process, a Dask worker unpickling the suite and the
benchmark's typed ``metrics:`` block) can import it again by name alone.

Installed packages register benchmarks through the entry-point group ``omnieval.benchmarks`` (see
:meth:`omnieval.registry.Registry.use_entry_points`; ``omnieval.benchmarks`` turns it on).

Example:
    >>> key = folder_key(Path("/tmp/my bench"))
    >>> key.startswith("my_bench__") and folder_of_key(key) == Path("/tmp/my bench")
    True
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import os
import re
import sys
from pathlib import Path
from types import ModuleType, TracebackType
from typing import Final

from omnieval.benchmarks._base import BENCHMARKS, Benchmark
from omnieval.benchmarks._spec import SPEC_FILE
from omnieval.errors import ConfigError

ENTRY_POINT_GROUP: Final = "omnieval.benchmarks"
"""Entry-point group of installed benchmark plugins (name = the suite's ``benchmark:`` key)."""

NAMESPACE: Final = __name__
"""Folder benchmarks are imported as ``<NAMESPACE>.<folder key>`` (see :func:`folder_key`)."""

# This module is the parent package of every imported folder: the import system asks the finder
# below for ``<NAMESPACE>.<key>`` and finds a folder's own modules on that package's ``__path__``.
__path__: list[str] = []

_LOADED: dict[Path, Benchmark] = {}
"""Absolute folder -> the benchmark its import registered (to register it again if it was undone)."""


def folder_key(folder: Path) -> str:
    """The module name of ``folder`` under :data:`NAMESPACE`: readable stem, then the path in hex.

    The path is encoded whole (not hashed) so that a process which has never seen the folder can
    import it from the name alone (:class:`_FolderFinder`).
    """
    stem = re.sub(r"\W", "_", folder.name) or "benchmark"
    if not stem[0].isalpha():
        stem = f"b_{stem}"
    return f"{stem}__{str(folder).encode('utf-8').hex()}"


def folder_of_key(key: str) -> Path | None:
    """The folder a :func:`folder_key` names, or None when ``key`` is not one."""
    _, sep, encoded = key.rpartition("__")
    if not sep:
        return None
    try:
        return Path(bytes.fromhex(encoded).decode("utf-8"))
    except ValueError:
        return None


class _FolderLoader(importlib.abc.Loader):
    """Executes a benchmark folder as a package: its ``__init__.py`` when it has one, else every
    top-level ``*.py`` module (sorted; names starting with ``_`` or ``test_`` are left to import)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        init = self.folder / "__init__.py"
        if init.is_file():
            # The standard source loader runs the folder's __init__.py in the package's namespace.
            importlib.machinery.SourceFileLoader(module.__name__, str(init)).exec_module(module)
        else:
            for path in sorted(self.folder.glob("*.py")):
                if path.stem.isidentifier() and not path.stem.startswith(("_", "test_")):
                    importlib.import_module(f"{module.__name__}.{path.stem}")
        bench = _registered_from(module.__name__)
        if bench is None:
            raise ConfigError(
                f"{self.folder}: its hooks registered no benchmark (decorate the Benchmark subclass "
                "with @benchmark; omnieval.benchmarks.DeclaredBenchmark is the short way)"
            )
        # Paths a folder declares (its sample, its drift anchors) are relative to the folder.
        cls = type(bench)
        if not Path(cls.default_dataset).is_absolute():
            cls.default_dataset = self.folder / cls.default_dataset
        if cls.drift_anchors is not None and not cls.drift_anchors.is_absolute():
            cls.drift_anchors = self.folder / cls.drift_anchors
        _LOADED[self.folder] = bench


class _FolderFinder(importlib.abc.MetaPathFinder):
    """Finds ``<NAMESPACE>.<key>``: the folder the key encodes, as a package."""

    def find_spec(
        self, fullname: str, path: object = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        head, _, key = fullname.rpartition(".")
        folder = folder_of_key(key) if head == NAMESPACE else None
        if folder is None or not (folder / SPEC_FILE).is_file():
            return None
        init = folder / "__init__.py"
        spec = importlib.machinery.ModuleSpec(
            fullname, _FolderLoader(folder), origin=str(init if init.is_file() else folder), is_package=True
        )
        spec.has_location = init.is_file()
        spec.submodule_search_locations = [str(folder)]
        return spec


def _registered_from(package: str) -> Benchmark | None:
    """The benchmark a class of ``package`` (or one of its modules) registered, if any."""
    for bench in BENCHMARKS.registered().values():
        module = type(bench).__module__
        if module == package or module.startswith(f"{package}."):
            return bench
    return None


def _where(exc: BaseException, folder: Path) -> str:
    """``file:line`` of the innermost frame of ``exc`` inside ``folder`` (the hooks' own line)."""
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"{exc.filename}:{exc.lineno}"
    found = str(folder)
    trace: TracebackType | None = exc.__traceback__
    while trace is not None:
        name = trace.tb_frame.f_code.co_filename
        if Path(name).parent == folder:
            found = f"{name}:{trace.tb_lineno}"
        trace = trace.tb_next
    return found


def load_folder(folder: Path | str) -> Benchmark:
    """Import the benchmark folder ``folder`` (once per process) and return what it registered.

    Raises:
        ConfigError: the folder is missing, holds no ``benchmark.yaml``, its hooks fail to import
            (the message names the file and line), register no benchmark, or register a name
            another benchmark already has.
    """
    folder = Path(os.path.abspath(Path(folder).expanduser()))
    if not folder.is_dir():
        raise ConfigError(f"benchmark folder {folder} not found")
    if not (folder / SPEC_FILE).is_file():
        raise ConfigError(
            f"{folder}: no {SPEC_FILE} in the folder (a benchmark folder holds {SPEC_FILE} and its hooks)"
        )
    name = f"{NAMESPACE}.{folder_key(folder)}"
    if name not in sys.modules:
        before = set(BENCHMARKS.registered())
        try:
            importlib.import_module(name)
        except Exception as exc:  # the hooks are someone else's code: name the file, never a trace
            for module in [m for m in sys.modules if m == name or m.startswith(f"{name}.")]:
                del sys.modules[module]
            for added in set(BENCHMARKS.registered()) - before:
                BENCHMARKS.unregister(added)
            if isinstance(exc, ConfigError):
                raise ConfigError(str(exc)) from None
            hint = (
                " (another benchmark has this name: rename it in benchmark.yaml)"
                if "twice" in str(exc)
                else ""
            )
            raise ConfigError(
                f"{_where(exc, folder)}: cannot load benchmark folder {folder}: "
                f"{type(exc).__name__}: {exc}{hint}"
            ) from None
    bench = _LOADED[folder]
    if BENCHMARKS.registered().get(bench.name) is not bench:
        try:  # registered in an earlier block that was undone since (tests), or taken meanwhile
            BENCHMARKS.register(bench.name)(bench)
        except ValueError as exc:
            raise ConfigError(f"{folder}: {exc} (rename it in benchmark.yaml)") from None
    return bench


def benchmark_folder(name: str) -> Path | None:
    """The folder the benchmark registered as ``name`` was loaded from, or None (a package or plugin
    benchmark, or nothing registered under ``name``)."""
    current = BENCHMARKS.registered().get(name)
    return next((folder for folder, bench in _LOADED.items() if bench is current), None)


def _looks_like_path(value: str) -> bool:
    return value.startswith((".", "~")) or "/" in value or os.sep in value


def resolve_benchmark(value: str, base: Path | None = None) -> Benchmark:
    """The benchmark a suite's ``benchmark:`` value names: a registered name (package, plugin) or
    a folder relative to ``base`` (the suite file's folder; default the working directory).

    Raises:
        ConfigError: unknown name, or a folder that cannot be loaded (:func:`load_folder`).
    """
    from omnieval.registry import UnknownComponentError

    candidate = Path(value).expanduser()
    folder = candidate if candidate.is_absolute() else (base or Path.cwd()) / candidate
    if _looks_like_path(value):
        return load_folder(folder)
    try:
        return BENCHMARKS.get(value)
    except UnknownComponentError as exc:
        if (folder / SPEC_FILE).is_file():
            return load_folder(folder)
        raise ConfigError(f"{exc}; or a folder holding {SPEC_FILE}, relative to the suite file") from None


def enable_plugins() -> None:
    """Let installed packages add benchmarks through :data:`ENTRY_POINT_GROUP` (loaded lazily)."""
    BENCHMARKS.use_entry_points(ENTRY_POINT_GROUP, error=ConfigError)


if not any(isinstance(f, _FolderFinder) for f in sys.meta_path):  # once, if this module is reloaded
    sys.meta_path.append(_FolderFinder())

__all__ = [
    "ENTRY_POINT_GROUP",
    "NAMESPACE",
    "benchmark_folder",
    "enable_plugins",
    "folder_key",
    "folder_of_key",
    "load_folder",
    "resolve_benchmark",
]
