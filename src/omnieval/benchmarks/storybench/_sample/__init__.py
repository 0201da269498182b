"""The project's own Omni-StoryBench sample: four short picture books in the release layout.

``omnieval make-sample storybench data/storybench-sample`` regenerates it byte for byte.
"""

from omnieval.benchmarks.storybench._sample._books import BOOKS, Actor, Book, Page, Prop, Step
from omnieval.benchmarks.storybench._sample._cli import sample_main
from omnieval.benchmarks.storybench._sample._draw import draw_page
from omnieval.benchmarks.storybench._sample._write import SampleSummary, build_rows, write_sample

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
    "sample_main",
    "write_sample",
]
