"""The table the corpus gate validates: one row per clip plus the helper columns it checks.

Great Expectations checks columns, so everything the gate must know is computed here first:
whether the file exists and still has the manifest's hash, whether its label is in the feature's
vocabulary, whether its speaker or bytes leak into another split, its measured duration and sample
rate, and how balanced its label is within its split.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from omnieval.corpora._audio import audio_info
from omnieval.corpora._manifest import SPLITS, ManifestRow
from omnieval.corpora._splits import leaking_rows
from omnieval.errors import DataError
from omnieval.hashing import sha256_file

if TYPE_CHECKING:
    import pandas as pd

GATE_COLUMNS = (
    "path", "label", "speaker", "source", "split", "file_exists", "hash_matches", "label_known",
    "split_known", "split_leak", "split_has_all_labels", "duration_s", "sample_rate", "balance_ratio",
    "problem",
)  # fmt: skip


def corpus_gate_frame(rows: Sequence[ManifestRow], root: Path, labels: Sequence[str]) -> pd.DataFrame:
    """Build the gate table for ``rows`` whose paths are relative to ``root``.

    ``balance_ratio`` is the row label's clip count in its split divided by the split's most
    frequent label's count (1.0 = as common as the commonest label). ``split_has_all_labels`` says
    whether the row's split holds every label of the vocabulary. Durations and rates come from the
    file headers; a missing or unreadable file gets ``file_exists`` False and null measurements.
    ``problem`` spells out what is wrong with the row (empty when nothing is), for the gate report.
    """
    import pandas as pd

    known = set(labels)
    leaks = leaking_rows(rows)
    per_split = {split: Counter(r.label for r in rows if r.split == split) for split in SPLITS}
    speaker_splits: dict[str, set[str]] = {}
    for r in rows:
        speaker_splits.setdefault(r.speaker, set()).add(r.split)
    records = []
    for row, leak in zip(rows, leaks, strict=True):
        path = root / row.path
        exists = path.is_file()
        duration: float | None = None
        rate: int | None = None
        matches = False
        if exists:
            try:
                info = audio_info(path)
                duration, rate = info.duration_s, info.sample_rate
            except DataError:
                exists = False
            matches = exists and (not row.sha256 or sha256_file(path) == row.sha256)
        counts = per_split.get(row.split, Counter())
        top = max(counts.values()) if counts else 0
        has_all = bool(counts) and all(counts[label] > 0 for label in known)
        problems = []
        if not exists:
            problems.append("audio file missing or unreadable")
        elif not matches:
            problems.append("audio bytes differ from the manifest's sha256")
        if row.label not in known:
            problems.append(f"label {row.label!r} not in {sorted(known)}")
        if row.split not in SPLITS:
            problems.append("no split assigned")
        if leak:
            where = sorted(speaker_splits[row.speaker])
            problems.append(
                f"speaker {row.speaker!r} or its audio also in another split ({', '.join(where)})"
            )
        if row.split in SPLITS and not has_all:
            problems.append(f"split {row.split!r} lacks labels {sorted(known - set(counts))}")
        records.append(
            {
                "path": row.path,
                "label": row.label,
                "speaker": row.speaker,
                "source": row.source,
                "split": row.split,
                "file_exists": exists,
                "hash_matches": matches,
                "label_known": row.label in known,
                "split_known": row.split in SPLITS,
                "split_leak": leak,
                "split_has_all_labels": has_all,
                "duration_s": duration,
                "sample_rate": rate,
                "balance_ratio": (counts[row.label] / top) if top else 0.0,
                "problem": "; ".join(problems),
            }
        )
    frame = pd.DataFrame.from_records(records, columns=list(GATE_COLUMNS))
    frame["duration_s"] = frame["duration_s"].astype("float64")
    frame["sample_rate"] = frame["sample_rate"].astype("Float64")
    return frame


def describe_problems(frame: pd.DataFrame, labels: Sequence[str], *, limit: int = 20) -> list[str]:
    """Plain-language problems in a gate table (shown next to the Great Expectations result)."""
    problems: list[str] = []

    def rows_where(mask: pd.Series, what: str) -> None:
        bad = frame[mask]
        problems.extend(f"{path}: {what}" for path in bad["path"].head(limit))
        if len(bad) > limit:
            problems.append(f"... and {len(bad) - limit} more with the same problem")

    rows_where(~frame["file_exists"], "audio file missing or unreadable")
    rows_where(frame["file_exists"] & ~frame["hash_matches"], "audio bytes differ from the manifest's sha256")
    known = ", ".join(labels)
    bad_labels = frame[~frame["label_known"]]
    for label, group in bad_labels.groupby("label"):
        problems.append(
            f"label {label!r} is not in the vocabulary ({known}): {len(group)} clip(s), e.g. "
            f"{group['path'].iloc[0]}"
        )
    rows_where(~frame["split_known"], "no split assigned (train, dev or test)")
    leaking = frame[frame["split_leak"]]
    for speaker, group in leaking.groupby("speaker"):
        splits = sorted(set(group["split"]))
        problems.append(f"speaker or audio of {speaker!r} occurs in several splits ({', '.join(splits)})")
    for split in SPLITS:
        part = frame[frame["split"] == split]
        if part.empty:
            problems.append(f"split {split!r} is empty")
            continue
        missing = sorted(set(labels) - set(part["label"]))
        if missing:
            problems.append(f"split {split!r} has no clips of {', '.join(missing)}")
    return problems
