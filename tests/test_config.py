from __future__ import annotations

from pathlib import Path

import pytest

from omnieval.config import SuiteConfig, load_suite
from omnieval.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]


def test_nightly_suite_loads_and_checks_against_registries() -> None:
    config = load_suite(ROOT / "pipelines" / "nightly.yaml")
    assert set(config.systems) == {"oracle", "copy-current", "shuffled", "orchestrated-cpu"}
    # A generating system's entry is validated into its kind's own typed config at load time.
    assert type(config.systems["orchestrated-cpu"]).__name__ == "OrchestrationConfig"
    assert config.schedule.cron == "0 2 * * *"
    assert config.experiment == "omnieval/nightly"
    assert config.state == Path("state/nightly")


def test_typo_fails_at_load_time_with_the_key_path(tmp_path: Path) -> None:
    bad = tmp_path / "s.yaml"
    bad.write_text("suite: x\nsystems:\n  a: {kind: oracle, sed: 1}\n")
    with pytest.raises(ConfigError, match=r"systems\.a\.sed"):
        load_suite(bad, check=False)


def test_a_generating_kind_rejects_unknown_keys_with_their_path(tmp_path: Path) -> None:
    bad = tmp_path / "s.yaml"
    bad.write_text("suite: x\nsystems:\n  a: {kind: command, argv: [x], timeout: 3}\n")
    with pytest.raises(ConfigError, match=r"systems\.a\.timeout"):
        load_suite(bad, check=False)


def test_unknown_components_are_listed(tmp_path: Path) -> None:
    bad = tmp_path / "s.yaml"
    bad.write_text(
        "suite: x\nsystems:\n  a: {kind: oracel}\n  b: {kind: import}\njudges: {panels: [gpu-magic]}\n"
    )
    with pytest.raises(ConfigError) as info:
        load_suite(bad)
    message = str(info.value)
    assert "systems.a.kind: unknown system 'oracel'" in message
    assert "systems.b.path" in message
    assert "unknown panel 'gpu-magic'" in message


def test_config_is_frozen() -> None:
    config = SuiteConfig(suite="x", systems={"a": {"kind": "oracle"}})  # type: ignore[dict-item]
    with pytest.raises(ValueError):
        config.suite = "y"  # type: ignore[misc]


def test_binary_suite_file_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "suite.yaml"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe binary")
    with pytest.raises(ConfigError, match="not a text file"):
        load_suite(bad)


def test_unknown_benchmark_lists_the_registered_ones(tmp_path: Path) -> None:
    bad = tmp_path / "s.yaml"
    bad.write_text("suite: x\nbenchmark: prismbench\nsystems:\n  a: {kind: oracle}\n")
    with pytest.raises(
        ConfigError, match=r"benchmark: .*unknown benchmark 'prismbench'; known: acbench, prism, storybench"
    ):
        load_suite(bad)


def test_metrics_block_is_typed_per_benchmark_and_resolved(tmp_path: Path) -> None:
    bad = tmp_path / "s.yaml"
    bad.write_text("suite: x\nsystems:\n  a: {kind: oracle}\nmetrics: {batch_size: 0, colour: red}\n")
    with pytest.raises(ConfigError) as info:
        load_suite(bad)
    assert "batch_size" in str(info.value) and "colour" in str(info.value)
    config = load_suite(ROOT / "pipelines" / "nightly.yaml")
    resolved = config.model_dump(mode="json")["metrics"]
    assert resolved["text_encoder"] == "minilm" and resolved["batch_size"] == 64


def test_conditions_are_checked_against_the_benchmark(tmp_path: Path) -> None:
    bad = tmp_path / "s.yaml"
    bad.write_text("suite: x\nsystems:\n  a: {kind: oracle}\nconditions: [original]\n")
    with pytest.raises(ConfigError, match="has no input conditions"):
        load_suite(bad)
    config = load_suite(ROOT / "pipelines" / "acbench.yaml")
    assert config.run_conditions == ("original", "s_to_t", "i_to_t", "all_to_t", "oracle")
    assert config.panels == () and config.dataset_path == Path("data/acbench-sample")


def test_panels_on_a_benchmark_without_judges_are_refused(tmp_path: Path) -> None:
    bad = tmp_path / "s.yaml"
    bad.write_text("suite: x\nbenchmark: acbench\nsystems:\n  a: {kind: neutral}\njudges: {panels: [cpu]}\n")
    with pytest.raises(ConfigError, match="has no judge tracks"):
        load_suite(bad)
    wrong = tmp_path / "w.yaml"
    wrong.write_text("suite: x\nbenchmark: acbench\nsystems:\n  a: {kind: oracle}\n")
    with pytest.raises(ConfigError, match="unknown system 'oracle' for benchmark acbench"):
        load_suite(wrong)


def test_the_full_nightly_is_the_default_without_its_limit() -> None:
    short = load_suite(ROOT / "pipelines" / "nightly.yaml")
    full = load_suite(ROOT / "pipelines" / "nightly-full.yaml")
    assert short.dataset.limit == 2 and full.dataset.limit is None
    assert (full.suite, full.experiment) == ("nightly-full", "omnieval/nightly-full")
    # Everything else that decides the scores is the same suite; only the full one checks its judges
    # on the known set (the check's verdicts are not scores of the systems).
    for field in ("benchmark", "systems", "metrics", "drift", "analyses"):
        assert getattr(full, field) == getattr(short, field), field
    assert full.judges.model_copy(update={"meta_eval": short.judges.meta_eval}) == short.judges
    assert full.judges.meta_eval.enabled and not short.judges.meta_eval.enabled


def test_drift_defaults_come_from_the_benchmark(tmp_path: Path) -> None:
    story = tmp_path / "story.yaml"
    story.write_text("suite: s\nsystems:\n  a: {kind: oracle}\ndrift: {enabled: true}\n")
    config = load_suite(story, check=False)
    # storybench's benchmark.yaml declares its anchors; its first default panel re-judges them.
    assert config.drift.anchors == Path("data/anchors/storybench") and config.drift.panel == "cpu"
    own = tmp_path / "own.yaml"
    own.write_text(
        "suite: s\nsystems:\n  a: {kind: oracle}\ndrift: {enabled: true, anchors: mine, panel: p.yaml}\n"
    )
    assert load_suite(own, check=False).drift.anchors == Path("mine")
    acb = tmp_path / "acb.yaml"
    acb.write_text(
        "suite: s\nbenchmark: acbench\nsystems:\n  a: {kind: oracle-control}\ndrift: {enabled: true}\n"
    )
    with pytest.raises(ConfigError, match=r"drift.*'acbench' declares no drift anchors"):
        load_suite(acb, check=False)
    acb.write_text("suite: s\nbenchmark: acbench\nsystems:\n  a: {kind: oracle-control}\n")
    assert load_suite(acb, check=False).drift.anchors is None  # off, so nothing to fill
