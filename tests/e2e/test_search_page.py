"""The search page in headless Chromium (Debian's ``chromium`` + ``chromium-driver``, driven by Selenium
through /usr/bin/chromedriver: nothing is downloaded). The page talks to ``winnow serve`` on loopback,
which runs the real handlers on the demo samples with the local ONNX model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.browser import run_search, text_of, until, wait_for
from tests.support.serve import serving, upload
from winnow.rules import is_sidecar
from winnow_local.cli.demo import stage_samples
from winnow_local.runtime import Upload
from winnow_local.web.server import WinnowHTTPServer

pytestmark = pytest.mark.slow

TENANT = "pagetest"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WinnowHTTPServer]:
    """``winnow serve`` on a free port with the demo samples uploaded for one tenant."""
    home = tmp_path_factory.mktemp("page") / "home"
    with serving(home) as httpd:
        staged = stage_samples(home / "samples")
        for file in sorted(p for p in staged.rglob("*") if p.is_file()):
            path = file.relative_to(staged).as_posix()
            if is_sidecar(path):  # no upload route writes a sidecar: it goes in as `winnow ingest` puts it
                sidecar = Upload(f"{TENANT}/{path}", file.read_bytes())
                httpd.lane.submit(TENANT, httpd.runtime.put_and_ingest, [sidecar]).result()
            else:
                upload(httpd, TENANT, path, file.read_bytes())
        yield httpd


@pytest.fixture
def page(browser: Any, server: WinnowHTTPServer) -> Any:
    browser.get(f"{server.url}/?tenant={TENANT}")
    return browser


def _pdf_page_of(passage: str) -> int:
    """The 1-based page of the demo PDF whose text holds the passage's opening words."""
    import io

    import pypdf

    from winnow_local.cli.demo import GENERATED, SOURCES_DIR
    from winnow_local.docgen import render

    source_name, fmt = GENERATED["product/beacon-specs-and-warranty.pdf"]
    data = render((SOURCES_DIR / source_name).read_text(encoding="utf-8"), fmt)
    opening = " ".join(passage.split()[:8])
    pages = [" ".join(page.extract_text().split()) for page in pypdf.PdfReader(io.BytesIO(data)).pages]
    matches = [number for number, text in enumerate(pages, start=1) if opening in text]
    assert matches, f"passage not found in the PDF: {opening!r}"
    return matches[0]


def _open_options(driver: Any) -> None:
    from selenium.webdriver.common.by import By

    options = driver.find_element(By.ID, "options")
    if options.get_attribute("open") is None:
        options.find_element(By.TAG_NAME, "summary").click()


def test_query_renders_passages_with_citations(page: Any) -> None:
    # Given the search page for a tenant with the demo samples indexed
    # When a user types a question and submits it
    run_search(page, "How long is the warranty on the Beacon?")
    results = wait_for(page, "#results li.result")
    # Then the first passage cites the PDF, its page and its section, with a score
    top = results[0]
    passage = text_of(top, ".passage")
    assert "two-year limited warranty" in passage
    assert text_of(top, ".citation .doc") == "Document: product/beacon-specs-and-warranty.pdf"
    # the cited page is the one where the passage starts in the PDF
    assert text_of(top, ".citation .page") == f"Page: {_pdf_page_of(passage)}"
    score = float(text_of(top, ".citation .score").split(":")[1])
    assert 0.2 <= score <= 1.0
    assert "passage" in text_of(page, "#search-status")


def test_nothing_relevant_state_shows_the_api_message(page: Any) -> None:
    run_search(page, "What is the best recipe for sourdough bread?")
    [empty] = wait_for(page, "#results li.nothing-relevant")
    assert "No relevant passages found" in empty.text
    assert not page.find_elements("css selector", "#results li.result")
    # said once: the status line above the list does not repeat it
    body = page.find_element("tag name", "body").text
    assert body.count("No relevant passages found") == 1, body


def test_filter_rows_narrow_the_search(page: Any) -> None:
    from selenium.webdriver.common.by import By

    # Given a filter row department = people (only the remote work policy has it, from its sidecar)
    _open_options(page)
    page.find_element(By.ID, "add-filter").click()
    row = page.find_elements(By.CSS_SELECTOR, "#filter-rows .filter-row")[-1]
    row.find_element(By.CSS_SELECTOR, ".filter-field").send_keys("department")
    row.find_element(By.CSS_SELECTOR, ".filter-value").send_keys("people")
    # When searching for something other documents cover too
    run_search(page, "How much is the home office stipend?")
    results = wait_for(page, "#results li.result")
    # Then every passage comes from the filtered document
    docs = {text_of(result, ".citation .doc") for result in results}
    assert docs == {"Document: handbook/remote-work.md"}


def test_document_list_shows_ingest_status(page: Any) -> None:
    rows = wait_for(page, "#documents tbody tr")
    by_name = {text_of(row, "td.doc"): text_of(row, "td.doc-status") for row in rows}
    assert by_name["product/beacon-specs-and-warranty.pdf"] == "indexed"
    assert by_name["handbook/travel-and-expenses.docx"] == "indexed"
    assert "documents for tenant pagetest" in text_of(page, "#documents-status")


def test_the_upload_form_comes_before_the_document_list(page: Any) -> None:
    from selenium.webdriver.common.by import By

    wait_for(page, "#documents tbody tr")
    form = page.find_element(By.ID, "upload-form").rect
    listed = page.find_element(By.ID, "documents").rect
    assert form["y"] + form["height"] <= listed["y"]


def test_delete_asks_first_and_the_count_leaves_deleted_documents_out(
    page: Any, server: WinnowHTTPServer
) -> None:
    from selenium.webdriver.common.by import By

    # Given a document of its own, listed as indexed
    note = b"# Scratch note\n\nThe scratch note about the blue stapler is kept for this test only.\n"
    assert upload(server, TENANT, "scratch/delete-me.md", note)["status"] == "indexed"
    page.refresh()

    def row() -> Any:
        rows = wait_for(page, "#documents tbody tr")
        return next(r for r in rows if text_of(r, "td.doc") == "scratch/delete-me.md")

    def count_line_matches_rows(d: Any) -> bool:
        statuses = [
            text_of(r, "td.doc-status") for r in d.find_elements(By.CSS_SELECTOR, "#documents tbody tr")
        ]
        live, deleted = sum(s != "deleted" for s in statuses), statuses.count("deleted")
        expected = f"{live} documents for tenant {TENANT}" + (f" (and {deleted} deleted)" if deleted else "")
        return bool(statuses) and d.find_element(By.ID, "documents-status").text == expected

    until(page, count_line_matches_rows)
    # When Delete is clicked and the confirmation dismissed
    until(page, lambda d: row().find_element(By.CSS_SELECTOR, "button.delete-document").click() or True)
    dialog = until(page, lambda d: d.switch_to.alert, 10)
    assert "delete-me.md" in dialog.text
    dialog.dismiss()
    # Then nothing is deleted
    page.find_element(By.ID, "refresh-documents").click()
    until(page, count_line_matches_rows)
    assert until(page, lambda d: text_of(row(), "td.doc-status")) == "indexed"
    # When it is clicked again and confirmed
    until(page, lambda d: row().find_element(By.CSS_SELECTOR, "button.delete-document").click() or True)
    until(page, lambda d: d.switch_to.alert, 10).accept()
    # Then the document is deleted, and the count no longer counts it as a document
    until(page, lambda d: text_of(row(), "td.doc-status") == "deleted")
    until(page, count_line_matches_rows)
    assert "(and " in text_of(page, "#documents-status")


def test_invalid_request_shows_the_error_message(page: Any) -> None:
    from selenium.webdriver.common.by import By

    _open_options(page)
    threshold = page.find_element(By.ID, "threshold")
    page.execute_script("arguments[0].removeAttribute('max')", threshold)  # let the API refuse it
    threshold.send_keys("3")
    run_search(page, "warranty")
    [alert] = wait_for(page, "#search-error:not([hidden])")
    assert "relevance_threshold" in alert.text


def test_upload_form_indexes_a_file_that_search_then_finds(page: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    # Given a Markdown file the tenant does not have yet
    note = tmp_path / "espresso.md"
    note.write_text(
        "# Espresso machine\n\n## Cleaning\n\nBackflush the Tidewell espresso machine every Friday with one "
        "spoon of cleaning powder, and soak the portafilter basket in hot water for ten minutes.\n"
    )
    # When it is chosen in the upload form under a folder and submitted
    page.find_element(By.ID, "upload-files").send_keys(str(note))
    page.find_element(By.ID, "upload-prefix").send_keys("kitchen")
    page.find_element(By.ID, "upload-button").click()
    # Then the page reports it indexed and the document list shows it
    [result] = wait_for(page, "#upload-results li.status-indexed")
    assert result.text.startswith("kitchen/espresso.md: indexed")
    assert text_of(page, "#upload-status") == "Done: 1 indexed."
    wait_for(page, "#documents tbody tr.status-indexed td.doc")
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(page, 30).until(
        lambda d: (
            "kitchen/espresso.md" in {e.text for e in d.find_elements(By.CSS_SELECTOR, "#documents td.doc")}
        )
    )
    # And a search finds it
    run_search(page, "How often should the espresso machine be backflushed?")
    top = wait_for(page, "#results li.result")[0]
    assert text_of(top, ".citation .doc") == "Document: kitchen/espresso.md"
    assert "Cleaning" in text_of(top, ".citation .section")


def test_a_failed_upload_is_counted_as_failed_in_the_summary(page: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    # Given two files, one of them a broken PDF
    good, bad = tmp_path / "kettle-care.md", tmp_path / "broken.pdf"
    good.write_text("# Kettle care\n\nDescale the office kettle every four weeks with citric acid.\n")
    bad.write_bytes(b"%PDF-1.7 this is not a real pdf")
    # When both are uploaded at once
    page.find_element(By.ID, "upload-files").send_keys(f"{good}\n{bad}")
    page.find_element(By.ID, "upload-button").click()
    wait_for(page, "#upload-results li.status-failed")
    # Then the summary says one failed instead of "Done: 2 files."
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(page, 60).until(lambda d: d.find_element(By.ID, "upload-status").text.startswith("Done"))
    assert text_of(page, "#upload-status") == "Done: 1 indexed, 1 failed."


def test_options_start_closed_and_re_rank_is_off_without_a_re_ranker(page: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    # Given the page on the embedded default (no re-ranker configured)
    options = page.find_element(By.ID, "options")
    # Then the options panel is closed, so the results start near the query box
    assert options.get_attribute("open") is None
    query_box = page.find_element(By.ID, "query").rect
    results = page.find_element(By.ID, "results").rect
    assert results["y"] - (query_box["y"] + query_box["height"]) < 150
    # And once the page has asked the server, Re-rank is neither ticked nor offered
    WebDriverWait(page, 30).until(lambda d: d.execute_script("return document.readyState") == "complete")
    _open_options(page)
    rerank = page.find_element(By.ID, "rerank")
    assert not rerank.is_selected()
    assert not rerank.is_enabled()
    assert "no re-ranker" in text_of(page, "#rerank-help")
    # And without an answer model, "Answer" is not offered (it could only answer 501)
    WebDriverWait(page, 30).until(
        lambda d: d.execute_script("return performance.getEntriesByName(location.origin + '/local/config')")
    )
    assert not page.find_element(By.ID, "answer-button").is_displayed()


def test_a_390_pixel_wide_screen_shows_everything_without_sideways_scrolling(
    browser: Any, server: WinnowHTTPServer, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    # Given a phone-sized viewport (390 CSS pixels, as an iPhone 12-15), and a table as wide as the HTTP
    # status table of Python's docs (long names that cannot wrap)
    upload(server, TENANT, "reference/http-status.md", HTTP_STATUS.encode())
    size = browser.get_window_size()
    browser.set_window_size(390, 844)
    try:
        browser.get(f"{server.url}/?tenant={TENANT}")
        inner = browser.execute_script("return window.innerWidth")
        assert inner <= 400, inner
        # When the options and a filter row are open and a search has answered with the wide table
        _open_options(browser)
        browser.find_element(By.ID, "add-filter").click()
        run_search(browser, "Which status code is REQUEST_HEADER_FIELDS_TOO_LARGE?")
        [box, *_] = wait_for(browser, "#results li.result .table-scroll")
        wait_for(browser, "#documents tbody tr")
        browser.save_screenshot(str(tmp_path / "search-page-390.png"))
        # Then nothing is wider than the screen: the page does not scroll sideways and no element
        # sticks out past the right edge; the table's rows are blocks of "column: value" lines, so no
        # column hides past its box's edge either (issue 48)
        overflowing = browser.execute_script(
            "const w = document.documentElement.clientWidth;"
            "return Array.from(document.querySelectorAll('body *'))"
            "  .filter(e => !e.parentElement.closest('.table-scroll'))"
            "  .filter(e => e.getClientRects().length && e.getBoundingClientRect().right > w + 0.5)"
            "  .map(e => e.id || e.className || e.tagName);"
        )
        assert overflowing == []
        page_width = browser.execute_script("return document.documentElement.scrollWidth")
        assert page_width <= inner, page_width
        assert browser.execute_script("return arguments[0].scrollWidth <= arguments[0].clientWidth", box)
        # And a document name that wraps does so after "/", "-", "_" or ".", never inside a word
        assert _name_breaks(browser) == []
    finally:
        browser.set_window_size(size["width"], size["height"])


HTTP_STATUS = """# HTTP status codes

| Code | Enum Name | Details |
|---|---|---|
| 413 | REQUEST_ENTITY_TOO_LARGE | Content Too Large HTTP Semantics RFC 9110, Section 15.5.14 |
| 416 | REQUESTED_RANGE_NOT_SATISFIABLE | Range Not Satisfiable HTTP Semantics RFC 9110, Section 15.5.17 |
| 431 | REQUEST_HEADER_FIELDS_TOO_LARGE | Request Header Fields Too Large, RFC 6585 |
| 511 | NETWORK_AUTHENTICATION_REQUIRED | Network Authentication Required, RFC 6585 |
"""


def _name_breaks(driver: Any) -> list[str]:
    """Each place a document name in the list wraps to a new line other than after "/", "-", "_" or
    ".": the text of the line before the break, for the assertion message."""
    found: list[str] = driver.execute_script(
        """
        const bad = [];
        for (const cell of document.querySelectorAll('#documents td.doc')) {
          const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT, {
            acceptNode: (n) => n.parentElement.closest('.doc-error') ? NodeFilter.FILTER_REJECT
                                                                     : NodeFilter.FILTER_ACCEPT });
          let text = '', lastTop = null, node;
          while ((node = walker.nextNode())) {
            for (let i = 0; i < node.data.length; i += 1) {
              const range = document.createRange();
              range.setStart(node, i);
              range.setEnd(node, i + 1);
              const rect = range.getClientRects()[0];
              if (!rect) continue;
              if (lastTop !== null && rect.top > lastTop + 2 && !'/-_. '.includes(text.slice(-1))) {
                bad.push(text);
              }
              lastTop = rect.top;
              text += node.data[i];
            }
          }
        }
        return bad;
        """
    )
    return found


DEPOTS = [
    ["Site", "Manager", "Opening hours"],
    ["Depot Amsterdam", "Ingrid Bakker", "06:00-22:00"],
    ["Depot Rotterdam", "Pieter de Vries", "07:00-19:00"],
    ["Depot Utrecht", "Fatima El Amrani", "05:30-23:00"],
    ["Depot Eindhoven", "Joost Smit", "08:00-18:00"],
]
DOCK_MEMO = (
    "Tidewell loading dock notice\n\nThe loading dock at the Leiden warehouse closes at noon on Saturdays "
    "while the conveyor belts are serviced. Drivers arriving later unload at the north gate."
)


def _results_with(driver: Any, css: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    return [
        result
        for result in wait_for(driver, "#results li.result")
        if result.find_elements(By.CSS_SELECTOR, css)
    ]


def test_table_passages_show_as_tables_and_ocr_passages_are_marked(
    page: Any, server: WinnowHTTPServer
) -> None:
    from selenium.webdriver.common.by import By

    from tests.support.documents import make_table_pdf
    from tests.support.scans import png_bytes, render_page

    # Given a PDF with a table of depots (text layer) and a scanned memo (a PNG image, read by OCR),
    # uploaded to the real local server, which parses, OCRs and indexes them
    table_pdf = make_table_pdf(
        DEPOTS, caption="Table 2: Depot managers", before="Depots of the Tidewell network."
    )
    assert upload(server, TENANT, "ops/depots.pdf", table_pdf)["status"] == "indexed"
    memo = png_bytes(render_page(DOCK_MEMO, seed=3)[0])
    assert upload(server, TENANT, "ops/dock-memo.png", memo)["status"] == "indexed"
    page.refresh()
    # When a user asks a question one cell answers
    run_search(page, "Who is the manager of Depot Utrecht?")
    # Then the table passage is drawn as a table: its caption, the column names as header cells, and
    # each row's values under their columns
    [first, *_] = _results_with(page, "table.passage-table")
    table = first.find_element(By.CSS_SELECTOR, "table.passage-table")
    assert "Depot managers" in text_of(table, "caption")
    assert [cell.text for cell in table.find_elements(By.CSS_SELECTOR, "thead th")] == DEPOTS[0]
    rows = [
        [cell.text for cell in row.find_elements(By.CSS_SELECTOR, "td")]
        for row in table.find_elements(By.CSS_SELECTOR, "tbody tr")
    ]
    assert DEPOTS[3] in rows
    assert all(len(row) == len(DEPOTS[0]) for row in rows)
    # and it cites the PDF and its page, without an OCR mark (it came from the text layer)
    assert text_of(first, ".citation .doc") == "Document: ops/depots.pdf"
    assert text_of(first, ".citation .page") == "Page: 1"
    assert not first.find_elements(By.CSS_SELECTOR, ".ocr-badge")
    # When the user asks about what only the scanned memo says
    run_search(page, "When does the loading dock at the Leiden warehouse close on Saturdays?")
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(page, 60).until(  # the previous answer stays on the page until the new one arrives
        lambda d: (
            "ops/dock-memo.png" in d.find_element(By.ID, "results").text
            or "depots.pdf" not in d.find_element(By.ID, "results").text
        )
    )
    results = wait_for(page, "#results li.result")
    # Then the memo's passage is shown as text read by OCR, marked so, and no other passage is marked
    memo_results = [r for r in results if text_of(r, ".citation .doc") == "Document: ops/dock-memo.png"]
    assert memo_results, [r.text for r in results]
    assert "closes at noon on Saturdays" in text_of(memo_results[0], "p.passage")
    badge = memo_results[0].find_element(By.CSS_SELECTOR, ".citation .ocr-badge")
    assert badge.text == "OCR" and "OCR" in (badge.get_attribute("title") or "")
    assert all(not r.find_elements(By.CSS_SELECTOR, ".ocr-badge") for r in results if r not in memo_results)


def test_a_table_passage_keeps_each_cell_under_its_own_column(page: Any, server: WinnowHTTPServer) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    # Given a CSV whose column names are prefixes of each other ("Port", "Port/protocol"), one holding
    # ": ", two of the same name, and cells holding " | " and ": ", uploaded to the real local server
    header = ["Port", "Port/protocol", "Note: legacy", "Owner", "Owner"]
    rows = [
        ["5432", "5432 | tcp", "", "Quillfeather database team", "dba: Ottoline"],
        ["", "6432 | tcp", "pooler: replaced in 2024", "Quillfeather database team", ""],
    ]
    csv_text = "\n".join(",".join(f'"{cell}"' for cell in row) for row in [header, *rows]) + "\n"
    assert upload(server, TENANT, "ops/quillfeather-ports.csv", csv_text.encode())["status"] == "indexed"
    page.refresh()
    # When a user asks what the table answers
    run_search(page, "Which port does the Quillfeather database team own?")
    WebDriverWait(page, 60).until(lambda d: "quillfeather-ports.csv" in d.find_element(By.ID, "results").text)
    [result, *_] = [
        r
        for r in _results_with(page, "table.passage-table")
        if text_of(r, ".citation .doc") == "Document: ops/quillfeather-ports.csv"
    ]
    table = result.find_element(By.CSS_SELECTOR, "table.passage-table")
    # Then every column is a header cell of its own (the second "Owner" numbered), and every value
    # stands under its own column, whole, the cells left empty staying empty
    names = [cell.text for cell in table.find_elements(By.CSS_SELECTOR, "thead th")]
    assert names == ["Port", "Port/protocol", "Note: legacy", "Owner", "Owner (2)"]
    drawn = [
        [cell.text for cell in row.find_elements(By.CSS_SELECTOR, "td")]
        for row in table.find_elements(By.CSS_SELECTOR, "tbody tr")
    ]
    assert drawn == rows


def test_a_table_passage_without_column_names_shows_its_pipes_as_written(
    page: Any, server: WinnowHTTPServer
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    # Given an HTML page whose table has no header row (a tool list, as ninja's manual has) and a cell
    # holding a shell pipe
    html = (
        "<html><body><h1>Zephyrine tools</h1><table>"
        "<tr><td>graph</td><td>zephyrine -t graph all | dot -Tpng -o graph.png</td></tr>"
        "<tr><td>query</td><td>zephyrine -t query target</td></tr></table></body></html>"
    )
    assert upload(server, TENANT, "ops/zephyrine-tools.html", html.encode())["status"] == "indexed"
    page.refresh()
    # When a user asks what the table answers
    run_search(page, "How do I draw the zephyrine graph with dot?")
    WebDriverWait(page, 60).until(lambda d: "zephyrine-tools.html" in d.find_element(By.ID, "results").text)
    [result, *_] = [
        r
        for r in wait_for(page, "#results li.result")
        if "zephyrine-tools.html" in text_of(r, ".citation .doc")
    ]
    # Then the passage shows the cell as written, without the escape the rendering adds
    passage = text_of(result, ".passage")
    assert "graph all | dot -Tpng" in passage and "\\|" not in passage


def test_a_restricted_result_is_marked_and_names_its_readers_only_to_those_who_may_change_it(
    page: Any, server: WinnowHTTPServer
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    # Given a board memo readable by ann and the board group only, uploaded by an admin
    admin = {"x-winnow-groups": "winnow-admins"}
    sidecar = b'{"access": {"users": ["ann"], "groups": ["board"]}}'
    # (a sidecar goes in as `winnow ingest` puts it: no upload route writes one)
    server.lane.submit(
        TENANT, server.runtime.put_and_ingest, [Upload(f"{TENANT}/board/memo.md.metadata.json", sidecar)]
    ).result()
    memo = b"# Board memo\n\nThe quokka merger closes in the spring, pending the regulator's approval.\n"
    assert upload(server, TENANT, "board/memo.md", memo, admin)["status"] == "indexed"
    page.refresh()

    def memo_results() -> list[Any]:
        run_search(page, "When does the quokka merger close?")
        # the list is busy from the click until this search's results are in (it may say nothing)
        results_list = page.find_element(By.ID, "results")
        WebDriverWait(page, 60).until(lambda _: results_list.get_attribute("aria-busy") != "true")
        results = page.find_elements(By.CSS_SELECTOR, "#results li.result")
        return [r for r in results if "board/memo.md" in r.text]

    # When nobody is named (anonymous), Then the memo is not among the results
    assert memo_results() == []
    # When a board member searches, Then it is marked restricted, without saying to whom
    page.find_element(By.ID, "groups").send_keys("board")
    [member] = memo_results()
    assert text_of(member, ".citation .access-badge") == "Restricted"
    # When ann (a listed user, who may change it) searches, Then the badge names its readers
    page.find_element(By.ID, "groups").clear()
    page.find_element(By.ID, "user").send_keys("ann")
    [owner] = memo_results()
    assert text_of(owner, ".citation .access-badge") == "Restricted to users ann; groups board"
    page.find_element(By.ID, "user").clear()


def _api_search(server: WinnowHTTPServer, body: dict[str, Any]) -> dict[str, Any]:
    """POST /search straight to the server, as the page's tenant: what the page should show."""
    import http.client
    import json

    host, port = str(server.server_address[0]), int(server.server_address[1])
    connection = http.client.HTTPConnection(host, port, timeout=120)
    try:
        headers = {"X-Winnow-Tenant": TENANT, "content-type": "application/json"}
        connection.request("POST", "/search", body=json.dumps(body), headers=headers)
        response = connection.getresponse()
        payload = json.loads(response.read())
    finally:
        connection.close()
    assert response.status == 200, payload
    return dict(payload)


def test_each_passage_shows_the_text_around_it_unless_asked_not_to(
    page: Any, server: WinnowHTTPServer
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    # Given the page's default (the text before and after each passage)
    query = "How long is the warranty on the Beacon?"
    run_search(page, query)
    top = wait_for(page, "#results li.result")[0]
    expected = _api_search(server, {"query": query, "context": "neighbours"})["results"][0]["context"]
    assert expected["before"] or expected["after"]
    # Then the top passage shows the same context as the API, dimmed around it, passage in between
    shown = [e.get_attribute("class") for e in top.find_elements(By.CSS_SELECTOR, "p")]
    for side in ("before", "after"):
        if expected[side]:
            part = top.find_element(By.CSS_SELECTOR, f".context-{side}")
            assert " ".join(part.text.split()) == " ".join(expected[side].split())
    if expected["before"]:
        assert shown.index("context context-before") < shown.index("passage")
    # When the user asks for the passage only, Then no context is shown
    _open_options(page)
    Select(page.find_element(By.ID, "context")).select_by_value("none")
    from selenium.webdriver.support.ui import WebDriverWait

    run_search(page, query)
    results_list = page.find_element(By.ID, "results")
    WebDriverWait(page, 60).until(lambda _: results_list.get_attribute("aria-busy") != "true")
    assert wait_for(page, "#results li.result .passage")
    assert not page.find_elements(By.CSS_SELECTOR, "#results .context")
    Select(page.find_element(By.ID, "context")).select_by_value("neighbours")


def test_a_figure_result_shows_its_thumbnail_which_opens_the_image(
    browser: Any, server: WinnowHTTPServer
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from tests.support.figure_docs import CHART, INTRO, figure_docx

    # Given a tenant of its own holding a DOCX with a chart
    upload(server, "figures-page", "report.docx", figure_docx([CHART], intro=INTRO))
    browser.get(f"{server.url}/?tenant=figures-page")
    # When the chart is searched for
    run_search(browser, "tram ridership by city")
    (image,) = wait_for(browser, "img.figure-thumbnail")
    # Then its thumbnail loads from this server (the page's policy allows its own images only)
    WebDriverWait(browser, 30).until(
        lambda _: browser.execute_script("return arguments[0].naturalWidth", image)
    )
    assert browser.execute_script("return arguments[0].naturalWidth", image) == 900
    assert image.get_attribute("alt") == CHART.caption
    # and the thumbnail is a link that opens the image itself, signed for it
    link = image.find_element(By.XPATH, "..")
    assert link.tag_name == "a" and "/local/figures?key=_figures%2Ffigures-page%2F" in link.get_attribute(
        "href"
    )
    assert link.get_attribute("target") == "_blank"


def test_a_sample_configuration_file_is_shown_with_its_lines_and_indentation(
    page: Any, server: WinnowHTTPServer
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    # Given a manual whose sample configuration keeps its layout in the passage (issue 46: the sample
    # wgetrc read "## ## Global settings ... #tries = 20")
    doc = (
        b"# Quillfeather settings\n\nA sample quillfeather configuration file:\n\n```\n"
        b"## Global quillfeather settings\n[retries]\n    attempts = 20\n    backoff = 5\n```\n"
    )
    assert upload(server, TENANT, "ops/quillfeather.md", doc)["status"] == "indexed"
    page.refresh()
    # When a user asks about it
    run_search(page, "quillfeather retries attempts configuration")
    WebDriverWait(page, 60).until(lambda d: "quillfeather.md" in d.find_element(By.ID, "results").text)
    [result, *_] = [
        r for r in wait_for(page, "#results li.result") if "quillfeather.md" in text_of(r, ".citation .doc")
    ]
    # Then the page draws each line on its own line, indented as written
    passage = result.find_element(By.CSS_SELECTOR, ".passage")
    shown = page.execute_script("return arguments[0].innerText;", passage)
    assert "## Global quillfeather settings\n[retries]\n    attempts = 20\n    backoff = 5" in shown
