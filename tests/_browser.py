"""A headless Chromium for the tests that open a page for real (``instances.html``).

Debian's ``chromium`` and ``chromium-driver`` (``scripts/setup.sh`` installs both) are driven by
selenium; nothing is downloaded. When either is missing the test is skipped with a reason that does
not start with ``platform:``, so CI (``OMNIEVAL_NO_SKIP=1``) reports it as a failure.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")


@contextmanager
def chromium(width: int = 1400, height: int = 1800) -> Iterator[Any]:
    """A headless Chromium WebDriver, quit on exit."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.skip("selenium is not installed (dev dependency: make setup)")
    binary = CHROMIUM if CHROMIUM.is_file() else Path(shutil.which("chromium") or CHROMIUM)
    if not binary.is_file() or not CHROMEDRIVER.is_file():
        pytest.skip("chromium and chromium-driver are not installed (scripts/setup.sh installs them)")
    options = webdriver.ChromeOptions()
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--mute-audio",
        f"--window-size={width},{height}",
        # A file:// page may load its sidecar scripts and media from its own folder.
        "--allow-file-access-from-files",
    ):
        options.add_argument(flag)
    options.binary_location = str(binary)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def wait_ready(driver: Any, timeout: float = 30) -> int:
    """Wait until the viewer rendered its first page; returns the milliseconds it took (page's own clock)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, timeout).until(
        lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready-ms")
    )
    return int(driver.find_element(By.TAG_NAME, "body").get_attribute("data-ready-ms"))


def fetch_statuses(driver: Any, urls: list[str]) -> list[int]:
    """HTTP status of each URL, fetched from inside the page (same origin as the viewer)."""
    script = (
        "const done = arguments[arguments.length - 1];"
        "Promise.all(arguments[0].map(u => fetch(u).then(r => r.status, () => 0))).then(done);"
    )
    return list(driver.execute_async_script(script, urls))
