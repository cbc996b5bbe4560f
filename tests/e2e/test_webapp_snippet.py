"""docs/webapp.md's browser integration, run as written: the fenced block between the webapp-snippet
markers is executed in headless Chromium on a page served by ``winnow serve`` (token → /uploads → form
POST → poll status → search), then the page's own upload and delete buttons go through the same routes."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.browser import wait_for
from tests.support.serve import serving
from winnow_local.web.server import WinnowHTTPServer

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
TENANT = "webapp"
KETTLE = (
    "# Kettle manual\n\n## Descaling\n\nDescale the Brewmaster kettle every four weeks with citric acid.\n"
)


def snippet() -> str:
    text = (ROOT / "docs" / "webapp.md").read_text()
    match = re.search(
        r"<!-- webapp-snippet:start -->\s*```js\n(.*?)```\s*<!-- webapp-snippet:end -->", text, re.S
    )
    assert match, "docs/webapp.md lost its snippet markers"
    return match.group(1)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WinnowHTTPServer]:
    home = tmp_path_factory.mktemp("webapp") / "home"
    with serving(home) as httpd:
        yield httpd


def test_the_documented_snippet_uploads_polls_and_searches(browser: Any, server: WinnowHTTPServer) -> None:
    # Given a page of winnow serve and the snippet from docs/webapp.md
    browser.get(f"{server.url}/?tenant={TENANT}")
    browser.set_script_timeout(120)
    # When the snippet runs on a File made in the browser
    result = browser.execute_async_script(
        snippet()
        + """
        const done = arguments[arguments.length - 1];
        const file = new File([arguments[1]], "kettle.md", { type: "text/markdown" });
        uploadAndSearch(arguments[0], { "x-winnow-tenant": arguments[2] }, file, "manuals/kettle.md",
                        "how often should I descale the kettle?")
          .then(done, (error) => done({ error: String(error) }));
        """,
        server.url,
        KETTLE,
        TENANT,
    )
    # Then the file was uploaded through the signed form, indexed, and is what the search finds
    assert "error" not in result, result
    assert result["key"] == f"{TENANT}/manuals/kettle.md"
    assert result["results"] and result["results"][0]["key"] == f"{TENANT}/manuals/kettle.md"
    assert "citric acid" in result["results"][0]["text"]
    # and the snippet shows the top result with the sentence the search core highlighted marked
    top = result["results"][0]
    marks = browser.execute_script(
        snippet() + 'return Array.from(passageWithHighlights(arguments[0]).querySelectorAll("mark"), '
        "(m) => m.textContent);",
        top,
    )
    assert top["highlight"] and marks == [
        top["text"][h["start"] : h["end"]] for h in sorted(top["highlight"], key=lambda h: h["start"])
    ]
    assert "citric acid" in " ".join(marks)


def test_the_snippet_marks_highlights_by_code_point_and_keeps_text_as_text(
    browser: Any, server: WinnowHTTPServer
) -> None:
    # Given a result whose highlighted sentence follows an emoji (two UTF-16 units in JavaScript) and
    # whose text holds markup
    text = "🚀 Launch <b>notes</b>. The launch window opens at 06:10 UTC. <img src=x onerror=alert(1)>"
    sentence = "The launch window opens at 06:10 UTC."
    start = text.index(sentence)
    result = {"text": text, "highlight": [{"start": start, "end": start + len(sentence)}]}
    browser.get(f"{server.url}/?tenant={TENANT}")
    # When the documented function draws it
    shown = browser.execute_script(
        snippet()
        + """
        const p = passageWithHighlights(arguments[0]);
        return { text: p.textContent, marks: Array.from(p.querySelectorAll("mark"), (m) => m.textContent),
                 elements: p.querySelectorAll("*").length };
        """,
        result,
    )
    # Then exactly the sentence is marked, the rest reads as the text, and no markup became an element
    assert shown == {"text": text, "marks": [sentence], "elements": 1}


def test_page_uploads_and_deletes_through_the_api_routes(
    browser: Any,
    server: WinnowHTTPServer,
    tmp_path: Path,
) -> None:
    from selenium.webdriver.common.by import By

    # Given the search page and a file to add
    file = tmp_path / "descaling.md"
    file.write_text(KETTLE.replace("Kettle manual", "Descaling card"))
    browser.get(f"{server.url}/?tenant={TENANT}")
    # When it is added with the page's form
    browser.find_element(By.ID, "upload-files").send_keys(str(file))
    browser.find_element(By.ID, "upload-button").click()
    (item,) = wait_for(browser, "#upload-results li.status-indexed", timeout=120)
    assert "descaling.md" in item.text
    # Then the document list shows it indexed, with a delete button that removes it
    row = wait_for(browser, "tr.document.status-indexed button.delete-document", timeout=60)
    keys = [b.get_attribute("data-key") for b in row]
    assert f"{TENANT}/descaling.md" in keys
    button = next(b for b in row if b.get_attribute("data-key") == f"{TENANT}/descaling.md")
    button.click()
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(browser, 10).until(lambda d: d.switch_to.alert).accept()  # the page asks first
    wait_for(browser, "tr.document.status-deleted", timeout=60)
