"""Layer-wise linear probing of saved hidden states (OmniACBench appendix D).

For every feature and every layer, a single linear layer is trained with cross-entropy and AdamW to
predict the feature's value from that layer's representation. Evaluation uses repeated stratified
train/test splits (the same splits for every layer of a feature, so layers are compared on equal
terms); representations are standardized with training-split statistics only; the score is balanced
accuracy (mean per-class recall) on the held-out part, averaged over the repeats.

Inputs:

- hidden states: an ``.npz`` whose arrays are layers in file order, each ``[n, dim]`` (``[n, frames,
  dim]`` arrays are mean-pooled over frames). Arrays named ``labels__<feature>`` are labels, not
  layers.
- labels: ``labels__<feature>`` arrays in the same file, and/or a ``.csv`` / ``.jsonl`` table with
  one row per instance (same order) and one column per feature; an empty value means the instance
  has no label for that feature (OmniACBench instances each target one feature).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from omnieval.errors import DataError
from omnieval.training._metrics import balanced_accuracy

LABEL_PREFIX = "labels__"


@dataclass(frozen=True)
class ProbeSettings:
    """How each probe is trained and evaluated."""

    repeats: int = 5
    test_size: float = 0.2
    seed: int = 0
    steps: int = 300
    """Full-batch AdamW steps per probe."""
    lr: float = 1e-2
    weight_decay: float = 1e-2


@dataclass(frozen=True)
class ProbeResult:
    """Balanced accuracy of one (feature, layer) probe over the repeats."""

    feature: str
    layer: str
    layer_index: int
    balanced_accuracy: float
    """Mean over repeats, in [0, 1]."""
    std: float
    repeats: int
    n: int
    n_classes: int
    chance: float
    """1 / number of classes: what balanced accuracy a constant or random guess gets."""


def read_hidden_states(path: Path) -> tuple[dict[str, np.ndarray], dict[str, list[str]]]:
    """Layers (file order) and any ``labels__<feature>`` arrays of an ``.npz`` file."""
    if not path.is_file():
        raise DataError(f"hidden-state file not found: {path}")
    import zipfile

    try:
        archive = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise DataError(f"{path}: not a readable .npz file ({exc or type(exc).__name__})") from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise DataError(f"{path}: a single .npy array, not an .npz archive of named layers")
    layers: dict[str, np.ndarray] = {}
    labels: dict[str, list[str]] = {}
    with archive:
        for key in archive.files:
            array = archive[key]
            if key.startswith(LABEL_PREFIX):
                labels[key[len(LABEL_PREFIX) :]] = ["" if v is None else str(v) for v in array.tolist()]
                continue
            if array.ndim == 3:
                array = array.mean(axis=1)
            if array.ndim != 2 or not np.issubdtype(array.dtype, np.number):
                raise DataError(
                    f"{path}: layer {key!r} must be a numeric [n, dim] array, got {array.dtype} {array.shape}"
                )
            layers[key] = array.astype(np.float32)
    if not layers:
        raise DataError(f"{path}: no layer arrays (only labels)")
    sizes = {k: v.shape[0] for k, v in layers.items()}
    if len(set(sizes.values())) != 1:
        raise DataError(f"{path}: layers disagree on the number of instances: {sizes}")
    return layers, labels


def read_label_table(path: Path) -> dict[str, list[str]]:
    """Feature columns of a ``.csv`` or ``.jsonl`` label table (missing values become ``""``)."""
    import pandas as pd

    if not path.is_file():
        raise DataError(f"label file not found: {path}")
    if path.suffix == ".csv":
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    elif path.suffix in {".jsonl", ".json"}:
        frame = pd.read_json(path, lines=path.suffix == ".jsonl", dtype=False)
    else:
        raise DataError(f"{path}: labels must be .csv or .jsonl")
    return {
        str(col): ["" if v is None or (isinstance(v, float) and np.isnan(v)) else str(v) for v in frame[col]]
        for col in frame.columns
        if str(col) not in {"id", "index"}
    }


def probe_layer(
    x: np.ndarray, y: np.ndarray, splits: Sequence[tuple[np.ndarray, np.ndarray]], settings: ProbeSettings
) -> list[float]:
    """Balanced accuracy of a linear probe on each (train, test) split of one layer's ``[n, dim]`` matrix."""
    import torch

    n_classes = int(y.max()) + 1
    scores = []
    for k, (train, test) in enumerate(splits):
        mean = x[train].mean(axis=0)
        std = x[train].std(axis=0)
        std[std < 1e-8] = 1.0
        x_train = torch.from_numpy((x[train] - mean) / std)
        x_test = torch.from_numpy((x[test] - mean) / std)
        y_train = torch.from_numpy(y[train])
        torch.manual_seed(settings.seed + k)
        probe = torch.nn.Linear(x.shape[1], n_classes)
        optimizer = torch.optim.AdamW(probe.parameters(), lr=settings.lr, weight_decay=settings.weight_decay)
        loss_fn = torch.nn.CrossEntropyLoss()
        for _ in range(settings.steps):
            optimizer.zero_grad(set_to_none=True)
            loss_fn(probe(x_train), y_train).backward()
            optimizer.step()
        with torch.no_grad():
            predicted = probe(x_test).argmax(dim=1).numpy()
        scores.append(balanced_accuracy(y[test], predicted))
    return scores


def run_probes(
    layers: Mapping[str, np.ndarray],
    labels: Mapping[str, Sequence[str]],
    settings: ProbeSettings = ProbeSettings(),
) -> list[ProbeResult]:
    """One linear probe per (feature, layer); see the module docstring for the protocol."""
    from sklearn.model_selection import StratifiedShuffleSplit

    n = next(iter(layers.values())).shape[0]
    results: list[ProbeResult] = []
    for feature, values in labels.items():
        if len(values) != n:
            raise DataError(f"feature {feature!r} has {len(values)} labels for {n} instances")
        keep = np.array([bool(v.strip()) for v in values])
        names = sorted({v.strip() for v in values if v.strip()})
        if len(names) < 2:
            raise DataError(f"feature {feature!r} needs at least two classes, found {names}")
        y = np.array([names.index(v.strip()) for v in values if v.strip()], dtype=np.int64)
        counts = np.bincount(y)
        test_count = max(len(names), round(settings.test_size * len(y)))
        if counts.min() < 2 or len(y) - test_count < len(names):
            raise DataError(
                f"feature {feature!r}: every class needs at least 2 instances and the training part at least one "
                f"per class (class counts {dict(zip(names, counts.tolist(), strict=True))})"
            )
        splitter = StratifiedShuffleSplit(
            n_splits=settings.repeats, test_size=test_count, random_state=settings.seed
        )
        splits = list(splitter.split(np.zeros(len(y)), y))
        for index, (layer, matrix) in enumerate(layers.items()):
            scores = probe_layer(matrix[keep], y, splits, settings)
            results.append(
                ProbeResult(
                    feature=feature,
                    layer=layer,
                    layer_index=index,
                    balanced_accuracy=float(np.mean(scores)),
                    std=float(np.std(scores)),
                    repeats=settings.repeats,
                    n=len(y),
                    n_classes=len(names),
                    chance=1.0 / len(names),
                )
            )
    return results


def write_probe_report(
    results: Sequence[ProbeResult], out_dir: Path, settings: ProbeSettings
) -> dict[str, Path]:
    """``probe.csv``, ``probe.json`` (settings + results) and ``probe.png`` (accuracy by layer) in ``out_dir``."""
    import pandas as pd

    from omnieval.training._plots import plot_probe

    out_dir.mkdir(parents=True, exist_ok=True)
    frame = pd.DataFrame([asdict(r) for r in results])
    csv_path = out_dir / "probe.csv"
    frame.to_csv(csv_path, index=False)
    json_path = out_dir / "probe.json"
    payload: dict[str, Any] = {"settings": asdict(settings), "results": [asdict(r) for r in results]}
    json_path.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    curves = {}
    for feature, group in frame.groupby("feature", sort=False):
        group = group.sort_values("layer_index")
        curves[str(feature)] = (
            list(group["layer"]),
            list(group["balanced_accuracy"]),
            list(group["std"]),
            float(group["chance"].iloc[0]),
        )
    png_path = plot_probe(curves, out_dir / "probe.png", title="linear probes: balanced accuracy by layer")
    return {"csv": csv_path, "json": json_path, "png": png_path}
