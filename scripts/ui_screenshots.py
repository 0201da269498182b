"""Screenshots of the MLflow UI for docs/mlflow-ui.md, taken from this checkout's own runs.

    .venv/bin/python scripts/ui_screenshots.py [--suite acbench] [--out docs/img]
    make ui-screenshots

Starts ``mlflow ui`` on a free port with the repository's store (``mlflow/mlflow.db``, artifacts in
``mlflow/artifacts``; ``MLFLOW_TRACKING_URI`` wins as for ``make ui``), drives a headless Chromium
through the DevTools protocol and saves four PNGs (palette-quantised to stay small):

- ``mlflow-runs-table.png``: the experiment's runs, one row per suite execution, with the omnieval
  columns shown;
- ``mlflow-compare.png``: the compare view of the two newest suite executions;
- ``mlflow-run-overview.png``: a system's child run of the newest execution (its metrics, the
  dataset and candidates inputs, tags);
- ``mlflow-artifacts.png``: its artifacts with ``report.html`` open.

Needs two finished suite executions in the store (``omnieval run pipelines/acbench.yaml`` twice) and a
Chromium binary (``apt-get install chromium``; ``CHROMIUM`` names another). A docs tool only: nothing
in the evaluation depends on it.
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
WIDTH, HEIGHT = 1400, 900
MAX_BYTES = 300_000

# Columns of the runs table a reader compares two nights by (the rest stay one click away).
PARAM_COLUMNS = ("git_sha", "panels", "dataset_version")
TAG_COLUMNS = ("omnieval.benchmark",)
# Suite executions only; runs logged before the run names and params existed have no git_sha param.
SEARCH_FILTER = "tags.`omnieval.kind` = 'suite' and params.git_sha != ''"


@dataclass(frozen=True)
class Target:
    """The experiment and the two newest finished suite executions in it."""

    experiment_id: str
    newer: str
    older: str
    newer_name: str
    newer_child: str
    headline: tuple[str, ...]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_http(url: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5) as reply:
                if reply.status == 200:
                    return
        except OSError:
            time.sleep(1.0)
    raise SystemExit(f"ui_screenshots: {url} did not answer within {timeout:.0f} s")


def _store_uri() -> str:
    return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{ROOT / 'mlflow' / 'mlflow.db'}"


def find_target(suite: str) -> Target:
    """The two newest FINISHED parent runs of ``omnieval/<suite>``."""
    import mlflow

    mlflow.set_tracking_uri(_store_uri())
    client = mlflow.MlflowClient()
    experiment = client.get_experiment_by_name(f"omnieval/{suite}")
    if experiment is None:
        raise SystemExit(f"ui_screenshots: no experiment omnieval/{suite}; run the suite twice first")
    runs = client.search_runs(
        [experiment.experiment_id],
        filter_string="tags.`omnieval.kind` = 'suite' and attributes.status = 'FINISHED'",
        order_by=["attributes.start_time DESC"],
        max_results=2,
    )
    if len(runs) < 2:
        raise SystemExit(f"ui_screenshots: omnieval/{suite} has {len(runs)} finished suite run(s); need 2")
    headline = tuple(k for k in runs[0].data.tags.get("omnieval.headline_metrics", "").split(",") if k)
    children = client.search_runs(
        [experiment.experiment_id],
        filter_string=f"tags.`mlflow.parentRunId` = '{runs[0].info.run_id}' and tags.`omnieval.kind` = 'system'",
        order_by=["attributes.run_name ASC"],
        max_results=1,
    )
    if not children:
        raise SystemExit(f"ui_screenshots: run {runs[0].info.run_id} has no system child run")
    return Target(
        str(experiment.experiment_id),
        runs[0].info.run_id,
        runs[1].info.run_id,
        runs[0].info.run_name,
        children[0].info.run_id,
        headline,
    )


@contextmanager
def mlflow_ui(port: int) -> Iterator[str]:
    """``mlflow ui`` on ``port`` with the repository's store (as ``make ui`` starts it)."""
    command = [
        str(ROOT / ".venv" / "bin" / "mlflow"),
        "ui",
        "--backend-store-uri",
        _store_uri(),
        "--default-artifact-root",
        str(ROOT / "mlflow" / "artifacts"),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        "1",
    ]
    env = {
        **os.environ,
        "MLFLOW_DISABLE_TELEMETRY": "true",
        "DO_NOT_TRACK": "true",
        # No background job runner: the UI only reads runs.
        "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",
    }
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}"
        _wait_http(f"{base}/health", timeout=240)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


class Browser:
    """A headless Chromium page driven over the DevTools protocol (one tab, synchronous calls)."""

    def __init__(self, binary: str, profile: Path) -> None:
        from websockets.sync.client import connect

        port = _free_port()
        self._proc = subprocess.Popen(
            [
                binary,
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                "--no-first-run",
                f"--user-data-dir={profile}",
                f"--remote-debugging-port={port}",
                f"--window-size={WIDTH},{HEIGHT}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _wait_http(f"http://127.0.0.1:{port}/json/version", timeout=60)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as reply:
            pages = [t for t in json.load(reply) if t.get("type") == "page"]
        self._ws = connect(pages[0]["webSocketDebuggerUrl"], max_size=64 * 1024 * 1024)
        self._next = 0
        self.call("Page.enable")
        self.resize(WIDTH, HEIGHT)

    def resize(self, width: int, height: int) -> None:
        self.call(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self._next += 1
        self._ws.send(json.dumps({"id": self._next, "method": method, "params": params}))
        while True:
            message = json.loads(self._ws.recv(timeout=120))
            if message.get("id") == self._next:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return dict(message.get("result", {}))

    def js(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"page script failed: {result['exceptionDetails']}")
        return result.get("result", {}).get("value")

    def open(self, url: str) -> None:
        self.call("Page.navigate", url=url)

    def set_local_storage(self, origin: str, items: dict[str, Any]) -> None:
        """Write localStorage entries (JSON-encoded) from a plain page of the same origin, so that no
        MLflow page is open to overwrite them with its own state."""
        self.open(f"{origin}/health")
        self.wait_for_text("OK", settle=0.0)
        for key, value in items.items():
            self.js(f"localStorage.setItem({json.dumps(key)}, {json.dumps(json.dumps(value))})")

    def wait_for_text(self, text: str, timeout: float = 90, settle: float = 1.5) -> None:
        deadline = time.monotonic() + timeout
        probe = f"document.body && document.body.innerText.includes({json.dumps(text)})"
        while time.monotonic() < deadline:
            if self.js(probe):
                time.sleep(settle)  # let late requests (metrics, artifacts) settle before the shot
                return
            time.sleep(0.5)
        raise SystemExit(f"ui_screenshots: {text!r} never appeared on the page")

    def click_text(self, text: str, selector: str = "button, [role=tab], [role=menuitem], a, label") -> bool:
        script = f"""(() => {{
            const want = {json.dumps(text)};
            const hits = [...document.querySelectorAll({json.dumps(selector)})]
                .filter(e => e.innerText && e.innerText.trim() === want);
            if (!hits.length) return false;
            hits[hits.length - 1].click();  // the innermost match: ancestors come first in DOM order
            return true;
        }})()"""
        return bool(self.js(script))

    def screenshot(self, path: Path) -> int:
        shot = self.call("Page.captureScreenshot", format="png")
        return _save_small_png(base64.b64decode(shot["data"]), path)

    def close(self) -> None:
        try:
            self._ws.close()
        finally:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self._proc.kill()


def _save_small_png(data: bytes, path: Path) -> int:
    """Palette-quantise a screenshot (UI colours fit in 256) so each PNG stays under MAX_BYTES."""
    from PIL import Image

    image = Image.open(io.BytesIO(data)).convert("RGB")
    for colours in (256, 128, 64):
        buffer = io.BytesIO()
        image.quantize(colors=colours, method=Image.Quantize.MEDIANCUT).save(buffer, "PNG", optimize=True)
        if buffer.tell() <= MAX_BYTES:
            break
    path.write_bytes(buffer.getvalue())
    return buffer.tell()


def _column_ids(target: Target) -> list[str]:
    """Runs-table column ids (the UI's ``<type>.`<key>``` form) of the omnieval columns to show."""
    per_system: dict[str, str] = {}
    for key in target.headline:
        system = key.split("/", 1)[0]
        # One headline per system; for acbench the unmodified input condition reads first.
        if system not in per_system or ".original." in key:
            per_system[system] = key
    return [
        "attributes.`Dataset`",
        *(f"params.`{p}`" for p in PARAM_COLUMNS),
        *(f"tags.`{t}`" for t in TAG_COLUMNS),
        *(f"metrics.`{m}`" for m in per_system.values() if m),
    ]


def _page_state(browser: Browser, base: str, experiment_id: str, columns: list[str]) -> None:
    """What ticking columns in the runs table's "Columns" menu and typing a search do: the runs page
    keeps both in its saved state, which is written here while the page is closed."""
    key = f"MLflowLocalStorage-1.1-ExperimentPage-{json.dumps([experiment_id])}-ReactComponentState"
    browser.open(f"{base}/#/experiments")
    browser.wait_for_text("Experiments")
    raw = browser.js(f"localStorage.getItem({json.dumps(key)})")
    state = json.loads(raw) if raw else {}
    state["selectedColumns"] = columns
    state["searchFilter"] = SEARCH_FILTER
    browser.set_local_storage(base, {key: state})


def _wheel_to(browser: Browser, name: str) -> None:
    """Scroll the compare view's metric grid with the mouse wheel until the row ``name`` is on top
    (or the grid's end is reached), then put the page itself back at its top."""
    if not name:
        return
    probe = f"""(() => {{
        const grids = [...document.querySelectorAll('.ReactVirtualized__Grid')]
            .filter(g => g.scrollHeight > g.clientHeight + 4);
        const cell = [...document.querySelectorAll('a, span, div')]
            .find(e => e.children.length === 0 && e.textContent.trim() === {json.dumps(name)});
        const grid = grids.length ? grids[grids.length - 1] : null;
        const box = grid ? grid.getBoundingClientRect() : null;
        return {{
            box: box && [box.left, box.top, box.width, box.height],
            scrolled: grid ? grid.scrollTop : 0,
            row: cell ? cell.getBoundingClientRect().top : null,
        }};
    }})()"""
    last = -1.0
    for _ in range(80):
        found = browser.js(probe)
        if not found["box"] or found["scrolled"] == last:
            break
        left, top, width, height = found["box"]
        if found["row"] is not None and top - 4 <= found["row"] <= top + 40:
            break
        last = found["scrolled"]
        delta = 40 if found["row"] is None or found["row"] > top else -40
        browser.call(
            "Input.dispatchMouseEvent",
            type="mouseWheel",
            x=left + width / 2,
            y=top + height / 2,
            deltaX=0,
            deltaY=delta,
        )
        time.sleep(0.15)
    # The name column follows the value grid through a scroll handler that can trail the last
    # wheel step; settle it on the value grid's position. A wheel past the grid's end also scrolls
    # the page, and the shot wants the page from its top.
    time.sleep(0.5)
    browser.js(
        """(() => {
            const grids = [...document.querySelectorAll('.ReactVirtualized__Grid')]
                .filter(g => g.scrollHeight > g.clientHeight + 4);
            const top = grids.length ? grids[grids.length - 1].scrollTop : 0;
            grids.forEach(g => { g.scrollTop = top; });
            document.querySelectorAll('main').forEach(m => { m.scrollTop = 0; });
            window.scrollTo(0, 0);
        })()"""
    )


@contextmanager
def _server(base_url: str | None) -> Iterator[str]:
    if base_url:
        yield base_url.rstrip("/")
    else:
        with mlflow_ui(_free_port()) as base:
            yield base


def take(out: Path, suite: str, binary: str, base_url: str | None = None) -> list[tuple[Path, int]]:
    target = find_target(suite)
    out.mkdir(parents=True, exist_ok=True)
    saved: list[tuple[Path, int]] = []
    with _server(base_url) as base, tempfile.TemporaryDirectory() as profile:
        browser = Browser(binary, Path(profile))
        try:
            exp = target.experiment_id
            # The MLflow Assistant panel opens itself on a first visit; a returning reader closed it.
            browser.set_local_storage(
                base,
                {
                    "mlflow.assistant.fab.autoOpenedOnFirstLoad_v1": True,
                    "mlflow.assistant.panelOpen_v1": False,
                },
            )
            # A fresh browser starts in the GenAI view; "Model training" in the sidebar switches it
            # (the browser remembers the choice), as docs/mlflow-ui.md tells a first-time reader.
            browser.open(f"{base}/#/experiments/{exp}")
            browser.wait_for_text("Model training")
            if not browser.click_text("Model training", selector="button, [role=radio], label, span, div"):
                raise SystemExit("ui_screenshots: no 'Model training' switch in the sidebar")
            browser.wait_for_text("Run Name")
            _page_state(browser, base, exp, _column_ids(target))
            browser.open(f"{base}/#/experiments/{exp}")
            browser.wait_for_text(target.newer_name)
            # Tick the two newest suite executions (rows 0 and 1: newest first): "Compare" appears.
            for row in (0, 1):
                browser.js(
                    f'document.querySelector(\'[row-index="{row}"] '
                    'input[aria-label^="Press Space to toggle row selection"]\').click()'
                )
            browser.wait_for_text("Compare")
            path = out / "mlflow-runs-table.png"
            saved.append((path, browser.screenshot(path)))

            if not browser.click_text("Compare", selector="button, button span"):
                raise SystemExit("ui_screenshots: no 'Compare' button after ticking two runs")
            browser.wait_for_text("Show diff only")
            # The plots first: fold them so run details, params and metrics fit one screen.
            browser.click_text("Visualizations", selector="button, h2, h3, span, div")
            # Params both runs share are noise here; what differs stays.
            browser.js(
                "[...document.querySelectorAll('button[aria-label]')]"
                ".filter(b => b.getAttribute('aria-label') === 'Parameters - Show diff only')"
                ".forEach(b => b.click())"
            )
            time.sleep(1.5)
            # Metrics are listed by name in a virtualised grid: wheel it down to the headline rows.
            browser.resize(WIDTH, 1300)
            time.sleep(1.0)
            _wheel_to(browser, sorted(target.headline)[0] if target.headline else "")
            time.sleep(1.0)
            path = out / "mlflow-compare.png"
            saved.append((path, browser.screenshot(path)))
            browser.resize(WIDTH, HEIGHT)

            # A system's child run: its §5 metrics and both inputs (the dataset, its candidates).
            browser.open(f"{base}/#/experiments/{exp}/runs/{target.newer_child}")
            browser.wait_for_text("Datasets")
            # The overview names the first input and counts the others ("+1"); open the list.
            if browser.click_text("+1", selector="button, span, div, a"):
                browser.wait_for_text("candidates/")
            path = out / "mlflow-run-overview.png"
            saved.append((path, browser.screenshot(path)))

            browser.open(f"{base}/#/experiments/{exp}/runs/{target.newer}/artifacts/report.html")
            browser.wait_for_text("report.html")
            time.sleep(3.0)  # the report renders in an iframe
            path = out / "mlflow-artifacts.png"
            saved.append((path, browser.screenshot(path)))
        finally:
            browser.close()
    return saved


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="acbench", help="suite whose experiment to show (default acbench)")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img", help="folder for the PNGs")
    parser.add_argument("--url", help="use an MLflow UI already serving this store (default: start one)")
    args = parser.parse_args(argv)
    binary = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not binary:
        print("ui_screenshots: no chromium (apt-get install chromium, or set CHROMIUM)", file=sys.stderr)
        return 1
    for path, size in take(args.out, args.suite, binary, args.url):
        print(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}  {size / 1000:.0f} kB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
