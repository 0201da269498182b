"""``omnieval human-tasks prism``: the paper's stratified human-study sample as blind Label Studio tasks.

Two steps share the command:

- ``omnieval human-tasks prism DATASET --system ID --candidates ID=DIR ... --out TASKS.json`` draws
  the sample (:mod:`._human_sample`) and writes the tasks, the study's key and the clips under
  blind names;
- ``omnieval human-tasks prism labels EXPORT.json [...] --key KEY.json --out LABELS.json`` puts the
  key back into the Label Studio export: the ``--humans`` file of ``omnieval analyze``'s
  ``human_preference``.

Files written (``--out study/tasks.json``)::

    study/tasks.json             the tasks (a JSON list): num, instance, subset, tags, caption, video1/2
    study/tasks.key.json         num -> system, order, instance and clip sources (keep from raters)
    study/tasks.media/0001-1.mp4 the clips, named by task number and slot only

A task only measures something when it pairs a system under test with the ground truth and shows
both clips, so references (the ground truth itself), diagnostic probes made from it (muted,
swapped-audio, offset), a system named twice and tasks without clips (unless
``--allow-missing-media``) are refused with exit 2 before anything is written.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omnieval.benchmarks._human_tasks import (
    candidate_folders,
    human_tasks_command,
    labels_parser,
    put_in_place,
    refuse_systems,
    repeatable,
    staged_folder,
    written_by,
)
from omnieval.errors import ConfigError, DataError

if TYPE_CHECKING:
    from omnieval.benchmarks.prism._human_sample import PairSample


def _parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        usage=(
            f"{prog} DATASET --system ID [--system ID ...] --candidates ID=DIR [...] --out TASKS.json "
            f"[options]\n       {prog} labels EXPORT.json [EXPORT.json ...] --key KEY.json --out LABELS.json"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Draw PRISM-Bench's human-study sample (appendix D: N items per subset and valid tag\n"
            "combination, each stratum from its own seeded generator) and write one blind\n"
            "ground-truth-versus-system Label Studio task per (item, system), for a project set up with\n"
            "label_studio/two_stage.xml. A combination with too few items is reported, never padded.\n"
            "Tasks carry neither the system nor which clip is the ground truth: those are in the key\n"
            "file, and the clips are copied under blind names. References (ground-truth), diagnostic\n"
            "probes (muted, swapped-audio, offset), a system named twice and tasks without clips are\n"
            "refused (exit 2): such tasks measure nothing."
        ),
        epilog=(
            "writes: TASKS.json (import into Label Studio), its key (default TASKS.key.json: which\n"
            "system each task shows and in which order; keep it from raters) and the clips\n"
            "(TASKS.media/<num>-<1|2>.mp4; serve this folder).\n\n"
            f"after labelling: {prog} labels EXPORT.json --key TASKS.key.json --out labels.json, then\n"
            "omnieval analyze SCORES.parquet --only human_preference --humans labels.json --out OUT."
        ),
    )
    parser.add_argument("dataset", type=Path, help="PRISM-Bench dataset folder (manifest.jsonl)")
    repeatable(
        parser,
        "--system",
        "ID",
        "a system under test compared with the ground truth (repeatable)",
        required=True,
    )
    repeatable(
        parser,
        "--candidates",
        "ID=DIR",
        "a system's candidate folder (<DIR>/video/<index>/generated.mp4): the clips raters see",
    )
    parser.add_argument(
        "--allow-missing-media",
        action="store_true",
        help="write tasks without clips (no --candidates): video1/video2 to be filled in elsewhere",
    )
    parser.add_argument("--per-combination", type=int, default=4, help="items per stratum (the paper: 4)")
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="draw and blind-order seed (the judge's order seed keeps raters' order equal)",
    )
    parser.add_argument(
        "--out", type=Path, required=True, metavar="TASKS.json", help="the tasks file (a JSON list)"
    )
    parser.add_argument(
        "--key", type=Path, metavar="KEY.json", help="the key file (default: TASKS.key.json beside --out)"
    )
    parser.add_argument(
        "--video-url-prefix",
        metavar="PREFIX",
        help="link clips as PREFIX<num>-<slot>.mp4 (e.g. Label Studio's /data/local-files/?d= with the "
        "media folder as its document root); default: the clip's absolute path",
    )
    return parser


# -- which systems a study may rate ---------------------------------------------------------------


def _recorded_kind(folder: Path) -> tuple[str, Path] | None:
    """The system kind the run recorded for a candidate folder of its own, and where: the run
    folder's ``lineage.json`` (``runs/<suite>/<run>/candidates/<id>``), else the generate stage's
    ``<id>.summary.json`` beside the folder. None for outputs made elsewhere."""
    places: list[tuple[Path, str | None]] = [(folder.parent / f"{folder.name}.summary.json", None)]
    if folder.parent.name == "candidates":
        places.insert(0, (folder.parent.parent / "lineage.json", folder.name))
    for path, system in places:
        if not path.is_file():
            continue
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue
        entry = doc.get("systems", {}).get(system) if system and isinstance(doc, dict) else doc
        if isinstance(entry, Mapping) and isinstance(entry.get("kind"), str):
            return str(entry["kind"]), path
    return None


def _why_not_rated(kind: str) -> str | None:
    """Why a system of ``kind`` (or so named) measures nothing beside the ground truth; None if it may."""
    from omnieval.benchmarks.prism._aggregate import DEFAULT_DIAGNOSTIC, DEFAULT_REFERENCE
    from omnieval.benchmarks.prism._tags import GROUND_TRUTH

    if kind in DEFAULT_REFERENCE or kind == GROUND_TRUTH:
        return (
            "a reference: its clip is the ground truth, so each task would pair the ground truth with itself"
        )
    if kind in DEFAULT_DIAGNOSTIC:
        return (
            f"a diagnostic probe ({kind}, made from the ground truth clip): raters would judge the "
            "probe's manipulation, not a system under test"
        )
    return None


def _check_systems(systems: Sequence[str], candidates: Mapping[str, Path]) -> None:
    """Refuse systems whose tasks measure nothing: references, probes (by id, or by the kind the
    run recorded for their candidate folder), a system named twice, and candidates of no system.

    Raises:
        ConfigError: one line per problem, naming the system and why.
    """

    def why(system: str) -> str | None:
        recorded = _recorded_kind(candidates[system]) if system in candidates else None
        if _why_not_rated(system) is None and recorded is not None and _why_not_rated(recorded[0]):
            return f"its candidates are kind {recorded[0]} ({recorded[1]}): {_why_not_rated(recorded[0])}"
        return _why_not_rated(system)

    refuse_systems(
        systems,
        why,
        refused="human tasks pair systems under test with the ground truth",
        twice="given twice (its tasks would be rated twice, as two systems)",
        more=[
            f"--candidates {s}=...: {s} is not given with --system" for s in candidates if s not in systems
        ],
    )


# -- where the files go ---------------------------------------------------------------------------


def _targets(out: Path, key: Path | None) -> tuple[Path, Path, Path]:
    """(tasks file, key file, media folder), checked before anything is drawn or written.

    Raises:
        ConfigError: ``--out`` or ``--key`` is a folder, the two are one file, or the media folder
            holds something other than an earlier output of this command.
    """
    from omnieval.benchmarks.prism._human_sample import STUDY

    if out.is_dir():
        raise ConfigError(
            f"--out: {out} is a folder; give the tasks file to write, e.g. {out / 'tasks.json'}"
        )
    key = key if key is not None else out.with_suffix(".key.json")
    if key.is_dir():
        raise ConfigError(f"--key: {key} is a folder; give the key file to write")
    if key.resolve() == out.resolve():
        raise ConfigError(f"--key {key}: is the tasks file (--out); the key must stay apart from the tasks")
    for path, option in ((out, "--out"), (key, "--key")):
        parent = next((p for p in path.parents if p.exists()), None)
        if parent is not None and not parent.is_dir():
            raise ConfigError(f"{option} {path}: {parent} is a file, not a folder")
    media = out.with_suffix(".media")
    if media.exists() and (not media.is_dir() or any(media.iterdir())) and not written_by(key, STUDY):
        raise ConfigError(
            f"--out {out}: its media folder {media} exists and is not an earlier output of this "
            "command (no key of this study beside it); give another --out or remove it"
        )
    return out, key, media


def _link(source: Path, target: Path) -> None:
    """Put ``source`` at ``target``: a hard link where the filesystem allows, else a copy."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def _write(
    sample: PairSample, out: Path, key_path: Path, media: Path, url_prefix: str | None, about: dict[str, Any]
) -> None:
    """Write the clips under blind names, the key and the tasks; the clips are gathered beside the
    media folder first and put in place whole, and the tasks file (the one a user imports) last."""
    from omnieval.jsonio import write_json_atomic

    def blind_name(num: int, slot: int) -> str:
        return f"{num:04d}-{slot}.mp4"

    def clip_url(num: int, slot: int, _: Path) -> str:
        name = blind_name(num, slot)
        return f"{url_prefix}{name}" if url_prefix is not None else (media.resolve() / name).as_posix()

    key = sample.key(**about, media=str(media.resolve()))
    has_media = any(p.video1 is not None for p in sample.pairs)
    key_path.parent.mkdir(parents=True, exist_ok=True)
    with staged_folder(media) as scratch:
        for pair in sample.pairs:
            sources = {}
            for slot, clip in ((1, pair.video1), (2, pair.video2)):
                if clip is not None:
                    _link(clip, scratch / blind_name(pair.num, slot))
                    sources[f"video{slot}"] = str(clip.resolve())
            key["tasks"][str(pair.num)]["sources"] = sources
        if has_media:
            put_in_place(scratch, media)
        write_json_atomic(key_path, key)
        write_json_atomic(out, sample.tasks(clip_url if has_media else None))


# -- the steps ------------------------------------------------------------------------------------


def _tasks_main(argv: list[str], prog: str) -> int:
    from omnieval.benchmarks.prism._human_sample import stratified_pairs
    from omnieval.benchmarks.prism._record import load_prism

    args = _parser(prog).parse_args(argv)
    out, key_path, media = _targets(args.out, args.key)
    candidates = candidate_folders(args.candidates)
    _check_systems(args.system, candidates)
    if not candidates and not args.allow_missing_media:
        raise ConfigError(
            "no --candidates: the tasks would have no clips to rate; give --candidates ID=DIR for "
            "every --system (or --allow-missing-media to fill video1/video2 in elsewhere)"
        )
    dataset = load_prism(args.dataset)
    sample = stratified_pairs(
        dataset.instances,
        args.system,
        per_combination=args.per_combination,
        seed=args.seed,
        candidates=candidates or None,
    )
    about = {
        "benchmark": "prism",
        "seed": args.seed,
        "per_combination": args.per_combination,
        "dataset": str(Path(args.dataset).resolve()),
        "systems": list(args.system),
        "candidates": {s: str(f.resolve()) for s, f in candidates.items()},
        "tasks_file": str(out.resolve()),
    }
    try:
        _write(sample, out, key_path, media, args.video_url_prefix, about)
    except OSError as exc:
        raise DataError(f"--out {out}: cannot write the tasks, key or clips: {exc}") from None
    n_items = sum(len(ids) for ids in sample.items.values())
    print(
        f"{len(sample.pairs)} tasks: {n_items} items x {len(args.system)} systems over "
        f"{len(sample.items)} strata -> {out}"
    )
    print(f"  key (keep from raters): {key_path}")
    if candidates:
        print(f"  clips under blind names: {media}")
    else:
        print("  no clips (--allow-missing-media): fill video1/video2 in before importing")
    for stratum, missing in sample.shortfall.items():
        print(f"  short: {stratum} has {missing} item(s) fewer than {args.per_combination}")
    print(f"after labelling: {prog} labels EXPORT.json --key {key_path} --out labels.json")
    return 0


def _labels_main(argv: list[str], prog: str) -> int:
    from omnieval.benchmarks.prism._human import parse_two_stage_export, read_keyed_exports
    from omnieval.jsonio import write_json_atomic

    args = labels_parser(
        prog,
        "Read Label Studio JSON exports of the tasks `omnieval human-tasks prism` wrote, put each "
        "task's system and order back from the study's key (matched on the task number) and "
        "write one export: the --humans file of omnieval analyze's human_preference.",
        key_help="the study's key file",
        out_metavar="LABELS.json",
        out_help="the keyed export written here",
    ).parse_args(argv)
    if args.out.is_dir():
        raise ConfigError(
            f"--out: {args.out} is a folder; give the file to write, e.g. {args.out / 'labels.json'}"
        )
    keyed = read_keyed_exports(args.exports, args.key)
    parsed = parse_two_stage_export(keyed, ", ".join(map(str, args.exports)))
    if not parsed.comparisons:
        raise DataError(
            f"no scored comparison in {', '.join(map(str, args.exports))} ({parsed.counts['annotations']} "
            f"annotations, {parsed.counts['skipped']} cancelled or empty, {parsed.counts['discarded']} discarded)"
        )
    write_json_atomic(args.out, keyed)
    counts = parsed.counts
    print(
        f"{counts['tasks']} tasks, {counts['scored']} complete and {counts['incomplete']} partial "
        f"annotations ({counts['skipped']} skipped, {counts['discarded']} discarded) -> {args.out}"
    )
    print(f"next: omnieval analyze SCORES.parquet --only human_preference --humans {args.out} --out DIR")
    return 0


human_tasks_main = human_tasks_command(_tasks_main, _labels_main)
"""Run ``omnieval human-tasks prism`` (or its ``labels`` step); returns the exit status. Raises
ConfigError for a malformed option, a system that is not under test or named twice, tasks without
clips or an ``--out`` that cannot be a file, and DataError for an unreadable dataset, a missing
candidate folder or clip, a bad quota or an export or key that cannot be read (both exit code 2)."""
