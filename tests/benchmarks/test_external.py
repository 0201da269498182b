"""Benchmarks from outside the package (FORMATS.md section 10): a suite's ``benchmark:`` as a folder
relative to the suite file, and installed plugins through the ``omnieval.benchmarks`` and
``omnieval.systems`` entry-point groups."""

from __future__ import annotations

import importlib.metadata
import pickle
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from omnieval.benchmarks import BENCHMARKS, ENTRY_POINT_GROUP, load_folder
from omnieval.cli import main
from omnieval.config import load_suite
from omnieval.errors import ConfigError
from omnieval.stages.validate import main as validate_stage
from omnieval.systems import SYSTEMS, config_model

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "caption_f1"

SUITE = """\
suite: s
benchmark: {benchmark}
{dataset}systems:
  template: {{kind: command, argv: [python3, make.py, "{{input_dir}}", "{{output_dir}}"], cwd: .}}
"""


@pytest.fixture(autouse=True)
def _registries() -> Iterator[None]:
    """Whatever a test registers is gone afterwards, so the production lists stay the same."""
    with BENCHMARKS.restoring(), SYSTEMS.restoring():
        yield


@pytest.fixture
def bench_copy(tmp_path: Path) -> Path:
    """A copy of the worked example under a new name (the copy's own module, its own registration)."""
    folder = tmp_path / "elsewhere" / "bench"
    shutil.copytree(EXAMPLE, folder)
    return folder


def _suite(folder: Path, benchmark: str, dataset: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "suite.yaml"
    path.write_text(SUITE.format(benchmark=benchmark, dataset=dataset), encoding="utf-8")
    return path


def test_a_folder_relative_to_the_suite_file_is_loaded_and_its_paths_read_from_there(
    bench_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # nowhere near the suite: relative paths must not depend on it
    suites = tmp_path / "elsewhere" / "suites"
    config = load_suite(_suite(suites, "../bench", "dataset: {path: ../bench/data}\n"))
    assert config.benchmark == "caption_f1" and config.bench is BENCHMARKS.get("caption_f1")
    assert config.dataset_path == suites / "../bench/data"
    assert config.bench.instances(config.bench.load(config.dataset_path))[0].id == "fox"
    assert config.systems["template"].model_dump()["cwd"] == str(suites / ".")
    # The sample a benchmark.yaml declares is relative to its folder.
    bare = load_suite(_suite(bench_copy, "."))
    assert bare.dataset_path == bench_copy / "data"
    # A bare folder name beside the suite works too; the value becomes the registered name.
    assert load_suite(_suite(tmp_path / "elsewhere", "bench")).benchmark == "caption_f1"


def test_a_suite_naming_a_registered_benchmark_keeps_paths_relative_to_the_working_directory(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("suite: s\nbenchmark: acbench\ndataset: {path: data/x}\nsystems:\n  a: {kind: neutral}\n")
    assert load_suite(path).dataset_path == Path("data/x")


def test_the_config_finds_its_folder_again_in_a_fresh_process(bench_copy: Path, tmp_path: Path) -> None:
    """What a Dask worker does: unpickle the suite (its typed metrics block is the folder's class)
    and look the benchmark up, in a process that never loaded the folder."""
    config = load_suite(_suite(bench_copy, "."))
    blob = tmp_path / "config.pickle"
    blob.write_bytes(pickle.dumps(config))
    probe = (
        "import pickle, sys; c = pickle.loads(open(sys.argv[1], 'rb').read()); "
        "print(c.bench.name, type(c.bench).__name__, c.dataset_path)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(blob)], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["caption_f1", "CaptionF1", str(bench_copy / "data")]


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda f: shutil.rmtree(f), "benchmark folder .*bench not found"),
        (lambda f: (f / "benchmark.yaml").unlink(), "no benchmark.yaml in the folder"),
        (
            lambda f: (f / "hooks.py").write_text("import json\n\ndef broken(:\n"),
            r"hooks\.py:3: cannot load benchmark folder .*SyntaxError",
        ),
        (
            lambda f: (f / "hooks.py").write_text("import json\n\nraise RuntimeError('no model here')\n"),
            r"hooks\.py:3: cannot load benchmark folder .*RuntimeError: no model here",
        ),
        (lambda f: (f / "hooks.py").write_text("X = 1\n"), "its hooks registered no benchmark"),
        (
            lambda f: (f / "benchmark.yaml").write_text("name: Bad Name\n"),
            r"benchmark\.yaml: invalid benchmark declaration",
        ),
    ],
    ids=["missing", "no-declaration", "syntax-error", "raises", "registers-nothing", "bad-declaration"],
)
def test_a_broken_folder_is_a_config_error_naming_the_file(
    bench_copy: Path, tmp_path: Path, setup: object, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = _suite(tmp_path / "elsewhere", "./bench")
    setup(bench_copy)  # type: ignore[operator]
    with pytest.raises(ConfigError, match=message) as raised:
        load_suite(suite)
    assert str(raised.value).startswith(f"{suite}: invalid suite config\n  - benchmark: ")
    assert "caption_f1" not in BENCHMARKS.registered()
    # A stage run on the suite prints the same message, exit 2, no traceback.
    assert validate_stage(["--suite", str(suite)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err


def test_a_fixed_folder_loads_after_a_failed_attempt(bench_copy: Path) -> None:
    hooks = (bench_copy / "hooks.py").read_text(encoding="utf-8")
    (bench_copy / "hooks.py").write_text("raise ImportError('later')\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="later"):
        load_folder(bench_copy)
    (bench_copy / "hooks.py").write_text(hooks, encoding="utf-8")
    assert load_folder(bench_copy).name == "caption_f1"
    assert load_folder(bench_copy) is load_folder(bench_copy / ".." / "bench")


def test_two_folders_claiming_one_name_are_refused(bench_copy: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    shutil.copytree(bench_copy, other)
    load_folder(bench_copy)
    with pytest.raises(ConfigError, match=r"registered twice .*rename it in benchmark\.yaml"):
        load_folder(other)


# -- entry points --------------------------------------------------------------------------------


PLUGIN_BENCH = """\
from omnieval.benchmarks import DeclaredBenchmark, benchmark
from omnieval.benchmarks import Record


class Line(Record):
    text: str


@benchmark()
class PlugBench(DeclaredBenchmark):
    record = Line
    score_range = {"hit": (0.0, 1.0)}

    def score(self, record, outputs, config):
        return {"hit": float(outputs.text() == record.text)}
"""

PLUGIN_YAML = """\
name: plug_bench
title: Plugged
dataset: {marker: lines.jsonl, sample: data/plug}
system_kinds: [plug-kind, import]
modalities: [text]
headline: {components: [hit]}
"""

PLUGIN_KIND = '''\
from omnieval.systems import SYSTEMS, GenerationRequest, GenerationSummary, System


@SYSTEMS.register("plug-kind")
class PlugKind(System):
    """A system kind from an installed package: it implements the one system protocol."""

    kind = "plug-kind"

    def generate(self, request: GenerationRequest) -> GenerationSummary:
        return GenerationSummary(self.kind, self.kind, request.out_root, 0)
'''


@pytest.fixture
def plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[importlib.metadata.EntryPoint]]:
    """Installed plugins, as ``importlib.metadata.entry_points`` reports them: a list to fill."""
    package = tmp_path / "site" / "plug_bench"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(PLUGIN_BENCH, encoding="utf-8")
    (package / "benchmark.yaml").write_text(PLUGIN_YAML, encoding="utf-8")
    (tmp_path / "site" / "plug_kind.py").write_text(PLUGIN_KIND, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    points: list[importlib.metadata.EntryPoint] = []

    def entry_points(*, group: str) -> list[importlib.metadata.EntryPoint]:
        return [p for p in points if p.group == group]

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    # Discovery runs once per process: make it run again for this test's plugins.
    BENCHMARKS.use_entry_points(ENTRY_POINT_GROUP, error=ConfigError)
    SYSTEMS.use_entry_points("omnieval.systems", error=ConfigError)
    yield points
    for name in ("plug_bench", "plug_kind"):
        sys.modules.pop(name, None)


def _point(name: str, value: str, group: str) -> importlib.metadata.EntryPoint:
    return importlib.metadata.EntryPoint(name=name, value=value, group=group)


def test_installed_packages_add_benchmarks_and_system_kinds(
    plugins: list[importlib.metadata.EntryPoint], tmp_path: Path
) -> None:
    plugins.append(_point("plug_bench", "plug_bench", "omnieval.benchmarks"))
    plugins.append(_point("plug-kind", "plug_kind:PlugKind", "omnieval.systems"))
    assert "plug-kind" in SYSTEMS and config_model("plug-kind").__name__ == "SystemConfig"
    assert "plug_bench" in BENCHMARKS.names()
    suite = tmp_path / "s.yaml"
    suite.write_text("suite: s\nbenchmark: plug_bench\nsystems:\n  a: {kind: plug-kind}\n")
    assert load_suite(suite).bench.title == "Plugged"


def test_plugins_load_lazily_and_once(plugins: list[importlib.metadata.EntryPoint]) -> None:
    plugins.append(_point("plug_bench", "plug_bench", "omnieval.benchmarks"))
    assert BENCHMARKS.get("acbench").name == "acbench"  # a shipped name needs no discovery
    assert "plug_bench" not in sys.modules
    assert "plug_bench" in BENCHMARKS
    plugins.append(_point("late", "no_such_module", "omnieval.benchmarks"))
    assert "late" not in BENCHMARKS  # discovered once: a later entry point is not looked for


@pytest.mark.parametrize(
    ("point", "message"),
    [
        (("broken", "no_such_module_xyz", "omnieval.benchmarks"), "failed to load: ModuleNotFoundError"),
        (("quiet", "json", "omnieval.benchmarks"), "loaded but registered no benchmark named 'quiet'"),
        (("bad-kind", "no_such_module_xyz", "omnieval.systems"), "failed to load: ModuleNotFoundError"),
    ],
)
def test_a_broken_plugin_is_named_without_a_traceback(
    plugins: list[importlib.metadata.EntryPoint],
    tmp_path: Path,
    point: tuple[str, str, str],
    message: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    plugins.append(_point(*point))
    name, value, group = point
    registry = BENCHMARKS if group == "omnieval.benchmarks" else SYSTEMS
    with pytest.raises(ConfigError, match=f"plugin '{name}' \\({value}, from an unknown distribution\\)"):
        registry.names()
    with pytest.raises(ConfigError, match=message):
        registry.names()  # not silently dropped after the first failure
    if registry is BENCHMARKS:  # the listing a user asks for names the plugin
        assert main(["benchmarks"]) == 2
    else:  # a suite naming an unknown kind looks for plugins, and names the broken one
        suite = tmp_path / "s.yaml"
        suite.write_text("suite: s\nbenchmark: acbench\nsystems:\n  a: {kind: unknown-kind}\n")
        assert validate_stage(["--suite", str(suite)]) == 2
    err = capsys.readouterr().err
    assert f"plugin '{name}'" in err and "Traceback" not in err


def test_editing_a_folder_benchmark_s_hooks_changes_the_stages_code_digest(bench_copy: Path) -> None:
    from omnieval.stages._common import code_digest, external_benchmark_roots

    package_only = code_digest()
    assert "caption_f1" not in external_benchmark_roots()
    load_suite(_suite(bench_copy, "."))
    assert external_benchmark_roots()["caption_f1"] == bench_copy.resolve()
    loaded = code_digest()
    assert loaded != package_only
    with (bench_copy / "hooks.py").open("a", encoding="utf-8") as hooks:
        hooks.write("# an edit\n")
    assert code_digest() != loaded


def test_a_folder_with_an_init_module_is_loaded_as_its_package(bench_copy: Path, tmp_path: Path) -> None:
    """A folder whose ``__init__.py`` imports its hooks (relative import inside the folder's package)."""
    (bench_copy / "__init__.py").write_text("from . import hooks  # noqa: F401\n", encoding="utf-8")
    config = load_suite(_suite(tmp_path / "elsewhere", "./bench"))
    assert config.benchmark == "caption_f1"
    assert config.bench.instances(config.bench.load(bench_copy / "data"))[0].id == "fox"
