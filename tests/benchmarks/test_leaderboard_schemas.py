"""The leaderboard JSON schemas committed under docs/schemas/ are what the models produce today."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from omnieval.benchmarks import BENCHMARKS
from omnieval.benchmarks._schemas import (
    export_leaderboard_schemas,
    leaderboard_models,
    leaderboard_schema,
    schema_file_name,
)

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "docs" / "schemas"
REFRESH = (
    '.venv/bin/python -c "from omnieval.benchmarks._schemas import export_leaderboard_schemas as e; '
    "e('docs/schemas')\""
)


def test_every_benchmark_has_a_leaderboard_model() -> None:
    assert sorted(leaderboard_models()) == sorted(BENCHMARKS.names())


def test_committed_schemas_match_the_models(tmp_path: Path) -> None:
    written = export_leaderboard_schemas(tmp_path)
    assert sorted(p.name for p in written) == sorted(schema_file_name(n) for n in leaderboard_models())
    committed = sorted(p.name for p in COMMITTED.glob("*.leaderboard.schema.json"))
    assert committed == sorted(p.name for p in written), f"refresh with: {REFRESH}"
    for path in written:
        assert path.read_bytes() == (COMMITTED / path.name).read_bytes(), (
            f"docs/schemas/{path.name} is stale; refresh with: {REFRESH}"
        )


@pytest.mark.parametrize(
    ("benchmark", "document"),
    [
        ("acbench", "acbench/leaderboard_sample.json"),
        ("storybench", "storybench/leaderboard_nightly.json"),
    ],
)
def test_real_documents_satisfy_the_exported_schema(benchmark: str, document: str) -> None:
    """The schema a reader gets (not only the pydantic model) accepts a real leaderboard.json and
    rejects an unexpected key in it."""
    schema = leaderboard_schema(benchmark)
    validator = jsonschema.Draft202012Validator(schema)
    doc = json.loads((Path(__file__).parent / document).read_text(encoding="utf-8"))
    validator.validate(doc)
    first = next(iter(doc["systems"]))
    doc["systems"][first]["unexpected"] = 1
    assert not validator.is_valid(doc)
