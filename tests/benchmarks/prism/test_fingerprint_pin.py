"""PRISM-Bench's sample digest (lineage), MLflow dataset table and the loader's problem lists, pinned
from the code before the loader moved onto the record framework: a port must not move any of them.

``loader_problems.json`` holds, for each corruption of :mod:`._corrupt` and four corruptions with
several problems at once, the problem list the loader gave (ffmpeg's own words about an unreadable
file, which name a temporary path, are cut to ``(...)``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from benchmarks.prism._corrupt import CASES, edit_line, lavfi_clip
from benchmarks.prism.conftest import SMALL_IDS, copy_subset
from omnieval.benchmarks import BENCHMARKS

SAMPLE = Path(__file__).resolve().parents[3] / "data" / "prism-sample"
DIGEST = "c0899ac8692a9bcecc7083198589619bc7377f04c3d61ec4169f972ad6dae0dd"
FRAME_SHA256 = "d3b5a5bd126a04cbcc8471b8c0b1486095c9d0d8677569baa821d13956019265"
PROBLEMS: dict[str, list[str]] = json.loads(
    (Path(__file__).with_name("loader_problems.json")).read_text(encoding="utf-8")
)

sample_only = pytest.mark.skipif(not (SAMPLE / "manifest.jsonl").is_file(), reason="no committed sample")


@sample_only
def test_sample_digest_is_pinned() -> None:
    bench = BENCHMARKS.get("prism")
    manifest = bench.fingerprint(bench.load(SAMPLE))
    assert manifest.digest == DIGEST
    assert (manifest.n_rows, len(manifest.files), len(manifest.texts)) == (29, 29, 29)


@sample_only
def test_sample_frame_is_pinned() -> None:
    frame = BENCHMARKS.get("prism").dataset_frame(SAMPLE)
    assert hashlib.sha256(frame.to_csv().encode()).hexdigest() == FRAME_SHA256


def _every_problem_at_once(root: Path) -> None:
    edit_line(root, 1, lambda o: o.update(subset="somewhere"))
    edit_line(root, 2, lambda o: o.update(caption=""))
    edit_line(root, 3, lambda o: o.update(active_tags=["SOUND_A"]))
    (root / "videos" / "mix-01.mp4").unlink()


def _gate_case(root: Path) -> None:
    edit_line(root, 3, lambda o: o.update(active_tags=["MUSIC_A"]))
    edit_line(root, 2, lambda o: o.update(id="on-01", caption=" "))
    (root / "videos" / "on-01.mp4").unlink()
    lavfi_clip(root / "videos" / "on-01.mp4", audio=False, fps=3)
    edit_line(root, 4, lambda o: o.update(extra_field=1))


def _many_fields(root: Path) -> None:
    edit_line(root, 1, lambda o: [o.pop("reference_video"), o.update(subset=3, zz=1, speaker=4, notes=[1])])
    edit_line(root, 2, lambda o: [o.pop("id"), o.update(visual_events="x")])
    edit_line(root, 3, lambda o: [o.pop("caption"), o.pop("active_tags"), o.update(id=" ", meta=2)])


def _events_and_clip(root: Path) -> None:
    (root / "videos" / "on-07.mp4").unlink()
    lavfi_clip(root / "videos" / "on-07.mp4", audio=False, seconds=2.0)
    edit_line(root, 2, lambda o: o.update(visual_events=[0.5, 2.5]))
    edit_line(root, 4, lambda o: o.update(visual_events=[-1, True]))
    edit_line(root, 1, lambda o: o.update(active_tags=[]))


_CASES: dict[str, Callable[[Path], None]] = {
    **{c.name: c.apply for c in CASES},
    "every problem at once": _every_problem_at_once,
    "gate case": _gate_case,
    "many fields": _many_fields,
    "events and clip": _events_and_clip,
}


def _cut(problem: str) -> str:
    return re.sub(r" \(\[mov.*$", " (...))", problem)


@sample_only
@pytest.mark.parametrize("name", list(_CASES))
def test_problem_list_is_pinned(name: str, prism_sample: Path, tmp_path: Path) -> None:
    root = copy_subset(prism_sample, SMALL_IDS, tmp_path / "prism")
    _CASES[name](root)
    problems = [_cut(p) for p in BENCHMARKS.get("prism").validate(root).problems]
    assert problems == PROBLEMS[name]


def test_every_case_is_pinned() -> None:
    assert set(_CASES) == set(PROBLEMS)
