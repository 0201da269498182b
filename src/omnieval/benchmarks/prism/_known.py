"""PRISM-Bench's known set: reference clips beside damaged copies of them, judged blind in pairs.

The set (``known_set.json``, docs/judges.md "Judges prove themselves on a known set") takes three
clips of the sample (on-screen speech, on-screen impacts, and on-screen speech with off-screen
sound) and damages each of them at check time, from the dataset, with the reference systems'
own media code (nothing binary is committed; ffmpeg writes bit-exactly):

``muted``
    the picture with a silent track (every dimension: the ground truth should win all four);
``swapped_audio`` (``source``: the instance whose audio it takes)
    the picture with another clip's audio, cut or padded to length (AV coherence,
    expressiveness and prompt following);
``frozen_video`` (``at_s``)
    the frame on screen at ``at_s`` held for the whole clip, under the clip's own audio (AV
    coherence).

Each damaged clip is judged as PRISM judges every system: beside its reference in a seeded blind
order, in both stages. A pair is right when the reference scored strictly above the damaged clip
on the track (dimension), each clip's score being the mean over the dimension's active cells in
that call. Variants of the same rank are never compared; pairs between two damaged ranks (a graded
list) compare each clip's own score from its own call.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from omnieval.benchmarks.prism._record import PrismInstance, candidate_video
from omnieval.errors import DataError
from omnieval.hashing import sha256_file
from omnieval.judges import (
    VALUED,
    KnownItem,
    KnownPair,
    KnownSetManifest,
    PairRule,
    ScoreKey,
    VariantScore,
    VariantScores,
    judge_identity,
    load_known_set,
)

KNOWN_SET = Path(__file__).with_name("known_set.json")
"""The pinned manifest."""
GROUND_TRUTH_VARIANT = "ground_truth"
"""The variant that is the reference clip itself (never written: every call shows it)."""

Progress = Callable[[str, int, int], None]


def frozen_video(instance: PrismInstance, out: Path, *, at_s: float = 0.0) -> None:
    """Write ``instance``'s reference with the frame on screen at ``at_s`` held for the whole clip
    (same size, frame rate and frame count) under the reference's own audio."""
    from omnieval.benchmarks.prism._media import decode_audio, encode_clip, extract_frames, probe
    from omnieval.benchmarks.prism._systems import DEFAULT_AUDIO_RATE

    info = probe(instance.reference_video)
    frame = extract_frames(instance.reference_video, times_s=[at_s])[0]
    frames = np.repeat(frame[np.newaxis], max(1, info.n_frames), axis=0)
    rate = info.audio_rate or DEFAULT_AUDIO_RATE
    audio = decode_audio(instance.reference_video, sr=rate) if info.has_audio else np.zeros(0, np.float32)
    encode_clip(frames, max(1, round(info.fps)), audio, rate, out)


def _calls_found(pair: KnownPair, better: VariantScore | None, worse: VariantScore | None) -> str:
    """Why a PRISM pair has no verdict: the status and note of each call found for its sides (both
    sides of a ground-truth pair come from one call), or that no cell of the dimension was judged."""
    found = [s for s in (better, worse) if s is not None]
    return (
        "; ".join(f"{s.status}: {s.note}".rstrip(": ") for s in found)
        or f"no cell of {pair.track} was judged"
    )


class PrismKnownSet:
    """The known set bound to the dataset's instances (a :class:`omnieval.judges.KnownSetRunner`).

    Args:
        instances: the dataset's instances (the items and their donors name theirs by id).
        source: the manifest (default :data:`KNOWN_SET`).

    Raises:
        DataError: an item or donor names an instance the dataset does not have.
    """

    rule = PairRule(
        tracks_apart=False, paired_with=GROUND_TRUTH_VARIANT, unavailable_note="", invalid_note=_calls_found
    )
    """One blind call scores every dimension, each damaged clip beside the reference clip."""

    def __init__(self, instances: Sequence[PrismInstance], source: Path = KNOWN_SET) -> None:
        self.source = Path(source)
        self.manifest: KnownSetManifest = load_known_set(self.source)
        self.instances = list(instances)
        self.by_id = {i.id: i for i in self.instances}
        self.manifest.require_instances(self.by_id, self.source)

    def panel_tracks(self, panel: str) -> dict[str, str | None]:
        from omnieval.benchmarks.prism._judge import load_prism_panel

        load_prism_panel(panel)  # an unknown or invalid panel fails here, before anything is built
        # A PRISM panel's judges score every dimension; one that cannot run here says so per call.
        return dict.fromkeys(self.manifest.tracks())

    def identity(self, panel: str) -> dict[str, Any]:
        from omnieval.benchmarks.prism._facts import FACTS_VERSION
        from omnieval.benchmarks.prism._judge import load_prism_panel
        from omnieval.benchmarks.prism._prompts import PROMPT_VERSION, template_sha256
        from omnieval.benchmarks.prism._tags import STAGE_DIMENSIONS

        config = load_prism_panel(panel)
        judges: list[dict[str, Any]] = []
        roles = [("judge", j) for j in config.judges] + ([("repair", config.repair)] if config.repair else [])
        for role, judge in roles:
            entry = judge_identity(judge)
            judges.append({"id": entry.pop("id"), "role": role, **entry})
        return {
            "panel": config.name,
            "panel_sha256": config.sha256(),
            "judges": judges,
            "prompts": {
                "version": PROMPT_VERSION,
                **{str(s): template_sha256(config.judge_kind, s) for s in STAGE_DIMENSIONS},
            },
            "facts_version": FACTS_VERSION if config.judge_kind == "cascade" else None,
            "seed": self.manifest.seed,
        }

    def build(self, folder: Path, tracks: Collection[str]) -> dict[str, str]:
        from omnieval.benchmarks.prism._media import MediaError
        from omnieval.benchmarks.prism._systems import Muted, give_audio

        built: dict[str, str] = {}
        for item in self.manifest.items:
            if not set(item.tracks) & set(tracks):
                continue
            inst = self.by_id[item.instance_id]
            for variant in item.variants:
                name = f"{item.id}/{variant.id}"
                if variant.derive == "ground_truth":
                    built[name] = sha256_file(inst.reference_video)
                    continue
                out = candidate_video(folder / variant.id, inst.index)
                if out.exists():
                    raise DataError(f"{self.source}: two items write {variant.id} of instance {inst.id}")
                out.parent.mkdir(parents=True, exist_ok=True)
                try:
                    if variant.derive == "muted":
                        Muted().make(inst, out, self.instances)
                    elif variant.derive == "swapped_audio":
                        donor = self.by_id[str(variant.params["source"])]
                        if donor.id == inst.id:
                            raise DataError(f"{self.source}: {name} takes its own audio")
                        give_audio(inst, donor, out)
                    elif variant.derive == "frozen_video":
                        frozen_video(inst, out, at_s=float(variant.params.get("at_s", 0.0)))
                    else:
                        raise DataError(f"{self.source}: {name}: unknown derivation {variant.derive!r}")
                except MediaError as exc:
                    raise DataError(f"{self.source}: cannot build {name}: {exc}") from None
                built[name] = sha256_file(out)
        return built

    def judge_variants(
        self,
        panel: str,
        folder: Path,
        items: Sequence[KnownItem],
        tracks: tuple[str, ...],
        *,
        cache_dir: Path,
        progress: Progress | None = None,
    ) -> VariantScores:
        from omnieval.benchmarks.prism._judge import judge_prism

        wanted = list(dict.fromkeys(i.instance_id for i in items))
        result = judge_prism(
            [self.by_id[i] for i in wanted],
            {v.id: folder / v.id for i in items for v in i.variants if v.derive != "ground_truth"},
            panel=panel,
            cache_dir=cache_dir,
            seed=self.manifest.seed,
            progress=progress,
        )
        # (judge, instance, track, damaged variant) -> its cells, the reference's cells, status, note.
        calls: dict[ScoreKey, dict[str, Any]] = {}
        notes = {
            (str(r.judge), str(r.system), str(r.instance_id)): str(r.note)
            for r in result.judgments.itertuples(index=False)
        }
        for row in result.scores.itertuples(index=False):
            candidate = str(row.paired_with) == GROUND_TRUTH_VARIANT
            variant = str(row.system) if candidate else str(row.paired_with)
            key = (str(row.judge), str(row.instance_id), str(row.track), variant)
            # A call's status is its first row's: every cell of one call shares the call's outcome.
            entry = calls.setdefault(key, {"cand": [], "ref": [], "status": str(row.status)})
            if str(row.status) in VALUED and row.value is not None and np.isfinite(row.value):
                entry["cand" if candidate else "ref"].append(float(row.value))
            entry["note"] = notes.get((str(row.judge), variant, str(row.instance_id)), "")

        def side(call: dict[str, Any], cells: str) -> VariantScore:
            values = call[cells]
            return VariantScore(sum(values) / len(values) if values else None, call["status"], call["note"])

        lineage = result.lineage
        return VariantScores(
            {key: side(call, "cand") for key, call in calls.items()},
            {key: side(call, "ref") for key, call in calls.items()},
            dict(lineage.get("judges") or {}),
            dict(lineage.get("usage") or {}),
            result.model_calls,
            result.cache_hits,
        )


__all__ = ["KNOWN_SET", "PrismKnownSet", "frozen_video"]
