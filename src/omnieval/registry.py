"""One small registry per kind of component; the registered name is the config key.

A registry may also be filled by installed packages: :meth:`Registry.use_entry_points` names an
entry-point group (``omnieval.benchmarks``, ``omnieval.systems``) whose plugins are imported the
first time a name is missing or the names are listed, once per process.

Example:
    >>> systems: Registry[object] = Registry("system")
    >>> @systems.register("noop")
    ... def noop() -> None: ...
    >>> systems.names()
    ['noop']
    >>> systems.get("nope")
    Traceback (most recent call last):
    ...
    omnieval.registry.UnknownComponentError: unknown system 'nope'; known: noop
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

T = TypeVar("T")


class UnknownComponentError(KeyError):
    """A config named a component that no module registered."""

    def __str__(self) -> str:
        return str(self.args[0])


class Registry(Generic[T]):
    """Maps config keys to components of one kind (metrics, systems, backends, panels...)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}
        self._plugins: tuple[str, Callable[[str], Exception]] | None = None
        self._plugins_loaded = False
        self._loading = False

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator registering the decorated object under ``name``."""

        def deco(obj: T) -> T:
            if name in self._items and self._items[name] is not obj:
                raise ValueError(f"{self.kind} {name!r} registered twice")
            self._items[name] = obj
            return obj

        return deco

    def get(self, name: str) -> T:
        """Return the component registered as ``name`` or raise with the known names."""
        if name not in self._items:
            self._load_plugins()
        try:
            return self._items[name]
        except KeyError:
            known = ", ".join(sorted(self._items)) or "(none)"
            raise UnknownComponentError(f"unknown {self.kind} {name!r}; known: {known}") from None

    def names(self) -> list[str]:
        """Registered names, sorted (installed plugins included)."""
        self._load_plugins()
        return sorted(self._items)

    def registered(self) -> dict[str, T]:
        """What is registered now, without loading plugins (a copy)."""
        return dict(self._items)

    def unregister(self, name: str) -> None:
        """Forget ``name`` (a component whose loading failed halfway must not stay half-registered)."""
        self._items.pop(name, None)

    def __contains__(self, name: object) -> bool:
        if name not in self._items:
            self._load_plugins()
        return name in self._items

    # -- plugins ---------------------------------------------------------------------------------
    def use_entry_points(self, group: str, *, error: Callable[[str], Exception] = RuntimeError) -> None:
        """Let installed packages register here through the entry-point ``group``.

        Each entry point's name is the key a config uses and its value the module (or
        ``module:object``) whose import registers that key. They are loaded lazily: the first time
        a name is not found or the names are listed, all of them, once per process.

        Args:
            group: the entry-point group, e.g. ``omnieval.benchmarks``.
            error: builds the exception a broken plugin raises (the caller's user-facing error
                type; this module sits below :mod:`omnieval.errors`). Its message names the plugin.
        """
        self._plugins = (group, error)
        self._plugins_loaded = False

    def _load_plugins(self) -> None:
        if self._plugins is None or self._plugins_loaded or self._loading:
            return
        group, error = self._plugins
        self._loading = True  # a plugin's import may look a name up: no second pass meanwhile
        try:
            load_entry_points(self, group, error)
        finally:
            self._loading = False
        # Only a clean pass counts: a broken plugin fails every lookup that needs it, never once.
        self._plugins_loaded = True

    @contextmanager
    def restoring(self) -> Iterator[Registry[T]]:
        """Within the block, registrations are undone when it ends (tests that load components).

        Example:
            >>> r: Registry[int] = Registry("number")
            >>> with r.restoring():
            ...     _ = r.register("one")(1)
            >>> r.names()
            []
        """
        saved, loaded = dict(self._items), self._plugins_loaded
        try:
            yield self
        finally:
            self._items, self._plugins_loaded = saved, loaded


def load_entry_points(registry: Registry[T], group: str, error: Callable[[str], Exception]) -> list[str]:
    """Import every plugin of the entry-point ``group`` into ``registry``; return their names.

    A plugin is imported (``EntryPoint.load``) and must then have registered its entry point's name;
    anything else is ``error(message)`` naming the plugin, its value and its distribution.
    """
    from importlib.metadata import entry_points

    loaded: list[str] = []
    for point in sorted(entry_points(group=group), key=lambda p: p.name):
        dist = getattr(point.dist, "name", None) or "an unknown distribution"
        where = f"plugin {point.name!r} ({point.value}, from {dist}) of entry-point group {group}"
        try:
            point.load()
        except Exception as exc:  # a plugin may fail in any way; the user needs its name, not a trace
            raise error(f"{where} failed to load: {type(exc).__name__}: {exc}") from None
        if point.name not in registry._items:
            raise error(f"{where} loaded but registered no {registry.kind} named {point.name!r}")
        loaded.append(point.name)
    return loaded
