"""Write the sample books in the Omni-StoryBench release layout (FORMATS.md section 1).

``omnieval make-sample storybench OUT`` (:func:`sample_main`) writes it, then validates it.

The output is byte-for-byte reproducible: fixed drawing seeds, PNGs without timestamps, JSON with a
fixed key order, and a parquet written from an explicit all-string schema.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

from omnieval.benchmarks._sample_command import run_sample_command, sample_parser
from omnieval.benchmarks._sample_media import save_png
from omnieval.benchmarks.storybench._sample._books import BOOKS, Book
from omnieval.benchmarks.storybench._sample._draw import draw_page
from omnieval.benchmarks.storybench._schema import (
    PARQUET_RELPATH,
    REQUIRED_COLUMNS,
    expected_id,
    sample_object,
)
from omnieval.data import refuse_foreign, replace_owned
from omnieval.jsonio import write_json_atomic

#: Top-level entries the generator owns inside its output folder.
LAYOUT_ENTRIES = ("data", "samples", "metadata", "images", "texts", "README.md")

# The README names ``_books.py`` (which now reads the stories from ``books.yaml``): its bytes are
# part of the committed sample, which must not change with where the stories are written.
_README = """# Omni-StoryBench sample (made by omnieval)

{n_rows} page transitions from {n_books} short picture books written and illustrated by the omnieval
project, in the public Omni-StoryBench release layout. The illustrations are drawn by code
(`src/omnieval/benchmarks/storybench/_sample/_draw.py`); the stories, conditions and speech lines
are in `src/omnieval/benchmarks/storybench/_sample/_books.py`. Regenerate with
`omnieval make-sample storybench <folder>`; the output is byte-for-byte identical on every run.
Same licence as omnieval (Apache-2.0).
"""


@dataclass(frozen=True)
class SampleSummary:
    """What :func:`write_sample` wrote."""

    root: Path
    n_books: int
    n_pages: int
    n_rows: int


def build_rows(books: tuple[Book, ...] = BOOKS) -> list[dict[str, Any]]:
    """The parquet rows (dicts with every required column), in dataset order."""
    rows: list[dict[str, Any]] = []
    for book in books:
        base = f"{book.source}/{book.key}"
        book_characters = json.dumps([c.model_dump() for c in book.characters], ensure_ascii=False)
        for step, (cur, nxt) in zip(book.steps, pairwise(book.pages), strict=True):
            row = {
                "id": expected_id(book.source, book.key, cur.key, nxt.key),
                "source": book.source,
                "book": book.key,
                "from_key": cur.key,
                "to_key": nxt.key,
                "current_image": f"images/{base}/{cur.key}.png",
                "current_text": cur.text,
                "current_text_path": f"texts/{base}/{cur.key}.txt",
                "next_image": f"images/{base}/{nxt.key}.png",
                "next_text": nxt.text,
                "next_text_path": f"texts/{base}/{nxt.key}.txt",
                "genre": book.genre,
                "topic": book.topic,
                "style": book.style,
                "narrative_tense": book.narrative_tense,
                "narrative_perspective": book.narrative_perspective,
                "scene": step.scene,
                "text_instruction": step.text_instruction,
                "ambient_sound": step.ambient_sound,
                "speech_utterance": step.line,
                "speech_speaker": step.speaker,
                "speech_emotion": step.emotion,
                "speech_speed": step.speed,
                "speech_pitch": step.pitch,
                "speech_gender": step.gender,
                "condition_characters": json.dumps(
                    [c.model_dump() for c in step.characters], ensure_ascii=False
                ),
                "book_characters": book_characters,
                "sample_path": f"samples/{base}/{cur.key}__{nxt.key}.json",
                "metadata_path": f"metadata/{base}.json",
            }
            rows.append({c: row[c] for c in REQUIRED_COLUMNS})
    return rows


def write_sample(out: Path, *, size: int = 256, books: tuple[Book, ...] = BOOKS) -> SampleSummary:
    """Write the sample dataset into ``out`` (replacing an earlier sample there).

    Args:
        out: target folder; if it exists it may only contain what this function writes.
        size: illustration width and height in pixels.
        books: the books to write (default: all four).

    Raises:
        OmnievalError: ``out`` exists and holds files this generator did not write.
    """
    out = Path(out)
    refuse_foreign(out, LAYOUT_ENTRIES)
    with replace_owned(out, LAYOUT_ENTRIES) as tmp:
        rows = build_rows(books)
        for book in books:
            base = f"{book.source}/{book.key}"
            for page in book.pages:
                save_png(draw_page(book, page, size), tmp / "images" / base / f"{page.key}.png")
                text_path = tmp / "texts" / base / f"{page.key}.txt"
                text_path.parent.mkdir(parents=True, exist_ok=True)
                text_path.write_text(page.text + "\n", encoding="utf-8")
            write_json_atomic(tmp / "metadata" / f"{base}.json", book.metadata(), default=None)
        for row in rows:
            write_json_atomic(tmp / row["sample_path"], sample_object(row), default=None)
        _write_parquet(tmp / PARQUET_RELPATH, rows)
        (tmp / "README.md").write_text(_README.format(n_rows=len(rows), n_books=len(books)), encoding="utf-8")
    return SampleSummary(out, len(books), sum(len(book.pages) for book in books), len(rows))


def _write_parquet(path: Path, rows: list[dict[str, Any]]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([pa.field(c, pa.string(), nullable=False) for c in REQUIRED_COLUMNS])
    table = pa.Table.from_pylist(rows, schema=schema)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, compression="zstd", compression_level=9, use_dictionary=False)


def sample_main(argv: Sequence[str], prog: str) -> int:
    """Write the sample, then run the strict validator on it; exit 2 if it does not pass."""
    description = "Write omnieval's Omni-StoryBench sample (4 books, 20 transitions)"
    parser = sample_parser(prog, description, "data/storybench-sample")
    parser.add_argument("--size", type=int, default=256, help="illustration size in pixels (default 256)")
    args = parser.parse_args(argv)

    from omnieval.benchmarks.storybench._record import validate_storybench

    def report(summary: SampleSummary) -> int:
        validation = validate_storybench(summary.root)
        if not validation.ok:
            for problem in validation.problems:
                print(f"  - {problem}", file=sys.stderr)
            return 2
        print(
            f"wrote {summary.n_rows} transitions, {summary.n_pages} pages, {summary.n_books} books to "
            f"{summary.root}"
        )
        return 0

    return run_sample_command(lambda: write_sample(args.out, size=args.size), report)
