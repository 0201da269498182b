"""The storybench sample's dataset digest (lineage), MLflow dataset table and every problem text of
the corruption cases, pinned from the code before the loader moved onto the record framework: the
port must not move any of them by a byte (``pinned_problems.json``; ``<root>`` stands for the copy)."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from data._corrupt import CASES, PARQUET, rewrite_rows
from omnieval.benchmarks import BENCHMARKS

SAMPLE = Path(__file__).resolve().parents[3] / "data" / "storybench-sample"
DIGEST = "73c2ab0acdd27d4edab2a4dd63c272453f1ea01328a2fd42c9fc4539a2c2fcb6"
FRAME_SHA256 = "6cc1764e5b412e367eeb4aaf5987bb5bccdcd44d78151394817f74fe620289e3"
PINNED: dict[str, list[str]] = json.loads((Path(__file__).parent / "pinned_problems.json").read_text())

pytestmark = pytest.mark.skipif(not (SAMPLE / PARQUET).is_file(), reason="no committed sample")


def _all_at_once(root: Path) -> None:
    for case in CASES[1:]:
        if case.name not in {"duplicated id", "symlink out of the folder"}:
            case.apply(root)


def _every_stage(root: Path) -> None:
    def mutate(rows: list[dict[str, Any]]) -> None:
        rows[10].update(
            id="a/b/c__d",
            topic="  ",
            speech_gender="x",
            condition_characters="{}",
            current_image="../x.png",
            current_text="  ",
        )
        rows[11].update(speech_gender="", speech_pitch="shrill", source="")

    rewrite_rows(root, mutate)


def _three_rows_one_id(root: Path) -> None:
    def mutate(rows: list[dict[str, Any]]) -> None:
        rows[9]["id"] = rows[11]["id"] = rows[4]["id"]

    rewrite_rows(root, mutate)


def _empty_table(root: Path) -> None:
    pq.write_table(pq.read_schema(root / PARQUET).empty_table(), root / PARQUET)


def _not_parquet(root: Path) -> None:
    (root / PARQUET).write_bytes(b"PAR1 not really")


def _remove_folder(root: Path) -> None:
    shutil.rmtree(root)


EXTRA: dict[str, Callable[[Path], None]] = {
    "all at once": _all_at_once,
    "null style": lambda root: rewrite_rows(root, lambda rows: rows[7].__setitem__("style", None)),
    "blank id": lambda root: rewrite_rows(root, lambda rows: rows[2].__setitem__("id", "  ")),
    "missing file": lambda root: (root / PARQUET).unlink(),
    "unreadable parquet": _not_parquet,
    "empty table": _empty_table,
    "missing folder": _remove_folder,
    "three rows one id": _three_rows_one_id,
    "every stage in one row": _every_stage,
}
BUILDERS: dict[str, Callable[[Path], None]] = {**{c.name: c.apply for c in CASES}, **EXTRA}


def problems_of(name: str, tmp_path: Path) -> list[str]:
    """The problems ``validate`` reports on a copy of the sample broken as case ``name``."""
    root = tmp_path / "storybench"
    shutil.copytree(SAMPLE, root)
    BUILDERS[name](root)
    report = BENCHMARKS.get("storybench").validate(root)
    return [p.replace(str(root), "<root>") for p in report.problems]


def test_every_case_is_pinned() -> None:
    assert set(PINNED) == set(BUILDERS)


@pytest.mark.parametrize("name", list(BUILDERS))
def test_problem_texts_and_order_are_pinned(name: str, tmp_path: Path) -> None:
    assert problems_of(name, tmp_path) == PINNED[name]


def test_sample_digest_is_pinned() -> None:
    bench = BENCHMARKS.get("storybench")
    manifest = bench.fingerprint(bench.load(SAMPLE))
    assert manifest.digest == DIGEST
    assert (manifest.n_rows, len(manifest.files), len(manifest.texts)) == (20, 72, 120)


def test_sample_frame_is_pinned() -> None:
    frame = BENCHMARKS.get("storybench").dataset_frame(SAMPLE)
    assert hashlib.sha256(frame.to_csv().encode()).hexdigest() == FRAME_SHA256
