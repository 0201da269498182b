"""The project's own Omni-StoryBench sample: four short picture books in the release layout.

The stories are data in ``books.yaml``; the illustrations are drawn by ``_draw.py``.

``omnieval make-sample storybench data/storybench-sample`` regenerates it byte for byte.
"""

from omnieval.benchmarks.storybench._sample._books import BOOKS, BOOKS_FILE, load_books
from omnieval.benchmarks.storybench._sample._write import build_rows, sample_main, write_sample

__all__ = ["BOOKS", "BOOKS_FILE", "build_rows", "load_books", "sample_main", "write_sample"]
