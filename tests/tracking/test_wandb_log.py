"""The W&B mirror, written offline and read back from the run's ``.wandb`` record log."""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from omnieval.tracking.wandb_log import WandbRun, leaderboard_table, log_to_wandb, scores_summary

METRICS = {
    "oracle-control": {"acbench.original.wer": 28.2, "acbench.original.per": 10.4},
    "neutral": {"acbench.original.wer": 33.3, "acbench.s_to_t.wer": 31.0},
}


def _scores() -> pd.DataFrame:
    rows = []
    for system in ("neutral", "oracle-control"):
        for i in range(3):
            rows.append(
                {
                    "system": system,
                    "condition": "original",
                    "subset": "",
                    "track": "speech_rate",
                    "component": "wer",
                    "value": 0.1 * (i + 1) if system == "neutral" else 0.05 * i,
                    "status": "ok",
                }
            )
        rows.append(
            {
                "system": system,
                "condition": "original",
                "subset": "",
                "track": "speech_rate",
                "component": "wpm",
                "value": None,
                "status": "missing_output",
            }
        )
    return pd.DataFrame(rows)


def _records(path: Path) -> list[Any]:
    """Records of a ``.wandb`` file: a 7-byte ``:W&B`` header, then a LevelDB-style log in 32 KiB
    blocks (7-byte chunk headers: crc32, length, type FULL=1 / FIRST=2 / MIDDLE=3 / LAST=4)."""
    from wandb.proto import wandb_internal_pb2 as pb

    data = path.read_bytes()
    ident, magic, version = struct.unpack("<4sHB", data[:7])
    assert (ident, magic, version) == (b":W&B", 0xBEE1, 0)
    block, pos, pending, out = 32768, 7, b"", []
    while pos + 7 <= len(data):
        room = block - pos % block
        if room < 7:
            pos += room
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        pos += 7
        if kind == 0 and length == 0:  # zero padding up to the block's end
            pos += room - 7
            continue
        chunk, pos = data[pos : pos + length], pos + length
        if kind == 1:
            out.append(chunk)
        elif kind == 2:
            pending = chunk
        elif kind == 3:
            pending += chunk
        elif kind == 4:
            out.append(pending + chunk)
    records = []
    for raw in out:
        record = pb.Record()
        record.ParseFromString(raw)
        records.append(record)
    return records


def _key(item: Any) -> str:
    return item.key or "/".join(item.nested_key)


@pytest.fixture(scope="module")
def mirrored(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("run-folder")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("WANDB_MODE", "offline")
        mp.setenv("WANDB_SILENT", "true")
        mp.delenv("WANDB_API_KEY", raising=False)
        result = log_to_wandb(
            suite="acbench",
            run_name="acbench · 2026-11-30 02:30 · a1b2c3d",
            config={"suite": "acbench", "benchmark": "acbench", "systems": {"neutral": {"kind": "neutral"}}},
            metrics=METRICS,
            folder=folder,
            scores=_scores(),
            tags={"omnieval.git_sha": "a1b2c3d4", "omnieval.benchmark": "acbench"},
            mlflow_run_id="0123abcd",
        )
    return {"folder": folder, "result": result}


def test_offline_run_folder_holds_the_run(mirrored: dict[str, Any]) -> None:
    result: WandbRun = mirrored["result"]
    assert result.run_dir.parent == mirrored["folder"] / "wandb"
    assert result.run_dir.name.startswith("offline-run-") and result.run_dir.name.endswith(result.run_id)
    records = _records(result.run_dir / f"run-{result.run_id}.wandb")
    run = next(r.run for r in records if r.WhichOneof("record_type") == "run")
    assert run.project == "omnieval-acbench"
    assert run.run_group == "acbench"
    assert run.display_name == "acbench · 2026-11-30 02:30 · a1b2c3d"
    config = {u.key: json.loads(u.value_json) for u in run.config.update}
    assert config["suite"] == "acbench"
    assert config["systems"] == {"neutral": {"kind": "neutral"}}
    assert config["omnieval"] == {
        "omnieval.git_sha": "a1b2c3d4",
        "omnieval.benchmark": "acbench",
        "mlflow_run_id": "0123abcd",
    }


def test_every_metric_is_logged_per_system(mirrored: dict[str, Any]) -> None:
    result: WandbRun = mirrored["result"]
    records = _records(result.run_dir / f"run-{result.run_id}.wandb")
    history: dict[str, Any] = {}
    for record in records:
        if record.WhichOneof("record_type") == "history":
            history.update({_key(item): json.loads(item.value_json) for item in record.history.item})
    expected = {f"{s}/{k}": v for s, values in METRICS.items() for k, v in values.items()}
    assert {k: history[k] for k in expected} == expected
    assert history["leaderboard/_type"] == "table-file"
    assert history["scores_summary/_type"] == "table-file"


def _table_file(result: WandbRun, name: str) -> dict[str, Any]:
    found = sorted((result.run_dir / "files" / "media" / "table").glob(f"{name}_*.table.json"))
    assert len(found) == 1, found
    return dict(json.loads(found[0].read_text()))


def test_leaderboard_table_has_a_row_per_system(mirrored: dict[str, Any]) -> None:
    table = _table_file(mirrored["result"], "leaderboard")
    assert table["columns"] == [
        "system",
        "acbench.original.per",
        "acbench.original.wer",
        "acbench.s_to_t.wer",
    ]
    rows = {row[0]: row[1:] for row in table["data"]}
    assert rows == {"oracle-control": [10.4, 28.2, None], "neutral": [None, 33.3, 31.0]}


def test_scores_summary_counts_and_means(mirrored: dict[str, Any]) -> None:
    table = _table_file(mirrored["result"], "scores_summary")
    assert table["columns"] == [
        "system",
        "condition",
        "subset",
        "track",
        "component",
        "rows",
        "valued",
        "mean_value",
    ]
    got = {(r[0], r[4]): r[5:] for r in table["data"]}
    # Independent tally with plain loops over the input rows.
    expected: dict[tuple[str, str], list[Any]] = {}
    for row in _scores().to_dict("records"):
        key = (row["system"], row["component"])
        entry = expected.setdefault(key, [0, 0, 0.0])
        entry[0] += 1
        value = row["value"]
        if value is not None and not (isinstance(value, float) and math.isnan(value)):
            entry[1] += 1
            entry[2] += value
    for key, (rows, valued, total) in expected.items():
        mean = total / valued if valued else None
        assert got[key][0] == rows and got[key][1] == valued, key
        assert (got[key][2] is None) if mean is None else got[key][2] == pytest.approx(mean), key
    assert got[("neutral", "wer")] == [3, 3, pytest.approx(0.2)]
    assert got[("neutral", "wpm")] == [1, 0, None]


def test_tables_without_wandb() -> None:
    board = leaderboard_table({"a": {"x": 1.0}})
    assert (board.columns, board.rows) == (["system", "x"], [["a", 1.0]])
    summary = scores_summary(
        pd.DataFrame({"system": ["a", "a"], "component": ["c", "c"], "value": [1.0, 3.0]})
    )
    assert summary.rows == [["a", "c", 2, 2, 2.0]]
