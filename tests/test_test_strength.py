"""Tests that cannot fail, found by reading the test tree (AST), so a weak one is caught before review.

Three shapes are refused:

- **no check**: a ``test_*`` function with no ``assert``, no ``pytest.raises``/``warns``/``fail`` and no
  call to a helper that checks (a function of the same module that does, transitively, or one whose
  name says it checks: ``assert_*``, ``check_*``, ``expect_*``, ``verify_*``, ``require_*``);
- **self-comparison**: ``a == a`` (or ``is``) with both sides the same expression: it holds for any
  ``a`` unless the point is determinism, which the allow-list must then say;
- **all() over a collection that may be empty**: ``assert all(... for x in c)`` holds when ``c`` is
  empty, so ``c`` must be a non-empty literal (or a module constant bound to one), a ``range`` of
  constants, or be named by an earlier assertion of the same test (``assert c``, ``len(c) == 3``...).

A finding that is right as written goes in :data:`ALLOWED` with the reason. The test of the scanner
itself plants each shape in a snippet, so the scanner cannot silently stop finding them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

TESTS = Path(__file__).resolve().parent

#: ``<path relative to tests/>::<test function>::<rule>`` -> why the finding is right as written.
ALLOWED: dict[str, str] = {
    "backends/llm/test_faults.py::test_same_seed_same_run::self-comparison": (
        "determinism: two separately opened backends answer 90 requests identically"
    ),
    "benchmarks/prism/test_systems.py::test_swap_partners_is_a_derangement_preferring_other_tags::self-comparison": (
        "determinism: the same seed draws the same partners (other seeds are checked beside it)"
    ),
    "benchmarks/test_declared.py::test_summarize_against_hand_computed_means::self-comparison": (
        "determinism: the bootstrap with the same seed gives the same interval (values pinned beside it)"
    ),
}

_CHECKING_CALLS = frozenset({"raises", "warns", "fail", "skip", "importorskip", "xfail", "deprecated_call"})
_CHECKING_PREFIXES = (
    "assert",
    "check",
    "expect",
    "verify",
    "require",
    "_assert",
    "_check",
    "_expect",
    "_verify",
)
_VIEWS = frozenset({"values", "items", "keys"})
_WRAPPERS = frozenset({"sorted", "list", "tuple", "set", "frozenset", "enumerate", "zip", "reversed"})


@dataclass(frozen=True)
class Finding:
    """One weak test: where it is and which rule it breaks (the :data:`ALLOWED` key)."""

    path: str
    test: str
    rule: str
    line: int

    @property
    def key(self) -> str:
        return f"{self.path}::{self.test}::{self.rule}"


def _call_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _checks(node: ast.AST, helpers: set[str]) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Assert):
            return True
        if isinstance(sub, ast.Call):
            name = _call_name(sub)
            if name in _CHECKING_CALLS or name in helpers or name.startswith(_CHECKING_PREFIXES):
                return True
    return False


def _non_empty_literal(node: ast.expr, constants: set[str]) -> bool:
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return bool(node.elts)
    if isinstance(node, ast.Dict):
        return bool(node.keys)
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str | bytes) and bool(node.value)
    if isinstance(node, ast.Name):
        return node.id in constants
    if isinstance(node, ast.Call) and _call_name(node) == "range" and node.args:
        bounds = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, int)]
        return len(bounds) == len(node.args) and len(range(*bounds)) > 0
    return False


def _collection(node: ast.expr) -> ast.expr:
    """``sorted(d.values())`` -> ``d``: the collection whose emptiness decides the ``all()``."""
    while isinstance(node, ast.Call):
        if isinstance(node.func, ast.Attribute) and node.func.attr in _VIEWS and not node.args:
            node = node.func.value
        elif isinstance(node.func, ast.Name) and node.func.id in _WRAPPERS and node.args:
            node = node.args[0]
        else:
            break
    return node


def _module_constants(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
        if value is None or not _non_empty_literal(value, set()):
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]  # type: ignore[union-attr]
        names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def scan(source: str, path: str) -> Iterator[Finding]:
    """Every weak-test finding in one test module's ``source`` (``path`` names it in findings)."""
    tree = ast.parse(source)
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    helpers: set[str] = set()
    grew = True
    while grew:  # a helper that calls a checking helper checks too
        grew = False
        for fn in functions:
            if not fn.name.startswith("test_") and fn.name not in helpers and _checks(fn, helpers):
                helpers.add(fn.name)
                grew = True
    constants = _module_constants(tree)
    for fn in functions:
        if not fn.name.startswith("test_"):
            continue
        if not _checks(fn, helpers):
            yield Finding(path, fn.name, "no-check", fn.lineno)
        asserts = sorted((n for n in ast.walk(fn) if isinstance(n, ast.Assert)), key=lambda a: a.lineno)
        for node in ast.walk(fn):
            if (
                isinstance(node, ast.Compare)
                and len(node.ops) == 1
                and isinstance(node.ops[0], ast.Eq | ast.Is)
                and ast.dump(node.left) == ast.dump(node.comparators[0])
            ):
                yield Finding(path, fn.name, "self-comparison", node.lineno)
        for check in asserts:
            test = check.test
            if not (
                isinstance(test, ast.Call)
                and _call_name(test) == "all"
                and test.args
                and isinstance(test.args[0], ast.GeneratorExp | ast.ListComp)
            ):
                continue
            collection = _collection(test.args[0].generators[0].iter)
            if _non_empty_literal(collection, constants):
                continue
            shape = ast.dump(collection)
            earlier = (a for a in asserts if a.lineno < check.lineno)
            if any(shape == ast.dump(sub) for a in earlier for sub in ast.walk(a.test)):
                continue
            yield Finding(path, fn.name, "all-over-maybe-empty", check.lineno)


def _findings() -> list[Finding]:
    found: list[Finding] = []
    for file in sorted(TESTS.rglob("test_*.py")):
        found.extend(scan(file.read_text(encoding="utf-8"), file.relative_to(TESTS).as_posix()))
    return found


def test_no_unlisted_weak_test() -> None:
    found = _findings()
    assert len(found) > 0 or ALLOWED == {}, "the scanner read nothing"
    unlisted = [f"{f.path}:{f.line} {f.test}: {f.rule}" for f in found if f.key not in ALLOWED]
    assert not unlisted, "weak tests (fix them, or list them in ALLOWED with the reason):\n" + "\n".join(
        unlisted
    )


def test_every_allowed_entry_still_exists() -> None:
    keys = {f.key for f in _findings()}
    stale = sorted(set(ALLOWED) - keys)
    assert not stale, f"ALLOWED names findings that are gone (remove them): {stale}"


def test_the_scanner_finds_each_planted_shape() -> None:
    planted = """
import pytest
ITEMS = (1, 2)

def _helper(x):
    assert x

def test_nothing():
    x = 1

def test_calls_a_checking_helper():
    _helper(1)

def test_raises():
    with pytest.raises(ValueError):
        int("x")

def test_same():
    assert f(1) == f(1)

def test_all_maybe_empty(rows):
    assert all(r > 0 for r in rows)

def test_all_after_non_empty(rows):
    assert rows
    assert all(r > 0 for r in rows.values())

def test_all_over_constant():
    assert all(i > 0 for i in ITEMS) and True
    assert all(i > 0 for i in ITEMS)
    assert all(i >= 0 for i in range(3))

def test_all_over_empty_range():
    assert all(i >= 0 for i in range(0))
"""
    found = {(f.test, f.rule) for f in scan(planted, "planted.py")}
    assert found == {
        ("test_nothing", "no-check"),
        ("test_same", "self-comparison"),
        ("test_all_maybe_empty", "all-over-maybe-empty"),
        ("test_all_over_empty_range", "all-over-maybe-empty"),
    }
