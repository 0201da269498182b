"""The validity ledger per judge, checked against plain counting loops."""

from __future__ import annotations

import random
from pathlib import Path

import pandas as pd
import pytest

from omnieval.errors import DataError
from omnieval.reporting import LEDGER_STATUSES, read_ledger, validity_ledger


def _judgments(seed: int, n: int = 400) -> pd.DataFrame:
    rng = random.Random(seed)
    rows = [
        {
            "panel": rng.choice(["cpu", "paper"]),
            "judge": rng.choice(["qwen", "llama", "unavailable"]),
            "track": rng.choice(["text", "image", "speech"]),
            "status": rng.choice(LEDGER_STATUSES),
            "raw_response": "{}",
        }
        for _ in range(n)
    ]
    return pd.DataFrame(rows)


def test_counts_match_a_plain_loop() -> None:
    frame = _judgments(3)
    expected: dict[tuple[str, str], dict[str, int]] = {}
    for rec in frame.to_dict("records"):
        key = (f"{rec['panel']}/{rec['judge']}", rec["track"])
        expected.setdefault(key, {})
        expected[key][rec["status"]] = expected[key].get(rec["status"], 0) + 1
    rows = validity_ledger(frame)
    assert [(r.judge, r.track) for r in rows] == sorted(expected)
    for row in rows:
        want = expected[(row.judge, row.track)]
        assert {s: n for s, n in row.counts.items() if n} == want
        assert row.total == sum(want.values())
        owed = row.total - want.get("not_applicable", 0)
        valid = want.get("ok", 0) + want.get("repaired", 0)
        assert row.valid == valid
        assert row.valid_share == (valid / owed if owed else None)
    assert sum(r.total for r in rows) == len(frame)


def test_unavailable_track_owes_nothing() -> None:
    frame = pd.DataFrame(
        {
            "panel": ["p"] * 3,
            "judge": ["unavailable"] * 3,
            "track": ["image"] * 3,
            "status": ["not_applicable"] * 3,
        }
    )
    (row,) = validity_ledger(frame)
    assert row.owed == 0 and row.valid_share is None and row.counts["not_applicable"] == 3


def test_bad_tables_are_data_errors(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="unknown status"):
        validity_ledger(pd.DataFrame({"judge": ["j"], "track": ["text"], "status": ["great"]}))
    with pytest.raises(DataError, match="missing column"):
        validity_ledger(pd.DataFrame({"judge": ["j"], "track": ["text"]}))
    bad = tmp_path / "judgments.parquet"
    bad.write_text("not parquet")
    with pytest.raises(DataError, match=r"judgments\.parquet"):
        read_ledger(bad)


def test_read_ledger_reads_the_file(tmp_path: Path) -> None:
    frame = _judgments(5, n=50)
    path = tmp_path / "judgments.parquet"
    frame.to_parquet(path)
    assert read_ledger(path) == validity_ledger(frame)


def test_prism_judgments_are_counted_per_stage(tmp_path: Path) -> None:
    import pandas as pd

    from omnieval.reporting._ledger import read_ledger

    path = tmp_path / "judgments.parquet"
    pd.DataFrame(
        {
            "panel": ["cpu-cascade"] * 3,
            "judge": ["j"] * 3,
            "stage": [1, 2, 2],
            "status": ["ok", "ok", "parse_error"],
        }
    ).to_parquet(path)
    rows = {row.track: row.counts for row in read_ledger(path)}
    assert rows["stage 1"]["ok"] == 1 and rows["stage 2"]["parse_error"] == 1
