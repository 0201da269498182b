"""One system protocol: every registered kind, reference kinds included, is a :class:`System`.

The battery (STYLE.md item 11) runs over every name in :data:`omnieval.systems.SYSTEMS` once every
benchmark has registered its kinds, and checks the class itself: a subclass of :class:`System`
with nothing left abstract, ``kind`` equal to its registered name, a typed config, and
``generate``/``from_spec`` with exactly the protocol's parameters and annotations (an
``isinstance`` on a runtime-checkable Protocol would pass any object with a ``generate``).

The pins are the candidate layout and the summary of each reference kind on the bundled samples,
computed at the commit before the protocol existed (w41-systems' starting commit, 8358e66): the
bytes a system writes and its generation accounting must not change with the way it is called.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import json
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest

import omnieval.benchmarks  # noqa: F401  (registers every benchmark's kinds)
from omnieval.benchmarks import GenerateJob, get_benchmark
from omnieval.errors import ConfigError
from omnieval.systems import (
    SYSTEMS,
    GeneratingSystem,
    GenerationRequest,
    GenerationSummary,
    System,
    SystemSpec,
    config_model,
    system_kind,
)

SRC = Path(__file__).resolve().parents[2] / "src" / "omnieval"
SAMPLES = Path(__file__).resolve().parents[2] / "data"


def _parameters(function: Any) -> list[tuple[str, Any, Any]]:
    """Name, kind and resolved annotation of every parameter, and the return annotation."""
    hints = typing.get_type_hints(function)
    params = [(p.name, p.kind, hints.get(p.name)) for p in inspect.signature(function).parameters.values()]
    return [*params, ("return", None, hints.get("return"))]


def protocol_problems(cls: object, name: str) -> list[str]:
    """What keeps ``cls`` (registered as ``name``) from implementing the one system protocol."""
    if not (isinstance(cls, type) and issubclass(cls, System)):
        return [f"{cls!r} is not a subclass of omnieval.systems.System"]
    problems: list[str] = []
    if inspect.isabstract(cls):
        problems.append(f"abstract methods left: {sorted(getattr(cls, '__abstractmethods__', ()))}")
    if getattr(cls, "kind", None) != name:
        problems.append(f"kind is {getattr(cls, 'kind', None)!r}, registered as {name!r}")
    if not (isinstance(cls.config_model, type) and issubclass(cls.config_model, SystemSpec)):
        problems.append(f"config_model {cls.config_model!r} is not a SystemSpec")
    for flag in ("uses_ground_truth", "runs_models"):
        if not isinstance(getattr(cls, flag), bool):
            problems.append(f"{flag} is not a bool")
    for method in ("generate", "from_spec", "identity", "shutdown"):
        if _parameters(getattr(cls, method)) != _parameters(getattr(System, method)):
            problems.append(f"{method}{inspect.signature(getattr(cls, method))} is not the protocol's")
    if cls.runs_models != issubclass(cls, GeneratingSystem):
        problems.append("runs_models must be True exactly for GeneratingSystem kinds")
    return problems


@pytest.mark.parametrize("name", SYSTEMS.names())
def test_every_registered_kind_implements_the_protocol(name: str) -> None:
    assert protocol_problems(SYSTEMS.get(name), name) == []
    assert config_model(name) is system_kind(name).config_model


def test_every_kind_is_covered() -> None:
    # The kinds every benchmark declares are registered: the battery above walks all of them.
    declared = {
        kind for bench in ("storybench", "prism", "acbench") for kind in get_benchmark(bench).system_kinds
    }
    assert declared <= set(SYSTEMS.names())
    assert len(SYSTEMS.names()) >= 15


class _OldStyle(System):
    """A kind written against the duck-typed protocol this one replaced."""

    kind: ClassVar[str] = "old-style"

    def generate(  # type: ignore[override]
        self, instances: Sequence[Any], out_root: Path, *, progress: Any = None
    ) -> GenerationSummary:
        return GenerationSummary("old-style", "old-style", out_root, 0)


class _Duck:
    """Has a ``generate`` but is no System."""

    uses_ground_truth = False

    def generate(self, request: GenerationRequest) -> GenerationSummary:
        return GenerationSummary("duck", "duck", request.out_root, 0)


def test_the_battery_rejects_what_the_protocol_forbids() -> None:
    assert any("generate(" in p for p in protocol_problems(_OldStyle, "old-style"))
    assert any("kind is" in p for p in protocol_problems(_OldStyle, "another-name"))
    assert protocol_problems(_Duck, "duck") == [f"{_Duck!r} is not a subclass of omnieval.systems.System"]


def test_a_registered_object_that_is_no_system_fails_when_the_suite_loads(tmp_path: Path) -> None:
    from omnieval.config import load_suite

    suite = tmp_path / "s.yaml"
    suite.write_text("suite: s\nbenchmark: storybench\nsystems:\n  a: {kind: duck}\n", encoding="utf-8")
    with SYSTEMS.restoring():
        SYSTEMS.register("duck")(_Duck)  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match=r"'duck' .* not a subclass of omnieval.systems.System"):
            config_model("duck")
        with pytest.raises(ConfigError, match=r"'duck' .* not a subclass"):
            load_suite(suite)


def test_a_generating_kind_refuses_a_request_without_the_benchmarks_view(tmp_path: Path) -> None:
    from omnieval.systems.command import CommandConfig, CommandSystem

    system = CommandSystem(CommandConfig(kind="command", argv=["true"]), system_id="c")
    with pytest.raises(ConfigError, match="visible task"):
        system.generate(GenerationRequest([], tmp_path))


def _calls(path: Path, names: set[str]) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        f"{path.name}:{node.lineno} {node.func.id}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names
    ]


def test_the_generate_stage_never_guesses() -> None:
    stage = SRC / "stages" / "generate.py"
    assert _calls(stage, {"getattr", "hasattr"}) == []
    # Which systems run models is a fact of the kind (System.runs_models), not a type test here.
    assert "GeneratingSystem" not in stage.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "module", ["_declared.py", "storybench/__init__.py", "prism/__init__.py", "acbench/__init__.py"]
)
def test_one_generate_body_for_every_benchmark(module: str) -> None:
    tree = ast.parse((SRC / "benchmarks" / module).read_text(encoding="utf-8"))
    methods = {
        f.name
        for c in ast.walk(tree)
        if isinstance(c, ast.ClassDef)
        for f in c.body
        if isinstance(f, ast.FunctionDef)
    }
    assert "generate" not in methods, "the base Benchmark.generate is the one body"


# -- identity: the bytes and the accounting of the reference kinds -------------------------------

#: (benchmark, kind, entry, instances, condition) -> (layout digest, summary digest), computed at
#: 8358e66 (before the protocol) with the same calls through ``Benchmark.generate``.
PINNED: dict[tuple[str, str, str], tuple[str, str]] = {
    ("storybench", "oracle", ""): (
        "7b00b41c52c0ff2607522a649926f57f7d4802ad92a5b389575321a8152839e0",
        "4719226fd1a51dac762e5a2324118ebcc0e0f9fa6c7baacde4d20cb6b192dcfb",
    ),
    ("storybench", "import", ""): (
        "",
        "e66d9c1772ac5d5c38a1dbac49217ea2e359d7405d6c511379a59b354a5ae667",
    ),
    ("storybench", "copy-current", ""): (
        "2a3a544d23aa38e92ca2dd35be400326cde4781d7fd9d6c9bd13dfaba9183472",
        "c7055120938e3f5c66286f9f6b1718f48adbb4645fde195f8123d314ac284989",
    ),
    ("storybench", "shuffled", ""): (
        "a12ba36322f0d2a0a650291d54cc34a3314bc1015b79047760ec6f841e885e25",
        "d804357927ec5924974b49a3d0d4898207c55d84a598897ccec80b3db69a3b83",
    ),
    ("prism", "ground-truth", ""): (
        "ef380174dbb7d28122e1f5f01ab7437fc3af7289c161ab3187f4431a4804174c",
        "98cd65fbb356e2b9c73ffa2acd0af96c8f346b8bc41a93bebc2b1c3b7aece5b5",
    ),
    ("prism", "muted", ""): (
        "71b5dba21885ab49db56e171fc201d061712a59da09da76e15c0e90936f4b4ae",
        "65c9c040fce733b0595327eb062c05e099c57e111a933bef4a0cb6803a5c6b6f",
    ),
    ("prism", "swapped-audio", ""): (
        "ce52b1d502fe06e4d35086ffd2bb971f5e6a3a3418af5d58c40e6b68b595a4c9",
        "68ef39a1ae7e135a2633fe80211e360273d6528b541e025abd5d6d40f6204578",
    ),
    ("prism", "offset", ""): (
        "150c4f543eb44142baace752fc4e646be370062a6206175c8094fd949aa93e58",
        "ff82fb738a5339396f8dee2cd8b874c14637c460271328eb3fb3a77ad0f4649c",
    ),
    ("prism", "cpu-t2av", ""): (
        "4f9062f5c23b5c93e76bb2b38cdf97368b0062e96ae1786b518f49e37e17c75e",
        "54d60f4889c72914ae4deace123b367046127dcf29f8cd19fc75a399e9846f2a",
    ),
    ("acbench", "oracle-control", "original"): (
        "4b4f4e616a7e667c9cbcd17501d1ce5d120e48ee0cc11f036d425fa2ffc4163b",
        "13c49463dcb5edf16586e93e8bda9b68edee886787ea6e56668fc48f252dabf3",
    ),
    ("acbench", "oracle-control", "all_to_t"): (
        "4b4f4e616a7e667c9cbcd17501d1ce5d120e48ee0cc11f036d425fa2ffc4163b",
        "27007d45587e830022269b825ddb6b3cc0a3c199ec2ea45104a9774fc7c8af24",
    ),
    ("acbench", "neutral", "original"): (
        "c8793338cac7f9978a67e02651ea8594a70bcac34915a5aed27ecb4b78fc9101",
        "49c3d6d32c843edc7ef72cc65663af733173fd9fb6443ddf97ffe85e38f81e12",
    ),
}

#: How many of the sample's first instances each kind writes, and its entry's keyword arguments.
CASES: dict[str, tuple[int, dict[str, Any]]] = {
    "oracle": (3, {}),
    "copy-current": (3, {}),
    "shuffled": (4, {"seed": 0}),
    "ground-truth": (3, {}),
    "muted": (2, {}),
    "swapped-audio": (3, {}),
    "offset": (2, {}),
    "cpu-t2av": (2, {}),
    "oracle-control": (6, {}),
    "neutral": (4, {}),
}


def layout_digest(root: Path, *, skip: str = "") -> str:
    """SHA-256 over every file under ``root`` (but the top folder ``skip``): its relative path and
    the SHA-256 of its bytes."""
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.relative_to(root).parts[0] != skip:
            h.update(path.relative_to(root).as_posix().encode() + b"\0")
            h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def summary_digest(summary: GenerationSummary, root: Path) -> str:
    """SHA-256 of what the generate stage keeps of a summary (``<system>.summary.json``), with the
    temporary folder written as ``<root>``."""
    doc = {
        "system": summary.system,
        "kind": summary.kind,
        "written": summary.written,
        "missing": summary.missing,
        "lineage": summary.lineage,
    }
    text = json.dumps(doc, sort_keys=True, default=str).replace(str(root), "<root>")
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.parametrize(("benchmark", "kind", "condition"), [k for k in PINNED if k[1] != "import"])
def test_reference_kinds_write_the_pinned_bytes(
    benchmark: str, kind: str, condition: str, tmp_path: Path
) -> None:
    bench = get_benchmark(benchmark)
    n, entry = CASES[kind]
    instances = bench.instances(bench.load(SAMPLES / f"{benchmark}-sample"))[:n]
    root = tmp_path / "c"
    system = system_kind(kind).from_spec(
        config_model(kind).model_validate({"kind": kind, **entry}),
        system_id=kind,
        condition=condition,
        modalities=bench.modalities,
        cache_dir=tmp_path / "cache",
    )
    summary = bench.generate(GenerateJob(system, instances, root, condition))
    assert (layout_digest(root), summary_digest(summary, root)) == PINNED[(benchmark, kind, condition)]
    if kind == "oracle":
        imported = system_kind("import").from_spec(
            config_model("import").model_validate({"kind": "import", "path": str(root)}),
            system_id="import",
            condition=condition,
            modalities=bench.modalities,
            cache_dir=tmp_path / "cache",
        )
        again = bench.generate(GenerateJob(imported, instances, tmp_path / "imp", condition))
        assert summary_digest(again, root) == PINNED[(benchmark, "import", condition)][1]


#: A ``command`` generator that writes the narration only and crashes on every third index.
_GENERATOR = """
import json, os, sys
task = json.load(open(os.path.join(sys.argv[1], "task.json")))
if task["index"] % 3 == 2:
    sys.exit(3)
open(os.path.join(sys.argv[2], "text.txt"), "w").write("page after " + task["id"] + "\\n")
"""

#: Run -> candidate layout digest (``raw/`` left out: it holds wall seconds) and the accounting
#: without seconds, computed at 8358e66 with the old call (``system.generate(instances, root,
#: visible=..., modalities=..., keep_open=True, limit=...)``) on the storybench sample's first five.
PINNED_GENERATION: dict[str, dict[str, Any]] = {
    "budget2": {
        "layout": "747de08da9bcf202a591b6afbe3e3cdd4f5028cfe3e23793e9960a67db95463b",
        "written": 5,
        "missing": {"image": 5, "speech": 5, "text": 3},
        "generation": {
            "completeness": {"examples": 5, "missing": {"image": 5, "speech": 5, "text": 3}},
            "examples_generated": 2,
            "examples_reused": 0,
            "examples_withheld": 3,
            "planning_failures": {},
            "withheld_reason": "generation budget used: 2 of max_examples 2 examples generated; rerun "
            "with a larger generation.budget to finish (generated examples come from the cache)",
        },
    },
    "full": {
        "layout": "4247ed99b7fe675169336930e9a25570b758a481a6b08dad7df1c1ad6a2f08b5",
        "written": 5,
        "missing": {"image": 5, "speech": 5, "text": 1},
        "generation": {
            "completeness": {"examples": 5, "missing": {"image": 5, "speech": 5, "text": 1}},
            "examples_generated": 3,
            "examples_reused": 2,
            "examples_withheld": 0,
            "planning_failures": {},
        },
    },
    "again": {
        "layout": "4247ed99b7fe675169336930e9a25570b758a481a6b08dad7df1c1ad6a2f08b5",
        "written": 5,
        "missing": {"image": 5, "speech": 5, "text": 1},
        "generation": {
            "completeness": {"examples": 5, "missing": {"image": 5, "speech": 5, "text": 1}},
            "examples_generated": 0,
            "examples_reused": 5,
            "examples_withheld": 0,
            "planning_failures": {},
        },
    },
}


def test_a_generating_kind_keeps_its_pinned_layout_and_accounting(tmp_path: Path) -> None:
    import sys

    from omnieval.systems import GenerationBudget, GenerationLimit

    bench = get_benchmark("storybench")
    instances = bench.instances(bench.load(SAMPLES / "storybench-sample"))[:5]
    (tmp_path / "gen.py").write_text(_GENERATOR, encoding="utf-8")
    entry = {
        "kind": "command",
        "argv": [sys.executable, str(tmp_path / "gen.py"), "{input_dir}", "{output_dir}"],
    }
    spec = config_model("command").model_validate(entry)
    got: dict[str, dict[str, Any]] = {}
    # A budget of two first, then the whole set (three generated, two reused), then all reused.
    for run, budget in (("budget2", GenerationBudget(max_examples=2)), ("full", None), ("again", None)):
        system = system_kind("command").from_spec(
            spec, system_id="gen", condition="", modalities=bench.modalities, cache_dir=tmp_path / "cache"
        )
        limit = GenerationLimit(budget) if budget is not None else None
        root = tmp_path / run
        summary = bench.generate(GenerateJob(system, instances, root, "", None, keep_open=True, limit=limit))
        system.shutdown()
        accounting = {k: v for k, v in summary.lineage["generation"].items() if not k.startswith("seconds")}
        got[run] = {
            "layout": layout_digest(root, skip="raw"),
            "written": summary.written,
            "missing": summary.missing,
            "generation": accounting,
        }
    assert got == PINNED_GENERATION
