"""The commands that need no run, as a user runs them: the installed ``omnieval`` console script in a
new process, on every benchmark each one applies to, each checked for what it wrote or printed.

The commands that read a run (``run`` itself, ``lineage``, ``compare``, ``trend``, ``aggregate``,
``analyze``, ``view``, ``human-tasks``, ``metrics acbench``) are checked on the run folders the
end-to-end modules make (tests/e2e/); ``serve`` in tests/flows/test_serve_schedule.py; the refusals
of most commands in tests/cli/test_fresh_shell_sweep.py. The processes are independent, so they run
a few at a time; the three metric commands, each loading one packaged model, are apart and marked slow.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import yaml

OMNIEVAL = str(Path(sys.executable).with_name("omnieval"))
ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data"
BENCHMARKS = ("acbench", "prism", "storybench")
PRISM_IDS = ("on-01", "off-01", "mix-01")
"""One clip per subset: ``make-sample prism`` writes all 29 in ~1 min, these three in seconds."""


@dataclass(frozen=True)
class Done:
    """One command line and what it did."""

    args: tuple[str, ...]
    code: int
    out: str
    err: str

    def ok(self) -> Done:
        assert self.code == 0, (self.args, self.code, self.err[-3000:])
        assert "Traceback" not in self.err, self.err[-3000:]
        return self

    def json(self) -> object:
        return json.loads(self.ok().out)


def _run(args: Sequence[object], cwd: Path, **env: str) -> Done:
    argv = tuple(str(a) for a in args)
    done = subprocess.run(
        [OMNIEVAL, *argv],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **env},
        timeout=600,
    )
    return Done(argv, done.returncode, done.stdout, done.stderr)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _files(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): _sha256(p) for p in sorted(folder.rglob("*")) if p.is_file()}


# -- inputs ------------------------------------------------------------------------------------------

PROBE_N = 40


def _hidden_states(path: Path) -> None:
    """Two layers of 8 features for 40 clips: layer0 is noise, layer1 the same noise with the gender
    label added to every feature (+-3 SD), so a linear probe finds gender in layer1 only."""
    rng = np.random.default_rng(0)
    labels = np.array(["female", "male"] * (PROBE_N // 2))
    noise = rng.normal(size=(PROBE_N, 8)).astype(np.float32)
    signal = noise + np.where(labels == "male", 3.0, -3.0).astype(np.float32)[:, None]
    np.savez(path, layer0=noise, layer1=signal, labels__gender=labels)


def _pin_suite(tmp: Path) -> Path:
    """The nightly suite with its drift anchors copied here and a scripted text judge as the drift
    panel (tests/judges/known_scripts.py: 9 when the narration is the reference's, else 2)."""
    sys.path.insert(0, str(ROOT / "tests" / "judges"))
    try:
        import known_scripts
    finally:
        sys.path.remove(str(ROOT / "tests" / "judges"))
    anchors = tmp / "anchors"
    shutil.copytree(DATA / "anchors" / "storybench", anchors)
    (anchors / "pinned.json").unlink()
    suite = yaml.safe_load((ROOT / "pipelines" / "nightly.yaml").read_text())
    suite.update(
        suite="pin-test",
        state_dir=str(tmp / "pin-state"),
        runs_dir=str(tmp / "pin-runs"),
        systems={"oracle": {"kind": "oracle"}},
        judges={"panels": []},
    )
    suite["dataset"] = {"name": "storybench-sample", "path": str(DATA / "storybench-sample")}
    suite["drift"] = {
        **suite["drift"],
        "anchors": str(anchors),
        "panel": known_scripts.write_panel(tmp, "prefers_ground_truth"),
    }
    path = tmp / "pin-suite.yaml"
    path.write_text(yaml.safe_dump(suite))
    return path


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("commands")


@pytest.fixture(scope="module")
def done(tmp: Path) -> dict[str, Done]:
    """Every command without a model, a few processes at a time."""
    _hidden_states(tmp / "hidden.npz")
    pin_suite = _pin_suite(tmp)
    # ``judge pin-known-set`` rewrites the known set's manifest inside the package: here it rewrites
    # a copy of the package that the console script imports first (PYTHONPATH), not the checkout.
    shutil.copytree(
        ROOT / "src" / "omnieval", tmp / "src" / "omnieval", ignore=shutil.ignore_patterns("__pycache__")
    )

    def sample_then_validate(benchmark: str) -> tuple[Done, Done]:
        out = tmp / "samples" / benchmark
        extra = ("--ids", *PRISM_IDS) if benchmark == "prism" else ()
        made = _run(["make-sample", benchmark, out, *extra], tmp)
        # The gate (Great Expectations) on one benchmark: the flows of tests/e2e gate all three.
        gate = ("--gate", "--gate-out", tmp / "gate.json") if benchmark == "storybench" else ()
        checked = _run(
            ["validate", out, "--json", "--manifest", tmp / f"{benchmark}.manifest.json", *gate], tmp
        )
        return made, checked

    cases = {
        "benchmarks": lambda: _run(["benchmarks", "--json"], tmp),
        "audit": lambda: _run(
            ["audit", DATA / "storybench-sample", "--out", tmp / "audit", "--engine", "local", "--json"], tmp
        ),
        "train probe": lambda: _run(
            [
                *("train", "probe", tmp / "hidden.npz", "--out", tmp / "probe"),
                *("--repeats", "2", "--steps", "100"),
            ],
            tmp,
        ),
        "judge prompts": lambda: _run(["judge", "prompts", "--json"], tmp),
        "judge pin-anchors": lambda: _run(
            ["judge", "pin-anchors", pin_suite], tmp, PYTHONPATH=str(ROOT / "tests" / "judges")
        ),
        "judge pin-known-set": lambda: _run(
            ["judge", "pin-known-set", "storybench", "--dataset", DATA / "storybench-sample"],
            tmp,
            PYTHONPATH=str(tmp / "src"),
        ),
        **{f"sample {b}": (lambda b=b: sample_then_validate(b)) for b in BENCHMARKS},
    }
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {name: pool.submit(job) for name, job in cases.items()}
        results = {name: future.result() for name, future in futures.items()}
    flat: dict[str, Done] = {}
    for name, result in results.items():
        if isinstance(result, tuple):
            flat[f"make-{name}"], flat[f"validate {name.split()[1]}"] = result
        else:
            flat[name] = result
    return flat


# -- benchmarks, make-sample, validate, audit --------------------------------------------------------


def test_benchmarks_lists_each_benchmark_with_its_sample(done: dict[str, Done]) -> None:
    listed = {b["name"]: b for b in done["benchmarks"].json()}  # type: ignore[union-attr]
    assert set(BENCHMARKS) <= set(listed), sorted(listed)
    for name in BENCHMARKS:
        assert listed[name]["sample"] == f"data/{name}-sample", listed[name]
        assert (ROOT / listed[name]["sample"] / listed[name]["dataset_marker"]).exists(), listed[name]
    assert set(listed["storybench"]["judge_tracks"]) == {"text", "image", "speech", "integrated"}
    assert set(listed["storybench"]["modalities"]) == {"text", "image", "speech"}
    assert "oracle" in listed["storybench"]["systems"] and listed["acbench"]["judge_tracks"] == []
    assert set(listed["acbench"]["conditions"]) == {"original", "s_to_t", "i_to_t", "all_to_t", "oracle"}
    assert {"ground-truth", "swapped-audio"} <= set(listed["prism"]["systems"])


def test_make_sample_rewrites_the_committed_samples_byte_for_byte(done: dict[str, Done], tmp: Path) -> None:
    samples = tmp / "samples"
    assert "wrote 20 transitions, 24 pages, 4 books" in done["make-sample storybench"].ok().out
    done["make-sample acbench"].ok()
    assert _files(samples / "storybench") == _files(DATA / "storybench-sample")
    assert _files(samples / "acbench") == _files(DATA / "acbench-sample")
    # PRISM: the three clips asked for, each byte-identical to the committed one, with its manifest row.
    assert "wrote 3 clips" in done["make-sample prism"].ok().out
    committed = {
        r["id"]: r
        for r in map(json.loads, (DATA / "prism-sample" / "manifest.jsonl").read_text().splitlines())
    }
    written = [json.loads(line) for line in (samples / "prism" / "manifest.jsonl").read_text().splitlines()]
    assert [r["id"] for r in written] == sorted(PRISM_IDS, key=list(committed).index)
    for row in written:
        assert row == committed[row["id"]]
        video = row["reference_video"]
        assert _sha256(samples / "prism" / video) == _sha256(DATA / "prism-sample" / video), video


def test_validate_accepts_each_written_sample_and_fingerprints_it(done: dict[str, Done], tmp: Path) -> None:
    outcomes = {b: done[f"validate {b}"].json() for b in BENCHMARKS}
    for benchmark, outcome in outcomes.items():
        assert outcome["ok"] is True and outcome["benchmark"] == benchmark, outcome  # type: ignore[index]
    assert outcomes["storybench"]["n_rows"] == 20 and outcomes["storybench"]["n_books"] == 4  # type: ignore[index]
    assert outcomes["acbench"]["n_rows"] == 40  # type: ignore[index]
    assert outcomes["prism"]["subsets"] == {"on_screen": 1, "off_screen": 1, "mixed": 1}  # type: ignore[index]
    gate = json.loads((tmp / "gate.json").read_text())
    assert gate["success"] is True and gate["n_failed"] == 0 and gate["evaluated"] > 50, gate
    assert outcomes["storybench"]["gate"]["success"] is True  # type: ignore[index]
    # The fingerprint manifest holds every file of the sample with its real SHA-256.
    manifest = json.loads((tmp / "storybench.manifest.json").read_text())
    assert manifest["digest"] == outcomes["storybench"]["digest"]  # type: ignore[index]
    folder = tmp / "samples" / "storybench"
    listed = {f["path"]: f["sha256"] for f in [manifest["parquet"], *manifest["files"]]}
    # Every file but the README: the release parquet, images, texts, samples and metadata.
    assert listed == {path: sha for path, sha in _files(folder).items() if path != "README.md"}


def test_audit_writes_clusters_and_overlaps_of_the_sample(done: dict[str, Done], tmp: Path) -> None:
    printed = done["audit"].json()
    assert printed["n_instances"] == 20 and printed["n_clusters"] == 0, printed  # type: ignore[index]
    clusters = json.loads((tmp / "audit" / "clusters.json").read_text())
    assert clusters["benchmark"] == "storybench" and clusters["n_pages"] == 24
    assert len(clusters["instance_ids"]) == 20 and clusters["clusters"] == []
    # The audited folder is the sample validate fingerprinted (the same bytes as make-sample's).
    assert clusters["dataset_digest"] == done["validate storybench"].json()["digest"]  # type: ignore[index]
    overlaps = json.loads((tmp / "audit" / "overlaps.json").read_text())
    assert overlaps["n_instances"] == 20
    assert "storybench-sample" in (tmp / "audit" / "audit.html").read_text()


# -- train probe, judge prompts / pin-anchors / pin-known-set ---------------------------------------


def test_train_probe_finds_the_label_in_the_layer_that_holds_it(done: dict[str, Done], tmp: Path) -> None:
    assert "best layer1" in done["train probe"].ok().out
    results = {r["layer"]: r for r in json.loads((tmp / "probe" / "probe.json").read_text())["results"]}
    assert results["layer1"]["balanced_accuracy"] == 1.0
    assert results["layer0"]["balanced_accuracy"] < 0.8  # noise: near chance (0.5)
    assert all(r["n"] == PROBE_N and r["chance"] == 0.5 for r in results.values())
    assert (tmp / "probe" / "probe.csv").read_text().startswith("feature,layer,layer_index,balanced_accuracy")
    assert (tmp / "probe" / "probe.png").read_bytes()[:4] == b"\x89PNG"


def test_judge_prompts_lists_every_benchmarks_templates(done: dict[str, Done]) -> None:
    prompts = done["judge prompts"].json()
    tracks = {(p["benchmark"], p["track"]) for p in prompts}  # type: ignore[union-attr]
    assert {("storybench", t) for t in ("text", "image", "speech", "integrated")} <= tracks
    assert {("prism", "stage_1"), ("prism", "stage_2")} <= tracks
    hashes = [p["sha256"] for p in prompts]  # type: ignore[union-attr]
    assert all(len(h) == 64 for h in hashes) and len(set(hashes)) == len(hashes)
    assert prompts
    assert all(p["version"] for p in prompts)  # type: ignore[union-attr]


def test_judge_pin_anchors_pins_what_the_judge_answered(done: dict[str, Done], tmp: Path) -> None:
    pinned_to = tmp / "anchors" / "pinned.json"
    assert done["judge pin-anchors"].ok().out.strip() == (
        f"pinned 6 anchor verdicts of panel known-scripted-ground-truth to {pinned_to}"
    )
    pinned = json.loads(pinned_to.read_text())
    # The scripted panel judges the text track only: the six narration anchors, not the spoken lines.
    shipped = json.loads((DATA / "anchors" / "storybench" / "manifest.json").read_text())["anchors"]
    assert set(pinned["anchors"]) == {a["id"] for a in shipped if a["track"] == "text"}
    assert {a["track"] for a in shipped} == {"text", "speech", "image", "integrated"}
    for anchor, verdicts in pinned["anchors"].items():
        scores = set(verdicts["scripted-ground-truth"]["scores"].values())
        # The oracle anchors are the reference narration (9); copy-current and shuffled are not (2).
        assert scores == ({9.0} if "-oracle-" in anchor else {2.0}), (anchor, scores)


def test_judge_pin_known_set_rebuilds_the_pinned_variants(done: dict[str, Done], tmp: Path) -> None:
    manifest = tmp / "src" / "omnieval" / "benchmarks" / "storybench" / "known_set.json"
    out = done["judge pin-known-set"].ok().out
    # 60: the image pairs' blank and noise variants included (0 changed: the shipped file is current).
    assert out.startswith(f"pinned 60 variants of storybench-known (0 changed) to {manifest}"), out
    shipped = ROOT / "src" / "omnieval" / "benchmarks" / "storybench" / "known_set.json"
    assert json.loads(manifest.read_text()) == json.loads(shipped.read_text())


# -- metrics: one packaged model each ----------------------------------------------------------------

LINE = "Come back here, you little rascal, before the tide takes you away."


@pytest.fixture(scope="module")
def metrics(tmp: Path) -> dict[str, Done]:
    from omnieval.audio import espeak_wav

    fast = espeak_wav(LINE, tmp / "fast.wav", voice="en-us+f3", rate_wpm=330, pitch=50)
    images = sorted((DATA / "storybench-sample" / "images" / "omnieval-adventures").rglob("p0*.png"))[:2]
    cases = {
        "speech": ["metrics", "speech", fast, "--json"],
        "text": [
            *("metrics", "text", "--json"),
            *("--ref", "The fox ran into the dark woods."),
            *("--hyp", "A fox ran into the dark forest."),
        ],
        "image": ["metrics", "image", *images, "--json"],
    }
    with ThreadPoolExecutor(max_workers=3) as pool:
        futures = {name: pool.submit(_run, args, tmp) for name, args in cases.items()}
        return {name: future.result() for name, future in futures.items()}


@pytest.mark.slow
def test_metrics_speech_hears_a_fast_line(metrics: dict[str, Done], tmp: Path) -> None:
    [line] = metrics["speech"].ok().out.splitlines()
    fields = json.loads(line)
    assert fields["path"] == str(tmp / "fast.wav") and fields["status"] == "ok", fields
    assert fields["speed"] == "fast" and fields["words_per_second"] > 4.0, fields
    assert fields["transcript"].lower().startswith("come back here"), fields["transcript"]


@pytest.mark.slow
def test_metrics_text_scores_a_paraphrase(metrics: dict[str, Done]) -> None:
    score = metrics["text"].json()
    assert score["status"] == "ok" and score["encoder"] == "minilm", score  # type: ignore[index]
    p, r, f1 = score["precision"], score["recall"], score["f1"]  # type: ignore[index]
    assert 0.7 < f1 < 1.0 and f1 == pytest.approx(2 * p * r / (p + r))


@pytest.mark.slow
def test_metrics_image_compares_two_pages(metrics: dict[str, Done]) -> None:
    score = metrics["image"].json()
    assert score["status"] == "ok", score  # type: ignore[index]
    assert score["backbone"] in ("efficientnet-lite0", "clip-vit-b-32")  # type: ignore[index]
    assert 0.0 < score["similarity"] < 0.999  # type: ignore[index]
