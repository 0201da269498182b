"""The Omni-StoryBench dataset gate: the parquet table plus file-check helper columns, through GX.

``expectations/storybench_dataset.json`` checks the schema, non-empty strings, the id pattern and
uniqueness, the speech label vocabularies, and (through helper columns computed here, because GX
only sees the table) that every referenced file is inside the dataset folder, present and decodable.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from omnieval.data._files import (
    image_problem,
    parse_characters,
    read_json_file,
    read_text_file,
    resolve_in_root,
)
from omnieval.data._schema import (
    CHARACTER_COLUMNS,
    IMAGE_COLUMNS,
    JSON_PATH_COLUMNS,
    PARQUET_RELPATH,
    PATH_COLUMNS,
    TEXT_FILE_OF,
    TEXT_PATH_COLUMNS,
    expected_id,
)
from omnieval.gates._core import FailedExpectation, GateResult, validate_frame, write_result

if TYPE_CHECKING:
    import pandas as pd

#: Name of the suite file under ``expectations/``.
STORYBENCH_SUITE = "storybench_dataset.json"

#: The check each path column gets besides ``__present``.
FILE_CHECK: dict[str, str] = {
    **{c: "decodable" for c in IMAGE_COLUMNS},
    **{c: "readable" for c in TEXT_PATH_COLUMNS},
    **{c: "parses" for c in JSON_PATH_COLUMNS},
}


def expectations_dir() -> Path:
    """The ``expectations/`` folder: ``$OMNIEVAL_EXPECTATIONS``, else the source checkout's, else ``./``."""
    import os

    override = os.environ.get("OMNIEVAL_EXPECTATIONS")
    if override:
        return Path(override)
    checkout = Path(__file__).resolve().parents[3] / "expectations"
    return checkout if checkout.is_dir() else Path.cwd() / "expectations"


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
    cache: dict[tuple[str, str], tuple[bool, bool, str, Any]] = {}
    extra: dict[str, list[Any]] = {name: [] for name in helper_columns()}
    extra.update({f"{c}__problem": [] for c in (*PATH_COLUMNS, *CHARACTER_COLUMNS)})
    for row in rows:
        parts = [row.get(c) for c in ("source", "book", "from_key", "to_key")]
        ok_parts = all(isinstance(p, str) and p for p in parts)
        extra["id__expected"].append(expected_id(*parts) if ok_parts else None)  # type: ignore[arg-type]
        for column in PATH_COLUMNS:
            rel = row.get(column)
            key = (column, str(rel))
            if key not in cache:
                cache[key] = _check_file(base, column, rel)
            present, checked, problem, content = cache[key]
            extra[f"{column}__present"].append(present)
            extra[f"{column}__{FILE_CHECK[column]}"].append(checked)
            if column in TEXT_FILE_OF:
                inline = row.get(TEXT_FILE_OF[column])
                matches = checked and isinstance(inline, str) and inline.strip() == str(content).strip()
                if checked and not matches:
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


def _check_file(base: Path, column: str, rel: object) -> tuple[bool, bool, str, Any]:
    """(present, check passed, problem, content) for one referenced file."""
    resolved, problem = resolve_in_root(base, rel)
    if resolved is None:
        return False, False, problem, None
    label = str(rel)
    kind = FILE_CHECK[column]
    if kind == "decodable":
        problem = image_problem(resolved, label)
        return True, not problem, problem, None
    if kind == "readable":
        text, problem = read_text_file(resolved, label)
        return True, not problem, problem, text
    value, problem = read_json_file(resolved, label)
    if not problem and not isinstance(value, dict):
        problem = f"{label}: expected a JSON object at the top level"
    return True, not problem, problem, value


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
