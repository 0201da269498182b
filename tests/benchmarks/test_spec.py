"""``benchmark.yaml``: the schema refuses bad declarations by file and field, the three benchmarks'
declared values are the ones their code uses, and the registering decorator keeps one home per fact."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from omnieval.benchmarks import BENCHMARKS, Benchmark
from omnieval.benchmarks._spec import SPEC_ATTRIBUTES, SPEC_FILE, load_spec
from omnieval.errors import ConfigError
from omnieval.registry import Registry

GOOD = {
    "name": "toy",
    "title": "Toy",
    "description": "a toy",
    "dataset": {"marker": "toy.jsonl", "sample": "data/toy-sample"},
    "conditions": ["plain", "hard"],
    "system_kinds": ["import"],
    "modalities": ["text"],
    "judge": {"tracks": ["text"], "criteria": {"text": ["fluency"]}, "default_panels": ["cpu"]},
    "headline": {
        "components": ["f1", "error"],
        "per_condition": True,
        "lower_is_better": ["error"],
        "mlflow_patterns": ["toy.*.f1"],
    },
}


def _write(folder: Path, data: object) -> Path:
    path = folder / SPEC_FILE
    path.write_text(yaml.safe_dump(data, sort_keys=False) if not isinstance(data, str) else data)
    return path


def test_a_good_declaration_gives_the_class_attributes(tmp_path: Path) -> None:
    attributes = load_spec(_write(tmp_path, GOOD)).class_attributes()
    assert set(attributes) == set(SPEC_ATTRIBUTES)
    assert attributes["conditions"] == attributes["default_conditions"] == ("plain", "hard")
    assert attributes["headline_components"] == ("plain.f1", "plain.error", "hard.f1", "hard.error")
    assert attributes["lower_is_better"] == frozenset({"plain.error", "hard.error"})
    assert attributes["system_kinds"] == frozenset({"import"})
    assert attributes["default_dataset"] == Path("data/toy-sample")
    assert attributes["judge_criteria"] == {"text": ("fluency",)}


def _with(path: tuple[str, ...], value: object) -> dict[str, Any]:
    """A deep copy of GOOD with ``path`` set to ``value`` (``...`` deletes the key)."""
    data: dict[str, Any] = yaml.safe_load(yaml.safe_dump(GOOD))
    node = data
    for key in path[:-1]:
        node = node[key]
    if value is ...:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return data


BAD: dict[str, tuple[object, str]] = {
    "extra key": (_with(("judges",), {"tracks": ["x"]}), "judges: Extra inputs are not permitted"),
    "nested extra key": (_with(("dataset", "path"), "x"), "dataset.path: Extra inputs"),
    "missing field": (_with(("headline",), ...), "headline: Field required"),
    "bad name": (_with(("name",), "Toy-Bench"), "name: String should match pattern"),
    "unknown modality": (_with(("modalities",), ["smell"]), "modalities.0: Input should be"),
    "marker outside": (_with(("dataset", "marker"), "../toy.jsonl"), "dataset.marker: Value error"),
    "direction of an unlisted component": (
        _with(("headline", "lower_is_better"), ["wer"]),
        "headline: Value error, lower_is_better names components not listed: wer",
    ),
    "foreign mlflow key": (
        _with(("headline", "mlflow_patterns"), ["other.*.f1"]),
        "must start with 'toy.'",
    ),
    "default condition unknown": (
        _with(("default_conditions",), ["easy"]),
        "default_conditions not in conditions: easy",
    ),
    "criteria of an unknown track": (
        _with(("judge", "criteria"), {"image": ["sharpness"]}),
        "judge: Value error, criteria name tracks that are not in tracks: image",
    ),
    "repeated condition": (_with(("conditions",), ["plain", "plain"]), "condition repeated: plain"),
    "not a mapping": ("- just\n- a list\n", "expected a mapping at the top level"),
    "not yaml": ("name: [unclosed\n", "not valid YAML"),
    "missing criteria file": (
        _with(("judge", "criteria_file"), "criteria.yaml"),
        "judge.criteria_file: criteria.yaml is not a file",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_declaration_fails_naming_file_and_field(case: str, tmp_path: Path) -> None:
    data, fragment = BAD[case]
    path = _write(tmp_path, data)
    with pytest.raises(ConfigError) as raised:
        load_spec(path)
    message = str(raised.value)
    assert str(path) in message and fragment in message, message


def test_a_missing_declaration_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="benchmark declaration not found"):
        load_spec(tmp_path / SPEC_FILE)


# -- the three benchmarks: declared values are the values their code computes with --------------------
@pytest.mark.parametrize("name", ["storybench", "acbench", "prism"])
def test_registered_benchmarks_carry_their_declaration(name: str) -> None:
    bench = BENCHMARKS.get(name)
    assert bench.spec is not None and bench.spec.name == bench.name == name
    for attribute, value in bench.spec.class_attributes().items():
        assert getattr(bench, attribute) == value, attribute


def test_acbench_declaration_matches_its_code() -> None:
    from omnieval.benchmarks.acbench._components import HEADLINE_COMPONENTS, LOWER_IS_BETTER
    from omnieval.benchmarks.acbench._conditions import CONDITIONS

    bench = BENCHMARKS.get("acbench")
    assert bench.conditions == bench.default_conditions == CONDITIONS
    assert bench.headline_components == HEADLINE_COMPONENTS
    assert bench.lower_is_better == LOWER_IS_BETTER


def test_storybench_declaration_matches_its_code() -> None:
    from omnieval.benchmarks.storybench._components import HEADLINE_COMPONENTS
    from omnieval.benchmarks.storybench._names import RUBRICS
    from omnieval.benchmarks.storybench._names import TRACKS as TABLE_TRACKS
    from omnieval.judges import TRACKS

    bench = BENCHMARKS.get("storybench")
    assert bench.headline_components == HEADLINE_COMPONENTS
    # The judges' registered tracks are the declaration's, and the scores-table names repeat them.
    assert dict(bench.judge_criteria) == {name: track.criteria for name, track in TRACKS.items()} == RUBRICS
    assert bench.judge_tracks == tuple(TRACKS) == TABLE_TRACKS


def test_prism_declaration_matches_its_code_and_criteria_file() -> None:
    from omnieval.benchmarks.prism._aggregate import HEADLINE_COMPONENTS
    from omnieval.benchmarks.prism._tags import DIMENSIONS

    bench = BENCHMARKS.get("prism")
    assert bench.judge_tracks == DIMENSIONS
    assert bench.headline_components == HEADLINE_COMPONENTS
    assert bench.spec is not None and bench.spec.judge is not None
    criteria_file = bench.spec.judge.criteria_file
    assert criteria_file is not None
    folder = Path(sys.modules[type(bench).__module__].__file__ or "").parent
    criteria = yaml.safe_load((folder / criteria_file).read_text(encoding="utf-8"))
    assert tuple(criteria["dimensions"]) == DIMENSIONS


# -- the decorator --------------------------------------------------------------------------------
_HOOKS = """
from pathlib import Path
from omnieval.benchmarks import Benchmark, benchmark
from omnieval.registry import Registry

REGISTRY = Registry("benchmark")


@benchmark({name}, registry=REGISTRY)
class Hooks(Benchmark):
{body}
    metrics_config = None

    def validate(self, root): raise NotImplementedError
    def gate(self, root, out_json): raise NotImplementedError
    def instances(self, dataset): return ()
    def fingerprint(self, dataset): raise NotImplementedError
    def dataset_frame(self, root): raise NotImplementedError
    def generate(self, job): raise NotImplementedError
    def compute_metrics(self, job): raise NotImplementedError
    def leaderboard(self, scores, facts=None): raise NotImplementedError
    def leaderboard_text(self, document): return ""
    def write_report(self, job): raise NotImplementedError
"""


def _import_hooks(folder: Path, *, name: str = "None", body: str = "") -> ModuleType:
    """Write and import a hooks module in ``folder`` (the decorator runs at import)."""
    source = folder / "hooks.py"
    source.write_text(_HOOKS.format(name=name, body=textwrap.indent(body, "    ")))
    module_name = f"_spec_hooks_{abs(hash(folder))}"
    spec = importlib.util.spec_from_file_location(module_name, source)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[module_name]
    return module


def test_the_decorator_reads_the_declaration_beside_the_module(tmp_path: Path) -> None:
    _write(tmp_path, GOOD)
    module = _import_hooks(tmp_path)
    registry: Registry[Benchmark] = module.REGISTRY
    bench = registry.get("toy")
    assert bench.name == "toy" and bench.title == "Toy"
    assert bench.headline_components[0] == "plain.f1"
    assert "toy" not in BENCHMARKS


def test_the_decorator_refuses_a_fact_set_twice(tmp_path: Path) -> None:
    _write(tmp_path, GOOD)
    with pytest.raises(ConfigError, match="sets title in code"):
        _import_hooks(tmp_path, body='title = "Other"')


def test_the_decorator_refuses_a_name_that_disagrees(tmp_path: Path) -> None:
    _write(tmp_path, GOOD)
    with pytest.raises(ConfigError, match="name 'toy' but Hooks registers 'other'"):
        _import_hooks(tmp_path, name='"other"')


def test_without_a_declaration_the_name_is_required(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match=r"no benchmark\.yaml"):
        _import_hooks(tmp_path)
    module = _import_hooks(tmp_path, name='"coded"', body='title = "Coded"')
    assert module.REGISTRY.get("coded").title == "Coded"
