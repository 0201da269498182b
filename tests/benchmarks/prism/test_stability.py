"""PRISM-Bench judge stability (FORMATS.md section 8) against a hand-computed case and an independent
implementation (``statistics`` and explicit loops), the judge ablation, and ``omnieval analyze``."""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from itertools import combinations
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import omnieval.benchmarks.prism._analyses  # noqa: F401  (registers the prism analyses)
from benchmarks.prism._tables import frame, make_prism_scores, row
from omnieval.analysis import AnalysisConfig, analysis_names, run_analyses
from omnieval.benchmarks.prism._stability import cohens_d, judge_ablation, pooled_sd, stability
from omnieval.cli import main
from omnieval.scores import write_scores
from omnieval_testkit.storybench_synthetic import make_scores

GT = "ground_truth"


# -- hand-computed case ---------------------------------------------------------------------------------


def _tiny() -> pd.DataFrame:
    a, b = [6.0, 7.0, 8.0], [4.0, 4.0, 7.0]
    gt_a, gt_b = [8.0, 8.0, 9.0], [8.0, 9.0, 9.0]
    rows = []
    for k in range(3):
        iid = f"i{k}"
        rows += [
            row("A", iid, "audio_quality", "speech", a[k]),
            row("B", iid, "audio_quality", "speech", b[k]),
            row(GT, iid, "audio_quality", "speech", gt_a[k], paired_with="A"),
            row(GT, iid, "audio_quality", "speech", gt_b[k], paired_with="B"),
        ]
    return frame(rows)


def test_hand_computed_case() -> None:
    # A 6,7,8 (sd 1) vs B 4,4,7 (sd sqrt 3): pooled sqrt(2), d_signal = 2 / sqrt(2) = sqrt(2).
    # GT beside A 8,8,9 vs beside B 8,9,9 (each sd sqrt(1/3)): d_bias = (-1/3) / sqrt(1/3) = -sqrt(1/3).
    doc = stability(_tiny())
    s = doc["subsets"]["off_screen"]
    assert s["d_signal"] == pytest.approx(math.sqrt(2), rel=1e-12)
    assert s["d_bias"] == pytest.approx(math.sqrt(1 / 3), rel=1e-12)
    assert s["snr"] == pytest.approx(math.sqrt(6), rel=1e-12)
    assert s["std"] == pytest.approx(math.sqrt(1 / 3), rel=1e-12)
    assert doc["pairs"] == [
        {
            "subset": "off_screen",
            "system_a": "A",
            "system_b": "B",
            "d_bias": pytest.approx(-math.sqrt(1 / 3), rel=1e-12),
            "d_signal": pytest.approx(math.sqrt(2), rel=1e-12),
            "snr": pytest.approx(math.sqrt(6), rel=1e-12),
        }
    ]
    assert doc["dimensions"]["off_screen"] == {"audio_quality": s}
    assert doc["ratio_of_means"]["subsets"]["off_screen"] == pytest.approx(math.sqrt(6), rel=1e-12)
    assert set(doc) >= {"subsets", "dimensions", "pairs"}


def test_pooled_sd_formula_with_unequal_sizes() -> None:
    a, b = [1.0, 2.0, 4.0, 9.0], [3.0, 5.0]
    s1, s2 = statistics.stdev(a), statistics.stdev(b)
    assert pooled_sd(a, b) == pytest.approx(math.sqrt((3 * s1**2 + 1 * s2**2) / 4), rel=1e-12)
    assert cohens_d([1.0], [2.0, 3.0]) is None


def test_degenerate_pairs_are_null_and_json_safe() -> None:
    rows = []
    for k in range(3):
        iid = f"i{k}"
        # Constant ground truth in both contexts (pooled SD 0 -> d_bias undefined) while systems differ.
        rows += [
            row("A", iid, "audio_quality", "speech", 5.0 + k),
            row("B", iid, "audio_quality", "speech", 2.0 + k * k),
            row(GT, iid, "audio_quality", "speech", 8.0, paired_with="A"),
            row(GT, iid, "audio_quality", "speech", 8.0, paired_with="B"),
            # C is judged on one item only: no pair with it has an effect size.
            *([row("C", iid, "audio_quality", "speech", 6.0)] if k == 0 else []),
            *([row(GT, iid, "audio_quality", "speech", 7.0, paired_with="C")] if k == 0 else []),
        ]
    doc = stability(frame(rows))
    pairs = {(p["system_a"], p["system_b"]): p for p in doc["pairs"]}
    assert pairs[("A", "B")]["d_bias"] is None and pairs[("A", "B")]["snr"] is None
    assert pairs[("A", "B")]["d_signal"] is not None
    assert pairs[("A", "C")]["d_signal"] is None and pairs[("B", "C")]["d_bias"] is None
    s = doc["subsets"]["off_screen"]
    assert s["d_bias"] is None and s["snr"] is None
    assert s["d_signal"] == pytest.approx(abs(pairs[("A", "B")]["d_signal"]))
    assert s["std"] == 0.0  # A and B contexts have SD 0; C's single total has none
    json.dumps(doc, allow_nan=False)


# -- independent implementation -----------------------------------------------------------------------


def reference_stability(records: list[dict[str, Any]]) -> dict[str, Any]:
    """FORMATS.md section 8 from its text: dict loops and the statistics module."""
    judged: dict[tuple[str, str, str, str, str, str], list[float]] = defaultdict(list)
    cells: set[tuple[str, str, str, str, str, str]] = set()
    for r in records:
        key = (r["subset"], r["system"], r["paired_with"], r["instance_id"], r["track"], r["criterion"])
        cells.add(key)
        if r["status"] in ("ok", "repaired"):
            judged[key].append(r["value"])

    def totals(
        subset: str, dim: str | None
    ) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]]:
        parts: dict[tuple[str, str, str], list[float | None]] = defaultdict(list)
        for key in cells:
            if key[0] != subset or (dim is not None and key[4] != dim):
                continue
            values = judged.get(key)
            parts[(key[1], key[2], key[3])].append(statistics.fmean(values) if values else None)
        own: dict[str, dict[str, float]] = defaultdict(dict)
        beside: dict[str, dict[str, float]] = defaultdict(dict)
        for (system, paired, iid), vals in parts.items():
            if any(v is None for v in vals):
                continue
            total = math.fsum(v for v in vals if v is not None)
            if system == GT:
                beside[paired][iid] = total
            else:
                own[system][iid] = total
        return own, beside

    def d(x: list[float], y: list[float]) -> float | None:
        if len(x) < 2 or len(y) < 2:
            return None
        var = ((len(x) - 1) * statistics.variance(x) + (len(y) - 1) * statistics.variance(y)) / (
            len(x) + len(y) - 2
        )
        if var == 0:
            return None
        return (statistics.fmean(x) - statistics.fmean(y)) / math.sqrt(var)

    def block(own: dict[str, dict[str, float]], beside: dict[str, dict[str, float]]) -> dict[str, Any]:
        systems = sorted(set(own) | set(beside))
        sds = [statistics.stdev(list(beside[m].values())) for m in systems if len(beside.get(m, {})) >= 2]
        biases, signals, ratios, pairs = [], [], [], []
        for a, b in combinations(systems, 2):
            items = [
                i
                for i in own.get(a, {})
                if i in beside.get(a, {}) and i in own.get(b, {}) and i in beside.get(b, {})
            ]
            db = d([beside[a][i] for i in items], [beside[b][i] for i in items])
            ds = d([own[a][i] for i in items], [own[b][i] for i in items])
            if db is not None:
                biases.append(abs(db))
            if ds is not None:
                signals.append(abs(ds))
            ratio = abs(ds) / abs(db) if db not in (None, 0.0) and ds is not None else None
            if ratio is not None:
                ratios.append(ratio)
            pairs.append((a, b, db, ds, ratio))
        mean = lambda xs: statistics.fmean(xs) if xs else None  # noqa: E731
        return {
            "std": mean(sds),
            "d_bias": mean(biases),
            "d_signal": mean(signals),
            "snr": mean(ratios),
            "pairs": pairs,
        }

    subsets = sorted({k[0] for k in cells})
    dims = {s: sorted({k[4] for k in cells if k[0] == s}) for s in subsets}
    return {
        "subsets": {s: block(*totals(s, None)) for s in subsets},
        "dimensions": {s: {dim: block(*totals(s, dim)) for dim in dims[s]} for s in subsets},
    }


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


@pytest.mark.parametrize(
    ("seed", "invalid_rate", "missing_rate", "judges"),
    [
        (10, 0.0, 0.0, (("p", "j1"),)),
        (11, 0.1, 0.05, (("p", "j1"), ("p", "j2"))),
        (12, 0.25, 0.2, (("p", "j1"), ("q", "j2"), ("q", "j3"))),
    ],
)
def test_matches_independent_implementation(
    seed: int, invalid_rate: float, missing_rate: float, judges: tuple[tuple[str, str], ...]
) -> None:
    table = make_prism_scores(
        seed=seed,
        systems=("m1", "m2", "m3", "m4"),
        items_per_subset=9,
        judges=judges,
        invalid_rate=invalid_rate,
        missing_rate=missing_rate,
        integer=seed % 2 == 0,
    )
    doc = stability(table)
    ref = reference_stability(table.to_dict("records"))
    assert set(doc["subsets"]) == set(ref["subsets"])
    for subset, expected in ref["subsets"].items():
        for key in ("std", "d_bias", "d_signal", "snr"):
            assert _close(doc["subsets"][subset][key], expected[key]), (subset, key)
        got_pairs = [p for p in doc["pairs"] if p["subset"] == subset]
        assert len(got_pairs) == len(expected["pairs"]) == 6
        for p, (a, b, db, ds, ratio) in zip(got_pairs, expected["pairs"], strict=True):
            assert (p["system_a"], p["system_b"]) == (a, b)
            assert _close(p["d_bias"], db) and _close(p["d_signal"], ds) and _close(p["snr"], ratio)
    for subset, per_dim in ref["dimensions"].items():
        assert set(doc["dimensions"][subset]) == set(per_dim)
        for dim, expected in per_dim.items():
            for key in ("std", "d_bias", "d_signal", "snr"):
                assert _close(doc["dimensions"][subset][dim][key], expected[key]), (subset, dim, key)
    assert "av_coherence" not in doc["dimensions"]["off_screen"]
    json.dumps(doc, allow_nan=False)


def test_judge_ablation_rows_equal_per_panel_and_per_judge_stability() -> None:
    table = make_prism_scores(
        seed=7, items_per_subset=5, judges=(("gemini", "pro"), ("qwen", "a"), ("qwen", "b"))
    )
    doc = judge_ablation(table)
    labels = [(e["panel"], e["judge"]) for e in doc["judges"]]
    assert labels == [("gemini", None), ("qwen", None), ("qwen", "a"), ("qwen", "b")]
    assert doc["judges"][0]["subsets"] == stability(table, panel="gemini")["subsets"]
    assert doc["judges"][1]["subsets"] == stability(table, panel="qwen")["subsets"]
    only_a = table[(table["panel"] == "qwen") & (table["judge"] == "a")]
    assert doc["judges"][2]["dimensions"] == stability(only_a)["dimensions"]
    assert doc["judges"][1]["n_judges"] == 2


# -- the analysis registry and omnieval analyze -------------------------------------------------------


def test_analyze_writes_stability_json_for_a_prism_table(tmp_path: Path) -> None:
    table = make_prism_scores(seed=8, items_per_subset=4, judges=(("a", "j"), ("b", "j")))
    scores = tmp_path / "scores.parquet"
    write_scores(table, scores)
    assert main(["analyze", str(scores), "--out", str(tmp_path / "out"), "--only", "stability"]) == 0
    written = json.loads((tmp_path / "out" / "stability.json").read_text())
    assert written["status"] == "ok"
    expected = json.loads(json.dumps(stability(table)))
    for key in ("subsets", "dimensions", "pairs"):
        assert written[key] == expected[key]
    # Default selection: the prism analyses only; storybench ones named explicitly are skipped.
    outputs = run_analyses(table, tmp_path / "all", config=AnalysisConfig())
    assert set(outputs) == set(analysis_names("prism")) == {"stability", "judge_ablation", "human_preference"}
    assert outputs["judge_ablation"].status == "ok"
    assert outputs["human_preference"].status == "skipped"
    named = run_analyses(table, tmp_path / "named", only=["bootstrap", "stability"])
    assert named["bootstrap"].status == "skipped" and "storybench" in (named["bootstrap"].reason or "")
    assert named["stability"].status == "ok"


def test_prism_analyses_skip_on_a_storybench_table(tmp_path: Path) -> None:
    table = make_scores(benchmark="storybench", n_systems=3, n_instances=5, seed=0)
    outputs = run_analyses(table, tmp_path, only=["stability", "judge_ablation"])
    for name in ("stability", "judge_ablation"):
        assert outputs[name].status == "skipped"
        assert "prism" in (outputs[name].reason or "")
        assert json.loads((tmp_path / f"{name}.json").read_text())["status"] == "skipped"
    assert "stability" not in run_analyses(
        table, tmp_path / "default", only=None, config=AnalysisConfig(bootstrap_draws=50)
    )


# -- over the systems under test only ----------------------------------------------------------------

PROBES = ("muted", "swapped-audio", "ground-truth")
"""A diagnostic probe of each default kind and the reference system (the ground truth beside itself)."""


def _without(table: pd.DataFrame, systems: tuple[str, ...]) -> pd.DataFrame:
    """``table`` without the rows of ``systems`` and of the ground truth judged beside them."""
    gone = table["system"].isin(systems) | ((table["system"] == GT) & table["paired_with"].isin(systems))
    return table[~gone].reset_index(drop=True)


def _as_json(doc: Any) -> str:
    return json.dumps(doc, sort_keys=True, allow_nan=False)


def test_a_diagnostic_probe_changes_no_stability_or_ablation_value(tmp_path: Path) -> None:
    judges = (("gemini", "pro"), ("qwen", "a"), ("qwen", "b"))
    with_probes = make_prism_scores(
        seed=21, systems=("m1", "m2", "m3", *PROBES), items_per_subset=5, judges=judges
    )
    without = _without(with_probes, PROBES)
    assert set(with_probes["system"]) - set(without["system"]) == set(PROBES)
    # The whole documents, byte for byte, as the functions return them and as omnieval analyze writes them.
    assert _as_json(stability(with_probes)) == _as_json(stability(without))
    assert _as_json(judge_ablation(with_probes)) == _as_json(judge_ablation(without))
    written = {}
    for name, table in (("with", with_probes), ("without", without)):
        out = tmp_path / name
        run_analyses(table, out, only=["stability", "judge_ablation"])
        written[name] = {f: (out / f).read_text() for f in ("stability.json", "judge_ablation.json")}
    assert written["with"] == written["without"]
    doc = stability(with_probes)
    assert doc["systems_under_test"] == ["m1", "m2", "m3"]
    named = {p["system_a"] for p in doc["pairs"] + doc["dimension_pairs"]} | {
        p["system_b"] for p in doc["pairs"] + doc["dimension_pairs"]
    }
    assert named == {"m1", "m2", "m3"}
    # Before, a probe was one more system: its pairs moved the subset means.
    assert len(doc["pairs"]) == 3 * len(doc["subsets"])


def test_diagnostic_ids_come_from_the_run_as_in_the_calibration(tmp_path: Path) -> None:
    table = make_prism_scores(seed=22, systems=("m1", "m2", "my-probe"), items_per_subset=4)
    baseline = stability(_without(table, ("my-probe",)))
    # By id alone my-probe is a system under test (as in the calibration); named diagnostic, it is not.
    assert stability(table)["systems_under_test"] == ["m1", "m2", "my-probe"]
    assert _as_json(stability(table, facts={"diagnostic": ["my-probe"]})) == _as_json(baseline)
    config = AnalysisConfig(diagnostic=("my-probe",))
    run_analyses(table, tmp_path, only=["stability"], config=config)
    written = json.loads((tmp_path / "stability.json").read_text())
    assert written["systems_under_test"] == ["m1", "m2"]
    assert written["subsets"] == json.loads(json.dumps(baseline["subsets"]))


def test_fewer_than_two_systems_under_test_is_not_computed() -> None:
    from omnieval.benchmarks.prism._report import ablation_html, stability_html

    table = make_prism_scores(seed=23, systems=("m1", *PROBES), judges=(("p", "j1"), ("q", "j2")))
    doc = stability(table)
    assert doc["not_computed"] == "fewer than two systems under test (n = 1)"
    assert doc["systems_under_test"] == ["m1"]
    assert (doc["subsets"], doc["dimensions"], doc["pairs"], doc["dimension_pairs"]) == ({}, {}, [], [])
    ablation = judge_ablation(table)
    assert ablation["not_computed"] == doc["not_computed"] and ablation["judges"] == []
    only_probes = stability(_without(table, ("m1",)))
    assert only_probes["not_computed"] == "fewer than two systems under test (n = 0)"
    assert "Not computed: fewer than two systems under test (n = 1)." in stability_html(doc)
    assert "Not computed: fewer than two systems under test (n = 1)." in ablation_html(ablation)
    json.dumps(doc, allow_nan=False)


def test_the_shipped_suite_stability_is_over_its_systems_under_test(tmp_path: Path) -> None:
    from omnieval.benchmarks import RunFacts
    from omnieval.config import load_suite

    suite = load_suite(Path(__file__).resolve().parents[3] / "pipelines" / "prism.yaml")
    bench = suite.bench
    systems = dict(suite.systems)
    facts = RunFacts(diagnostic=bench.diagnostic_systems(systems), reference=bench.reference_systems(systems))
    tested = set(systems) - set(facts.diagnostic or ()) - set(facts.reference or ())
    assert tested == {"cascade-cpu"}  # the probes and the reference beside itself stay out
    table = make_prism_scores(
        seed=24, systems=tuple(systems), items_per_subset=3, judges=(("cpu-cascade", "j"),)
    )
    bench.run_analyses(table, tmp_path / "one", only=["stability"], seed=0, draws=10, facts=facts)
    one = json.loads((tmp_path / "one" / "stability.json").read_text())
    assert one["systems_under_test"] == ["cascade-cpu"] and one["pairs"] == []
    assert one["not_computed"] == "fewer than two systems under test (n = 1)"
    # A second system under test beside the shipped ones: the pairs name exactly the two of them.
    systems["cascade-cpu-b"] = systems["cascade-cpu"]
    facts = RunFacts(diagnostic=bench.diagnostic_systems(systems), reference=bench.reference_systems(systems))
    table = make_prism_scores(
        seed=24, systems=tuple(systems), items_per_subset=3, judges=(("cpu-cascade", "j"),)
    )
    bench.run_analyses(table, tmp_path / "two", only=["stability"], seed=0, draws=10, facts=facts)
    two = json.loads((tmp_path / "two" / "stability.json").read_text())
    assert "not_computed" not in two and two["pairs"]
    assert {(p["system_a"], p["system_b"]) for p in two["pairs"]} == {("cascade-cpu", "cascade-cpu-b")}


def test_analyze_says_not_computed_in_a_fresh_process(tmp_path: Path) -> None:
    import subprocess
    import sys

    table = make_prism_scores(seed=25, systems=("m1", "muted"), items_per_subset=2, judges=(("p", "j"),))
    scores = tmp_path / "scores.parquet"
    write_scores(table, scores)
    done = subprocess.run(
        [
            str(Path(sys.executable).with_name("omnieval")),
            "analyze",
            str(scores),
            "--out",
            str(tmp_path / "out"),
            "--only",
            "stability",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    doc = json.loads((tmp_path / "out" / "stability.json").read_text())
    assert doc["status"] == "ok" and doc["not_computed"] == "fewer than two systems under test (n = 1)"
