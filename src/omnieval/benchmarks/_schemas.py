"""JSON schemas of the three benchmarks' ``leaderboard.json`` documents, as committed under docs/.

The schema files are generated from the pydantic models, never edited by hand; a test regenerates
them and compares them with the committed copies, so a model change that forgets to refresh them
fails CI. To refresh after changing a model::

    .venv/bin/python -c "from omnieval.benchmarks._schemas import export_leaderboard_schemas as e; e('docs/schemas')"
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omnieval.benchmarks._leaderboard import LeaderboardDocument
from omnieval.benchmarks.acbench._leaderboard import AcbenchLeaderboard
from omnieval.benchmarks.prism._leaderboard import PrismLeaderboard
from omnieval.benchmarks.storybench._leaderboard import StorybenchLeaderboard
from omnieval.jsonio import write_json_atomic

LEADERBOARD_MODELS: dict[str, type[LeaderboardDocument]] = {
    "acbench": AcbenchLeaderboard,
    "prism": PrismLeaderboard,
    "storybench": StorybenchLeaderboard,
}
"""Benchmark name -> the model of its ``leaderboard.json`` document."""

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
"""The dialect pydantic generates."""


def schema_file_name(benchmark: str) -> str:
    """File name of one benchmark's schema (``<benchmark>.leaderboard.schema.json``)."""
    return f"{benchmark}.leaderboard.schema.json"


def leaderboard_schema(benchmark: str) -> dict[str, Any]:
    """The JSON schema of ``benchmark``'s document, keyed by the JSON names (``judge.text``).

    The schema describes what the models accept (validation mode): a key with a default is
    optional, which is how the dump treats it (left out unless the aggregate set it).

    Example:
        >>> leaderboard_schema("acbench")["properties"]["benchmark"]
        {'const': 'acbench', 'title': 'Benchmark', 'type': 'string'}
    """
    schema = LEADERBOARD_MODELS[benchmark].model_json_schema(by_alias=True)
    return {"$schema": JSON_SCHEMA_DIALECT, **schema}


def export_leaderboard_schemas(out_dir: Path | str) -> list[Path]:
    """Write every benchmark's leaderboard schema into ``out_dir``; return the paths written."""
    out = Path(out_dir)
    return [
        write_json_atomic(out / schema_file_name(name), leaderboard_schema(name))
        for name in sorted(LEADERBOARD_MODELS)
    ]


__all__ = [
    "LEADERBOARD_MODELS",
    "export_leaderboard_schemas",
    "leaderboard_schema",
    "schema_file_name",
]
