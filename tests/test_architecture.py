"""The import architecture of ``src/omnieval``: no import cycles and no reaching into another package's privates.

The layer order itself is an import-linter contract (``[tool.importlinter]`` in pyproject.toml, run
by ``make lint`` and by the test below). These checks read the same grimp graph, which counts every
import statement: module-level, inside functions and under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path

import grimp  # installed with import-linter (requirements-cpu.lock)
import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Contract name -> the ``ignore_imports`` it may carry. An ignore hides an import from
#: ``lint-imports``, so "1 kept" would hold with any number of them; a new one must change this list.
ALLOWED_IGNORE_IMPORTS: dict[str, tuple[str, ...]] = {
    "omnieval layers": (),
    "benchmarks are independent": (),
    "system kinds are independent": (),
}
#: Subpackages of ``omnieval.systems`` that are shared pieces every kind may use, not system kinds.
SHARED_SYSTEM_PACKAGES = frozenset({"experts"})


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("omnieval", cache_dir=None)


def _edges(graph: grimp.ImportGraph) -> dict[str, set[str]]:
    return {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}


def strongly_connected(edges: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of size > 1 (each one holds an import cycle), iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_strongly_connected_finds_a_hand_made_cycle() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert strongly_connected(edges) == [["a", "b", "c"]]
    assert strongly_connected({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles_between_modules(graph: grimp.ImportGraph) -> None:
    cycles = strongly_connected(_edges(graph))
    assert cycles == [], "import cycles (module level, counting function-level imports):\n" + "\n".join(
        " <-> ".join(c) for c in cycles
    )


def _package(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2])


def private_crossings(graph: grimp.ImportGraph) -> list[str]:
    """``importer -> imported`` where ``imported`` is a ``_private`` module of another top-level package."""
    out = []
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            if _package(importer) == _package(imported):
                continue
            if any(part.startswith("_") and part != "__init__" for part in imported.split(".")[2:]):
                out.append(f"{importer} -> {imported}")
    return out


def test_packages_reach_each_other_only_through_their_init(graph: grimp.ImportGraph) -> None:
    crossings = private_crossings(graph)
    assert crossings == [], f"{len(crossings)} imports of another package's private module:\n" + "\n".join(
        crossings
    )


def test_the_layer_contract_holds() -> None:
    lint = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    done = subprocess.run([lint, "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert f"Contracts: {len(ALLOWED_IGNORE_IMPORTS)} kept, 0 broken." in done.stdout
    # What lint-imports checked is pyproject.toml's contract with exactly the allowed ignores
    # (setup.cfg and .importlinter would take precedence over pyproject.toml).
    setup_cfg = ROOT / "setup.cfg"
    assert not (ROOT / ".importlinter").exists()
    assert not setup_cfg.exists() or "[importlinter" not in setup_cfg.read_text(encoding="utf-8")
    with (ROOT / "pyproject.toml").open("rb") as fh:
        contracts = tomllib.load(fh)["tool"]["importlinter"]["contracts"]
    ignores = {c["name"]: tuple(c.get("ignore_imports", ())) for c in contracts}
    assert ignores == ALLOWED_IGNORE_IMPORTS, ignores
    layers = next(c for c in contracts if c["name"] == "omnieval layers")
    assert layers.get("exhaustive") is True and layers.get("containers") == ["omnieval"]


def _subpackages(folder: Path, *, skip: frozenset[str] = frozenset()) -> list[str]:
    return sorted(
        p.name
        for p in folder.iterdir()
        if (p / "__init__.py").is_file() and not p.name.startswith("_") and p.name not in skip
    )


def test_the_independence_contracts_name_every_benchmark_and_system_kind() -> None:
    """A benchmark or system kind added as a package is covered by its independence contract."""
    with (ROOT / "pyproject.toml").open("rb") as fh:
        contracts = {c["name"]: c for c in tomllib.load(fh)["tool"]["importlinter"]["contracts"]}
    src = ROOT / "src" / "omnieval"
    benchmarks = contracts["benchmarks are independent"]
    assert benchmarks["type"] == "independence"
    assert sorted(benchmarks["modules"]) == [
        f"omnieval.benchmarks.{n}" for n in _subpackages(src / "benchmarks")
    ]
    kinds = contracts["system kinds are independent"]
    assert kinds["type"] == "independence"
    expected = [f"omnieval.systems.{n}" for n in _subpackages(src / "systems", skip=SHARED_SYSTEM_PACKAGES)]
    assert sorted(kinds["modules"]) == expected


def _benchmark_mentions(path: Path, names: frozenset[str]) -> list[str]:
    """Where code in ``path`` names a registered benchmark: string constants other than docstrings,
    identifiers and imported module paths (whole lower-case words, as the registry spells them)."""
    import ast
    import re

    pattern = re.compile(r"\b(" + "|".join(sorted(names)) + r")\b")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    prose = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
    found: list[str] = []
    for node in ast.walk(tree):
        text = None
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose:
            text = node.value
        elif isinstance(node, ast.Name):
            text = node.id
        elif isinstance(node, ast.ImportFrom):
            text = node.module or ""
        elif isinstance(node, ast.Import):
            text = " ".join(alias.name for alias in node.names)
        if text is not None and pattern.search(text.replace(".", " ").replace("_", " ")):
            found.append(f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', '?')}: {text[:60]!r}")
    return found


def test_no_library_file_outside_a_benchmark_names_one() -> None:
    from omnieval.benchmarks import BENCHMARKS

    names = frozenset(BENCHMARKS.names())
    src = ROOT / "src" / "omnieval"
    allowed = {src / "config.py"}  # DEFAULT_BENCHMARK: the registry's default for a suite naming none
    found = [
        hit
        for path in sorted(src.rglob("*.py"))
        if "benchmarks" not in path.relative_to(src).parts and path not in allowed
        for hit in _benchmark_mentions(path, names)
    ]
    assert found == [], "library code naming a benchmark outside benchmarks/<name>/:\n" + "\n".join(found)
    # The check sees what it is meant to: a planted constant is found.
    planted = ROOT / "tests" / "_planted_benchmark_name.py"
    try:
        planted.write_text('"""A docstring may say storybench."""\nDEFAULT = "acbench"\n', encoding="utf-8")
        assert [h.split(": ", 1)[1] for h in _benchmark_mentions(planted, names)] == ["'acbench'"]
    finally:
        planted.unlink(missing_ok=True)
