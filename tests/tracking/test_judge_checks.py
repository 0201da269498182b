"""The judges' known-set figures logged on the suite's parent run, beside the checkpoint tags."""

from __future__ import annotations

from omnieval.judges import meta_eval_metrics
from omnieval.tracking.judge_checks import log_judge_checks

HEALTH = {
    "meta_eval": {
        "judges": {
            "cpu/cpu-qwen": {
                "text": {"accuracy": 0.5, "agreement": 0.25, "floor": 0.7, "passed": False, "n_pairs": 12},
                "image": {"accuracy": None, "status": "unavailable"},
            }
        },
        "below_floor": [
            {"judge": "cpu/cpu-qwen", "track": "text", "accuracy": 0.5, "floor": 0.7, "n_pairs": 12}
        ],
        "panels": {"cpu": {"set": {"sha256": "ab" * 32}}},
    }
}


def test_logged_on_a_finished_parent_run(mlflow_uri: str) -> None:
    import mlflow

    from omnieval.tracking import configure_mlflow

    configure_mlflow("omnieval/judge-checks")
    with mlflow.start_run(run_name="suite") as run:
        mlflow.set_tag("omnieval.judge.cpu-qwen.revision", "r1")
    log_judge_checks(run.info.run_id, *meta_eval_metrics(HEALTH))
    data = mlflow.MlflowClient(mlflow_uri).get_run(run.info.run_id).data
    assert data.metrics["meta_eval.cpu.cpu-qwen.text.accuracy"] == 0.5
    assert data.metrics["meta_eval.cpu.cpu-qwen.text.agreement"] == 0.25
    assert data.metrics["meta_eval.cpu.cpu-qwen.text.passed"] == 0.0
    assert data.metrics["meta_eval.cpu.cpu-qwen.text.n_pairs"] == 12.0
    assert not any(k.startswith("meta_eval.cpu.cpu-qwen.image") for k in data.metrics)
    assert data.tags["omnieval.meta_eval.below_floor"] == "cpu/cpu-qwen/text"
    assert data.tags["omnieval.meta_eval.cpu.set_sha256"] == "ab" * 32
    log_judge_checks(run.info.run_id, {}, {})  # nothing to log: no call, no error
