"""Evaluator references -> checkpoint folders: local folders, bare names, pluggable registries."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from omnieval.backends import evaluators as backend
from omnieval.backends.evaluators import (
    DEFAULT_ROOT,
    ResolvedEvaluator,
    register_evaluator_registry,
    registered_schemes,
    resolve_evaluator,
    unregister_evaluator_registry,
)
from omnieval.errors import ConfigError, OmnievalError


def test_local_folder_and_bare_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "ckpt"
    folder.mkdir()
    assert resolve_evaluator(str(folder)) == ResolvedEvaluator(folder, None)
    monkeypatch.chdir(tmp_path)
    (tmp_path / DEFAULT_ROOT / "unit-gender").mkdir(parents=True)
    assert resolve_evaluator("unit-gender") == ResolvedEvaluator(DEFAULT_ROOT / "unit-gender", None)
    with pytest.raises(OmnievalError, match="'nothing' not found"):
        resolve_evaluator("nothing")
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(OmnievalError, match="not found"):
        resolve_evaluator("a-file")


def test_registered_scheme_resolves_through_its_resolver() -> None:
    calls: list[tuple[str, str]] = []

    def resolver(name: str, version: str) -> tuple[Path, str]:
        calls.append((name, version))
        return Path("/cache") / name, "4"

    register_evaluator_registry("unitreg", resolver)
    try:
        assert "unitreg" in registered_schemes()
        assert resolve_evaluator("unitreg:/gender/latest") == ResolvedEvaluator(Path("/cache/gender"), "4")
        assert calls == [("gender", "latest")]
        with pytest.raises(OmnievalError, match=r"unitreg:/<name>/<version>"):
            resolve_evaluator("unitreg:/gender")
        assert len(calls) == 1
    finally:
        unregister_evaluator_registry("unitreg")
    assert "unitreg" not in registered_schemes()


def test_unknown_scheme_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"no registry resolves nosuch:/ \(known: .*models:/"):
        resolve_evaluator("nosuch:/gender/1")
    with pytest.raises(ValueError, match="plain word"):
        register_evaluator_registry("not a scheme", lambda name, version: (Path(name), version))


def test_provider_module_is_imported_on_first_use(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A stand-in for omnieval.tracking.training: registering its resolver is all its import does.
    (tmp_path / "unit_registry_provider.py").write_text(
        "from pathlib import Path\n"
        "from omnieval.backends.evaluators import register_evaluator_registry\n"
        "register_evaluator_registry('unitprov', lambda name, version: (Path('/reg') / name, version))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(backend.REGISTRY_PROVIDERS, "unitprov", "unit_registry_provider")
    assert "unitprov" not in registered_schemes()
    try:
        assert resolve_evaluator("unitprov:/timbre/2") == ResolvedEvaluator(Path("/reg/timbre"), "2")
        assert "unit_registry_provider" in sys.modules
    finally:
        unregister_evaluator_registry("unitprov")
        sys.modules.pop("unit_registry_provider", None)


def test_tracking_registers_the_mlflow_registry() -> None:
    from omnieval.tracking.training import download_registered_evaluator

    assert backend.REGISTRY_PROVIDERS["models"] == "omnieval.tracking.training"
    assert backend._resolver("models") is download_registered_evaluator
