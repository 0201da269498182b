"""Every reference kind a benchmark registers has a typed config of its own whose dump is the
generic :class:`~omnieval.systems.SystemConfig` dump it replaced (content keys and MLflow params are
made from it), and whose factory still builds the system from the entry."""

from __future__ import annotations

from typing import Any

import pytest

import omnieval.benchmarks  # noqa: F401  (registers every benchmark's kinds)
from omnieval.systems import SYSTEMS, SystemConfig, config_model

#: kind -> the benchmark that registers it.
REFERENCE_KINDS: dict[str, str] = {
    "oracle": "storybench",
    "copy-current": "storybench",
    "shuffled": "storybench",
    "oracle-control": "acbench",
    "neutral": "acbench",
    "ground-truth": "prism",
    "muted": "prism",
    "swapped-audio": "prism",
    "offset": "prism",
}


@pytest.mark.parametrize("kind", sorted(REFERENCE_KINDS))
@pytest.mark.parametrize("extra", [{}, {"seed": 3}, {"path": "somewhere"}, {"diagnostic": True}])
def test_a_reference_kind_has_its_own_config_with_the_generic_dump(kind: str, extra: dict[str, Any]) -> None:
    model = config_model(kind)
    assert model is not SystemConfig and issubclass(model, SystemConfig)
    assert model.__module__.startswith(f"omnieval.benchmarks.{REFERENCE_KINDS[kind]}.")
    entry = {"kind": kind, **extra}
    typed, generic = model.model_validate(entry), SystemConfig.model_validate(entry)
    assert typed.model_dump(mode="json") == generic.model_dump(mode="json")
    assert list(typed.model_dump(mode="json")) == list(generic.model_dump(mode="json"))
    assert model().kind == kind
    with pytest.raises(ValueError):
        model.model_validate({**entry, "kind": "another-kind"})


@pytest.mark.parametrize("kind", sorted(k for k in REFERENCE_KINDS if k not in ("shuffled", "swapped-audio")))
def test_the_entry_builds_its_system(kind: str) -> None:
    system = config_model(kind)().build(SYSTEMS.get(kind), condition="", modalities=())
    assert getattr(system, "kind", kind) == kind
