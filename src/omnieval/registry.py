"""One small registry per kind of component; the registered name is the config key.

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

from collections.abc import Callable
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
        try:
            return self._items[name]
        except KeyError:
            known = ", ".join(sorted(self._items)) or "(none)"
            raise UnknownComponentError(f"unknown {self.kind} {name!r}; known: {known}") from None

    def names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items
