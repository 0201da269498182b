"""The Omni-StoryBench dataset gate: the parquet table plus file-check helper columns, through GX.

``expectations/storybench_dataset.json`` checks the schema, non-empty strings, the id pattern and
uniqueness, the speech label vocabularies, and (through helper columns computed here, because GX
only sees the table) that every referenced file is inside the dataset folder, present and decodable.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from omnieval.benchmarks.storybench._schema import (
    CHARACTER_COLUMNS,
    FILE_KINDS,
    PARQUET_RELPATH,
    PATH_COLUMNS,
    TEXT_FILE_OF,
    TEXT_PATH_COLUMNS,
    expected_id,
)
from omnieval.data import FileCheck, check_file, parse_characters
from omnieval.gates import FailedExpectation, GateResult, expectations_dir, validate_frame, write_result

if TYPE_CHECKING:
    import pandas as pd

#: Name of the suite file under ``expectations/``.
STORYBENCH_SUITE = "storybench_dataset.json"

#: The check each path column gets besides ``__present``, by file kind.
_CHECK_NAME = {"image": "decodable", "text": "readable", "json": "parses"}
FILE_CHECK: dict[str, str] = {column: _CHECK_NAME[kind] for column, kind in FILE_KINDS.items()}


def helper_columns() -> list[str]:
    """Names of the derived columns :func:`storybench_gate_frame` adds (all booleans except ``*__problem``
    and ``id__expected``)."""
    cols = ["id__expected"]
    for column in PATH_COLUMNS:
        cols += [f"{column}__present", f"{column}__{FILE_CHECK[column]}"]
    cols += [f"{column}__matches" for column in TEXT_PATH_COLUMNS]
    cols += [f"{column}__valid" for column in CHARACTER_COLUMNS]
    return cols


def storybench_gate_frame(root: Path) -> pd.DataFrame:
    """The dataset table with helper columns for the gate.

    Raises:
        OSError, pyarrow errors: the parquet cannot be read (the caller reports it).
    """
    import pandas as pd
    import pyarrow.parquet as pq

    root = Path(root)
    table = pq.read_table(root / PARQUET_RELPATH)
    rows: list[dict[str, Any]] = table.to_pylist()
    frame = pd.DataFrame(rows, columns=table.column_names)
    base = root.resolve()
    cache: dict[tuple[str, str], FileCheck] = {}
    extra: dict[str, list[Any]] = {name: [] for name in helper_columns()}
    extra.update({f"{c}__problem": [] for c in (*PATH_COLUMNS, *CHARACTER_COLUMNS)})
    for row in rows:
        parts = [row.get(c) for c in ("source", "book", "from_key", "to_key")]
        ok_parts = all(isinstance(p, str) and p for p in parts)
        extra["id__expected"].append(expected_id(*parts) if ok_parts else None)  # type: ignore[arg-type]
        for column, kind in FILE_KINDS.items():
            rel = row.get(column)
            key = (kind, str(rel))
            if key not in cache:
                cache[key] = check_file(base, rel, kind)
            checked = cache[key]
            problem = checked.problem
            extra[f"{column}__present"].append(checked.path is not None)
            extra[f"{column}__{FILE_CHECK[column]}"].append(not checked.problem)
            if column in TEXT_FILE_OF:
                inline = row.get(TEXT_FILE_OF[column])
                matches = (
                    not problem and isinstance(inline, str) and inline.strip() == str(checked.content).strip()
                )
                if not problem and not matches:
                    problem = f"{rel} differs from column {TEXT_FILE_OF[column]!r}"
                extra[f"{column}__matches"].append(bool(matches))
            extra[f"{column}__problem"].append(problem)
        for column in CHARACTER_COLUMNS:
            value = row.get(column)
            _, problem = parse_characters(value) if column in row else (None, "column missing")
            extra[f"{column}__valid"].append(not problem)
            extra[f"{column}__problem"].append(problem)
    for name, values in extra.items():
        frame[name] = pd.Series(
            values, index=frame.index, dtype=object if name.endswith(("__problem", "__expected")) else bool
        )
    return frame


def gate_storybench_dataset(
    dataset_root: Path, out_json: Path | None, *, suite_file: Path | None = None
) -> GateResult:
    """Run the dataset gate (``expectations/storybench_dataset.json``) on an Omni-StoryBench folder.

    Args:
        dataset_root: the dataset folder.
        out_json: where to save the result (written whether the gate passes or fails); None to skip.
        suite_file: another suite to use instead of the repository's.

    Returns:
        The result; :func:`~omnieval.gates.enforce` raises ``GateFailed`` (exit 2) when it failed.
    """
    suite = suite_file or expectations_dir() / STORYBENCH_SUITE
    artifact = str(dataset_root)
    try:
        frame = storybench_gate_frame(Path(dataset_root))
    except Exception as exc:
        result = GateResult(
            suite="storybench_dataset",
            artifact=artifact,
            success=False,
            evaluated=0,
            failed=[
                FailedExpectation(
                    "table_is_readable",
                    detail=f"{PARQUET_RELPATH}: cannot read ({type(exc).__name__}: {_first_line(exc)})",
                )
            ],
        )
        if out_json is not None:
            write_result(result, out_json)
        return result
    return validate_frame(frame, suite, artifact=artifact, out_json=out_json, id_column="id")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
