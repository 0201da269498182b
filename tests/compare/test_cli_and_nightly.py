"""``omnieval compare`` exit codes and JSON, the nightly self-comparison, notifications, exit 3."""

from __future__ import annotations

import html
import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from omnieval.cli import main
from omnieval.compare import nightly_regression, notify_regression, regression_verdict
from omnieval.config import SuiteConfig

from .conftest import noisy_scores, storybench_scores


def test_cli_json_shape_and_exit_codes(
    make_run: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_run("aaaa0001")
    make_run("bbbb0002")
    runs = str(tmp_path / "runs")
    assert main(["compare", "previous", "latest", "--suite", "demo", "--runs-dir", runs, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {"verdict", "systems", "changed", "top_movers"} <= set(doc)
    assert doc["verdict"] == "GO"
    assert doc["run_a"]["run_id"] == "aaaa0001" and doc["run_b"]["run_id"] == "bbbb0002"
    assert set(doc["changed"]) == {"dataset", "code", "judges", "prompts", "metric_models", "candidates"}
    for per in doc["systems"].values():
        for cell in per.values():
            assert set(cell) == {"a", "b", "delta", "ci95", "p_holm", "mde"}

    # run ids (and unique prefixes) resolve to folders; the text summary leads with the verdict
    assert main(["compare", "aaaa0001", "bbbb00", "--runs-dir", runs]) == 0
    out = capsys.readouterr().out
    assert out.startswith("verdict: GO") and "top movers" not in out

    assert main(["compare", "nope", "bbbb0002", "--runs-dir", runs]) == 2
    assert "unknown run 'nope'" in capsys.readouterr().err
    assert main(["compare", "latest", "previous", "--runs-dir", runs]) == 2
    assert "needs a suite" in capsys.readouterr().err
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "lineage.json").write_text("{not json")
    (broken / "scores.parquet").write_bytes(b"nope")
    err_code = main(["compare", str(broken), "bbbb0002", "--runs-dir", runs])
    assert err_code == 2
    assert "not valid JSON" in capsys.readouterr().err


def test_latest_skips_unsuccessful_runs(make_run: Callable[..., Path], tmp_path: Path) -> None:
    from omnieval.compare import resolve_run

    first = make_run("r1")
    second = make_run("r2")
    (make_run("r3") / "mlflow.json").unlink()  # a run that did not finish
    runs = tmp_path / "runs"
    assert resolve_run("latest", runs_dir=runs, suite="demo") == second
    assert resolve_run("previous", runs_dir=runs, suite="demo") == first


class _Hook(BaseHTTPRequestHandler):
    received: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        length = int(self.headers["Content-Length"])
        _Hook.received.append(
            {"body": json.loads(self.rfile.read(length)), "auth": self.headers.get("X-Token")}
        )
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def webhook() -> Iterator[str]:
    _Hook.received = []
    server = HTTPServer(("127.0.0.1", 0), _Hook)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook"
    server.shutdown()
    server.server_close()


def _suite(tmp_path: Path, notify: list[dict[str, Any]]) -> SuiteConfig:
    return SuiteConfig.model_validate(
        {
            "suite": "demo",
            "systems": {"alpha": {"kind": "oracle"}, "beta": {"kind": "oracle"}},
            "runs_dir": str(tmp_path / "runs"),
            "state_dir": str(tmp_path / "state"),
            "regression": {"bootstrap_draws": 500, "notify": notify},
        }
    )


def test_nightly_regression_writes_verdict_tags_and_notifies(
    make_run: Callable[..., Path], tmp_path: Path, webhook: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    tagged: list[tuple[str, dict[str, str]]] = []
    monkeypatch.setattr(
        "omnieval.compare._mlflow.set_run_tags", lambda run_id, tags: tagged.append((run_id, dict(tags)))
    )
    log = tmp_path / "notes" / "verdicts.jsonl"
    config = _suite(
        tmp_path,
        [
            {"kind": "file", "path": str(log)},
            {"kind": "webhook", "url": webhook, "headers": {"X-Token": "s3cret"}},
        ],
    )
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"texts": [], "files": []}))

    first = make_run("r1")
    doc = nightly_regression(config, first, run_id="r1", dataset_manifest=manifest)
    assert doc["verdict"] == "GO" and doc["baseline"] is None
    assert doc["reasons"] == ["no previous run to compare with"]
    assert (first / "dataset.manifest.json").is_file()
    assert tagged[-1] == ("r1", {"omnieval.regression": "GO", "omnieval.run_folder": str(first.resolve())})

    worse = storybench_scores()
    worse.loc[(worse.system == "beta") & (worse.component == "bertscore_f1"), "value"] *= 0.3
    second = make_run("r2", worse)
    (second / "mlflow.json").unlink()  # the track stage writes it only after the comparison
    (second / "report.html").write_text("<html></html>")
    doc = nightly_regression(config, second, run_id="r2")
    assert doc["verdict"] == "NO-GO" and doc["baseline"]["run_id"] == "r1"
    saved = json.loads((second / "regression.json").read_text())
    assert saved["verdict"] == "NO-GO" and saved["run_id"] == "r2" and saved["suite"] == "demo"
    assert regression_verdict(second) == "NO-GO"
    assert tagged[-1][1]["omnieval.regression"] == "NO-GO"
    assert tagged[-1][1]["omnieval.regression.baseline"] == "r1"

    outcomes = notify_regression(config, second)
    assert [o.ok for o in outcomes] == [True, True], outcomes
    line = json.loads(log.read_text().splitlines()[-1])
    assert line["subject"] == "omnieval demo: NO-GO" and line["verdict"] == "NO-GO"
    assert line["report"] == str(second / "report.html") and line["suite"] == "demo"
    assert any("beta / bertscore_f1" in r for r in line["reasons"])
    (posted,) = _Hook.received
    assert posted["auth"] == "s3cret"
    assert posted["body"]["verdict"] == "NO-GO" and posted["body"]["subject"] == "omnieval demo: NO-GO"
    assert "NO-GO" in posted["body"]["text"]


def test_a_go_notification_and_report_state_what_the_go_rules_out(
    make_run: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("omnieval.compare._mlflow.set_run_tags", lambda run_id, tags: None)
    log = tmp_path / "verdicts.jsonl"
    config = _suite(tmp_path, [{"kind": "file", "path": str(log)}])
    before, after = noisy_scores()
    nightly_regression(config, make_run("r1", before), run_id="r1")
    second = make_run("r2", after)
    doc = nightly_regression(config, second, run_id="r2")
    assert doc["verdict"] == "GO" and doc["mde_power"] == 0.8
    (line,) = [r for r in doc["reasons"] if r.startswith("GO: no bertscore_f1 drop >= ")]
    assert doc["systems"]
    assert all(c["mde"] is not None for cells in doc["systems"].values() for c in cells.values())

    (outcome,) = notify_regression(config, second)
    assert outcome.ok
    sent = json.loads(log.read_text().splitlines()[-1])
    assert line in sent["text"] and line in sent["reasons"]

    from omnieval.reporting import verdict_banner

    assert html.escape(line) in verdict_banner(doc)


def test_mde_metrics_are_logged_on_the_mlflow_run(make_run: Callable[..., Path], mlflow_uri: str) -> None:
    """One real (sqlite) store: MLflow itself must accept the metric names."""
    from mlflow.tracking import MlflowClient

    from omnieval.compare import compare_runs, log_regression_metrics, read_run, regression_metrics
    from omnieval.config import RegressionConfig

    before, after = noisy_scores()
    doc = compare_runs(
        read_run(make_run("r1", before)),
        read_run(make_run("r2", after)),
        RegressionConfig(bootstrap_draws=200),
    )
    expected = {
        f"regression.{system}.{component}.mde": cell["mde"]
        for system, cells in doc["systems"].items()
        for component, cell in cells.items()
    }
    assert regression_metrics(doc) == expected and len(expected) == 6
    # names MLflow would refuse are made safe; cells without a value are not logged
    odd = {"systems": {"sys:1": {"judge.text": {"mde": 0.25}, "wer": {"mde": None}}}}
    assert regression_metrics(odd) == {"regression.sys_1.judge.text.mde": 0.25}

    client = MlflowClient(mlflow_uri)
    run = client.create_run(client.create_experiment("demo"))
    assert log_regression_metrics(run.info.run_id, doc) == expected
    logged = client.get_run(run.info.run_id).data.metrics
    assert {k: v for k, v in logged.items() if k.startswith("regression.")} == pytest.approx(expected)


def test_failing_notifier_does_not_raise(make_run: Callable[..., Path], tmp_path: Path) -> None:
    folder = make_run("r1")
    (folder / "regression.json").write_text(
        json.dumps({"verdict": "GO", "reasons": [], "run_b": {"run_id": "r1"}})
    )
    config = _suite(tmp_path, [{"kind": "webhook", "url": "http://127.0.0.1:9/closed", "timeout_s": 2}])
    (outcome,) = notify_regression(config, folder)
    assert not outcome.ok and outcome.error


def test_webhook_url_from_the_environment_is_read_at_send_time_and_never_shown(
    make_run: Callable[..., Path], tmp_path: Path, webhook: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = make_run("r1")
    (folder / "regression.json").write_text(
        json.dumps({"verdict": "GO", "reasons": [], "run_b": {"run_id": "r1"}})
    )
    config = _suite(tmp_path, [{"kind": "webhook", "url_env": "OMNIEVAL_TEST_HOOK"}])
    monkeypatch.setenv("OMNIEVAL_TEST_HOOK", webhook)
    (outcome,) = notify_regression(config, folder)
    assert outcome.ok and outcome.target == "$OMNIEVAL_TEST_HOOK"
    assert webhook not in json.dumps(config.model_dump(mode="json"))
    monkeypatch.delenv("OMNIEVAL_TEST_HOOK")
    (outcome,) = notify_regression(config, folder)
    assert not outcome.ok and "OMNIEVAL_TEST_HOOK" in str(outcome.error)


def test_webhook_needs_exactly_one_url_source(tmp_path: Path) -> None:
    from pydantic import ValidationError

    from omnieval.config import WebhookNotifierConfig

    with pytest.raises(ValidationError, match="exactly one of url or url_env"):
        WebhookNotifierConfig(kind="webhook")
    with pytest.raises(ValidationError, match="exactly one of url or url_env"):
        WebhookNotifierConfig(kind="webhook", url="https://x.example/a", url_env="HOOK")
    plain = WebhookNotifierConfig(kind="webhook", url="https://hooks.example.com/T000/B000/secret")
    assert plain.display_target == "https://hooks.example.com/…"


def test_run_fail_on_regression_exits_3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "run"
    folder.mkdir()

    def fake_run_suite(_suite: Path, **_options: Any) -> dict[str, Any]:
        return {"run_id": "r", "run_folder": str(folder), "report": str(folder / "report.html")}

    monkeypatch.setattr("omnieval.runner.run_suite", fake_run_suite)
    # `run` checks its SUITE before any work: a shipped suite passes, the run itself is faked.
    suite = str(Path(__file__).resolve().parents[2] / "pipelines" / "nightly.yaml")
    (folder / "regression.json").write_text(json.dumps({"verdict": "NO-GO"}))
    assert main(["run", suite, "--fail-on-regression"]) == 3
    assert main(["run", suite]) == 0
    (folder / "regression.json").write_text(json.dumps({"verdict": "INCONCLUSIVE"}))
    assert main(["run", suite, "--fail-on-regression"]) == 0
