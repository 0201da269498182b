"""The stages of evaluator training as plain functions, and the one sequence that runs them.

Per feature: prepare the corpus (synthesize or import) -> gate it (Great Expectations, before any
training) -> extract frames (cached by content) -> train every grid point (an MLflow child run
each, resumable) -> select by dev accuracy -> evaluate on the held-out test split, write the
checkpoint folder, register it -> load the registered version back and score the test clips with
it (a check run that names the version).

:func:`run_feature` takes the stage functions as a :class:`Steps` bundle so the Prefect flow
(``flows/train_evaluators.py``) can pass the same functions wrapped as tasks with retries.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from omnieval.corpora import PreparedCorpus, corpus_gate_frame, load_audio_16k, prepare_corpus
from omnieval.errors import DataError, GateFailed
from omnieval.evaluators import ProsodyBackbone, WhisperBackbone
from omnieval.progress import note
from omnieval.training._config import FeatureConfig, TrainEvaluatorsConfig
from omnieval.training._train import FRAMES_PER_SECOND, ClipData, EpochLog, PointOutcome

if TYPE_CHECKING:
    from omnieval.tracking.training import TrainingTracker

SPEECH_CORPUS_SUITE = "speech_corpus.json"


@dataclass(frozen=True)
class SplitData:
    """Frames and integer labels of the three splits, plus what produced the frames."""

    labels: tuple[str, ...]
    frontend_identity: str
    frontend_dim: int
    train: ClipData
    dev: ClipData
    test: ClipData
    test_paths: tuple[str, ...]


@dataclass(frozen=True)
class GridPointResult:
    """What a grid-point task returns (light: the weights stay on disk)."""

    head_lr: float
    backbone_lr: float
    best_epoch: int
    best_dev_accuracy: float
    best_dev_loss: float
    history: tuple[EpochLog, ...]
    weights: Path
    run_id: str | None
    reused: bool

    @property
    def label(self) -> str:
        return f"head {self.head_lr:g} / backbone {self.backbone_lr:g}"


@dataclass(frozen=True)
class FeatureResult:
    """Outcome of one feature: the checkpoint, its registry entry, the figures and the check."""

    feature: str
    registered_name: str
    checkpoint: Path
    version: str | None
    """Model Registry version, None when registration is off."""
    corpus_version: str
    test: dict[str, Any]
    selected: dict[str, Any]
    check: dict[str, Any] = field(default_factory=dict)
    run_id: str | None = None

    def summary(self) -> dict[str, Any]:
        """The plain-JSON headline both training engines print: where the model is, how it tested.

        The in-process engine (``omnieval train --engine local``) and the Prefect flow report the
        same keys in the same order from here; each appends what it knows besides (the check, the
        selected grid point, the MLflow run).
        """
        return {
            "feature": self.feature,
            "registered_name": self.registered_name,
            "version": self.version,
            "checkpoint": str(self.checkpoint),
            "corpus_version": self.corpus_version,
            "test_accuracy": self.test["accuracy"],
            "test_n": self.test["n"],
            "chance_uniform": self.test["chance_uniform"],
            "chance_majority": self.test["chance_majority"],
        }


def code_version() -> dict[str, Any]:
    import omnieval
    from omnieval.lineage import git_info

    info = git_info()
    return {"git_sha": info["sha"], "dirty": bool(info["dirty"]), "omnieval": omnieval.__version__}


# --- stages -------------------------------------------------------------------------------------------


def stage_prepare(feature: FeatureConfig) -> PreparedCorpus:
    """Synthesize or import the corpus when needed; read its manifest."""
    from omnieval.progress import progress_bar

    with progress_bar(f"{feature.feature}: corpus", 1) as update:
        prepared = prepare_corpus(feature.corpus, progress=update)
    if prepared.card.feature != feature.feature and feature.corpus.kind != "manifest":
        raise DataError(
            f"{prepared.root}: corpus is for {prepared.card.feature!r}, config says {feature.feature!r}"
        )
    note(f"{feature.feature}: corpus {prepared.card.name} {prepared.version}, {len(prepared.rows)} clips")
    return prepared


def stage_gate(feature: FeatureConfig, prepared: PreparedCorpus, out_json: Path) -> dict[str, Any]:
    """Validate the corpus with ``expectations/speech_corpus.json``; raise :class:`GateFailed` on failure."""
    from omnieval.gates import enforce, expectations_dir, validate_frame

    frame = corpus_gate_frame(prepared.rows, prepared.root, feature.labels)
    result = validate_frame(
        frame,
        expectations_dir() / SPEECH_CORPUS_SUITE,
        artifact=str(prepared.manifest_path),
        out_json=out_json,
        id_column="path",
    )
    enforce(result)
    note(result.report().splitlines()[0])
    return result.to_dict()


def stage_extract(feature: FeatureConfig, prepared: PreparedCorpus, cache_dir: Path) -> SplitData:
    """Frames for every clip: cached frontend output (Whisper) or lazily decoded audio (WavLM)."""
    from omnieval.evaluators import cached_frames, make_frontend
    from omnieval.progress import progress_bar

    index = {label: i for i, label in enumerate(feature.labels)}
    frontend = make_frontend(feature.backbone)
    rows = prepared.rows
    root = prepared.root
    if isinstance(feature.backbone, WhisperBackbone | ProsodyBackbone):
        items = [(row.sha256 or row.path, _loader(root / row.path)) for row in rows]
        with progress_bar(f"{feature.feature}: frames", len(items)) as update:
            frames = cached_frames(frontend, items, cache_dir, progress=update)
        by_path = dict(zip((r.path for r in rows), frames, strict=True))

        def split(name: str) -> ClipData:
            chosen = [r for r in rows if r.split == name]
            return ClipData.from_arrays([by_path[r.path] for r in chosen], [index[r.label] for r in chosen])

    else:

        def split(name: str) -> ClipData:
            chosen = [r for r in rows if r.split == name]
            paths = [root / r.path for r in chosen]
            return ClipData(
                get=lambda i: load_audio_16k(paths[i]).reshape(-1, 1),
                labels=np.asarray([index[r.label] for r in chosen], dtype=np.int64),
            )

    test_paths = tuple(r.path for r in rows if r.split == "test")
    return SplitData(
        labels=feature.labels,
        frontend_identity=frontend.identity,
        frontend_dim=frontend.dim,
        train=split("train"),
        dev=split("dev"),
        test=split("test"),
        test_paths=test_paths,
    )


def _loader(path: Path) -> Callable[[], np.ndarray]:
    return lambda: load_audio_16k(path)


def _model_factory(feature: FeatureConfig, frontend_dim: int) -> Callable[[], Any]:
    from omnieval.evaluators import build_classifier

    return lambda: build_classifier(feature.backbone, frontend_dim, len(feature.labels), feature.head)


def _point_key(
    feature: FeatureConfig, corpus_digest: str, data: SplitData, head_lr: float, backbone_lr: float
) -> str:
    payload = {
        "feature": feature.digest(),
        "corpus": corpus_digest,
        "frontend": data.frontend_identity,
        "lrs": [head_lr, backbone_lr],
        "code": code_version()["git_sha"],
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:24]


def stage_grid_point(
    feature: FeatureConfig,
    data: SplitData,
    corpus_digest: str,
    head_lr: float,
    backbone_lr: float,
    *,
    work_dir: Path,
    resume: bool,
    tracker: TrainingTracker | None,
    parent_run: str | None,
) -> GridPointResult:
    """Train one (head lr, backbone lr) point; its best epoch's weights go to ``work_dir``.

    With ``resume``, a point whose inputs are unchanged (config, corpus, frontend, code) is read back
    from disk instead of retrained; its MLflow run is still written, tagged ``omnieval.reused``.
    """
    from safetensors.torch import save_file

    from omnieval.training._train import resolve_device, train_point

    key = _point_key(feature, corpus_digest, data, head_lr, backbone_lr)
    folder = work_dir / feature.feature / "grid"
    folder.mkdir(parents=True, exist_ok=True)
    weights, summary_path = folder / f"{key}.safetensors", folder / f"{key}.json"
    name = f"{feature.feature} head={head_lr:g} backbone={backbone_lr:g}"
    run_id = None
    if tracker is not None:
        run_id = tracker.start_run(
            name,
            kind="grid-point",
            parent=parent_run,
            tags={"omnieval.feature": feature.feature},
            params={
                "head_lr": head_lr,
                "backbone_lr": backbone_lr,
                "seed": feature.seed,
                "backbone": feature.backbone.kind,
                **feature.optim.model_dump(mode="json"),
            },
        )
    try:
        if resume and weights.is_file() and summary_path.is_file():
            saved = json.loads(summary_path.read_text(encoding="utf-8"))
            history = tuple(EpochLog(**h) for h in saved["history"])
            result = GridPointResult(
                head_lr,
                backbone_lr,
                saved["best_epoch"],
                saved["best_dev_accuracy"],
                saved["best_dev_loss"],
                history,
                weights,
                run_id,
                reused=True,
            )
            if tracker is not None and run_id is not None:
                for log in history:
                    tracker.log_metrics(run_id, log.metrics(), step=log.epoch)
        else:

            def on_epoch(log: EpochLog) -> None:
                if tracker is not None and run_id is not None:
                    tracker.log_metrics(run_id, log.metrics(), step=log.epoch)

            fps = FRAMES_PER_SECOND[feature.backbone.kind]
            max_frames = (
                None
                if feature.optim.max_train_seconds is None
                else int(feature.optim.max_train_seconds * fps)
            )
            outcome: PointOutcome = train_point(
                _model_factory(feature, data.frontend_dim),
                data.train,
                data.dev,
                feature.optim,
                head_lr=head_lr,
                backbone_lr=backbone_lr,
                seed=feature.seed,
                device=resolve_device(feature.device),
                max_train_frames=max_frames,
                on_epoch=on_epoch,
            )
            save_file({k: v.contiguous() for k, v in outcome.state.items()}, str(weights))
            summary = {
                "best_epoch": outcome.best_epoch,
                "best_dev_accuracy": outcome.best_dev_accuracy,
                "best_dev_loss": outcome.best_dev_loss,
                "history": [h.__dict__ for h in outcome.history],
            }
            summary_path.write_text(json.dumps(summary, indent=1), encoding="utf-8")
            result = GridPointResult(
                head_lr,
                backbone_lr,
                outcome.best_epoch,
                outcome.best_dev_accuracy,
                outcome.best_dev_loss,
                tuple(outcome.history),
                weights,
                run_id,
                reused=False,
            )
    except BaseException:
        if tracker is not None and run_id is not None:
            tracker.end_run(run_id, failed=True)
        raise
    if tracker is not None and run_id is not None:
        tracker.log_metrics(
            run_id,
            {
                "best_dev_accuracy": result.best_dev_accuracy,
                "best_dev_loss": result.best_dev_loss,
                "best_epoch": result.best_epoch,
            },
        )
        tracker.set_tags(run_id, {"omnieval.reused": str(result.reused).lower()})
        tracker.end_run(run_id)
    note(
        f"{feature.feature}: {result.label}: best dev accuracy {result.best_dev_accuracy:.3f} "
        f"at epoch {result.best_epoch}" + (" (reused)" if result.reused else "")
    )
    return result


def select_best(results: list[GridPointResult]) -> GridPointResult:
    """Highest dev accuracy; ties go to the lower dev loss, then to the earlier grid point."""
    if not results:
        raise DataError("no grid point finished")
    order = {id(r): i for i, r in enumerate(results)}
    return min(results, key=lambda r: (-r.best_dev_accuracy, r.best_dev_loss, order[id(r)]))


def stage_finalize(
    feature: FeatureConfig,
    prepared: PreparedCorpus,
    data: SplitData,
    results: list[GridPointResult],
    *,
    output_dir: Path,
    runs_dir: Path,
    tracker: TrainingTracker | None,
    parent_run: str | None,
    register: bool,
) -> FeatureResult:
    """Test the selected point, write the checkpoint folder, log figures, register the model."""
    from safetensors.torch import load_file

    from omnieval.evaluators import save_checkpoint
    from omnieval.training._metrics import held_out_report
    from omnieval.training._plots import plot_confusion, plot_curves
    from omnieval.training._train import predict_proba, resolve_device

    best = select_best(results)
    device = resolve_device(feature.device)
    model = _model_factory(feature, data.frontend_dim)()
    state = load_file(str(best.weights))
    model.load_state_dict(state)
    model.to(device)
    probs = predict_proba(
        model,
        data.test,
        device=device,
        batch_size=feature.optim.batch_size,
        precision=feature.optim.precision,
    )
    predicted = probs.argmax(axis=1)
    report = held_out_report(data.test.labels, predicted, feature.labels)
    counts = {s: sum(1 for r in prepared.rows if r.split == s) for s in ("train", "dev", "test")}
    wavlm_config = None
    if feature.backbone.kind == "wavlm":
        wavlm_config = model.backbone.wavlm.config.to_dict()
    selection = {
        "head_lr": best.head_lr,
        "backbone_lr": best.backbone_lr,
        "best_epoch": best.best_epoch,
        "dev_accuracy": best.best_dev_accuracy,
        "rule": "highest dev accuracy; ties: lower dev loss, then earlier grid point",
        "grid": [
            {
                "head_lr": r.head_lr,
                "backbone_lr": r.backbone_lr,
                "dev_accuracy": r.best_dev_accuracy,
                "best_epoch": r.best_epoch,
            }
            for r in results
        ],
    }
    folder = output_dir / feature.registered_name
    card = save_checkpoint(
        folder,
        {k: v.detach().cpu() for k, v in model.state_dict().items()},
        {
            "name": feature.registered_name,
            "feature": feature.feature,
            "description": feature.description,
            "labels": feature.labels,
            "backbone": feature.backbone.model_dump(mode="json"),
            "wavlm_config": wavlm_config,
            "head": feature.head.model_dump(mode="json"),
            "frontend": {"identity": data.frontend_identity, "dim": data.frontend_dim},
            "corpus": {
                "name": prepared.card.name,
                "version": prepared.version,
                "digest": prepared.digest,
                "synthetic": prepared.card.synthetic,
                "description": prepared.card.description,
                "manifest": prepared.manifest_path.as_posix(),
                "clips": counts,
            },
            "code": code_version(),
            "selection": selection,
            "test": report.as_dict(),
            "optim": feature.optim.model_dump(mode="json"),
            "seed": feature.seed,
        },
    )
    note(
        f"{feature.feature}: test accuracy {report.accuracy:.3f} on {report.n} held-out clips "
        f"(chance {report.chance_uniform:.3f}, majority class {report.chance_majority:.3f}); "
        f"checkpoint {folder}"
    )
    version: str | None = None
    if tracker is not None and parent_run is not None:
        figures = runs_dir / feature.feature
        title = f"{feature.registered_name}: test accuracy {report.accuracy:.3f} (chance {report.chance_uniform:.3f})"
        tracker.log_artifact(
            parent_run,
            plot_confusion(report.confusion, feature.labels, title, figures / "confusion_matrix.png"),
            "plots",
        )
        curves = {r.label: list(r.history) for r in results}
        tracker.log_artifact(
            parent_run, plot_curves(curves, f"{feature.feature}: grid", figures / "curves.png"), "plots"
        )
        tracker.log_dict(parent_run, report.as_dict(), "test_report.json")
        tracker.log_text(parent_run, _predictions_csv(data, probs, feature.labels), "test_predictions.csv")
        tracker.log_metrics(
            parent_run,
            {
                "test_accuracy": report.accuracy,
                "test_balanced_accuracy": report.balanced_accuracy,
                "chance_uniform": report.chance_uniform,
                "chance_majority": report.chance_majority,
                "selected_dev_accuracy": best.best_dev_accuracy,
                "selected_head_lr": best.head_lr,
                "selected_backbone_lr": best.backbone_lr,
            },
        )
        if register:
            registered = tracker.register(
                parent_run,
                folder,
                name=feature.registered_name,
                description=feature.description,
                tags={
                    "omnieval.feature": feature.feature,
                    "omnieval.corpus.name": prepared.card.name,
                    "omnieval.corpus.version": prepared.version,
                    "omnieval.corpus.synthetic": str(prepared.card.synthetic).lower(),
                    "omnieval.git_sha": card.code["git_sha"],
                    "omnieval.test_accuracy": f"{report.accuracy:.4f}",
                    "omnieval.chance_uniform": f"{report.chance_uniform:.4f}",
                },
                weights_sha256=card.weights_sha256,
            )
            version = registered.version
            tracker.set_tags(parent_run, {"omnieval.registered": f"{registered.name}@{registered.version}"})
            note(
                f"{feature.feature}: registered {registered.uri}"
                + (" (same weights as before)" if registered.reused else "")
            )
    return FeatureResult(
        feature=feature.feature,
        registered_name=feature.registered_name,
        checkpoint=folder,
        version=version,
        corpus_version=prepared.version,
        test=report.as_dict(),
        selected=selection,
        run_id=parent_run,
    )


def _predictions_csv(data: SplitData, probs: np.ndarray, labels: tuple[str, ...]) -> str:
    lines = ["path,true," + ",".join(f"p_{label}" for label in labels)]
    for path, true, row in zip(data.test_paths, data.test.labels, probs, strict=True):
        lines.append(f"{path},{labels[int(true)]}," + ",".join(f"{p:.5f}" for p in row))
    return "\n".join(lines) + "\n"


def stage_check(
    feature: FeatureConfig,
    prepared: PreparedCorpus,
    result: FeatureResult,
    *,
    tracker: TrainingTracker | None,
) -> dict[str, Any]:
    """Load the evaluator the way metrics do (by registry reference) and score the test clips with it.

    Uses the public :func:`omnieval.evaluators.load_evaluator` on the raw audio files, so it exercises
    the whole inference path; its accuracy must equal the training-time test accuracy.
    """
    from omnieval.evaluators import load_evaluator

    ref = f"models:/{result.registered_name}/{result.version}" if result.version else str(result.checkpoint)
    evaluator = load_evaluator(ref)
    rows = [r for r in prepared.rows if r.split == "test"]
    hits = 0
    for row in rows:
        hits += int(evaluator.predict(load_audio_16k(prepared.root / row.path)) == row.label)
    accuracy = hits / len(rows)
    check = {
        "evaluator": evaluator.ref,
        "reference": ref,
        "n": len(rows),
        "accuracy": accuracy,
        "matches_training_report": bool(abs(accuracy - float(result.test["accuracy"])) < 1e-9),
    }
    if tracker is not None:
        run_id = tracker.start_run(
            f"check {evaluator.ref}",
            kind="evaluator-check",
            tags={
                "omnieval.feature": feature.feature,
                f"omnieval.evaluator.{feature.feature}": evaluator.ref,
                "omnieval.evaluator.name": evaluator.name,
                "omnieval.evaluator.version": evaluator.version,
                "omnieval.corpus.version": prepared.version,
            },
            params={"reference": ref, "split": "test", "n": len(rows)},
        )
        tracker.log_metrics(
            run_id,
            {
                f"{feature.feature}.accuracy": accuracy,
                f"{feature.feature}.chance_uniform": 1.0 / len(feature.labels),
            },
        )
        tracker.end_run(run_id)
        check["run_id"] = run_id
    note(f"{feature.feature}: {evaluator.ref} loaded from {ref} scores {accuracy:.3f} on the test clips")
    return check


# --- sequence -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Steps:
    """The stage callables :func:`run_feature` uses (the flow swaps in Prefect tasks)."""

    prepare: Callable[..., PreparedCorpus] = stage_prepare
    gate: Callable[..., dict[str, Any]] = stage_gate
    extract: Callable[..., SplitData] = stage_extract
    grid_point: Callable[..., GridPointResult] = stage_grid_point
    finalize: Callable[..., FeatureResult] = stage_finalize
    check: Callable[..., dict[str, Any]] = stage_check


def run_feature(
    config: TrainEvaluatorsConfig,
    feature: FeatureConfig,
    steps: Steps = Steps(),
    *,
    tracker: TrainingTracker | None = None,
) -> FeatureResult:
    """Run every stage for one feature; the gate runs before any training and stops it on failure."""
    prepared = steps.prepare(feature)
    parent: str | None = None
    if tracker is not None:
        parent = tracker.start_run(
            f"{feature.feature}: {feature.registered_name}",
            kind="evaluator-training",
            tags={
                "omnieval.feature": feature.feature,
                "omnieval.corpus.name": prepared.card.name,
                "omnieval.corpus.version": prepared.version,
                "omnieval.git_sha": code_version()["git_sha"],
                "mlflow.note.content": feature.description,
            },
            params={
                "labels": list(feature.labels),
                "corpus": prepared.card.name,
                "seed": feature.seed,
                "backbone": feature.backbone.model_dump(mode="json"),
                "head": feature.head.model_dump(mode="json"),
                "optim": feature.optim.model_dump(mode="json"),
                "grid": feature.grid.model_dump(mode="json"),
            },
        )
        tracker.log_corpus(
            parent,
            _manifest_frame(prepared),
            name=prepared.card.name,
            digest=prepared.digest,
            source=prepared.manifest_path.as_posix(),
            context="training",
        )
    gate_json = config.runs_dir / feature.feature / "gate.json"
    try:
        try:
            steps.gate(feature, prepared, gate_json)
        finally:
            if tracker is not None and parent is not None and gate_json.is_file():
                tracker.log_artifact(parent, gate_json, "gates")
        data = steps.extract(feature, prepared, config.work_dir / "features")
        results = [
            steps.grid_point(
                feature,
                data,
                prepared.digest,
                head_lr,
                backbone_lr,
                work_dir=config.work_dir,
                resume=config.resume,
                tracker=tracker,
                parent_run=parent,
            )
            for head_lr, backbone_lr in feature.grid.points()
        ]
        result = steps.finalize(
            feature,
            prepared,
            data,
            results,
            output_dir=config.output_dir,
            runs_dir=config.runs_dir,
            tracker=tracker,
            parent_run=parent,
            register=config.register_model,
        )
    except BaseException as exc:
        if tracker is not None and parent is not None:
            if isinstance(exc, GateFailed):
                tracker.set_tags(parent, {"omnieval.failed": "corpus gate"})
            tracker.end_run(parent, failed=True)
        raise
    if tracker is not None and parent is not None:
        tracker.end_run(parent)
    check = steps.check(feature, prepared, result, tracker=tracker)
    return replace(result, check=check)


def _manifest_frame(prepared: PreparedCorpus) -> Any:
    import pandas as pd

    return pd.DataFrame([r.as_dict() for r in prepared.rows])


def run_training(config: TrainEvaluatorsConfig, *, track: bool = True) -> list[FeatureResult]:
    """Train every feature of ``config`` in this process (no Prefect); the CLI's ``--engine local``."""
    from omnieval.tracking.training import TrainingTracker

    tracker = TrainingTracker(config.experiment) if track else None
    return [run_feature(config, feature, tracker=tracker) for feature in config.features]
