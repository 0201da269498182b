"""The start of a suite execution, recorded by validate and read back by track."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from omnieval.stages._common import StatePaths
from omnieval.stages._handoff import STARTED_FILE, record_start
from omnieval.stages._handoff import recorded_start as _started_at


def test_start_round_trip(tmp_path: Path) -> None:
    paths = StatePaths(tmp_path)
    assert _started_at(paths) is None
    before = datetime.now(UTC)
    record_start(paths)
    after = datetime.now(UTC)
    started = _started_at(paths)
    assert started is not None and started.tzinfo is not None
    assert before - timedelta(milliseconds=1) <= started <= after
    assert (tmp_path / STARTED_FILE).is_file()
