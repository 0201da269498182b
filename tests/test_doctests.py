"""Every docstring example in the package and in the test kit runs (and passes) as part of ``make test``."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import omnieval
import omnieval_testkit


def _modules() -> list[str]:
    names = []
    for package in (omnieval, omnieval_testkit):
        names.append(package.__name__)
        for info in pkgutil.walk_packages(package.__path__, prefix=f"{package.__name__}."):
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
