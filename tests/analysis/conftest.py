"""Helpers to write small scores tables by hand."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pandas as pd
import pytest

from omnieval.benchmarks.storybench._names import RUBRICS
from omnieval.scores import ScoreRow, scores_frame


class Rows:
    """Collects hand-written score rows for one storybench table."""

    def __init__(self, instances: Sequence[str]) -> None:
        self.index = {iid: k for k, iid in enumerate(instances)}
        self.rows: list[ScoreRow] = []

    def _add(
        self,
        system: str,
        iid: str,
        track: str,
        comp: str,
        judge: str,
        crit: str,
        v: float | None,
        st: str,
        panel: str = "",
    ) -> None:
        self.rows.append(
            ScoreRow("storybench", system, iid, self.index[iid], track, comp, judge, crit, v, st, panel=panel)
        )

    def auto(self, system: str, iid: str, comp: str, value: float | None, status: str = "ok") -> None:
        track = {"bertscore_f1": "text", "image_similarity": "image", "narration_length": "text"}[comp]
        self._add(system, iid, track, comp, "", "value", value, status)

    def speech(self, system: str, iid: str, field: str, value: float | None, status: str = "ok") -> None:
        self._add(system, iid, "speech", "speech_meta", "", field, value, status)

    def judge(
        self,
        system: str,
        iid: str,
        track: str,
        judge: str,
        scores: Iterable[float | None] | float | None,
        status: str | Sequence[str] = "ok",
        panel: str = "",
    ) -> None:
        crits = RUBRICS[track]
        vals = list(scores) if isinstance(scores, Iterable) else [scores] * 4
        sts = [status] * 4 if isinstance(status, str) else list(status)
        for c, v, st in zip(crits, vals, sts, strict=True):
            value = v if st in ("ok", "repaired") else None
            self._add(system, iid, track, "judge", judge, c, value, st, panel)

    def not_applicable_track(
        self, systems: Sequence[str], track: str, judge: str = "unavailable", panel: str = ""
    ) -> None:
        """Rows of a track no judge could score, as the judge stage writes them (placeholder judge)."""
        for s in systems:
            for iid in self.index:
                self.judge(s, iid, track, judge, None, "not_applicable", panel)

    def frame(self) -> pd.DataFrame:
        return scores_frame(self.rows)


@pytest.fixture
def rows_factory() -> type[Rows]:
    return Rows
