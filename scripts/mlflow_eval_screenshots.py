"""Screenshots of the MLflow views of docs/mlflow.md, taken from this checkout's own runs.

    .venv/bin/python scripts/mlflow_eval_screenshots.py [--suite nightly] [--system orchestrated-cpu]

Reuses ``scripts/ui_screenshots.py`` (``mlflow ui`` on a free port with the repository's store, a
headless Chromium over the DevTools protocol) and saves three PNGs to ``docs/img``:

- ``mlflow-runs-verdict.png``: the experiment's runs view (the link ``make ui`` prints), one row per
  suite execution with the regression verdict and each system's Total Average as columns;
- ``mlflow-eval-runs.png``: the Evaluation runs view of one system's child run compared with the
  same system in the previous execution: one row per judge verdict, a column per criterion;
- ``mlflow-trace-assessments.png``: one verdict opened: the judge's answer and its assessments
  (score and rationale per criterion, the judge as source).

Needs two finished executions of the suite in the store, both with judged rows
(``omnieval run pipelines/nightly.yaml`` twice) and a Chromium binary.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import ui_screenshots as ui

WIDE = 1800


def _children(experiment_id: str, parent: str) -> dict[str, str]:
    import mlflow

    runs = mlflow.MlflowClient().search_runs(
        [experiment_id],
        filter_string=f"tags.`mlflow.parentRunId` = '{parent}' and tags.`omnieval.kind` = 'system'",
    )
    return {r.data.tags["omnieval.system"]: r.info.run_id for r in runs}


def take(out: Path, suite: str, system: str, binary: str, base_url: str | None) -> list[tuple[Path, int]]:
    target = ui.find_target(suite)
    exp = target.experiment_id
    newer, older = _children(exp, target.newer), _children(exp, target.older)
    if system not in newer or system not in older:
        raise SystemExit(f"ui_screenshots: {system} is not a system of both newest runs")
    systems = sorted(newer)
    columns = [
        "tags.`omnieval.regression`",
        *(f"metrics.`{s}/storybench.valid_only.total_average`" for s in systems),
        "params.`git_sha`",
        "tags.`omnieval.judge_traces`",
    ]
    out.mkdir(parents=True, exist_ok=True)
    saved: list[tuple[Path, int]] = []
    with ui._server(base_url) as base, tempfile.TemporaryDirectory() as profile:
        browser = ui.Browser(binary, Path(profile))
        try:
            browser.set_local_storage(
                base,
                {
                    "mlflow.assistant.fab.autoOpenedOnFirstLoad_v1": True,
                    "mlflow.assistant.panelOpen_v1": False,
                },
            )
            ui._page_state(browser, base, exp, columns)
            browser.resize(WIDE, ui.HEIGHT)
            # The link `make ui` prints for the suite: the experiment opens on its runs.
            browser.open(f"{base}/#/experiments/{exp}/runs?workflowType=machine_learning")
            browser.wait_for_text(target.newer_name, settle=3.0)
            path = out / "mlflow-runs-verdict.png"
            saved.append((path, browser.screenshot(path)))

            browser.open(
                f"{base}/#/experiments/{exp}/evaluation-runs?workflowType=genai"
                f"&selectedRunUuid={newer[system]}&compareToRunUuid={older[system]}"
            )
            browser.wait_for_text("Trace ID", settle=6.0)
            # Fold the runs list away so the verdicts get the page's width.
            browser.js(
                "(() => { const b = [...document.querySelectorAll('button')]"
                ".find(e => (e.getAttribute('aria-label') || '').toLowerCase().includes('collapse'));"
                " if (b) b.click(); })()"
            )
            time.sleep(3.0)
            path = out / "mlflow-eval-runs.png"
            saved.append((path, browser.screenshot(path)))

            # One verdict of the newer run opened: its request, the judge's answer, the assessments.
            browser.open("about:blank")  # a new page load: the comparison mode is page state
            time.sleep(1.0)
            browser.open(f"{base}/#/experiments/{exp}/traces?workflowType=genai")
            browser.wait_for_text("instance_id", settle=4.0)
            browser.js(
                "(() => { const a = [...document.querySelectorAll('a, [role=button], span, div')]"
                ".find(e => e.children.length === 0 && e.textContent.trim().startsWith('{\"instance_id\"'));"
                " if (a) a.click(); })()"
            )
            time.sleep(10.0)
            path = out / "mlflow-trace-assessments.png"
            saved.append((path, browser.screenshot(path)))
        finally:
            browser.close()
    return saved


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="nightly", help="suite whose experiment to show (default nightly)")
    parser.add_argument("--system", default="orchestrated-cpu", help="system whose verdicts to show")
    parser.add_argument("--out", type=Path, default=ui.ROOT / "docs" / "img", help="folder for the PNGs")
    parser.add_argument("--url", help="use an MLflow UI already serving this store (default: start one)")
    args = parser.parse_args(argv)
    binary = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not binary:
        print(
            "mlflow_eval_screenshots: no chromium (apt-get install chromium, or set CHROMIUM)",
            file=sys.stderr,
        )
        return 1
    for path, size in take(args.out, args.suite, args.system, binary, args.url):
        print(f"{path}  {size / 1000:.0f} kB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
