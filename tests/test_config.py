from __future__ import annotations

from pathlib import Path

import pytest

from omnieval.config import SuiteConfig, load_suite
from omnieval.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]


def test_nightly_suite_loads_and_checks_against_registries() -> None:
    config = load_suite(ROOT / "pipelines" / "nightly.yaml")
    assert set(config.systems) == {"oracle", "copy-current", "shuffled"}
    assert config.schedule.cron == "0 2 * * *"
    assert config.experiment == "omnieval/nightly"
    assert config.state == Path("state/nightly")


def test_typo_fails_at_load_time_with_the_key_path(tmp_path: Path) -> None:
    bad = tmp_path / "s.yaml"
    bad.write_text("suite: x\nsystems:\n  a: {kind: oracle, sed: 1}\n")
    with pytest.raises(ConfigError, match=r"systems\.a\.sed"):
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
