"""The search page's layout in headless Chromium at a phone's width (390 CSS pixels) and a laptop's
(1280): each label by its own input, table passages (and table context) drawn as tables that hide no
column, document names on one line where there is room, quiet delete buttons, and an upload form that
sets who may read the files and their metadata. Each test saves its screenshot in its ``tmp_path``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.test_search_page import HTTP_STATUS
from tests.support.browser import run_search, until, wait_for
from tests.support.serve import serving, upload
from winnow_local.web.server import WinnowHTTPServer

pytestmark = pytest.mark.slow

TENANT = "layout"
NAMES = (
    "handbook/remote-work-and-equipment-policy-2024.md",
    "product/beacon-air-quality-monitor-specifications.md",
)
STATUS_QUERY = "Which status code is REQUEST_HEADER_FIELDS_TOO_LARGE?"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WinnowHTTPServer]:
    with serving(tmp_path_factory.mktemp("layout") / "home") as httpd:
        upload(httpd, TENANT, "reference/http-status.md", HTTP_STATUS.encode())
        upload(httpd, TENANT, NAMES[0], b"# Remote work\n\nStaff may work remotely three days a week.\n")
        upload(httpd, TENANT, NAMES[1], b"# Beacon\n\nThe Beacon measures PM2.5 and CO2 every minute.\n")
        yield httpd


@pytest.fixture(params=[390, 1280], ids=["390px", "1280px"])
def width(request: pytest.FixtureRequest, browser: Any) -> Iterator[int]:
    size = browser.get_window_size()
    browser.set_window_size(request.param, 900)
    try:
        yield int(request.param)
    finally:
        browser.set_window_size(size["width"], size["height"])


@pytest.fixture
def page(browser: Any, server: WinnowHTTPServer, width: int) -> Any:
    browser.get(f"{server.url}/?tenant={TENANT}")
    assert browser.execute_script("return window.innerWidth") <= width
    wait_for(browser, "#documents tbody tr")
    return browser


def rect(driver: Any, css: str) -> dict[str, float]:
    found: dict[str, float] = driver.execute_script(
        "const r = document.querySelector(arguments[0]).getBoundingClientRect();"
        "return {left: r.left, right: r.right, top: r.top, bottom: r.bottom};",
        css,
    )
    return found


def test_each_identity_label_sits_just_above_its_own_input(page: Any, width: int, tmp_path: Path) -> None:
    page.save_screenshot(str(tmp_path / f"identity-{width}.png"))
    for name in ("tenant", "user", "groups"):
        label, field = rect(page, f"label[for='{name}']"), rect(page, f"#{name}")
        assert 0 <= field["top"] - label["bottom"] <= 8, (name, label, field)
        assert abs(field["left"] - label["left"]) <= 2, (name, label, field)


def test_a_table_hit_is_drawn_whole_and_its_context_as_a_table(page: Any, width: int, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    run_search(page, STATUS_QUERY)
    until(page, lambda d: d.find_elements(By.CSS_SELECTOR, "#results li.result .passage-table"))
    page.execute_script("document.getElementById('results').scrollIntoView()")
    page.save_screenshot(str(tmp_path / f"table-hit-{width}.png"))
    # The answer's cell is on screen: no column of the passage hides past its box's edge
    hidden = page.execute_script(
        "return Array.from(document.querySelectorAll('#results .table-scroll'))"
        "  .filter(b => b.scrollWidth > b.clientWidth + 1).length"
    )
    assert hidden == 0
    screen = page.execute_script("return document.documentElement.clientWidth")
    answer = page.find_element(By.XPATH, "//td[normalize-space()='REQUEST_HEADER_FIELDS_TOO_LARGE']")
    assert answer.rect["x"] >= 0 and answer.rect["x"] + answer.rect["width"] <= screen
    if width <= 600:  # a phone: each cell says its column
        assert answer.get_attribute("data-label") == "Enum Name"
        shown = page.execute_script("return getComputedStyle(arguments[0], '::before').content", answer)
        assert shown == '"Enum Name: "'
    # The rows around the hit are a table too, never raw "Columns: a | b" text
    contexts = page.find_elements(By.CSS_SELECTOR, "#results .context")
    assert contexts and not [c.text for c in contexts if "Columns:" in c.text or " | " in c.text]
    assert page.find_elements(By.CSS_SELECTOR, "#results .context-table table.passage-table td")


# A phone wraps names at '/', '-', '_' and '.' (test_search_page): only a laptop's width is asked here.
@pytest.mark.parametrize("width", [1280], ids=["1280px"], indirect=True)
def test_document_names_fit_on_one_line_on_a_laptop(page: Any, width: int, tmp_path: Path) -> None:
    page.execute_script("document.getElementById('documents').scrollIntoView()")
    page.save_screenshot(str(tmp_path / f"documents-{width}.png"))
    lines = page.execute_script(
        "return Array.from(document.querySelectorAll('#documents td.doc')).map(cell => {"
        "  const range = document.createRange(); range.selectNodeContents(cell.firstChild.parentNode);"
        "  return new Set(Array.from(range.getClientRects()).map(r => Math.round(r.top))).size; })"
    )
    assert lines and max(lines) == 1, lines


def test_delete_buttons_are_not_dressed_as_the_primary_button(page: Any, width: int) -> None:
    style = (
        "const s = getComputedStyle(document.querySelector(arguments[0]));"
        "return [s.backgroundColor, s.color, s.fontWeight];"
    )
    primary = page.execute_script(style, "#upload-button")
    delete = page.execute_script(style, "#documents .delete-document")
    assert delete[0] in ("rgba(0, 0, 0, 0)", "rgb(255, 255, 255)"), delete
    assert delete[0] != primary[0] and int(delete[2]) < int(primary[2])


# One upload is enough; the form's fields at 390 px are in the identity labels' test.
@pytest.mark.parametrize("width", [1280], ids=["1280px"], indirect=True)
def test_the_upload_form_sets_who_may_read_the_files_and_their_metadata(
    page: Any, server: WinnowHTTPServer, width: int, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    note = tmp_path / "salary-bands.md"
    note.write_text("# Salary bands\n\nSenior engineers at Tidewell are paid in band seven.\n")
    # Given a member of hr at the page, who fills in the readers and a metadata line
    page.find_element(By.ID, "groups").send_keys("hr")
    page.find_element(By.ID, "upload-files").send_keys(str(note))
    page.find_element(By.ID, "upload-groups").send_keys("hr")
    page.find_element(By.ID, "upload-metadata").send_keys("department=people\nyear=2024")
    page.save_screenshot(str(tmp_path / "upload-form-1280.png"))
    page.find_element(By.ID, "upload-button").click()
    [result] = wait_for(page, "#upload-results li.status-indexed")
    assert result.text.startswith("salary-bands.md: indexed")

    # Then only hr (and the admins) find it, and its metadata filters
    def keys(headers: dict[str, str], **extra: object) -> list[str]:
        body = {"query": "Which salary band are senior engineers paid in?", **extra}
        sent = {"x-winnow-tenant": TENANT, **headers}
        response = httpx.post(f"{server.url}/search", json=body, headers=sent, timeout=120)
        assert response.status_code == 200, response.text
        return [r["key"] for r in response.json()["results"]]

    key = f"{TENANT}/salary-bands.md"
    assert key not in keys({})
    assert key in keys({"x-winnow-groups": "hr"}, filters={"department": "people"})
    assert key not in keys({"x-winnow-groups": "hr"}, filters={"department": "sales"})
    # And a metadata line that is not field=value uploads nothing and says why
    page.find_element(By.ID, "upload-files").send_keys(str(note))
    page.find_element(By.ID, "upload-metadata").send_keys("just words")
    page.find_element(By.ID, "upload-button").click()
    until(page, lambda d: d.find_element(By.ID, "upload-status").text.startswith("Nothing uploaded"))
    status = page.find_element(By.ID, "upload-status").text
    assert status == f"Nothing uploaded: metadata line {json.dumps('just words')}: write field=value"
    page.find_element(By.ID, "groups").clear()
