"""The project's own Omni-StoryBench sample: four short picture books in the release layout.

``python -m omnieval.sample --out data/storybench-sample`` regenerates it byte for byte.
"""

from omnieval.sample._books import BOOKS, Actor, Book, Page, Prop, Step
from omnieval.sample._draw import draw_page
from omnieval.sample._write import SampleSummary, build_rows, write_sample

__all__ = [
    "BOOKS",
    "Actor",
    "Book",
    "Page",
    "Prop",
    "SampleSummary",
    "Step",
    "build_rows",
    "draw_page",
    "write_sample",
]
