"""Synthetic storybench scores tables for tests and benchmarks (no models involved).

The table has the exact shape of a real one (FORMATS.md section 3): three automatic metrics, four
judge tracks with several judges (of one panel) and four criteria each, plus a ``narration_length``
row per generated narration. The benchmark name is the caller's (the table's ``benchmark`` column). Systems have latent per-modality qualities that are correlated (as in the
paper), judges differ in calibration, and outputs go missing or judgments fail at chosen rates.
Everything is drawn from one seeded generator, so a seed reproduces the table exactly.

Example:
    >>> frame = make_scores(n_systems=2, n_instances=3, seed=0, benchmark="storybench")
    >>> sorted(frame["component"].unique())
    ['bertscore_f1', 'image_similarity', 'judge', 'narration_length', 'speech_meta']
    >>> len(frame)
    330
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

# The table's vocabulary is storybench's own (private: no other benchmark or library user needs it).
from omnieval.benchmarks.storybench._names import (
    MODALITIES,
    NARRATION_LENGTH,
    RUBRICS,
    SPEECH_FIELDS,
    TRACKS,
    UNAVAILABLE_JUDGE,
)
from omnieval.scores import coerce_scores

PANELS: tuple[str, ...] = ("A", "B", "C")


def judge_id(track: str, panel: str) -> str:
    """Judge id used by the generator for ``track`` in ``panel`` (e.g. ``text-A``)."""
    return f"{track}-{panel}"


def panels(n_judges: int = 3) -> dict[str, dict[str, str]]:
    """The panel layout of :func:`make_scores`: panel -> track -> judge id."""
    return {p: {t: judge_id(t, p) for t in TRACKS} for p in PANELS[:n_judges]}


def make_scores(
    n_systems: int = 32,
    n_instances: int = 900,
    *,
    benchmark: str,
    panel: str = "paper",
    missing_rate: float = 0.03,
    invalid_rate: float = 0.02,
    repaired_rate: float = 0.01,
    n_judges: int = 3,
    not_applicable_tracks: Sequence[str] = (),
    not_applicable_fields: Sequence[str] = (),
    narration_length: bool = True,
    dreamsim: bool = False,
    seed: int = 0,
) -> pd.DataFrame:
    """A seeded synthetic storybench scores table.

    Args:
        n_systems: number of systems (``sys00``, ``sys01``, ...).
        n_instances: number of transitions (ids ``synthetic/bookNNNN/p1__p2``).
        benchmark: the ``benchmark`` column's value (the benchmark whose shape this is).
        panel: the judge rows' ``panel`` (one panel holding every judge, as a suite's ``paper`` run).
        missing_rate: probability that one modality's output of one (system, instance) is missing;
            missing text/image/speech also makes the integrated judgment ``missing_output``.
        invalid_rate: probability that one judge record fails (parse error, inference error or
            unrecoverable, all four criteria) and that one speech field has no prediction.
        repaired_rate: probability that a valid judge record was repaired (status ``repaired``).
        n_judges: judges per track (panels ``A``, ``B``, ``C``; at most 3).
        not_applicable_tracks: judge tracks no judge can score here: written as the judge stage
            does, ``not_applicable`` rows of the placeholder judge ``unavailable``; ``image`` also
            marks image similarity not applicable.
        not_applicable_fields: speech fields no recognizer can predict here.
        narration_length: add ``narration_length`` rows (characters of the generated narration).
        dreamsim: add ``dreamsim_distance`` rows (perceptual distance to the reference image, 0-1).
        seed: seed of the only random generator used.

    Returns:
        The long table with the contract's columns and dtypes.
    """
    if not 1 <= n_judges <= len(PANELS):
        raise ValueError(f"n_judges must be 1..{len(PANELS)}")
    rng = np.random.default_rng(seed)
    S, N = n_systems, n_instances
    systems = np.array([f"sys{s:02d}" for s in range(S)], dtype=object)
    instances = np.array([f"synthetic/book{i:04d}/p1__p2" for i in range(N)], dtype=object)

    # Correlated latent qualities per system (text links the other two, as in the paper).
    general = rng.normal(0.0, 1.0, S)
    quality = {
        "text": 0.8 * general + 0.6 * rng.normal(0.0, 1.0, S),
        "image": 0.6 * general + 0.8 * rng.normal(0.0, 1.0, S),
        "speech": 0.7 * general + 0.7 * rng.normal(0.0, 1.0, S),
    }
    quality["integrated"] = (quality["text"] + quality["image"] + quality["speech"]) / 3.0
    difficulty = rng.normal(0.0, 0.6, N)
    # Verbose systems tend to be the stronger text systems (as the paper's orchestration systems).
    verbosity = 0.15 * quality["text"] + rng.normal(0.0, 0.3, S)

    missing = {m: rng.random((S, N)) < missing_rate for m in MODALITIES}
    missing["integrated"] = missing["text"] | missing["image"] | missing["speech"]

    parts: list[pd.DataFrame] = []
    sys_grid = np.repeat(systems, N)
    inst_grid = np.tile(instances, S)
    idx_grid = np.tile(np.arange(N, dtype=np.int64), S)

    def block(
        track: str, component: str, judge: str, criterion: str, value: np.ndarray, status: np.ndarray
    ) -> None:
        parts.append(
            pd.DataFrame(
                {
                    "system": sys_grid,
                    "instance_id": inst_grid,
                    "index": idx_grid,
                    "track": track,
                    "component": component,
                    "judge": judge,
                    "criterion": criterion,
                    "value": np.where(np.isin(status, ["ok", "repaired"]), value, np.nan).ravel(),
                    "status": status.ravel(),
                    "panel": panel if component == "judge" else "",
                }
            )
        )

    def statuses(miss: np.ndarray, na: bool) -> np.ndarray:
        st = np.where(miss, "missing_output", "ok").astype(object)
        if na:
            st[:] = "not_applicable"
        return st

    lengths = np.round(np.exp(4.7 + verbosity[:, None] + 0.3 * rng.normal(0.0, 1.0, (S, N))))
    log_len = np.log(lengths)
    if narration_length:
        block("text", NARRATION_LENGTH, "", "value", lengths, statuses(missing["text"], False))

    noise = rng.normal(0.0, 1.0, (S, N))
    # BERTScore falls a little with verbosity while the judges reward it (appendix F.8's pattern).
    bert_mean = 0.86 + 0.015 * quality["text"][:, None] - 0.01 * difficulty - 0.02 * (log_len - 4.7)
    bert = np.clip(bert_mean + 0.02 * noise, 0.0, 1.0)
    block("text", "bertscore_f1", "", "value", bert, statuses(missing["text"], False))
    noise = rng.normal(0.0, 1.0, (S, N))
    clip = np.clip(0.70 + 0.05 * quality["image"][:, None] - 0.02 * difficulty + 0.06 * noise, -1.0, 1.0)
    block(
        "image",
        "image_similarity",
        "",
        "value",
        clip,
        statuses(missing["image"], "image" in not_applicable_tracks),
    )

    if dreamsim:
        noise = rng.normal(0.0, 1.0, (S, N))
        distance = np.clip(0.55 - 0.8 * (clip - 0.70) + 0.05 * noise, 0.0, 1.0)
        block(
            "image",
            "dreamsim_distance",
            "",
            "value",
            distance,
            statuses(missing["image"], "image" in not_applicable_tracks),
        )

    for field in SPEECH_FIELDS:
        p = 1.0 / (1.0 + np.exp(-(0.6 + 0.5 * quality["speech"][:, None] - 0.3 * difficulty)))
        correct = (rng.random((S, N)) < p).astype(np.float64)
        st = statuses(missing["speech"], field in not_applicable_fields)
        failed = (rng.random((S, N)) < invalid_rate) & (st == "ok")
        st[failed] = "inference_error"
        block("speech", "speech_meta", "", field, correct, st)

    failures = np.array(["parse_error", "inference_error", "unrecoverable"], dtype=object)
    for track in TRACKS:
        na = track in not_applicable_tracks
        if na:
            for criterion in RUBRICS[track]:
                block(
                    track,
                    "judge",
                    UNAVAILABLE_JUDGE,
                    criterion,
                    np.full((S, N), np.nan),
                    statuses(missing[track], True),
                )
        for judge_panel in PANELS[:n_judges]:
            bias = rng.normal(0.0, 0.8)
            spread = rng.uniform(0.8, 1.4)
            record = rng.normal(0.0, 0.9, (S, N))
            st = statuses(missing[track], na)
            fail = (rng.random((S, N)) < invalid_rate) & (st == "ok")
            st[fail] = failures[rng.integers(0, len(failures), int(fail.sum()))]
            fix = (rng.random((S, N)) < repaired_rate) & (st == "ok")
            st[fix] = "repaired"
            # Judges reward longer narration a little (the verbosity pattern of appendix F.8).
            length_bonus = 0.8 * (log_len - 4.7) if track == "text" else 0.0
            for k, criterion in enumerate(RUBRICS[track]):
                latent = (
                    6.3
                    + bias
                    + spread * quality[track][:, None]
                    - 0.8 * difficulty
                    + record
                    + length_bonus
                    - 0.3 * k
                    + 0.7 * rng.normal(0.0, 1.0, (S, N))
                )
                if not na:  # the draws above still happen, so other tracks keep their values
                    block(
                        track,
                        "judge",
                        judge_id(track, judge_panel),
                        criterion,
                        np.clip(np.rint(latent), 1, 10),
                        st,
                    )

    frame = pd.concat(parts, ignore_index=True)
    frame.insert(0, "benchmark", benchmark)
    return coerce_scores(frame)
