"""One training run (one grid point) and batched prediction.

The recipe is the paper's: AdamW with separate head and backbone learning rates, cosine schedule
after a linear warm-up (stepped per batch), label-smoothed cross-entropy, gradient clipping, a fixed
number of epochs, and the epoch with the best dev accuracy kept (ties keep the earlier epoch).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from omnieval.training._config import OptimConfig
from omnieval.training._schedule import warmup_cosine_factor

if TYPE_CHECKING:
    import torch
    from torch import nn

FRAMES_PER_SECOND = {"whisper-ct2": 50, "prosody": 50, "wavlm": 16_000}
"""Frontend frames per second of audio (used to turn ``max_train_seconds`` into frames)."""


@dataclass(frozen=True)
class ClipData:
    """Frames of a split: ``get(i)`` returns clip ``i`` as ``[frames, dim]`` float32; ``labels`` ``[n]``."""

    get: Callable[[int], np.ndarray]
    labels: np.ndarray

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    @classmethod
    def from_arrays(cls, frames: Sequence[np.ndarray], labels: Sequence[int]) -> ClipData:
        stored = list(frames)
        return cls(get=stored.__getitem__, labels=np.asarray(labels, dtype=np.int64))


@dataclass(frozen=True)
class EpochLog:
    """Figures of one epoch (losses are label-smoothed cross-entropy means)."""

    epoch: int
    train_loss: float
    train_accuracy: float
    dev_loss: float
    dev_accuracy: float
    lr_head: float
    lr_backbone: float
    seconds: float

    def metrics(self) -> dict[str, float]:
        data = asdict(self)
        data.pop("epoch")
        return {k: float(v) for k, v in data.items()}


@dataclass
class PointOutcome:
    """Result of one grid point: the best epoch's weights (CPU tensors) and the learning curves."""

    head_lr: float
    backbone_lr: float
    best_epoch: int
    best_dev_accuracy: float
    best_dev_loss: float
    history: list[EpochLog]
    state: dict[str, Any]


def _collate(batch: list[tuple[np.ndarray, int]]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    import torch

    lengths = [frames.shape[0] for frames, _ in batch]
    dim = batch[0][0].shape[1]
    x = torch.zeros(len(batch), max(lengths), dim, dtype=torch.float32)
    mask = torch.zeros(len(batch), max(lengths), dtype=torch.bool)
    for i, (frames, _) in enumerate(batch):
        x[i, : lengths[i]] = torch.from_numpy(np.ascontiguousarray(frames, dtype=np.float32))
        mask[i, : lengths[i]] = True
    y = torch.tensor([label for _, label in batch], dtype=torch.long)
    return x, mask, y


def _dataset(data: ClipData, *, max_frames: int | None, seed: int) -> Any:
    from torch.utils.data import Dataset

    class _Clips(Dataset):  # type: ignore[type-arg]
        def __init__(self) -> None:
            self.rng = np.random.default_rng(seed)

        def __len__(self) -> int:
            return len(data)

        def __getitem__(self, index: int) -> tuple[np.ndarray, int]:
            frames = data.get(index)
            if max_frames is not None and frames.shape[0] > max_frames:
                start = int(self.rng.integers(0, frames.shape[0] - max_frames + 1))
                frames = frames[start : start + max_frames]
            return frames, int(data.labels[index])

    return _Clips()


def resolve_device(name: str) -> str:
    import torch

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        from omnieval.errors import OmnievalError

        raise OmnievalError("device 'cuda' requested but no CUDA device is available")
    return name


def _autocast(device: str, precision: str) -> Any:
    import contextlib

    import torch

    if device.startswith("cuda") and precision == "bf16":
        return torch.autocast(device_type="cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def predict_proba(
    model: nn.Module, data: ClipData, *, device: str = "cpu", batch_size: int = 32, precision: str = "fp32"
) -> np.ndarray:
    """Class probabilities ``[n, classes]`` for every clip of ``data`` (eval mode, no gradients)."""
    import torch
    from torch.utils.data import DataLoader

    loader = DataLoader(
        _dataset(data, max_frames=None, seed=0), batch_size=batch_size, shuffle=False, collate_fn=_collate
    )
    model.eval()
    out = []
    with torch.no_grad():
        for x, mask, _ in loader:
            with _autocast(device, precision):
                logits = model(x.to(device), mask.to(device))
            out.append(torch.softmax(logits.float(), dim=-1).cpu().numpy())
    return np.concatenate(out, axis=0) if out else np.zeros((0, 0), dtype=np.float32)


def _dev_figures(
    model: nn.Module, data: ClipData, loss_fn: Any, device: str, batch: int, precision: str
) -> tuple[float, float]:
    import torch

    probs = predict_proba(model, data, device=device, batch_size=batch, precision=precision)
    labels = torch.from_numpy(data.labels)
    loss = float(loss_fn(torch.log(torch.from_numpy(probs).clamp_min(1e-12)), labels))
    accuracy = float(np.mean(probs.argmax(axis=1) == data.labels))
    return loss, accuracy


@contextmanager
def _torch_threads(n: int | None) -> Iterator[None]:
    """Run the block on ``n`` torch CPU threads (the current count when None), restoring it after.

    A grid point may ask for fewer threads than the process has (several points run side by side);
    the count is process-wide in torch, so it is put back however the point ends.
    """
    import torch

    previous = torch.get_num_threads()
    if n is not None:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def train_point(
    build_model: Callable[[], nn.Module],
    train: ClipData,
    dev: ClipData,
    optim: OptimConfig,
    *,
    head_lr: float,
    backbone_lr: float,
    seed: int,
    device: str = "cpu",
    max_train_frames: int | None = None,
    on_epoch: Callable[[EpochLog], None] | None = None,
) -> PointOutcome:
    """Train a fresh model at one (head lr, backbone lr) point and keep its best dev-accuracy epoch.

    ``build_model`` is called after seeding, so initialisation is reproducible. ``on_epoch`` sees every
    epoch's figures as they come (the tracker logs them live).
    """
    import torch
    from torch.utils.data import DataLoader

    if len(train) == 0 or len(dev) == 0:
        from omnieval.errors import DataError

        raise DataError("training needs at least one train clip and one dev clip")
    with _torch_threads(optim.cpu_threads if device == "cpu" else None):
        torch.manual_seed(seed)
        model = build_model().to(device)
        loader = DataLoader(
            _dataset(train, max_frames=max_train_frames, seed=seed),
            batch_size=optim.batch_size,
            shuffle=True,
            generator=torch.Generator().manual_seed(seed),
            collate_fn=_collate,
            num_workers=optim.num_workers,
        )
        groups = model.parameter_groups(head_lr, backbone_lr)  # type: ignore[operator]
        optimizer = torch.optim.AdamW(groups, betas=optim.betas, weight_decay=optim.weight_decay)
        steps_per_epoch = math.ceil(len(train) / optim.batch_size)
        total = steps_per_epoch * optim.epochs
        warmup = round(optim.warmup_epochs * steps_per_epoch)
        scheduler = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda step: warmup_cosine_factor(step, warmup_steps=warmup, total_steps=total)
        )
        loss_fn = torch.nn.CrossEntropyLoss(label_smoothing=optim.label_smoothing)
        dev_loss_fn = torch.nn.NLLLoss()
        best: tuple[float, int, float, dict[str, Any]] | None = None
        history: list[EpochLog] = []
        for epoch in range(1, optim.epochs + 1):
            started = time.perf_counter()
            model.train()
            lrs = {g.get("name", str(i)): float(g["lr"]) for i, g in enumerate(optimizer.param_groups)}
            total_loss, correct, seen = 0.0, 0, 0
            for x, mask, y in loader:
                x, mask, y = x.to(device), mask.to(device), y.to(device)
                with _autocast(device, optim.precision):
                    logits = model(x, mask)
                loss = loss_fn(logits.float(), y)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), optim.grad_clip_norm)
                optimizer.step()
                scheduler.step()
                total_loss += float(loss.detach()) * y.shape[0]
                correct += int((logits.argmax(dim=-1) == y).sum())
                seen += int(y.shape[0])
            dev_loss, dev_accuracy = _dev_figures(
                model, dev, dev_loss_fn, device, optim.batch_size, optim.precision
            )
            log = EpochLog(
                epoch=epoch,
                train_loss=total_loss / seen,
                train_accuracy=correct / seen,
                dev_loss=dev_loss,
                dev_accuracy=dev_accuracy,
                lr_head=lrs.get("head", float("nan")),
                lr_backbone=lrs.get("backbone", float("nan")),
                seconds=time.perf_counter() - started,
            )
            history.append(log)
            if on_epoch is not None:
                on_epoch(log)
            if best is None or dev_accuracy > best[0]:
                state = {k: v.detach().to("cpu").clone() for k, v in model.state_dict().items()}
                best = (dev_accuracy, epoch, dev_loss, state)
        assert best is not None
        return PointOutcome(
            head_lr=head_lr,
            backbone_lr=backbone_lr,
            best_epoch=best[1],
            best_dev_accuracy=best[0],
            best_dev_loss=best[2],
            history=history,
            state=best[3],
        )
