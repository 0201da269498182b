"""night.html: the night's verdict on top, one coloured banner per suite, what moved, working links."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest

from omnieval.night import NightRecord, build_record, failed_suite, suite_night, write_night_page

from .runs import WORSE_WER, write_run


class _Banners(HTMLParser):
    """Each ``.banner`` element's data attributes and every link's href."""

    def __init__(self) -> None:
        super().__init__()
        self.banners: list[dict[str, str | None]] = []
        self.hrefs: list[str] = []
        self.night: dict[str, str | None] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        classes = (found.get("class") or "").split()
        if "banner" in classes:
            self.banners.append(found)
        if "night" in classes:
            self.night = found
        if tag == "a" and found.get("href"):
            self.hrefs.append(str(found["href"]))


@pytest.fixture
def night(tmp_path: Path) -> tuple[NightRecord, Path]:
    runs = tmp_path / "runs"
    nightly = suite_night(write_run(runs, "nightly", "n1", "GO", ["no headline component got worse"]))
    acbench = suite_night(
        write_run(runs, "acbench", "a1", "NO-GO", [WORSE_WER], regressed=("cascade-cpu", "original.wer"))
    )
    prism = failed_suite(RuntimeError("<script>alert(1)</script> exploded"), stage="judge")
    record = build_record("2026-12-03", {"nightly": nightly, "acbench": acbench, "prism": prism})
    return record, write_night_page(record, runs / "nights")


def test_three_banners_coloured_by_verdict_under_the_nights_verdict(night: tuple[NightRecord, Path]) -> None:
    _, page = night
    assert page.name == "night.html" and page.parent.name == "2026-12-03"
    html = page.read_text()
    parsed = _Banners()
    parsed.feed(html)
    assert [(b["data-suite"], b["data-verdict"]) for b in parsed.banners] == [
        ("nightly", "GO"),
        ("acbench", "NO-GO"),
        ("prism", "INCONCLUSIVE"),
    ]
    assert [str(b["class"]).split()[1] for b in parsed.banners] == ["v-go", "v-nogo", "v-inconclusive"]
    assert parsed.night["data-verdict"] == "NO-GO"
    assert html.index('id="night"') < html.index('data-suite="nightly"')
    assert "Decided by <b>acbench</b> (cascade-cpu / original.wer)" in html
    # self-contained: no external stylesheet, script or image
    assert not re.search(r"<(link|script)\b|src=", html)


def test_links_reach_each_report_and_viewer_relative_to_the_page(night: tuple[NightRecord, Path]) -> None:
    record, page = night
    parsed = _Banners()
    parsed.feed(page.read_text())
    targets = [(page.parent / unquote(h)).resolve() for h in parsed.hrefs if h != "night.json"]
    folders = [Path(s.run_folder) for s in record.suites.values() if s.run_folder]
    assert folders and targets == [f / name for f in folders for name in ("report.html", "instances.html")]
    assert all(t.is_file() for t in targets)
    assert parsed.hrefs and all(not h.startswith("/") for h in parsed.hrefs)


def test_what_moved_shows_the_regression_and_reasons_are_escaped(night: tuple[NightRecord, Path]) -> None:
    _, page = night
    html = page.read_text()
    assert "cascade-cpu / original.wer" in html and "+4.000" in html and 'class="flag"' in html
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt; exploded" in html
    assert "The suite failed to run" in html
    assert "Changed since the previous run: code (git_sha)" in html


def test_the_page_opens_in_a_browser_with_three_banners(night: tuple[NightRecord, Path]) -> None:
    from selenium.webdriver.common.by import By
    from tests._browser import chromium

    _, page = night
    with chromium(1200, 1200) as driver:
        driver.get(page.as_uri())
        banners = driver.find_elements(By.CSS_SELECTOR, ".banner")
        assert [b.get_attribute("data-suite") for b in banners] == ["nightly", "acbench", "prism"]
        assert all(b.is_displayed() for b in banners)
        colours = [b.value_of_css_property("border-top-color") for b in banners]
        assert len(set(colours)) == 3, colours  # green, red, amber
        assert driver.find_element(By.CSS_SELECTOR, "#night .verdict").text == "Night: NO-GO"
        driver.find_element(By.LINK_TEXT, "report").click()
        assert driver.title == "report nightly"
