"""Metrics and evaluators never import the tracking layer or mlflow/wandb (ARCHITECTURE.md layers).

Registry-backed evaluator references reach MLflow through ``omnieval.backends.evaluators``, where the
tracking layer registers its resolver.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import omnieval

SRC = Path(omnieval.__file__).parent
PACKAGES = ("metrics", "evaluators")
FORBIDDEN = ("omnieval.tracking", "mlflow", "wandb")


def _forbidden(module: str) -> bool:
    return any(module == f or module.startswith(f + ".") for f in FORBIDDEN)


def _imports(tree: ast.AST) -> list[tuple[int, str]]:
    """Every module a source file imports, at any depth, including ``importlib.import_module("...")``."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in {"import_module", "__import__"} and isinstance(node.args[0].value, str):
                found.append((node.lineno, node.args[0].value))
    return found


def test_the_scan_sees_function_level_and_dynamic_imports() -> None:
    source = (
        "def f():\n    from omnieval.tracking.training import x\n"
        "def g():\n    import importlib\n    importlib.import_module('mlflow.artifacts')\n"
        "from omnieval import tracking\n"
    )
    assert sorted(m for _, m in _imports(ast.parse(source)) if _forbidden(m)) == [
        "mlflow.artifacts",
        "omnieval.tracking",
        "omnieval.tracking.training",
        "omnieval.tracking.training.x",
    ]


@pytest.mark.parametrize("package", PACKAGES)
def test_no_source_file_imports_tracking_or_mlflow(package: str) -> None:
    files = sorted((SRC / package).rglob("*.py"))
    assert files
    offenders = [
        f"{path.relative_to(SRC.parent)}:{line}: {module}"
        for path in files
        for line, module in _imports(ast.parse(path.read_text(encoding="utf-8"), str(path)))
        if _forbidden(module)
    ]
    assert offenders == []


def test_importing_every_module_loads_neither_tracking_nor_mlflow(tmp_path: Path) -> None:
    folder = tmp_path / "ckpt"
    folder.mkdir()
    script = f"""
import importlib, json, pkgutil, sys
import omnieval.metrics, omnieval.evaluators
import omnieval.benchmarks.storybench._metrics, omnieval.benchmarks.acbench._metrics
for pkg in (omnieval.metrics, omnieval.evaluators):
    for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
        importlib.import_module(info.name)
from omnieval.backends.evaluators import resolve_evaluator
from omnieval.metrics._classifiers import check_classifier_ref
resolve_evaluator({str(folder)!r})
check_classifier_ref("evaluator:models:/omnieval-standin-gender-espeak/1")
print(json.dumps(sorted(sys.modules)))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout.splitlines()[-1])
    assert "omnieval.benchmarks.acbench._metrics" in loaded and "omnieval.evaluators._classifier" in loaded
    assert [m for m in loaded if _forbidden(m)] == []
