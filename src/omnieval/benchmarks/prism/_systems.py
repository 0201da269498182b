"""Reference systems for PRISM-Bench: the ground truth itself and three probes made from it.

Each writes ``<out_root>/video/<index>/generated.mp4`` per instance (FORMATS.md section 2; a
``missing.txt`` with the reason when a clip cannot be made):

- ``ground-truth``: the reference clip itself (a hard link when the filesystem allows, else a copy);
  the ceiling a judge should score like the reference it is paired with.
- ``muted``: the reference picture with an audio track of digital silence (same stream layout);
  every audio cell should collapse.
- ``swapped-audio``: the reference picture with another instance's audio, cut or padded to the
  clip's length; the donor is chosen by a seeded derangement that avoids donors with the same tag
  set where it can. A floor for AV coherence and prompt following.
- ``offset``: the reference audio delayed by ``offset_s`` (0.5 s by default; silence at the start,
  the end cut off); a probe of how much a judge punishes lost sync.

The picture stream is copied untouched and audio is re-encoded bit-exactly (:mod:`._media`), so a
rerun writes identical bytes. All of them read the reference on purpose (``uses_ground_truth``).
Probes write a mono track at the reference's sample rate.
"""

from __future__ import annotations

import os
import shutil
from abc import abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np

from omnieval.benchmarks.prism._media import MediaError, decode_audio, probe, replace_audio
from omnieval.benchmarks.prism._record import PrismInstance, candidate_video
from omnieval.candidates import Modality
from omnieval.systems import (
    GenerationRequest,
    GenerationSummary,
    System,
    SystemConfig,
    SystemSpec,
    clear_index,
    record_missing,
)

#: Sample rate used when a reference has no audio stream to copy the rate from (Hz).
DEFAULT_AUDIO_RATE = 48000


class GroundTruthConfig(SystemConfig):
    """``kind: ground-truth``: no settings of its own (``seed`` and ``path`` are accepted and
    unused, as for every reference kind, so existing suites and their cache keys stay as they were)."""

    kind: Literal["ground-truth"] = "ground-truth"


class MutedConfig(SystemConfig):
    """``kind: muted``: no settings of its own."""

    kind: Literal["muted"] = "muted"


class SwappedAudioConfig(SystemConfig):
    """``kind: swapped-audio``: ``seed`` chooses the donor of each clip's audio (0 when unset)."""

    kind: Literal["swapped-audio"] = "swapped-audio"


class OffsetConfig(SystemConfig):
    """``kind: offset``: no settings of its own (the shift is the default 0.5 s)."""

    kind: Literal["offset"] = "offset"


class ClipSystem(System):
    """Writes one clip per instance with :meth:`make` (the reference and diagnostic systems make it
    from the reference clip, ``cpu-t2av`` from the caption); :meth:`describe` gives the lineage."""

    uses_ground_truth: ClassVar[bool] = True

    @abstractmethod
    def make(self, instance: PrismInstance, out: Path, instances: Sequence[PrismInstance]) -> None:
        """Write the candidate clip of ``instance`` at ``out`` (raise MediaError when impossible)."""

    def describe(self, instances: Sequence[PrismInstance]) -> dict[str, Any]:
        """The system's lineage for one run."""
        return {}

    def generate(self, request: GenerationRequest) -> GenerationSummary:
        """Write ``<out_root>/video/<index>/generated.mp4`` for every instance.

        Args:
            request: The instances (PRISM-Bench's, in any order), the candidate folder (FORMATS.md
                section 2) and the progress callback; PRISM-Bench has no input conditions.

        Returns:
            The summary: clips written, clips missing (``video``: count) and the lineage.
        """
        instances: Sequence[PrismInstance] = request.instances
        out_root = Path(request.out_root)
        counts: dict[str, int] = {}
        written = 0
        for done, inst in enumerate(instances, start=1):
            clear_index(out_root, inst.index)
            out = candidate_video(out_root, inst.index)
            out.parent.mkdir(parents=True, exist_ok=True)
            try:
                self.make(inst, out, instances)
                written += 1
            except MediaError as exc:
                record_missing(out_root, Modality.VIDEO, inst.index, f"{self.kind}: {exc}", counts)
            request.tick(done)
        lineage = {"source": "reference_video", **self.describe(instances)}
        return GenerationSummary(self.kind, self.kind, out_root, written, counts, lineage)


def _audio_rate(path: Path) -> int:
    info = probe(path)
    return info.audio_rate or DEFAULT_AUDIO_RATE


def give_audio(instance: PrismInstance, donor: PrismInstance, out: Path) -> None:
    """Write ``instance``'s reference picture at ``out`` with ``donor``'s reference audio, resampled
    to the reference's rate and cut or padded to its length."""
    rate = _audio_rate(instance.reference_video)
    replace_audio(instance.reference_video, decode_audio(donor.reference_video, sr=rate), rate, out)


class GroundTruth(ClipSystem):
    """The reference clip as the candidate.

    Args:
        link: Hard-link the reference when it lies on the same filesystem (no extra disk); a
            copy otherwise or when False.
    """

    kind: ClassVar[str] = "ground-truth"
    config_model: ClassVar[type[SystemSpec]] = GroundTruthConfig

    def __init__(self, link: bool = True) -> None:
        self.link = link

    def make(self, instance: PrismInstance, out: Path, instances: Sequence[PrismInstance]) -> None:
        """Link or copy the reference to ``out``."""
        source = instance.reference_video
        if not source.is_file():
            raise MediaError(source, "reference clip not found")
        tmp = out.with_name("generated.partial.mp4")
        tmp.unlink(missing_ok=True)
        try:
            if not self.link:
                raise OSError("copy requested")
            os.link(source, tmp)
        except OSError:
            shutil.copyfile(source, tmp)
        tmp.replace(out)

    def describe(self, instances: Sequence[PrismInstance]) -> dict[str, Any]:
        """How the clips were placed."""
        return {"method": "hard link (copy across filesystems)" if self.link else "copy"}


class Muted(ClipSystem):
    """The reference picture with a silent audio track of the same length."""

    kind: ClassVar[str] = "muted"
    config_model: ClassVar[type[SystemSpec]] = MutedConfig

    def make(self, instance: PrismInstance, out: Path, instances: Sequence[PrismInstance]) -> None:
        """Replace the audio with zeros at the reference's sample rate."""
        rate = _audio_rate(instance.reference_video)
        replace_audio(instance.reference_video, np.zeros(0, dtype=np.float32), rate, out)

    def describe(self, instances: Sequence[PrismInstance]) -> dict[str, Any]:
        """What replaced the audio."""
        return {"audio": "digital silence, mono AAC at the reference's sample rate"}


def swap_partners(instances: Sequence[PrismInstance], seed: int = 0) -> dict[int, int]:
    """For each instance index, the index of the instance whose audio it gets.

    The instances are put on a cycle in a seeded random order and each takes the audio of the one
    ``s`` steps ahead, which is a derangement (nobody keeps its own audio; every donor gives once).
    Of the shifts ``s = 1 .. n-1`` the one pairing the fewest instances with a donor of the same tag
    set wins (ties: the smallest ``s``); each pairing it leaves with the same tag set then exchanges
    donors with the first other position where that clears both.

    Args:
        instances: At least two instances.
        seed: Seed of the order on the cycle.

    Returns:
        ``{index: donor index}``; empty when there are fewer than two instances.

    Example:
        >>> from pathlib import Path
        >>> def inst(i, tags):
        ...     return PrismInstance(f"x{i}", i, "on_screen", tags, "c", Path("v.mp4"), i + 1)
        >>> pairs = swap_partners([inst(0, ("SPEECH_A",)), inst(1, ("SPEECH_A",)), inst(2, ("MUSIC_A",))])
        >>> sorted(pairs) == [0, 1, 2] and all(k != v for k, v in pairs.items())
        True
    """
    n = len(instances)
    if n < 2:
        return {}
    order = [instances[int(i)] for i in np.random.default_rng(seed).permutation(n)]
    tags = [frozenset(inst.active_tags) for inst in order]
    best_shift, best_same = 1, n + 1
    for shift in range(1, n):
        same = sum(tags[k] == tags[(k + shift) % n] for k in range(n))
        if same < best_same:
            best_shift, best_same = shift, same
        if same == 0:
            break
    donor = [(k + best_shift) % n for k in range(n)]
    # Repair what the shift left: exchange donors with another position when that clears the
    # same-tag pairing at both ends (an exchange keeps a permutation without fixed points).
    for k in range(n):
        if tags[k] != tags[donor[k]]:
            continue
        for j in range(n):
            a, b = donor[j], donor[k]
            if j != k and a != k and b != j and tags[k] != tags[a] and tags[j] != tags[b]:
                donor[k], donor[j] = a, b
                break
    return {order[k].index: order[donor[k]].index for k in range(n)}


class SwappedAudio(ClipSystem):
    """The reference picture with another instance's audio (a floor for coherence and prompt following).

    Args:
        seed: Seed of the donor assignment (:func:`swap_partners`).
    """

    kind: ClassVar[str] = "swapped-audio"
    config_model: ClassVar[type[SystemSpec]] = SwappedAudioConfig

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self._pairs: dict[int, int] = {}
        self._key: tuple[int, ...] = ()

    def _partners(self, instances: Sequence[PrismInstance]) -> dict[int, int]:
        key = tuple(i.index for i in instances)
        if key != self._key:
            self._pairs, self._key = swap_partners(instances, self.seed), key
        return self._pairs

    def make(self, instance: PrismInstance, out: Path, instances: Sequence[PrismInstance]) -> None:
        """Give ``instance``'s picture its donor's audio, resampled to the reference's rate."""
        donor_index = self._partners(instances).get(instance.index)
        if donor_index is None:
            raise MediaError(None, "no other instance to take the audio from (needs at least two)")
        give_audio(instance, next(i for i in instances if i.index == donor_index), out)

    def describe(self, instances: Sequence[PrismInstance]) -> dict[str, Any]:
        """The seed and which instance gave its audio to which."""
        by_index = {i.index: i.id for i in instances}
        pairs = self._partners(instances)
        return {
            "seed": self.seed,
            "donors": {by_index[k]: by_index[v] for k, v in sorted(pairs.items())},
            "same_tag_set_pairs": sum(
                frozenset(next(i for i in instances if i.index == k).active_tags)
                == frozenset(next(i for i in instances if i.index == v).active_tags)
                for k, v in pairs.items()
            ),
        }


def delay(samples: np.ndarray, shift: int) -> np.ndarray:
    """``samples`` delayed by ``shift`` samples: zeros in front, the same length (the end is cut).

    >>> delay(np.arange(1.0, 5.0), 2).tolist()
    [0.0, 0.0, 1.0, 2.0]
    """
    if shift <= 0:
        return samples.copy()
    out = np.zeros_like(samples)
    if shift < samples.shape[0]:
        out[shift:] = samples[: samples.shape[0] - shift]
    return out


class Offset(ClipSystem):
    """The reference audio delayed against its picture (a sync probe).

    Args:
        offset_s: Delay in seconds (> 0).
    """

    kind: ClassVar[str] = "offset"
    config_model: ClassVar[type[SystemSpec]] = OffsetConfig

    def __init__(self, offset_s: float = 0.5) -> None:
        if not offset_s > 0:
            raise ValueError(f"offset_s must be positive, got {offset_s}")
        self.offset_s = float(offset_s)

    def make(self, instance: PrismInstance, out: Path, instances: Sequence[PrismInstance]) -> None:
        """Delay the reference's own audio by ``offset_s`` and put it back under the picture."""
        rate = _audio_rate(instance.reference_video)
        audio = decode_audio(instance.reference_video, sr=rate)
        replace_audio(instance.reference_video, delay(audio, round(self.offset_s * rate)), rate, out)

    def describe(self, instances: Sequence[PrismInstance]) -> dict[str, Any]:
        """The delay."""
        return {"offset_s": self.offset_s, "audio": "reference audio delayed, end cut to keep the length"}
