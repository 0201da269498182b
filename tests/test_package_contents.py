"""The installed package holds library code only; the test stand-ins come from the test kit.

The scripted, simulated and fault-injecting chat backends and the synthetic score tables live in
``testkit/`` (distribution ``omnieval-testkit``). A run never needs them, so no module under
``src/omnieval`` may define or import them; a suite or panel naming their kinds still validates
wherever the test kit is installed, through the ``omnieval.llm_backends`` entry points. Those are
loaded lazily, so the entry-point checks run in a fresh interpreter, where nothing was imported yet.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

import omnieval

PACKAGE = Path(omnieval.__file__).parent

MOVED_KINDS = ("scripted", "simulated", "faults")
MOVED_MODULES = (
    "omnieval.backends.llm._scripted",
    "omnieval.backends.llm._simulated",
    "omnieval.backends.llm._faults",
    "omnieval.benchmarks.storybench.synthetic",
)
MOVED_NAMES = frozenset(
    {
        "ScriptedConfig",
        "SimulatedConfig",
        "FaultsConfig",
        "FAULT_KINDS",
        "ScriptedChatBackend",
        "SimulatedChatBackend",
        "FaultInjectingBackend",
        "make_scores",
    }
)


def _modules() -> list[tuple[str, str, ast.Module]]:
    """(module name, the package its relative imports start from, syntax tree) of every module."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts).removesuffix(".__init__")
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        out.append((name, package, ast.parse(path.read_text(encoding="utf-8"), filename=str(path))))
    return out


def _imported(package: str, tree: ast.Module) -> set[str]:
    """Absolute names of the modules (and ``module.attr`` names) that ``tree`` imports anywhere."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def test_every_data_file_of_the_source_tree_ships_in_the_package() -> None:
    """Files the library reads (rubric templates, the sample books, panels) match a package-data glob."""
    pyproject = tomllib.loads(
        (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text(encoding="utf-8")
    )
    patterns = pyproject["tool"]["setuptools"]["package-data"]["omnieval"]
    shipped = {p for pattern in patterns for p in PACKAGE.glob(pattern) if p.is_file()}
    # __pycache__ holds what the interpreter and numba compile at run time (numba's .nbi/.nbc
    # kernels included), never source data.
    data = {
        p
        for p in PACKAGE.rglob("*")
        if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts
    }
    assert not sorted(str(p.relative_to(PACKAGE)) for p in data - shipped)
    storybench = PACKAGE / "benchmarks" / "storybench"
    assert storybench / "_sample" / "books.yaml" in shipped
    assert {p.name for p in shipped if p.parent == storybench / "templates" / "judge"} >= {
        "_shared.j2",
        "text.native.j2",
        "speech.cpu-cascade.j2",
    }


def test_moved_modules_are_gone_from_the_package() -> None:
    for name in MOVED_MODULES:
        path = PACKAGE.parent.joinpath(*name.split(".")).with_suffix(".py")
        assert not path.exists(), f"{path} belongs to the test kit"


def test_no_module_defines_or_imports_the_test_stand_ins() -> None:
    problems = []
    for module, package, tree in _modules():
        for name in _imported(package, tree):
            if name.split(".")[0] == "omnieval_testkit" or any(
                name == moved or name.startswith(f"{moved}.") for moved in MOVED_MODULES
            ):
                problems.append(f"{module} imports {name}")
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef | ast.FunctionDef) and node.name in MOVED_NAMES:
                problems.append(f"{module} defines {node.name}")
            # A registration such as ``@LLM_BACKENDS.register("scripted")`` or ``@_identity("faults")``.
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute | ast.Name)
                and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id)
                in ("register", "_identity", "register_llm_backend")
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and node.args[0].value in MOVED_KINDS
            ):
                problems.append(f"{module} registers the {node.args[0].value!r} kind (line {node.lineno})")
    assert not problems, "\n".join(problems)


def _fresh(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300
    )


def test_plugin_kinds_validate_in_a_fresh_process(tmp_path: Path) -> None:
    panel = tmp_path / "scripted.yaml"
    panel.write_text(
        textwrap.dedent(
            """\
            name: scripted
            tracks:
              text:
                judges:
                  - id: j
                    model: scripted/j
                    backend: {kind: faults, rate: 0.1, inner: {kind: scripted, script: "json:dumps"}}
              image: {unavailable: none}
            repair:
              id: r
              model: scripted/r
              backend: {kind: scripted, script: "json:dumps"}
            """
        ),
        encoding="utf-8",
    )
    ran = _fresh(
        f"""
        import sys
        import omnieval.benchmarks  # registers the tracks the panel names
        from omnieval.judges._panels import load_panel

        assert not any(m.startswith("omnieval_testkit") for m in sys.modules), "loaded too early"
        panel = load_panel({str(panel)!r})
        backend = panel.tracks["text"].judges[0].backend
        print(type(backend).__module__, type(backend.inner).__module__, type(panel.repair.backend).__name__)
        print(backend.model_dump_json())
        """
    )
    assert ran.returncode == 0, ran.stderr
    modules, dumped = ran.stdout.splitlines()
    assert modules == "omnieval_testkit.faults omnieval_testkit.scripted ScriptedConfig"
    # Plugin fields are dumped too (they are part of lineage and of the judge's group key).
    assert '"inner":{"kind":"scripted","script":"json:dumps"' in dumped and '"rate":0.1' in dumped


def test_a_run_naming_only_built_in_kinds_never_imports_the_test_kit() -> None:
    ran = _fresh(
        """
        import sys
        from pydantic import TypeAdapter
        from omnieval.backends.llm import BackendConfig, output_fingerprint

        config = TypeAdapter(BackendConfig).validate_python({"kind": "llamacpp"})
        output_fingerprint(config)
        print(sorted(m for m in sys.modules if m.startswith("omnieval_testkit")))
        """
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "[]"


@pytest.mark.parametrize("where", ["backend", "inner"])
def test_an_unknown_kind_names_the_known_ones(where: str) -> None:
    backend = {"kind": "nope"} if where == "backend" else {"kind": "faults", "inner": {"kind": "nope"}}
    ran = _fresh(
        f"""
        from pydantic import ValidationError
        from omnieval.judges._panels import JudgeConfig

        try:
            JudgeConfig.model_validate({{"id": "j", "model": "m", "backend": {backend!r}}})
        except ValidationError as exc:
            print(exc)
        """
    )
    assert ran.returncode == 0, ran.stderr
    message = ran.stdout
    loc = "backend" if where == "backend" else "backend.inner"
    assert f"\n{loc}\n" in message, message
    assert "unknown llm backend kind 'nope'" in message
    assert "built in: openai, vllm, gemini, llamacpp, transformers" in message
    assert "installed (omnieval.llm_backends entry points): faults, scripted, simulated" in message
