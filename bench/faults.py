"""The fault suite at full size: the real judge runner under 10 % injected faults.

32 systems x 30 transitions x 3 tracks (text and the speech cascade judged, image not applicable)
go through :func:`omnieval.judges.run_judges` with a ``faults`` backend (rate 0.1 spread over
timeouts, HTTP 5xx and 429, dropped connections, malformed and truncated JSON and slow tails) around
a fast scripted judge, and a faulty scripted repair model. Then the same suite runs again on the
same cache. Printed, all computed from the data:

- records lost (expected records without exactly one judgment row and four score rows) and
  duplicates (requests the inner model answered more often than records needed them, from its
  call log);
- faults injected per kind, final status counts;
- the rerun's model calls and inner-model answers (0 for cached records) and whether it reproduced
  every status and score.

Run: ``python -m bench faults`` (from the repository root). The scripted judge and repair models
(``bench.faults:judge`` and ``:repair``) are :mod:`bench.scripted`'s, shared with the test.
"""

from __future__ import annotations

import json
import tempfile
import textwrap
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.scripted import CALLS, faithful_repair, hash_judge

SYSTEMS = 32
TRANSITIONS = 30
FAULT_RATE = 0.1
RETRIES = 3
judge = hash_judge
"""The scripted judge the panel names (``bench.faults:judge``); its call log is ``CALLS``."""
repair = faithful_repair


# -- the synthetic suite ----------------------------------------------------------------------------


def _tone(path: Path, freq: float) -> None:
    import numpy as np
    import soundfile as sf

    path.parent.mkdir(parents=True, exist_ok=True)
    t = np.arange(1600) / 16000
    sf.write(path, (0.3 * np.sin(2 * np.pi * freq * t)).astype(np.float32), 16000)


def _transitions(root: Path, n: int) -> list[Any]:
    import numpy as np
    from PIL import Image

    from omnieval.benchmarks.storybench._records import (
        BookMetadata,
        Character,
        NextPageCondition,
        TargetSpeech,
        Transition,
    )

    media = root / "media"
    media.mkdir(parents=True)
    image = media / "page.png"
    Image.fromarray(np.zeros((16, 16, 3), dtype=np.uint8)).save(image)
    fox = Character("Pip", "a small orange fox")
    metadata = BookMetadata("fairy tale", "a lost lantern", "picture book", "past", "third person", (fox,))
    return [
        Transition(
            index=i,
            id=f"bench/lantern/p{i:02d}__p{i + 1:02d}",
            source="bench",
            book="lantern",
            from_key=f"p{i:02d}",
            to_key=f"p{i + 1:02d}",
            current_image=image,
            current_text=f"Pip walked to stone {i}.",
            next_image=image,
            next_text=f"Pip found stone {i + 1} under the moss.",
            metadata=metadata,
            condition=NextPageCondition((fox,), "a forest", f"Describe step {i}", "birdsong"),
            target_speech=TargetSpeech("Pip", "Where is the river?", "happy", "normal", "high", "male"),
            sample_path=media / "sample.json",
            metadata_path=media / "meta.json",
        )
        for i in range(n)
    ]


def _candidates(root: Path, transitions: list[Any], systems: int) -> dict[str, Path]:
    from omnieval.candidates import Modality, output_path

    out: dict[str, Path] = {}
    for s in range(systems):
        name = f"sys{s:02d}"
        folder = out[name] = root / "candidates" / name
        for t in transitions:
            text = output_path(folder, Modality.TEXT, t.index)
            text.parent.mkdir(parents=True, exist_ok=True)
            text.write_text(f"{name} tells of stone {t.index}.", encoding="utf-8")
            # Distinct audio per (system, row): the describer's cache is keyed by audio content.
            _tone(output_path(folder, Modality.SPEECH, t.index), 200.0 + s * TRANSITIONS + t.index)
    return out


def _describe(path: Path) -> dict[str, object]:
    return {
        "path": str(path),
        "status": "ok",
        "transcript": f"{path.parents[2].name} line {path.parent.name}",
        "f0_median_hz": 190.0,
        "pitch": "normal",
        "speed": "normal",
        "words_per_second": 3.0,
        "gender": "male",
        "emotion": None,
        "duration_s": 0.1,
    }


def _panel(path: Path) -> Path:
    def role(name: str, script: str, seed: int) -> str:
        inner = f'{{kind: scripted, script: "bench.faults:{script}"}}'
        return textwrap.dedent(
            f"""\
            id: bench-{name}
            model: scripted/bench-{name}
            backend: {{kind: faults, rate: {FAULT_RATE}, seed: {seed}, timeout_s: 0.001, slow_tail_s: 0.001, inner: {inner}}}
            decoding: {{temperature: 0.0, max_tokens: 256}}
            framing: {{schema_constrained: true}}
            retries: {RETRIES}
            retry_backoff_s: 0.0
            batch_size: 32
            """
        )

    block = textwrap.indent(role("judge", "judge", 7), "        ").lstrip()
    body = f"name: bench-faults\ntracks:\n  text:\n    judges:\n      - {block}"
    body += f"  speech:\n    input: cascade\n    judges:\n      - {block}"
    body += "  image:\n    unavailable: no vision judge in the fault bench\n"
    body += "repair:\n" + textwrap.indent(role("repair", "repair", 8), "  ")
    path.write_text(body, encoding="utf-8")
    return path


@contextmanager
def _fault_tally() -> Iterator[Counter[str]]:
    """Faults injected per kind, summed over every faults backend closed inside the block."""
    from omnieval_testkit.faults import FaultInjectingBackend

    tally: Counter[str] = Counter()
    original = FaultInjectingBackend.close

    def close(self: FaultInjectingBackend) -> None:
        tally.update(self.injected)
        tally["attempts"] += len(self.events)
        original(self)

    FaultInjectingBackend.close = close  # type: ignore[method-assign]
    try:
        yield tally
    finally:
        FaultInjectingBackend.close = original  # type: ignore[method-assign]


def _duplicates(calls: list[tuple[str, str]], judgments: Any) -> int:
    """Model answers beyond what the records needed, from the inner models' call log: each judge
    request is needed once; each repair answer once per record whose answer it repairs."""
    judge_calls = Counter(d for role, d in calls if role == "judge")
    extra_judge = sum(n - 1 for n in judge_calls.values())
    repaired_records = sum(
        1
        for history in judgments["repair_history"]
        if any(e.get("outcome") in ("repaired", "unrecoverable") for e in json.loads(history))
    )
    repair_calls = sum(1 for role, _ in calls if role == "repair")
    return extra_judge + max(0, repair_calls - repaired_records)


def _lost(judgments: Any, scores: Any, expected: set[tuple[str, str, str]]) -> int:
    """Expected (system, instance, track) records without exactly one judgment and four score rows."""
    rows = Counter(zip(judgments["system"], judgments["instance_id"], judgments["track"], strict=True))
    score_rows = Counter(zip(scores["system"], scores["instance_id"], scores["track"], strict=True))
    return sum(1 for key in expected if rows[key] != 1 or score_rows[key] != 4)


def run(systems: int = SYSTEMS, transitions: int = TRANSITIONS) -> dict[str, Any]:
    """Run the suite twice on one cache; print and return the figures."""
    import omnieval.benchmarks  # noqa: F401  (registers the storybench rubrics)
    from omnieval.judges import run_judges

    with tempfile.TemporaryDirectory(prefix="bench-faults-") as tmp:
        root = Path(tmp)
        rows = _transitions(root, transitions)
        folders = _candidates(root, rows, systems)
        panel = _panel(root / "panel.yaml")
        expected = {(s, t.id, track) for s in folders for t in rows for track in ("text", "speech", "image")}

        def once() -> tuple[Any, list[tuple[str, str]], Counter[str], float]:
            CALLS.clear()
            started = time.perf_counter()
            with _fault_tally() as tally:
                result = run_judges(
                    rows, folders, panel=str(panel), cache_dir=root / "cache", describe_audio=_describe
                )
            return result, list(CALLS), tally, time.perf_counter() - started

        first, calls, faults, seconds = once()
        second, rerun_calls, _, rerun_seconds = once()

    judgments, scores = first.judgments, first.scores
    lost = _lost(judgments, scores, expected)
    duplicates = _duplicates(calls, judgments)
    statuses = dict(sorted(Counter(judgments["status"]).items()))
    keep = ["system", "instance_id", "track", "judge", "status", "raw_response", "scores", "note"]
    reproduced = scores.equals(second.scores) and judgments[keep].equals(second.judgments[keep])
    attempts = faults.pop("attempts", 0)
    injected = {k: faults.get(k, 0) for k in sorted(faults)}
    print(f"records: {len(expected)} expected, {len(judgments)} judged, {len(scores)} score rows")
    print(f"records lost = {lost}, duplicates = {duplicates}")
    print(
        f"faults injected: {sum(injected.values())} of {attempts} attempts "
        f"({sum(injected.values()) / max(attempts, 1):.1%}): "
        + ", ".join(f"{k} {v}" for k, v in injected.items())
    )
    print("final statuses: " + ", ".join(f"{k} {v}" for k, v in statuses.items()))
    print(
        f"run: {first.model_calls} model calls, {len(calls)} answered by the model, {seconds:.1f} s; "
        f"rerun: {second.model_calls} model calls, {len(rerun_calls)} answered, {second.cache_hits} cache hits, "
        f"{rerun_seconds:.1f} s, same statuses and scores: {reproduced}"
    )
    return {
        "records": len(expected),
        "records_lost": lost,
        "duplicates": duplicates,
        "faults": injected,
        "attempts": attempts,
        "statuses": statuses,
        "model_calls": first.model_calls,
        "rerun_model_calls": second.model_calls,
        "rerun_answers": len(rerun_calls),
        "reproduced": reproduced,
        "seconds": round(seconds, 2),
    }


if __name__ == "__main__":
    run()
