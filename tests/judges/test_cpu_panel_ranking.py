"""The packaged CPU judge, for real: on the sample it must rank the oracle above the shuffled system.

This is the issue's "oracle above shuffled on the text judge" check at a size CI can afford: the
first transition of every book in the bundled sample (so rows come from all four books, which a
prefix of the sample does not), judged by the `cpu` panel's text judge (its reference-guided
``cpu`` prompt with measured facts). Candidates are generated over the whole sample, so the
shuffled system's narrations are the same ones `make run` judges. 8 verdicts.

Before the ``cpu`` prompt the judge gave another book's page 10 on every criterion like the ground
truth (ties), so "oracle above shuffled" held only on the mean over many transitions. Now it must
hold on every row, strictly, and the judge health rules (``judge_health``, the same ones the judge
stage writes to ``health.json``, with the verdict floor lowered to these 8 verdicts) must not call
the judge degenerate.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from omnieval.benchmarks.storybench._loader import load_storybench
from omnieval.benchmarks.storybench._records import Transition
from omnieval.judges import judge_health, run_judges
from omnieval.judges._health import HealthRules
from omnieval.systems import SYSTEMS

CPU_PANEL = Path(__file__).resolve().parents[2] / "src/omnieval/benchmarks/storybench/panels/cpu.yaml"
pytestmark = pytest.mark.slow


def _text_only_cpu_panel(tmp_path: Path) -> Path:
    """The shipped cpu panel with only its text track kept (the speech cascade needs ASR)."""
    panel = yaml.safe_load(CPU_PANEL.read_text())
    unavailable = "left out of this test (text track only)"
    panel["name"] = "cpu-text-only"
    panel["tracks"]["speech"] = {"unavailable": unavailable}
    path = tmp_path / "cpu-text-only.yaml"
    path.write_text(yaml.safe_dump(panel, sort_keys=False))
    return path


def test_cpu_text_judge_ranks_oracle_above_shuffled_on_the_sample(sample_root: Path, tmp_path: Path) -> None:
    transitions = load_storybench(sample_root).transitions
    first_of_book: dict[str, Transition] = {}
    for transition in transitions:
        first_of_book.setdefault(f"{transition.source}/{transition.book}", transition)
    rows = list(first_of_book.values())
    assert len(rows) == 4

    candidates = {
        "oracle": tmp_path / "oracle",
        "shuffled": tmp_path / "shuffled",
    }
    SYSTEMS.get("oracle")().generate(transitions, candidates["oracle"])
    SYSTEMS.get("shuffled")(seed=0).generate(transitions, candidates["shuffled"])

    result = run_judges(
        rows,
        candidates,
        panel=str(_text_only_cpu_panel(tmp_path)),
        cache_dir=tmp_path / "cache",
    )
    text = result.scores[result.scores.track == "text"]
    assert set(text["status"]) == {"ok"}, text[text.status != "ok"]
    assert text["value"].between(1, 10).all()
    per_row = text.groupby(["instance_id", "system"])["value"].mean().unstack("system")
    assert (per_row["oracle"] > per_row["shuffled"]).all(), per_row.to_dict()
    means = text.groupby("system")["value"].mean()
    assert means["oracle"] > means["shuffled"], means.to_dict()
    assert result.model_calls == 2 * len(rows)

    health = judge_health(result.judgments, result.scores, HealthRules(min_verdicts=2 * len(rows)))
    figures = health["judges"]["cpu-text-only/cpu-qwen2.5-coder-1.5b"]
    assert figures["n_verdicts"] == 2 * len(rows)
    assert health["degenerate"] == [], figures["reasons"]
