"""JSON schemas of the registered benchmarks' ``leaderboard.json`` documents, as committed under docs/.

The schema files are generated from the pydantic models, never edited by hand; a test regenerates
them and compares them with the committed copies, so a model change that forgets to refresh them
fails CI. To refresh after changing a model::

    .venv/bin/python -c "from omnieval.benchmarks._schemas import export_leaderboard_schemas as e; e('docs/schemas')"
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel

from omnieval.benchmarks._base import BENCHMARKS
from omnieval.jsonio import write_json_atomic


def leaderboard_models() -> dict[str, type[BaseModel]]:
    """Benchmark name -> the model of its ``leaderboard.json`` document (typed benchmarks only).

    Benchmarks register when ``omnieval.benchmarks`` is imported, which importing this module does.
    """
    models = {name: BENCHMARKS.get(name).leaderboard_model() for name in BENCHMARKS.names()}
    return {name: model for name, model in sorted(models.items()) if model is not None}


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
    schema = leaderboard_models()[benchmark].model_json_schema(by_alias=True)
    return {"$schema": JSON_SCHEMA_DIALECT, **schema}


def export_leaderboard_schemas(out_dir: Path | str) -> list[Path]:
    """Write every benchmark's leaderboard schema into ``out_dir``; return the paths written."""
    out = Path(out_dir)
    return [
        write_json_atomic(out / schema_file_name(name), leaderboard_schema(name))
        for name in leaderboard_models()
    ]


__all__ = [
    "export_leaderboard_schemas",
    "leaderboard_models",
    "leaderboard_schema",
    "schema_file_name",
]
