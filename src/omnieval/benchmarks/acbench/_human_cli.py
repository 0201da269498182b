"""``omnieval human-tasks acbench``: the paper's Table 4 human-validation subset as blind Label Studio tasks.

Two steps share the command:

- ``omnieval human-tasks acbench [RUN_FOLDER] [--candidates ID=DIR ...] --out DIR`` draws the
  class-balanced subset (:mod:`._human_sample`) and writes, per feature, a Label Studio project's
  tasks and labelling config, the clips under blind names, the key file and a summary.
- ``omnieval human-tasks acbench labels EXPORT.json [...] --key DIR/key.json --out labels.jsonl``
  reads the annotations back into the rows ``omnieval analyze --humans`` gives Table 4
  (``human_validation``).

Output folder::

    DIR/key.json                      task id -> system, condition, instance, class (keep from raters)
    DIR/summary.json                  per-feature and per-class counts, inputs, deviations from the paper
    DIR/<feature>/tasks.json          the project's tasks (a JSON list), in blind order
    DIR/<feature>/labeling_config.xml the project's labelling interface (play, pick one class)
    DIR/media/<feature>/<task>.wav    the clips, renamed to their task id (serve this folder only)
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omnieval.benchmarks._human_tasks import (
    candidate_folders,
    human_tasks_command,
    labels_parser,
    load_json,
    put_in_place,
    refuse_systems,
    repeatable,
    staged_folder,
    written_by,
)
from omnieval.errors import ConfigError, DataError

if TYPE_CHECKING:
    from omnieval.benchmarks.acbench._human_sample import BalancedSample, BlindClip
    from omnieval.benchmarks.acbench._record import AcbenchDataset

_RUN_CONFIG = "config.resolved.yaml"
_RUN_DATASET = "dataset.manifest.json"
_MEDIA = "media"
_DEFAULT_URL_PREFIX = "/data/local-files/?d="


def _parser(prog: str) -> argparse.ArgumentParser:
    from omnieval.benchmarks.acbench._human_sample import PAPER_CONDITIONS, PAPER_TOTALS

    totals = ", ".join(f"{f}={n}" for f, n in PAPER_TOTALS.items())
    parser = argparse.ArgumentParser(
        prog=prog,
        usage=(
            f"{prog} [RUN_FOLDER] [--candidates ID=DIR ...] --out DIR [options]\n"
            f"       {prog} labels EXPORT.json [EXPORT.json ...] --key DIR/key.json --out LABELS.jsonl"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Draw OmniACBench's human-validation subset (the paper's Table 4) and write blind Label\n"
            "Studio tasks of the systems' generated speech for it. Each feature gives the same number of\n"
            f"instances of each of its classes ({totals} by default: 10 per class).\n"
            "One clip per (instance, system, condition), one project per feature, clips shuffled with\n"
            "the seed and named by task number only. A total that does not split equally over a\n"
            "feature's classes, a class with too few instances (unless --take-short), a clip that\n"
            "is missing or does not decode, a reference system (oracle-control, neutral) or a system\n"
            "named twice stop with exit 2; without --system every system under test is labelled."
        ),
        epilog=(
            "inputs: a run folder (runs/<suite>/<run_id>: its config.resolved.yaml names the dataset,\n"
            "systems and conditions; clips in candidates/<system>/<condition>/speech/<index>/generated.wav),\n"
            "and/or --candidates ID=DIR for outputs made elsewhere (DIR/<condition>/speech/<index>/\n"
            "generated.wav) with --dataset.\n\n"
            "writes: DIR/<feature>/tasks.json and labeling_config.xml (one Label Studio project each),\n"
            "DIR/media/<feature>/<task>.wav, DIR/key.json (which system, condition and instance each\n"
            "task is: keep it from raters) and DIR/summary.json; prints the per-feature and per-class counts.\n\n"
            f"after labelling: {prog} labels EXPORT.json ... --key DIR/key.json --out labels.jsonl,\n"
            "then omnieval analyze SCORES.parquet --only human_validation --humans labels.jsonl --out OUT."
        ),
    )
    parser.add_argument(
        "run",
        type=Path,
        nargs="?",
        metavar="RUN_FOLDER",
        help="an acbench run folder (runs/<suite>/<run_id>)",
    )
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="output folder (created)")
    repeatable(
        parser,
        "--candidates",
        "ID=DIR",
        "a system's outputs made elsewhere: DIR/<condition>/speech/<index>/generated.wav (repeatable)",
    )
    parser.add_argument(
        "--dataset",
        type=Path,
        metavar="DIR",
        help="the acbench dataset folder (default: the run's; needed without a run folder)",
    )
    repeatable(
        parser,
        "--system",
        "ID",
        "label this system's clips (repeatable; default every system under test given; the paper: "
        "two); references (oracle-control, neutral) and a system named twice are refused",
    )
    repeatable(
        parser,
        "--condition",
        "NAME",
        f"input condition to label (repeatable; default {' and '.join(PAPER_CONDITIONS)})",
    )
    repeatable(
        parser,
        "--total",
        "FEATURE=N",
        f"instances of a feature, split equally over its classes (default {totals}; 0 leaves it out)",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the draw and of the blind order (default 0)"
    )
    parser.add_argument(
        "--take-short",
        action="store_true",
        help="a class with too few instances gives all it has (listed in the summary) instead of an error",
    )
    parser.add_argument(
        "--audio-url-prefix",
        default=_DEFAULT_URL_PREFIX,
        metavar="PREFIX",
        help="prepended to media/-relative clip paths in the tasks (default: Label Studio local files, "
        f"{_DEFAULT_URL_PREFIX}<feature>/<task>.wav with DIR/media as its document root)",
    )
    return parser


# -- inputs -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Inputs:
    """Where the dataset and each system's clips are.

    Attributes:
        dataset: The dataset folder.
        limit: The run's ``dataset.limit`` (its first rows only), None for all rows.
        roots: System -> condition -> candidate folder (``<folder>/speech/<index>/generated.wav``).
        run_conditions: The conditions the run generated (None without a run folder).
        run: The run folder, if any.
        kinds: System -> the kind the run's config gives it (systems of the run folder only).
    """

    dataset: Path
    limit: int | None
    roots: Mapping[str, Mapping[str, Path]]
    run_conditions: tuple[str, ...] | None
    run: Path | None
    kinds: Mapping[str, str]


def _read_run(run: Path) -> tuple[Path, int | None, dict[str, str], tuple[str, ...]]:
    """(dataset path, dataset.limit, system -> kind, conditions) of a run folder's resolved config."""
    import yaml

    from omnieval.benchmarks.acbench._conditions import CONDITIONS

    config_path = run / _RUN_CONFIG
    if not run.is_dir():
        raise DataError(f"{run}: no such run folder")
    if not config_path.is_file():
        raise DataError(
            f"{run}: no {_RUN_CONFIG}, so not a run folder (runs/<suite>/<run_id>); for outputs made "
            "elsewhere give --dataset DIR and --candidates ID=DIR"
        )
    try:
        config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise DataError(f"{config_path}: cannot read: {exc}") from None
    if not isinstance(config, Mapping):
        raise DataError(f"{config_path}: not a mapping")
    if config.get("benchmark") != "acbench":
        raise DataError(f"{config_path}: field benchmark: {config.get('benchmark')!r} is not acbench")
    dataset = config.get("dataset")
    if not isinstance(dataset, Mapping) or not isinstance(dataset.get("path"), str):
        raise DataError(f"{config_path}: field dataset.path: missing")
    limit = dataset.get("limit")
    if limit is not None and (not isinstance(limit, int) or limit < 1):
        raise DataError(f"{config_path}: field dataset.limit: {limit!r} is not a positive integer")
    systems = config.get("systems")
    if not isinstance(systems, Mapping) or not systems:
        raise DataError(f"{config_path}: field systems: missing or empty")
    conditions = config.get("conditions") or list(CONDITIONS)
    if not isinstance(conditions, list) or not all(isinstance(c, str) for c in conditions):
        raise DataError(f"{config_path}: field conditions: not a list of names")
    kinds = {
        str(s): str(spec.get("kind", "")) if isinstance(spec, Mapping) else "" for s, spec in systems.items()
    }
    return Path(dataset["path"]), limit, kinds, tuple(conditions)


def _resolve_inputs(args: argparse.Namespace) -> _Inputs:
    from omnieval.benchmarks.acbench._conditions import CONDITIONS
    from omnieval.systems import resolve_candidates_root

    roots: dict[str, dict[str, Path]] = {}
    dataset: Path | None = args.dataset
    limit: int | None = None
    run_conditions: tuple[str, ...] | None = None
    kinds: dict[str, str] = {}
    if args.run is not None:
        run_dataset, limit, kinds, run_conditions = _read_run(args.run)
        systems = list(kinds)
        if dataset is None:
            dataset = run_dataset
            if not dataset.is_dir():
                raise DataError(
                    f"{args.run / _RUN_CONFIG}: dataset.path {dataset} is not a folder from here "
                    "(the run was made in another working folder?); give --dataset DIR"
                )
        for system in systems:
            roots[system] = {}
            for condition in run_conditions:
                folder = args.run / "candidates" / system / condition
                try:
                    roots[system][condition] = resolve_candidates_root(folder)
                except (OSError, ValueError, KeyError, TypeError) as exc:
                    raise DataError(
                        f"{folder / 'IMPORTED.json'}: not a readable import pointer: {exc}"
                    ) from None
    for system, folder in candidate_folders(args.candidates, roots).items():
        roots[system] = {c: folder / c for c in CONDITIONS}
    if not roots:
        raise ConfigError("give a run folder or at least one --candidates ID=DIR")
    if dataset is None:
        raise ConfigError("--candidates without a run folder needs --dataset DIR")
    return _Inputs(dataset, limit, roots, run_conditions, args.run, kinds)


def _reference_kinds() -> dict[str, str]:
    """Reference kind -> why its clips validate no evaluator on a system under test."""
    from omnieval.benchmarks.acbench._systems import Neutral, OracleControl

    return {
        OracleControl.kind: "a reference (oracle-control: espeak-ng renders the target it reads from the dataset)",
        Neutral.kind: "a reference (neutral: the floor, the default voice whatever the context)",
    }


def _systems(asked: Sequence[str], inputs: _Inputs) -> list[str]:
    """The systems to label: those asked for, else every system under test given.

    The study validates the evaluators on systems under test (the paper: two models), so reference
    systems (by the kind the run gives them, or so named) and a system named twice are refused.

    Raises:
        ConfigError: one line per refused system, naming it and why; or no system under test left.
    """
    references = _reference_kinds()

    def why(system: str) -> str | None:
        kind = inputs.kinds.get(system, "")
        return references.get(kind) or references.get(system)

    if not asked:
        chosen = [s for s in inputs.roots if why(s) is None]
        if not chosen:
            raise ConfigError(
                "no system under test to label: the run's systems are references ("
                + ", ".join(f"{s}: {why(s)}" for s in inputs.roots)
                + "); give --candidates ID=DIR for a system under test"
            )
        return chosen
    refuse_systems(asked, why, refused="human validation labels systems under test")
    return _pick(asked, list(inputs.roots), "system", "the run and --candidates", default=list(inputs.roots))


def _pick(
    asked: Sequence[str], offered: Sequence[str], what: str, where: str, *, default: Sequence[str]
) -> list[str]:
    chosen = list(dict.fromkeys(asked)) or list(default)
    unknown = [name for name in chosen if name not in offered]
    if unknown:
        raise ConfigError(f"--{what} {', '.join(unknown)}: not offered by {where} ({', '.join(offered)})")
    return chosen


def _totals(items: Sequence[str]) -> dict[str, int]:
    from omnieval.benchmarks.acbench._human_sample import PAPER_TOTALS
    from omnieval.benchmarks.acbench._record import canonical_feature

    totals = dict(PAPER_TOTALS)
    for item in items:
        name, sep, number = item.partition("=")
        try:
            value = int(number)
        except ValueError:
            value = -1
        if not sep or not name.strip() or value < 0:
            raise ConfigError(f"--total {item!r}: expected FEATURE=N with N a whole number >= 0")
        totals[canonical_feature(name) or name.strip()] = value
    return totals


# -- the tasks ----------------------------------------------------------------------------------------


def _tasks_main(argv: list[str], prog: str) -> int:
    from pydantic import ValidationError

    from omnieval.benchmarks.acbench._conditions import CONDITIONS
    from omnieval.benchmarks.acbench._human_sample import (
        PAPER_CONDITIONS,
        HumanSampleConfig,
        blind_clips,
        class_balanced_sample,
    )
    from omnieval.benchmarks.acbench._record import load_acbench
    from omnieval.errors import validation_problems

    args = _parser(prog).parse_args(argv)
    inputs = _resolve_inputs(args)
    systems = _systems(args.system, inputs)
    offered, where = CONDITIONS, "acbench"
    if inputs.run is not None and inputs.run_conditions is not None:
        offered, where = inputs.run_conditions, str(inputs.run / _RUN_CONFIG)
    conditions = _pick(args.condition, offered, "condition", where, default=PAPER_CONDITIONS)
    try:
        config = HumanSampleConfig(totals=_totals(args.total), seed=args.seed, take_short=args.take_short)
    except ValidationError as exc:
        raise ConfigError(validation_problems("invalid --total", exc)) from None
    dataset = load_acbench(inputs.dataset)
    if inputs.run is not None:
        _check_same_dataset(inputs.run, dataset)
    instances = dataset.instances[: inputs.limit] if inputs.limit else dataset.instances
    sample = class_balanced_sample(instances, config)
    clips = blind_clips(sample, systems, conditions)
    sources = _clip_sources(clips, inputs.roots)
    summary = _summary(sample, clips, inputs, systems, conditions, len(instances))
    _write(args.out, clips, sources, summary, args.audio_url_prefix)
    print(_summary_text(summary, args.out))
    return 0


def _check_same_dataset(run: Path, dataset: AcbenchDataset) -> None:
    """Refuse a dataset other than the one the run evaluated: its rows would pick the wrong clips."""
    from omnieval.benchmarks.acbench._record import fingerprint_acbench

    recorded = run / _RUN_DATASET
    if not recorded.is_file():
        return
    manifest = load_json(recorded, "the run's dataset manifest")
    if not isinstance(manifest, Mapping):
        raise DataError(f"{recorded}: cannot read: not a JSON object")
    expected = manifest.get("digest")
    actual = fingerprint_acbench(dataset).digest
    if expected and expected != actual:
        raise DataError(
            f"{dataset.root} is not the dataset the run evaluated ({recorded}: digest {expected[:12]}..., "
            f"this folder {actual[:12]}...): candidate indexes would name other instances"
        )


def _clip_sources(
    clips: Mapping[str, Sequence[BlindClip]], roots: Mapping[str, Mapping[str, Path]]
) -> dict[str, Path]:
    """Task id -> the clip file; every missing or undecodable clip is listed in one error."""
    from omnieval.candidates import Modality, read_candidate

    sources: dict[str, Path] = {}
    problems: list[str] = []
    for feature_clips in clips.values():
        for clip in sorted(feature_clips, key=lambda c: (c.system, c.condition, c.index)):
            root = roots[clip.system][clip.condition]
            output = read_candidate(root, Modality.SPEECH, clip.index)
            if output.path is None:
                problems.append(
                    f"system {clip.system}, condition {clip.condition}, instance {clip.instance_id} "
                    f"(row {clip.index}): {output.problem}"
                )
            else:
                sources[clip.task] = output.path
    if problems:
        raise DataError(
            f"{len(problems)} clip(s) of the drawn subset are missing or do not decode "
            "(expected <candidates>/<condition>/speech/<index>/generated.wav)",
            problems,
        )
    return sources


def _summary(
    sample: BalancedSample,
    clips: Mapping[str, Sequence[BlindClip]],
    inputs: _Inputs,
    systems: Sequence[str],
    conditions: Sequence[str],
    n_rows: int,
) -> dict[str, Any]:
    from omnieval.benchmarks.acbench._human_sample import PAPER_CONDITIONS, PAPER_TOTALS, STUDY

    config = sample.config
    features: dict[str, Any] = {}
    for feature in sample.features:
        draws = sample.of(feature)
        features[feature] = {
            "total": config.totals[feature],
            "per_class": draws[0].wanted,
            "instances": sum(len(d.instances) for d in draws),
            "clips": len(clips[feature]),
            "classes": {
                d.target_value: {"drawn": len(d.instances), "wanted": d.wanted, "available": d.available}
                for d in draws
            },
            "absent_classes": list(sample.absent_classes.get(feature, ())),
            "tasks": f"{feature}/tasks.json",
            "labeling_config": f"{feature}/labeling_config.xml",
        }
    deviations = []
    if config.totals != PAPER_TOTALS:

        def shown(totals: Mapping[str, int]) -> str:
            return ", ".join(f"{f}={n}" for f, n in totals.items())

        deviations.append(f"totals {shown(config.totals)} (the paper: {shown(PAPER_TOTALS)})")
    if sample.short:
        short = "; ".join(
            f"{d.feature} / {d.target_value} {len(d.instances)} of {d.wanted}" for d in sample.short
        )
        deviations.append(f"{_count(len(sample.short), 'class')} short, taken as they are: {short}")
    if len(systems) != 2:
        deviations.append(f"{_count(len(systems), 'system')} (the paper: two models)")
    if list(conditions) != list(PAPER_CONDITIONS):
        deviations.append(f"conditions {', '.join(conditions)} (the paper: {', '.join(PAPER_CONDITIONS)})")
    return {
        "benchmark": "acbench",
        "study": STUDY,
        "seed": config.seed,
        "run": None if inputs.run is None else str(inputs.run.resolve()),
        "dataset": str(inputs.dataset.resolve()),
        "dataset_rows": n_rows,
        "dataset_limit": inputs.limit,
        "systems": list(systems),
        "conditions": list(conditions),
        "take_short": config.take_short,
        "instances": sum(f["instances"] for f in features.values()),
        "clips": sum(f["clips"] for f in features.values()),
        "features": features,
        "short": [
            {"feature": d.feature, "class": d.target_value, "drawn": len(d.instances), "wanted": d.wanted}
            for d in sample.short
        ],
        "deviations": deviations,
    }


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}es" if noun.endswith("s") else f"{n} {noun}s"


def _summary_text(summary: Mapping[str, Any], out: Path) -> str:
    lines = [
        f"acbench human validation (seed {summary['seed']}): {summary['instances']} instances, "
        f"{summary['clips']} clips ({_count(len(summary['systems']), 'system')} x "
        f"{_count(len(summary['conditions']), 'condition')}) -> {out}",
        f"  systems: {', '.join(summary['systems'])}; conditions: {', '.join(summary['conditions'])}",
    ]
    for feature, f in summary["features"].items():
        classes = ", ".join(f"{name} {c['drawn']}" for name, c in f["classes"].items())
        short = any(c["drawn"] < c["wanted"] for c in f["classes"].values())
        per_class = f"{f['per_class']} per class" + (" asked, drawn" if short else "")
        lines.append(
            f"  {feature:8s} {f['instances']:4d} instances ({per_class}: {classes}), "
            f"{f['clips']} clips -> {f['tasks']}"
        )
        if f["absent_classes"]:
            lines.append(
                f"    note: no {feature} instance of {', '.join(f['absent_classes'])}: the total is split "
                "over the classes the dataset has"
            )
    for deviation in summary["deviations"]:
        lines.append(f"  differs from the paper: {deviation}")
    lines.append(f"  key (keep from raters): {out / 'key.json'}; clips: {out / _MEDIA}")
    return "\n".join(lines)


def _write(
    out: Path,
    clips: Mapping[str, Sequence[BlindClip]],
    sources: Mapping[str, Path],
    summary: Mapping[str, Any],
    url_prefix: str,
) -> None:
    """Write the whole output folder beside ``out``, then put it in place (never half written).

    Raises:
        DataError: ``out`` exists and is a file, or a folder holding something else than a previous
            output of this command.
    """
    from omnieval.benchmarks.acbench._human_sample import STUDY, TASK_FIELD, labeling_config, study_key
    from omnieval.jsonio import write_json_atomic

    _refuse_foreign(out, STUDY)
    with staged_folder(out) as scratch:
        for feature, feature_clips in clips.items():
            tasks = []
            for clip in feature_clips:
                relative = f"{feature}/{clip.task}.wav"
                _write_clip(sources[clip.task], scratch / _MEDIA / relative)
                tasks.append({"data": {TASK_FIELD: clip.task, "audio": f"{url_prefix}{relative}"}})
            write_json_atomic(scratch / feature / "tasks.json", tasks)
            (scratch / feature / "labeling_config.xml").write_text(labeling_config(feature), encoding="utf-8")
        key = study_key(
            clips,
            seed=summary["seed"],
            run=summary["run"],
            dataset=summary["dataset"],
            systems=summary["systems"],
            conditions=summary["conditions"],
        )
        for task, entry in key["tasks"].items():
            entry["source"] = str(sources[task].resolve())
        write_json_atomic(scratch / "key.json", key)
        write_json_atomic(scratch / "summary.json", summary)
        put_in_place(scratch, out)


def _refuse_foreign(out: Path, study: str) -> None:
    if out.exists() and not out.is_dir():
        raise DataError(f"--out {out}: exists and is not a folder")
    if not out.is_dir() or not any(out.iterdir()):
        return
    if not written_by(out / "key.json", study):
        raise DataError(
            f"--out {out}: a folder holding other files (not an earlier human-tasks acbench output); "
            "give a new or empty folder"
        )


def _write_clip(source: Path, target: Path) -> None:
    """Re-write the clip as 16-bit PCM WAV: same samples and rate, no file tags that could name a system."""
    import soundfile as sf

    target.parent.mkdir(parents=True, exist_ok=True)
    audio, rate = sf.read(str(source), always_2d=False)
    sf.write(str(target), audio, rate, subtype="PCM_16", format="WAV")


# -- reading the annotations back ---------------------------------------------------------------------


def _labels_main(argv: list[str], prog: str) -> int:
    from omnieval.benchmarks.acbench._analyses import read_study_labels
    from omnieval.jsonio import write_text_atomic

    args = labels_parser(
        prog,
        "Read Label Studio JSON exports of the tasks `omnieval human-tasks acbench` wrote (one per "
        "feature project), apply the study's key and write one row per annotation (system, "
        "condition, instance_id, annotator, label): the --humans file of omnieval analyze's "
        "human_validation (Table 4). Cancelled and empty annotations are skipped and counted.",
        key_help="the study's key.json",
        out_metavar="LABELS.jsonl",
        out_help="rows written here",
    ).parse_args(argv)
    labels = read_study_labels(args.exports, args.key)
    if not labels.records:
        raise DataError(
            f"no labels in {', '.join(map(str, args.exports))} "
            f"({labels.counts['annotations']} annotations, {labels.counts['skipped']} cancelled or empty)"
        )
    write_text_atomic(args.out, "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in labels.records))
    counts = labels.counts
    print(
        f"{counts['labels']} labels from {counts['tasks']} tasks ({counts['skipped']} annotations skipped: "
        f"cancelled or empty) -> {args.out}"
    )
    for feature, n in labels.per_clip.items():
        print(f"  {feature:8s} {n['clips']:4d} clips labelled, {n['min']}-{n['max']} annotations per clip")
    if counts["unlabelled_tasks"]:
        print(f"  {counts['unlabelled_tasks']} task(s) of {args.key} have no label")
    print(f"next: omnieval analyze SCORES.parquet --only human_validation --humans {args.out} --out DIR")
    return 0


human_tasks_main = human_tasks_command(_tasks_main, _labels_main)
"""Run ``omnieval human-tasks acbench`` (or its ``labels`` step); returns the exit status. Raises
ConfigError for a malformed option and DataError for unreadable inputs, a subset the dataset cannot
give or missing clips (both exit code 2)."""
