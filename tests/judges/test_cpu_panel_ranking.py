"""The packaged CPU judge, for real: on the sample it must rank the oracle above the shuffled system.

This is the issue's "oracle above shuffled on the text judge" check at a size CI can afford: the
first transition of every book in the bundled sample (so rows come from all four books, which a
prefix of the sample does not), judged by the `cpu` panel's text judge. Candidates are generated
over the whole sample, so the shuffled system's narrations are the same ones `make run` judges.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from omnieval.benchmarks.storybench._loader import load_storybench
from omnieval.judges import run_judges
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
    first_of_book: dict[str, object] = {}
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
        rows,  # type: ignore[arg-type]
        candidates,
        panel=str(_text_only_cpu_panel(tmp_path)),
        cache_dir=tmp_path / "cache",
    )
    text = result.scores[result.scores.track == "text"]
    assert set(text["status"]) == {"ok"}, text[text.status != "ok"]
    assert text["value"].between(1, 10).all()
    means = text.groupby("system")["value"].mean()
    assert means["oracle"] > means["shuffled"], means.to_dict()
    assert result.model_calls == 2 * len(rows)
