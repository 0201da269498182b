from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from omnieval.cli import main


def test_help_lists_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for command in ("run", "validate", "lineage", "serve"):
        assert command in out


def test_import_omnieval_cli_stays_light() -> None:
    code = (
        "import sys, omnieval.cli; omnieval.cli.build_parser(); "
        "heavy = [m for m in ('torch', 'mlflow', 'great_expectations', 'transformers', 'prefect', 'llama_cpp') "
        "if m in sys.modules]; print(heavy)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_lineage_reads_a_run_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "runs" / "nightly" / "abc123"
    folder.mkdir(parents=True)
    lineage = {
        "run_id": "abc123",
        "dataset": {"name": "s", "path": "data/s", "version": "d1", "dvc_md5": "m1.dir", "git_rev": "g1"},
        "code": {"git_sha": "g1", "git_dirty": False, "package_digest": "p" * 64},
        "systems": {"oracle": {"kind": "oracle"}},
        "metrics": {"oracle": {"bertscore": {"model_path": "/x/minilm", "sha256": "e" * 64}}},
        "judges": {"cpu": {"judges": {"qwen": {"revision": "r1", "sha256": "f" * 64}}}},
        "seeds": {"analyses": 0},
    }
    (folder / "lineage.json").write_text(json.dumps(lineage))
    assert main(["lineage", "abc1", "--runs-dir", str(tmp_path / "runs")]) == 0
    out = capsys.readouterr().out
    assert "d1" in out and "m1.dir" in out and "e" * 64 in out and "f" * 64 in out
    # An unknown run is bad input (exit 2), as in omnieval compare.
    assert main(["lineage", "nope", "--runs-dir", str(tmp_path / "runs")]) == 2
    assert "not found" in capsys.readouterr().err


def test_make_sample_writes_a_benchmarks_sample_and_refuses_an_unknown_one(tmp_path: Path) -> None:
    import subprocess
    import sys

    out = tmp_path / "acbench"
    done = subprocess.run(
        [str(Path(sys.executable).with_name("omnieval")), "make-sample", "acbench", str(out)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert (out / "manifest.jsonl").is_file() and "wrote" in done.stdout
    bad = subprocess.run(
        [str(Path(sys.executable).with_name("omnieval")), "make-sample", "nope", str(tmp_path / "x")],
        capture_output=True,
        text=True,
    )
    assert bad.returncode != 0 and "nope" in bad.stderr and "Traceback" not in bad.stderr
    assert not (tmp_path / "x").exists()
