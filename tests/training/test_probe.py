from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from omnieval.cli import main
from omnieval.errors import DataError
from omnieval.training._probe import ProbeSettings, read_hidden_states, run_probes


def _hidden(tmp_path: Path) -> tuple[Path, np.ndarray]:
    """Three layers: pure noise, a weak signal, a strong signal about a 3-class label."""
    rng = np.random.default_rng(0)
    n, dim = 150, 24
    y = np.repeat(np.arange(3), n // 3)
    centres = rng.standard_normal((3, dim)) * 3.0
    layers = {
        "layer_00": rng.standard_normal((n, dim)),
        "layer_01": 0.3 * centres[y] + rng.standard_normal((n, dim)),
        # Large offset and scale: without standardization a fixed-lr probe would struggle.
        "layer_02": 1000.0 + 50.0 * (centres[y] + 0.3 * rng.standard_normal((n, dim))),
    }
    names = np.array(["angry", "joy", "sadness"])[y]
    path = tmp_path / "hidden.npz"
    np.savez(path, **layers, labels__emotion=names)
    return path, names


def test_accuracy_rises_with_information(tmp_path: Path) -> None:
    path, _ = _hidden(tmp_path)
    layers, labels = read_hidden_states(path)
    assert list(layers) == ["layer_00", "layer_01", "layer_02"]
    results = run_probes(layers, labels, ProbeSettings(repeats=3, steps=100))
    scores = [r.balanced_accuracy for r in results]
    assert scores[0] < 0.55 and scores[2] > 0.95 and scores[0] < scores[1] <= scores[2] + 1e-9
    assert len(results) == 3
    assert all(r.chance == pytest.approx(1 / 3) and r.repeats == 3 and r.n == 150 for r in results)


def test_cli_with_label_table_and_missing_labels(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, names = _hidden(tmp_path)
    timbre = np.where(np.arange(len(names)) % 2 == 0, "adult female", "adult male").astype(object)
    timbre[::5] = ""  # instances of other features carry no timbre label
    pd.DataFrame({"id": range(len(names)), "timbre": timbre}).to_csv(tmp_path / "labels.csv", index=False)
    out = tmp_path / "probe"
    code = main(
        [
            "train",
            "probe",
            str(path),
            "--labels",
            str(tmp_path / "labels.csv"),
            "--out",
            str(out),
            "--repeats",
            "2",
            "--steps",
            "60",
        ]
    )
    assert code == 0
    table = pd.read_csv(out / "probe.csv")
    assert sorted(set(table["feature"])) == ["emotion", "timbre"]
    assert set(table.loc[table["feature"] == "timbre", "n"]) == {120}
    assert (out / "probe.png").stat().st_size > 1000
    assert "best layer_02" in capsys.readouterr().out


def test_bad_inputs_are_clear(tmp_path: Path) -> None:
    np.savez(tmp_path / "bad.npz", a=np.zeros((4, 2)), b=np.zeros((5, 2)))
    with pytest.raises(DataError, match="disagree on the number of instances"):
        read_hidden_states(tmp_path / "bad.npz")
    layers = {"l": np.zeros((4, 2), dtype=np.float32)}
    with pytest.raises(DataError, match="at least two classes"):
        run_probes(layers, {"f": ["a", "a", "a", ""]})
    assert main(["train", "probe", str(tmp_path / "nope.npz"), "--out", str(tmp_path)]) == 2
    (tmp_path / "empty.npz").write_bytes(b"")
    with pytest.raises(DataError, match=r"empty\.npz: not a readable \.npz file"):
        read_hidden_states(tmp_path / "empty.npz")
    np.save(tmp_path / "one.npy", np.zeros((4, 2)))
    with pytest.raises(DataError, match=r"a single \.npy array, not an \.npz archive"):
        read_hidden_states(tmp_path / "one.npy")
