"""Links that open each omnieval experiment on its runs in the MLflow UI (printed by ``make ui``).

MLflow 3.17's UI no longer lands on an experiment's runs because of the experiment's kind tag alone:
a browser-wide "GenAI / Model training" switch in the sidebar decides (a fresh browser starts on
GenAI, whose overview shows "Traces 0"). A ``workflowType=machine_learning`` query parameter sets
that switch for the page it opens, so these links show the runs table directly; clicking "Model
training" once makes the browser remember it. See docs/mlflow-ui.md.

    python -m omnieval.tracking.ui_links [--port 5000]
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass

from omnieval.tracking._store import DEFAULT_STORE, EXPERIMENT_KIND, EXPERIMENT_KIND_TAG

WORKFLOW_QUERY = "workflowType=machine_learning"
"""Query parameter of the MLflow UI that selects its "Model training" view for the opened page."""


@dataclass(frozen=True)
class ExperimentLink:
    name: str
    url: str


def runs_url(base_url: str, experiment_id: str) -> str:
    """URL of an experiment's runs table in the classic (machine learning) view.

    >>> runs_url("http://127.0.0.1:5000/", "3")
    'http://127.0.0.1:5000/#/experiments/3/runs?workflowType=machine_learning'
    """
    return f"{base_url.rstrip('/')}/#/experiments/{experiment_id}/runs?{WORKFLOW_QUERY}"


def experiment_links(base_url: str, prefix: str = "omnieval/") -> list[ExperimentLink]:
    """A runs-table link per experiment named ``<prefix>...``, newest first.

    Also tags every such experiment ``mlflow.experimentKind=custom_model_development`` (experiments
    made before omnieval set the tag get it here, without waiting for their next run).
    """
    import mlflow

    from omnieval.tracking._store import tracking_uri

    client = mlflow.MlflowClient(tracking_uri())
    found = client.search_experiments(filter_string=f"name LIKE '{prefix}%'", order_by=["creation_time DESC"])
    links = []
    for experiment in found:
        if experiment.tags.get(EXPERIMENT_KIND_TAG) != EXPERIMENT_KIND:
            client.set_experiment_tag(experiment.experiment_id, EXPERIMENT_KIND_TAG, EXPERIMENT_KIND)
        links.append(ExperimentLink(experiment.name, runs_url(base_url, experiment.experiment_id)))
    return links


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Print MLflow UI links that open each experiment's runs.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=5000)
    args = parser.parse_args(argv)
    if not os.environ.get("MLFLOW_TRACKING_URI") and not (DEFAULT_STORE / "mlflow.db").is_file():
        print("No MLflow store yet (mlflow/mlflow.db): `make run` logs the first suite execution.")
        return 0
    links = experiment_links(f"http://{args.host}:{args.port}")
    if not links:
        print("No omnieval experiments in the store yet.")
        return 0
    print("Runs of each suite (the link selects the UI's 'Model training' view):")
    width = max(len(link.name) for link in links)
    for link in links:
        print(f"  {link.name:<{width}}  {link.url}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
