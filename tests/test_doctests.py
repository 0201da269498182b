"""Every docstring example in the package runs (and passes) as part of ``make test``."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import omnieval


def _modules() -> list[str]:
    names = [omnieval.__name__]
    for info in pkgutil.walk_packages(omnieval.__path__, prefix=f"{omnieval.__name__}."):
        names.append(info.name)
    return sorted(names)


def _with_examples(name: str) -> bool:
    module = importlib.import_module(name)
    return any(t.examples for t in doctest.DocTestFinder().find(module))


MODULES = [name for name in _modules() if not name.endswith("__main__") and _with_examples(name)]


def test_the_package_has_docstring_examples() -> None:
    assert len(MODULES) >= 10, MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(
        module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False
    )
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
