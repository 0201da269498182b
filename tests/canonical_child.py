"""One process of the canonical-output test (tests/test_canonical_outputs.py): write the tables.

``python tests/canonical_child.py OUT THREADS`` computes the storybench metrics (BERTScore with the
packaged MiniLM, image similarity; no speech clips, so no Whisper) of a three-page story and judges
it with a scripted judge whose value probabilities come from a softmax over a vocabulary
(``logit_scripts.softmax_judge``), with ``THREADS`` torch threads. It writes ``metrics.parquet``
and ``judge_scores.parquet`` as the stages do (``write_scores``), ``judgments.parquet`` as the judge
stage does (without ``latency_s``, a wall-clock time), and prints the unrounded values as JSON.
"""

from __future__ import annotations

import json
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any


def main(out: Path, threads: int) -> None:
    import torch

    torch.set_num_threads(threads)
    from judge_fixtures import NARRATIONS, fake_describe, make_story

    import omnieval.judges._run as judge_run
    import omnieval.scores as scores_module
    from omnieval.benchmarks.storybench._metrics import compute_storybench_metrics
    from omnieval.judges import run_judges
    from omnieval.metrics import MetricsConfig
    from omnieval.scores import write_scores

    raw: dict[str, float] = {}
    canonical_scores, canonical = scores_module.canonical_scores, judge_run.canonical

    def recording_scores(frame: Any) -> Any:
        for row in frame.itertuples(index=False):
            if row.value == row.value:  # the first call sees the values as computed, unrounded
                raw.setdefault(f"{row.component}|{row.system}|{row.index}|{row.criterion}", float(row.value))
        return canonical_scores(frame)

    def recording(value: float, component: str) -> float:
        raw[f"{component}|expected|{len(raw)}"] = float(value)
        return canonical(value, component)

    scores_module.canonical_scores = recording_scores  # type: ignore[assignment]
    judge_run.canonical = recording  # type: ignore[assignment]

    work = Path(tempfile.mkdtemp(prefix="canonical-"))
    story = make_story(work)
    texts = ["Pip held up the lantern and asked who had lost it.", NARRATIONS[1][0], "The moon rose."]
    cands = story.candidates("sys", list(texts), speech=False)
    metrics = compute_storybench_metrics(
        story.transitions, "sys", cands, cache_dir=work / "metrics-cache", config=MetricsConfig()
    )
    panel = work / "panel.yaml"
    judge = textwrap.dedent(
        """\
        id: softmax-judge
        model: scripted/softmax_judge
        backend: {kind: scripted, script: "logit_scripts:softmax_judge", value_probs: true}
        decoding: {temperature: 0.0, max_tokens: 128}
        framing: {schema_constrained: true}
        """
    )
    item = textwrap.indent(judge, "        ").lstrip()
    panel.write_text(
        "name: softmax\ntracks:\n"
        f"  text:\n    judges:\n      - {item}\n"
        "  speech:\n    unavailable: no speech clips here\n"
        "  image:\n    unavailable: no vision model here\n",
        encoding="utf-8",
    )
    judged = run_judges(
        story.transitions,
        {"sys": story.candidates("judged", [n for _, n in NARRATIONS])},
        panel=str(panel),
        cache_dir=work / "judge-cache",
        describe_audio=fake_describe,
    )
    out.mkdir(parents=True, exist_ok=True)
    write_scores(metrics.scores, out / "metrics.parquet")
    write_scores(judged.scores, out / "judge_scores.parquet")
    judged.judgments.drop(columns=["latency_s"]).to_parquet(out / "judgments.parquet", index=False)
    print(json.dumps({"threads": torch.get_num_threads(), "raw": raw}))


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]))
