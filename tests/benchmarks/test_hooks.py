"""The one benchmark API: every shipped benchmark is a DeclaredBenchmark, and the base leaves at most
ten hooks to override, none typed with ``Any``; the rest is ``@final`` and follows from declarations."""

from __future__ import annotations

import inspect

import pytest

from omnieval.benchmarks import BENCHMARKS, DeclaredBenchmark
from omnieval.benchmarks._base import Judging

HOOKS = {
    "score",
    "compute_metrics",
    "visible_task",
    "leaderboard",
    "instance_components",
    "leaderboard_text",
    "aggregate_text",
    "run_analyses",
    "write_report",
    "deviations",
}


def _methods(cls: type) -> dict[str, object]:
    """Public callables (and properties) ``cls`` has, from its whole MRO below ``object``."""
    found: dict[str, object] = {}
    for klass in reversed(cls.__mro__[:-1]):
        for name, value in vars(klass).items():
            if not name.startswith("_") and (callable(value) or isinstance(value, property)):
                found[name] = value
    return found


def _is_final(value: object) -> bool:
    target = value.fget if isinstance(value, property) else value
    return bool(getattr(target, "__final__", False) or getattr(value, "__final__", False))


def _overridable() -> dict[str, object]:
    return {
        name: value
        for name, value in _methods(DeclaredBenchmark).items()
        if not _is_final(value) and not isinstance(value, (classmethod, staticmethod, type))
    }


def test_the_base_leaves_at_most_ten_hooks_and_they_are_the_documented_ones() -> None:
    hooks = _overridable()
    assert set(hooks) == HOOKS, sorted(set(hooks) ^ HOOKS)
    assert len(hooks) <= 10


@pytest.mark.parametrize("name", sorted(HOOKS))
def test_each_hook_is_documented_and_typed_without_any(name: str) -> None:
    hook = _overridable()[name]
    assert callable(hook)
    assert (hook.__doc__ or "").strip(), f"{name} has no docstring"
    annotations = inspect.get_annotations(hook)
    assert "return" in annotations, f"{name} has no return annotation"
    for where, text in annotations.items():
        assert "Any" not in str(text), f"{name}: {where} is annotated {text!r}"


@pytest.mark.parametrize("name", sorted(HOOKS))
def test_each_hook_is_declared_with_an_example(name: str) -> None:
    # The first class in the MRO that defines the hook documents it for benchmark authors.
    first = next(k for k in reversed(DeclaredBenchmark.__mro__) if name in vars(k))
    assert "Example" in (vars(first)[name].__doc__ or ""), f"{first.__name__}.{name} has no example"


def test_the_class_docstring_names_every_hook() -> None:
    doc = DeclaredBenchmark.__doc__ or ""
    assert all(f":meth:`{name}`" in doc for name in HOOKS), doc


@pytest.mark.parametrize("name", ["storybench", "prism", "acbench"])
def test_each_shipped_benchmark_is_declared_and_overrides_only_hooks(name: str) -> None:
    bench = BENCHMARKS.get(name)
    assert isinstance(bench, DeclaredBenchmark)
    finals = {n for n, value in _methods(DeclaredBenchmark).items() if _is_final(value)}
    assert len(finals) >= 25  # the dispatch the stages call is the framework's, not the benchmark's
    overridden = {n for n in finals if vars(type(bench)).get(n) is not None}
    assert overridden == set(), f"{name} overrides final methods: {sorted(overridden)}"
    own = {n for n, v in vars(type(bench)).items() if not n.startswith("_") and inspect.isfunction(v)}
    assert own <= HOOKS, f"{name} defines methods outside the hooks: {sorted(own - HOOKS)}"


def test_judging_is_a_component_of_its_benchmark() -> None:
    # Two benchmarks' judge scorers side by side in one process, each bound to its own name.
    story, prism = BENCHMARKS.get("storybench").judges(), BENCHMARKS.get("prism").judges()
    assert isinstance(story, Judging) and isinstance(prism, Judging)
    assert (story.benchmark, prism.benchmark) == ("storybench", "prism")
    assert BENCHMARKS.get("acbench").judges() is None
    assert BENCHMARKS.get("acbench").judgment_schema() is None
    assert set(BENCHMARKS.get("prism").anchor_tracks() or {}) == set(BENCHMARKS.get("prism").judge_tracks)
