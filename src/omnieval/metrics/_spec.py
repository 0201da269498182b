"""Facts about each automatic metric, as data: direction, range, inputs, version.

Metrics do not belong to a benchmark: each benchmark package names the metrics it computes.

A metric's ``version`` is part of every cache key, so bumping it invalidates cached values.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from omnieval.registry import Registry


@dataclass(frozen=True)
class MetricSpec:
    """Description of one automatic metric (one ``component`` of the scores table).

    Attributes:
        name: Component name in the scores table.
        higher_is_better: Direction.
        value_range: (low, high) of a row's value; ``math.inf`` for unbounded.
        inputs: What the metric reads, e.g. ``("candidate_text", "reference_text")``.
        version: Bumped whenever the computation changes.
        description: One line for reports.
        needs_gpu: Whether the default backend needs a GPU.
    """

    name: str
    higher_is_better: bool
    value_range: tuple[float, float]
    inputs: tuple[str, ...]
    version: str
    description: str
    needs_gpu: bool = False

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["value_range"] = [v if math.isfinite(v) else None for v in self.value_range]
        return out


METRICS: Registry[MetricSpec] = Registry("metric")


def _register(spec: MetricSpec) -> MetricSpec:
    METRICS.register(spec.name)(spec)
    return spec


BERTSCORE_F1 = _register(
    MetricSpec(
        "bertscore_f1",
        True,
        (-1.0, 1.0),
        ("candidate_text", "reference_text"),
        "2",
        "BERTScore F1 of the generated narration against the next page's narration (no idf, no rescaling)",
    )
)


IMAGE_SIMILARITY = _register(
    MetricSpec(
        "image_similarity",
        True,
        (-1.0, 1.0),
        ("candidate_image", "reference_image"),
        "1",
        "cosine similarity of image embeddings of the generated and the next-page image (backbone in lineage)",
    )
)


DREAMSIM_DISTANCE = _register(
    MetricSpec(
        "dreamsim_distance",
        False,
        (0.0, 2.0),
        ("candidate_image", "reference_image"),
        "1",
        "DreamSim perceptual distance (optional; only where the dreamsim package and weights are installed)",
    )
)


SPEECH_META = _register(
    MetricSpec(
        "speech_meta",
        True,
        (0.0, 1.0),
        ("candidate_audio", "target_speech_metadata"),
        "1",
        "per-field match (emotion, speed, pitch, gender) of attributes predicted from the generated audio",
    )
)


WER = _register(
    MetricSpec(
        "wer",
        False,
        (0.0, math.inf),
        ("candidate_audio", "script"),
        "1",
        "word error rate of the ASR transcript against the script, after text normalization",
    )
)


WPM = _register(
    MetricSpec(
        "wpm",
        True,
        (0.0, math.inf),
        ("candidate_audio", "script"),
        "1",
        "transcript words per minute of trimmed speech (criterion = target value; delta-WPM = fast - slow)",
    )
)


PER = _register(
    MetricSpec(
        "per",
        False,
        (0.0, math.inf),
        ("candidate_audio", "script"),
        "2",
        "phone error rate of the heteronym as pronounced (a decision between its two reference "
        "readings by forced alignment) against the target reading's reference phones",
    )
)


VFR = _register(
    MetricSpec(
        "vfr",
        False,
        (0.0, 1.0),
        ("candidate_audio",),
        "1",
        "voiced frame ratio (share of pYIN frames with an F0)",
    )
)
