"""``benchmark.yaml``: the schema refuses bad declarations by file and field, the three benchmarks'
constants are read from their declaration (a changed file changes them; one the code cannot use fails
at import), and the registering decorator keeps one home per fact."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from omnieval.benchmarks import BENCHMARKS, Benchmark
from omnieval.benchmarks._leaderboard import LEADERBOARD_FILE, leaderboard_declaration
from omnieval.benchmarks._spec import SPEC_FILE, load_spec, package_spec
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
    assert set(attributes) <= set(Benchmark.__annotations__)  # each one a declared class attribute
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


# -- the three benchmarks: their constants are read from the declaration, not written twice ----------
def _package_file(name: str) -> str:
    bench = BENCHMARKS.get(name)
    return sys.modules[type(bench).__module__].__file__ or ""


@pytest.mark.parametrize("name", ["storybench", "acbench", "prism"])
def test_registered_benchmarks_carry_their_declaration(name: str) -> None:
    bench = BENCHMARKS.get(name)
    assert bench.spec is not None and bench.spec.name == bench.name == name
    # Registration and the package's constants share one validated object, read once.
    assert bench.spec is package_spec(_package_file(name))
    for attribute, value in bench.spec.class_attributes().items():
        assert getattr(bench, attribute) == value, attribute


def test_the_constants_are_the_declared_values() -> None:
    """Identity, not equality: a constant that is the spec's own tuple cannot be a second copy."""
    from omnieval.benchmarks.acbench import _conditions as acbench_conditions
    from omnieval.benchmarks.prism import _tags as prism_tags
    from omnieval.benchmarks.storybench import _aggregate as storybench_aggregate
    from omnieval.benchmarks.storybench import _names as storybench_names

    acbench = package_spec(acbench_conditions.__file__)
    assert acbench_conditions.CONDITIONS is acbench.conditions
    storybench = package_spec(storybench_names.__file__)
    assert storybench_aggregate.HEADLINE_COMPONENTS is storybench.headline.components
    assert storybench.judge is not None
    assert storybench_names.TRACKS is storybench.judge.tracks
    assert all(storybench_names.RUBRICS[t] is storybench.judge.criteria[t] for t in storybench.judge.tracks)
    prism = package_spec(prism_tags.__file__)
    assert prism.judge is not None and prism_tags.DIMENSIONS is prism.judge.tracks


def _declared(package: str) -> dict[str, Any]:
    """The package's ``benchmark.yaml`` as a plain mapping, to be altered and written elsewhere."""
    path = Path(_package_file(package)).with_name(SPEC_FILE)
    data: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    if data.get("judge", {}).get("criteria_file"):
        del data["judge"]["criteria_file"]  # the copy has no criteria file beside it
    return data


def _import_copy(folder: Path, module: str, declaration: dict[str, Any]) -> ModuleType:
    """Import a copy of the benchmark module ``module`` from ``folder``, beside ``declaration``."""
    original = importlib.import_module(module)
    source = folder / Path(original.__file__ or "").name
    source.write_text(Path(original.__file__ or "").read_text(encoding="utf-8"), encoding="utf-8")
    _write(folder, declaration)
    module_name = f"_spec_copy_{abs(hash(folder))}"
    spec = importlib.util.spec_from_file_location(module_name, source)
    assert spec is not None and spec.loader is not None
    copy = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = copy
    try:
        spec.loader.exec_module(copy)
    finally:
        del sys.modules[module_name]
    return copy


def test_a_changed_declaration_changes_the_constants(tmp_path: Path) -> None:
    acbench = _declared("acbench")
    acbench["conditions"] = ["original", "oracle", "s_to_t", "i_to_t"]  # reordered, one dropped
    acbench["headline"]["components"] = ["per", "wer", *acbench["headline"]["components"][2:]]
    (tmp_path / "conditions").mkdir()
    conditions = _import_copy(tmp_path / "conditions", "omnieval.benchmarks.acbench._conditions", acbench)
    assert conditions.CONDITIONS == ("original", "oracle", "s_to_t", "i_to_t")
    (tmp_path / "components").mkdir()
    spec = load_spec(_write(tmp_path / "components", acbench))
    assert spec.headline_components()[:3] == ("original.per", "original.wer", "original.vfr_at_0_3")
    lower = spec.headline_lower_is_better()
    assert "i_to_t.per" in lower and "all_to_t.per" not in lower
    # The per-instance sources (leaderboard.yaml) follow the declared order, one per component.
    sources = yaml.safe_load(Path(_package_file("acbench")).with_name(LEADERBOARD_FILE).read_text())
    components = sources["instance_components"]
    sources["instance_components"] = {"per": components["per"], "wer": components["wer"]} | components
    (tmp_path / "components" / LEADERBOARD_FILE).write_text(yaml.safe_dump(sources, sort_keys=False))
    declared = leaderboard_declaration(str(tmp_path / "components" / "hooks.py"))
    assert tuple(declared.instance_components) == spec.headline.components

    storybench = _declared("storybench")
    storybench["judge"]["criteria"]["text"][1] = "flows_on"
    (tmp_path / "names").mkdir()
    names = _import_copy(tmp_path / "names", "omnieval.benchmarks.storybench._names", storybench)
    assert names.RUBRICS["text"][1] == "flows_on" and tuple(names.RUBRICS) == names.TRACKS

    prism = _declared("prism")
    prism["judge"]["tracks"] = ["audio_quality", "av_coherence", "prompt_following", "expressiveness"]
    (tmp_path / "tags").mkdir()
    tags = _import_copy(tmp_path / "tags", "omnieval.benchmarks.prism._tags", prism)
    assert tags.DIMENSIONS == ("audio_quality", "av_coherence", "prompt_following", "expressiveness")


def _set(data: dict[str, Any], path: tuple[str, ...], value: object) -> dict[str, Any]:
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return data


DISAGREES: dict[str, tuple[str, str, tuple[str, ...], object, str]] = {
    # case: (package, module, yaml field, new value, what the error says after the field)
    "acbench without the oracle condition": (
        "acbench",
        "omnieval.benchmarks.acbench._conditions",
        ("conditions",),
        ["original", "s_to_t", "i_to_t", "all_to_t"],
        "gives inputs to undeclared conditions: oracle",
    ),
    "storybench without the total average": (
        "storybench",
        "omnieval.benchmarks.storybench._aggregate",
        ("headline", "components"),
        ["bertscore_f1", "judge.text"],
        "; got bertscore_f1, judge.text",
    ),
    "storybench without the speech track": (
        "storybench",
        "omnieval.benchmarks.storybench._names",
        ("judge", "tracks"),
        ["text", "image", "integrated"],
        "needs the tracks speech",
    ),
    "prism track no stage judges": (
        "prism",
        "omnieval.benchmarks.prism._tags",
        ("judge", "tracks"),
        ["av_coherence", "audio_quality", "expressiveness", "prompt_following", "timing"],
        "declared: av_coherence, audio_quality, expressiveness, prompt_following, timing",
    ),
    "prism headline out of the reported order": (
        "prism",
        "omnieval.benchmarks.prism._aggregate",
        ("headline", "components"),
        ["mixed.final", "on_screen.final", "off_screen.final"],
        "reports on_screen.av_coherence, ",
    ),
}


@pytest.mark.parametrize("case", sorted(DISAGREES))
def test_a_declaration_the_code_cannot_use_fails_naming_file_and_field(case: str, tmp_path: Path) -> None:
    package, module, field, value, detail = DISAGREES[case]
    declaration = _set(_declared(package), field, value)
    if package == "storybench" and field == ("judge", "tracks"):  # the schema wants criteria of listed tracks
        criteria = declaration["judge"]["criteria"]
        declaration["judge"]["criteria"] = {
            t: c for t, c in criteria.items() if t in declaration["judge"]["tracks"]
        }
    if field == ("headline", "components"):  # the schema wants scales of listed components only
        scales = declaration["headline"].get("scales", {})
        declaration["headline"]["scales"] = {c: text for c, text in scales.items() if c in value}  # type: ignore[operator]
    with pytest.raises(ConfigError) as raised:
        _import_copy(tmp_path, module, declaration)
    message = str(raised.value)
    assert message.startswith(f"{tmp_path / SPEC_FILE}: invalid benchmark declaration"), message
    assert f"  - {'.'.join(field)}: " in message and detail in message, message


def test_prism_criteria_file_names_the_declared_tracks() -> None:
    """Two files, one set of dimensions: ``criteria.yaml`` must follow ``benchmark.yaml``'s tracks."""
    from omnieval.benchmarks.prism._tracks import load_criteria

    bench = BENCHMARKS.get("prism")
    assert bench.spec is not None and bench.spec.judge is not None
    assert bench.spec.judge.criteria_file is not None
    assert tuple(load_criteria().dimensions) == bench.judge_tracks


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
    def dataset_summary(self, dataset): raise NotImplementedError
    def audit_inputs(self, dataset): raise NotImplementedError
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
