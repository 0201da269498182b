"""Screenshots of the MLflow UI for docs/mlflow-ui.md, taken from this checkout's own runs.

    .venv/bin/python scripts/ui_screenshots.py [--suite acbench] [--out docs/img]
    make ui-screenshots

Starts ``mlflow ui`` on a free port with the repository's store (``mlflow/mlflow.db``, artifacts in
``mlflow/artifacts``; ``MLFLOW_TRACKING_URI`` wins as for ``make ui``), drives a headless Chromium
through the DevTools protocol and saves four PNGs (palette-quantised to stay small):

- ``mlflow-runs-table.png``: the experiment's runs, one row per suite execution, with the omnieval
  columns shown;
- ``mlflow-compare.png``: the compare view of the two newest suite executions;
- ``mlflow-run-overview.png``: the newest run's overview (params, tags, dataset inputs);
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


@dataclass(frozen=True)
class Target:
    """The experiment and the two newest finished suite executions in it."""

    experiment_id: str
    newer: str
    older: str
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
    headline = tuple(runs[0].data.tags.get("omnieval.headline_metrics", "").split(","))
    return Target(str(experiment.experiment_id), runs[0].info.run_id, runs[1].info.run_id, headline)


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
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true"}
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
        self.call(
            "Emulation.setDeviceMetricsOverride",
            width=WIDTH,
            height=HEIGHT,
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

    def wait_for_text(self, text: str, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        probe = f"document.body && document.body.innerText.includes({json.dumps(text)})"
        while time.monotonic() < deadline:
            if self.js(probe):
                time.sleep(1.5)  # let late requests (metrics, artifacts) settle before the shot
                return
            time.sleep(0.5)
        raise SystemExit(f"ui_screenshots: {text!r} never appeared on the page")

    def click_text(self, text: str, selector: str = "button, [role=tab], [role=menuitem], a, label") -> bool:
        script = f"""(() => {{
            const want = {json.dumps(text)};
            const hits = [...document.querySelectorAll({json.dumps(selector)})]
                .filter(e => e.innerText && e.innerText.trim() === want);
            if (!hits.length) return false;
            hits[0].click();
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


def _show_columns(browser: Browser, target: Target) -> None:
    """Tick the omnieval params, tag and headline metrics in the runs table's column selector."""
    if not browser.click_text("Columns"):
        raise SystemExit("ui_screenshots: no 'Columns' button on the runs page")
    time.sleep(1.0)
    wanted = [*PARAM_COLUMNS, *TAG_COLUMNS, *target.headline[:4]]
    for name in wanted:
        script = f"""(() => {{
            const want = {json.dumps(name)};
            const rows = [...document.querySelectorAll('[role=option], [role=menuitemcheckbox], label, li')]
                .filter(e => e.innerText && e.innerText.trim() === want);
            if (!rows.length) return false;
            rows[0].click();
            return true;
        }})()"""
        if not browser.js(script):
            print(f"ui_screenshots: column {name!r} not offered by the selector", file=sys.stderr)
        time.sleep(0.3)
    browser.js("document.dispatchEvent(new KeyboardEvent('keydown', {key: 'Escape', bubbles: true}))")
    browser.js("document.body.click()")
    time.sleep(1.5)


def take(out: Path, suite: str, binary: str) -> list[tuple[Path, int]]:
    target = find_target(suite)
    out.mkdir(parents=True, exist_ok=True)
    saved: list[tuple[Path, int]] = []
    with mlflow_ui(_free_port()) as base, tempfile.TemporaryDirectory() as profile:
        browser = Browser(binary, Path(profile))
        try:
            exp = target.experiment_id
            browser.open(f"{base}/#/experiments/{exp}")
            browser.wait_for_text("Run Name")
            _show_columns(browser, target)
            path = out / "mlflow-runs-table.png"
            saved.append((path, browser.screenshot(path)))

            runs = json.dumps([target.newer, target.older])
            browser.open(f"{base}/#/compare-runs?runs={runs}&experiments={json.dumps([exp])}")
            browser.wait_for_text("Parameters")
            path = out / "mlflow-compare.png"
            saved.append((path, browser.screenshot(path)))

            browser.open(f"{base}/#/experiments/{exp}/runs/{target.newer}")
            browser.wait_for_text("Parameters")
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
    args = parser.parse_args(argv)
    binary = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not binary:
        print("ui_screenshots: no chromium (apt-get install chromium, or set CHROMIUM)", file=sys.stderr)
        return 1
    for path, size in take(args.out, args.suite, binary):
        print(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}  {size / 1000:.0f} kB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
