"""PRISM-Bench aggregation (FORMATS.md section 7) against the independent reference
(tests/_reference/prism.py)."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from typing import Any

import pandas as pd
import pytest
from tests._reference.prism import reference_aggregate

from benchmarks.prism._tables import frame, make_prism_scores, row
from omnieval.benchmarks.prism._aggregate import (
    HEADLINE_COMPONENTS,
    aggregate_prism,
    instance_components,
    leaderboard_text,
    mlflow_metrics,
)
from omnieval.errors import DataError

GT = "ground_truth"


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def _assert_entries_match(got: dict[str, Any], want: dict[str, Any], where: Any) -> int:
    """One entry (cells, dimension totals, final) against the reference's; the cells compared."""
    compared = 0
    assert set(got["cells"]) == set(want["cells"]), where
    for dim, per_type in want["cells"].items():
        assert set(got["cells"][dim]) == set(per_type), (where, dim)
        for atype, value in per_type.items():
            assert _close(got["cells"][dim][atype], value), (where, dim, atype)
            compared += 1
        assert _close(got["dimensions"][dim], want["dimensions"][dim]), (where, dim)
    assert _close(got["final"], want["final"]), where
    return compared


def _assert_matches_reference(doc: dict[str, Any], expected: dict[str, Any]) -> int:
    assert set(doc["systems"]) == set(expected["systems"])
    compared = 0
    for system, subsets in expected["systems"].items():
        assert set(doc["systems"][system]["subsets"]) == set(subsets)
        for subset, entry in subsets.items():
            compared += _assert_entries_match(
                doc["systems"][system]["subsets"][subset], entry, (system, subset)
            )
    gt = doc["ground_truth"]["subsets"]
    assert set(gt) == set(expected["ground_truth"])
    for subset, entry in expected["ground_truth"].items():
        compared += _assert_entries_match(gt[subset], entry, (GT, subset))
    return compared


@pytest.mark.parametrize(
    ("seed", "invalid_rate", "missing_rate", "judges"),
    [
        (0, 0.0, 0.0, (("panel-1", "j1"),)),
        (1, 0.15, 0.1, (("panel-1", "j1"), ("panel-1", "j2"))),
        (2, 0.3, 0.25, (("panel-1", "j1"), ("panel-2", "j1"), ("panel-2", "j3"))),
        (3, 0.05, 0.0, (("p", "a"), ("p", "b"), ("q", "c"))),
    ],
)
def test_matches_independent_implementation(
    seed: int, invalid_rate: float, missing_rate: float, judges: tuple[tuple[str, str], ...]
) -> None:
    table = make_prism_scores(
        seed=seed,
        systems=("alpha", "beta", "gamma", "delta"),
        items_per_subset=7,
        judges=judges,
        invalid_rate=invalid_rate,
        missing_rate=missing_rate,
        integer=seed % 2 == 0,
    )
    doc = aggregate_prism(table)
    assert _assert_matches_reference(doc, reference_aggregate(table.to_dict("records"))) > 50


@pytest.mark.parametrize(
    ("systems", "diagnostic"),
    [
        # A system under test beside the default probes and the reference: only its pairings calibrate.
        (("ground-truth", "muted", "swapped-audio", "offset", "cascade"), None),
        # The probes only: the global mean falls back to the ground truth beside itself.
        (("ground-truth", "swapped-audio"), None),
        # A probe counted as under test (``diagnostic: false``), another system marked diagnostic.
        (("ground-truth", "muted", "offset", "cascade"), ("muted", "cascade")),
        # Diagnostic systems only: no global mean, every cell null.
        (("muted", "offset"), None),
    ],
)
def test_diagnostic_and_reference_pairings_match_the_reference(
    systems: tuple[str, ...], diagnostic: tuple[str, ...] | None
) -> None:
    table = make_prism_scores(seed=11, systems=systems, items_per_subset=4, invalid_rate=0.1)
    doc = aggregate_prism(table, diagnostic=diagnostic)
    options = {} if diagnostic is None else {"diagnostic": diagnostic}
    expected = reference_aggregate(table.to_dict("records"), **options)
    assert _assert_matches_reference(doc, expected) > 0
    # Calibrating with every ground-truth pairing would give other numbers (the seeded systems differ).
    if len(systems) > 2:
        everything = reference_aggregate(table.to_dict("records"), diagnostic=(), reference=())
        assert everything["ground_truth"] != expected["ground_truth"]


def test_mixed_subset_on_and_off_screen_cells() -> None:
    # SPEECH_A + MUSIC_B: AV coherence for speech only; the other dimensions for both types.
    rows = []
    for dim, atype in [
        ("av_coherence", "speech"),
        ("audio_quality", "speech"),
        ("audio_quality", "music"),
        ("expressiveness", "speech"),
        ("expressiveness", "music"),
        ("prompt_following", "speech"),
        ("prompt_following", "music"),
    ]:
        rows.append(row("s", "m1", dim, atype, 6.0, subset="mixed"))
        rows.append(row(GT, "m1", dim, atype, 8.0, paired_with="s", subset="mixed"))
    doc = aggregate_prism(frame(rows))
    entry = doc["systems"]["s"]["subsets"]["mixed"]
    assert entry["cells"]["av_coherence"] == {"speech": 6.0}
    assert entry["cells"]["audio_quality"] == {"speech": 6.0, "music": 6.0}
    assert entry["dimensions"] == {
        "av_coherence": 6.0,
        "audio_quality": 12.0,
        "expressiveness": 12.0,
        "prompt_following": 12.0,
    }
    assert entry["final"] == 42.0
    assert doc["ground_truth"]["subsets"]["mixed"]["final"] == 56.0


# -- the paper's Table 1 arithmetic -------------------------------------------------------------------

# Seedance 2.0, on-screen, as printed (Spe., Mus., Snd.). The printed prompt-following cells
# (9.12, 8.67, 8.11) are rounded; the sound cell is set so the three sum to the printed total 25.89.
SEEDANCE_ON_SCREEN = {
    "audio_quality": (8.37, 8.43, 8.44),
    "expressiveness": (8.49, 8.98, 8.22),
    "prompt_following": (9.12, 8.67, 8.10),
    "av_coherence": (6.64, 6.46, 7.81),
}
PRINTED_TOTALS = {
    "audio_quality": 25.24,
    "expressiveness": 25.69,
    "prompt_following": 25.89,
    "av_coherence": 20.91,
}


def test_table1_seedance_on_screen_totals() -> None:
    # Two systems on one item: GT beside seedance averages 7, beside the other 9, so the global
    # ground-truth mean is 8 and a seedance cell of c * 7 / 8 calibrates to exactly c.
    rows = []
    for dim, cells in SEEDANCE_ON_SCREEN.items():
        for atype, target in zip(("speech", "music", "sound"), cells, strict=True):
            rows.append(row("seedance-2.0", "on/1", dim, atype, target * 7.0 / 8.0, subset="on_screen"))
            rows.append(row(GT, "on/1", dim, atype, 7.0, paired_with="seedance-2.0", subset="on_screen"))
            rows.append(row("other", "on/1", dim, atype, 5.0, subset="on_screen"))
            rows.append(row(GT, "on/1", dim, atype, 9.0, paired_with="other", subset="on_screen"))
    doc = aggregate_prism(frame(rows))
    entry = doc["systems"]["seedance-2.0"]["subsets"]["on_screen"]
    for dim, total in PRINTED_TOTALS.items():
        assert entry["dimensions"][dim] == pytest.approx(total, rel=1e-9)
    assert entry["final"] == pytest.approx(25.24 + 25.69 + 25.89 + 20.91, rel=1e-9)
    assert entry["final"] == pytest.approx(97.73, rel=1e-9)
    # other: 5 / 9 * 8 per cell, 12 cells.
    assert doc["systems"]["other"]["subsets"]["on_screen"]["final"] == pytest.approx(
        12 * 5 / 9 * 8, rel=1e-12
    )
    assert doc["ground_truth"]["subsets"]["on_screen"]["final"] == pytest.approx(12 * 8.0)


# -- edge cases -----------------------------------------------------------------------------------------


def test_invalid_rows_drop_out_and_null_cells_propagate() -> None:
    rows = [
        # i1: judge j1 valid, j2 parse error -> the cell is j1's value.
        row("s", "i1", "audio_quality", "speech", 6.0, judge="j1"),
        row("s", "i1", "audio_quality", "speech", None, judge="j2"),
        row(GT, "i1", "audio_quality", "speech", 8.0, paired_with="s", judge="j1"),
        row(GT, "i1", "audio_quality", "speech", 6.0, paired_with="s", judge="j2"),
        # i2: no valid judge on the system side -> i2 drops out of the system mean only.
        row("s", "i2", "audio_quality", "speech", None, judge="j1", status="inference_error"),
        row(GT, "i2", "audio_quality", "speech", 4.0, paired_with="s", judge="j1"),
        # music: the ground truth beside s averaged 0 -> null, and so are the total and final.
        row("s", "i1", "audio_quality", "music", 5.0, judge="j1"),
        row(GT, "i1", "audio_quality", "music", 0.0, paired_with="s", judge="j1"),
    ]
    doc = aggregate_prism(frame(rows))
    entry = doc["systems"]["s"]["subsets"]["off_screen"]
    # system mean 6; GT beside s: cells 7 (i1) and 4 (i2) -> 5.5; global the same -> 6 / 5.5 * 5.5.
    assert entry["cells"]["audio_quality"]["speech"] == pytest.approx(6.0)
    assert entry["cells"]["audio_quality"]["music"] is None
    assert entry["dimensions"]["audio_quality"] is None and entry["final"] is None
    assert any("averaged 0" in line and "music" in line for line in doc["not_computed"])
    assert doc["coverage"]["s"]["off_screen"] == {"instances": 2, "cells": 3, "valid_cells": 2}
    json.dumps(doc, allow_nan=False)


def test_ground_truth_is_not_a_system_and_panels_filter() -> None:
    table = make_prism_scores(seed=5, judges=(("A", "j1"), ("B", "j1")), items_per_subset=3)
    doc = aggregate_prism(table)
    assert GT not in doc["systems"]
    assert doc["judges"] == ["A/j1", "B/j1"]
    only_a = aggregate_prism(table, panel="A")
    assert only_a["judges"] == ["A/j1"] and only_a["panel"] == "A"
    expected = reference_aggregate(table[table["panel"] == "A"].to_dict("records"))["systems"]
    for system, subsets in expected.items():
        for subset, entry in subsets.items():
            assert _close(only_a["systems"][system]["subsets"][subset]["final"], entry["final"])
    with pytest.raises(DataError, match="no panel 'C'"):
        aggregate_prism(table, panel="C")


def test_off_screen_has_no_av_coherence_and_old_tables_read() -> None:
    table = make_prism_scores(seed=2, subsets=("off_screen",), items_per_subset=4)
    doc = aggregate_prism(table)
    for entry in doc["systems"].values():
        assert "av_coherence" not in entry["subsets"]["off_screen"]["dimensions"]
    # A table without the newer columns reads them as "": prism rows then lack their subset.
    old = table.drop(columns=["subset", "paired_with", "panel", "condition"])
    with pytest.raises(DataError, match="subset must be one of"):
        aggregate_prism(old)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda f: f.assign(benchmark="acbench"), "other benchmarks"),
        (lambda f: f.assign(track=f["track"].where(f.index != 0, "vibes")), "track must be a dimension"),
        (
            lambda f: f.assign(criterion=f["criterion"].where(f.index != 0, "noise")),
            "criterion must be an audio type",
        ),
        (lambda f: f.assign(value=f["value"].where(f.index != 0, 11.0)), "value outside 0-10"),
        (
            lambda f: f.assign(paired_with=f["paired_with"].where(f["system"] != GT, "")),
            "paired_with must name",
        ),
        (lambda f: pd.concat([f, f.iloc[:1]], ignore_index=True), "duplicate rows"),
    ],
)
def test_bad_tables_are_data_errors(edit: Any, message: str) -> None:
    table = make_prism_scores(seed=0, items_per_subset=2)
    with pytest.raises(DataError, match=message):
        aggregate_prism(edit(table))


# -- rendering and per-instance components -------------------------------------------------------------


def test_mlflow_metrics_and_leaderboard() -> None:
    doc = aggregate_prism(make_prism_scores(seed=3, items_per_subset=4))
    metrics = mlflow_metrics(doc, "sys-a")
    on = doc["systems"]["sys-a"]["subsets"]["on_screen"]
    assert metrics["prism.on_screen.final"] == on["final"]
    assert metrics["prism.on_screen.av_coherence"] == on["dimensions"]["av_coherence"]
    assert (
        metrics["prism.mixed.prompt_following.speech"]
        == doc["systems"]["sys-a"]["subsets"]["mixed"]["cells"]["prompt_following"]["speech"]
    )
    assert "prism.off_screen.av_coherence" not in metrics
    text = leaderboard_text(doc)
    assert "On-screen" in text and "Off-screen" in text and "Mixed" in text and "Ground Truth" in text
    block = text.split("On-screen")[1].split("Off-screen")[0]
    order = sorted(doc["systems"], key=lambda s: -doc["systems"][s]["subsets"]["on_screen"]["final"])
    positions = [block.index(s) for s in order]
    assert positions == sorted(positions)


def test_instance_components_are_uncalibrated_item_totals() -> None:
    table = make_prism_scores(seed=4, items_per_subset=3, invalid_rate=0.1, judges=(("p", "a"), ("p", "b")))
    comps = instance_components(table)
    assert list(comps.columns) == ["system", "instance_id", "component", "value"]
    assert GT not in set(comps["system"])
    records = table.to_dict("records")
    for _, got in comps.sample(25, random_state=0).iterrows():
        subset, part = got["component"].split(".")
        per_cell: dict[tuple[str, str], list[float]] = defaultdict(list)
        cells: set[tuple[str, str]] = set()
        for r in records:
            if (
                r["system"] == got["system"]
                and r["instance_id"] == got["instance_id"]
                and r["subset"] == subset
            ):
                if part != "final" and r["track"] != part:
                    continue
                cells.add((r["track"], r["criterion"]))
                if r["status"] == "ok":
                    per_cell[(r["track"], r["criterion"])].append(r["value"])
        assert cells
        assert all(per_cell.get(c) for c in cells)
        assert got["value"] == pytest.approx(
            sum(sum(per_cell[c]) / len(per_cell[c]) for c in cells), rel=1e-12
        )
    assert set(comps["component"]) <= set(HEADLINE_COMPONENTS)
    assert not comps["value"].isna().any()
    # An instance with a cell no judge scored validly has no row for that dimension or final.
    broken = table.copy()
    first = broken.index[(broken["system"] == "sys-a") & (broken["track"] == "audio_quality")][0]
    iid, subset, atype = broken.loc[first, ["instance_id", "subset", "criterion"]]
    hit = (
        (broken["system"] == "sys-a") & (broken["instance_id"] == iid) & (broken["track"] == "audio_quality")
    )
    hit &= broken["criterion"] == atype
    broken.loc[hit, "value"] = None
    broken.loc[hit, "status"] = "parse_error"
    left = instance_components(broken)
    mine = set(left.loc[(left["system"] == "sys-a") & (left["instance_id"] == iid), "component"])
    assert f"{subset}.audio_quality" not in mine and f"{subset}.final" not in mine
    assert f"{subset}.prompt_following" in mine
