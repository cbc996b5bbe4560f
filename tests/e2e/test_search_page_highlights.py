"""The search page marks each result's highlighted sentences (``<mark>``) in headless Chromium, through
``winnow serve``: first the page's own rendering on results written here (hostile text, bad offsets,
characters outside the BMP, table rows), then real searches whose highlights the search core chose."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.browser import run_search, wait_for
from tests.support.serve import serving, upload
from winnow_local.web.server import WinnowHTTPServer

pytestmark = pytest.mark.slow

TENANT = "highlights"
ROCKET = "🚀 Launch notes 🛰️\n\nThe crew boards at dawn. The launch window opens at 06:10 UTC on the pad.\n"
DEPOTS = "Site,Manager,Opening hours\nDepot Amsterdam,Ingrid Bakker,06:00-22:00\n"
DEPOTS += "Depot Utrecht,Fatima El Amrani,05:30-23:00\nDepot Eindhoven,Joost Smit,08:00-18:00\n"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WinnowHTTPServer]:
    home = tmp_path_factory.mktemp("highlights") / "home"
    with serving(home) as httpd:
        assert upload(httpd, TENANT, "space/launch.md", ROCKET.encode())["status"] == "indexed"
        assert upload(httpd, TENANT, "ops/depots.csv", DEPOTS.encode())["status"] == "indexed"
        yield httpd


@pytest.fixture
def page(browser: Any, server: WinnowHTTPServer) -> Any:
    browser.get(f"{server.url}/?tenant={TENANT}")
    wait_for(browser, "#documents tbody tr")  # the page's scripts have run
    return browser


def at(text: str, sentence: str) -> dict[str, int]:
    """A highlight as the API writes it: offsets in code points (Python's indices)."""
    start = text.index(sentence)
    return {"start": start, "end": start + len(sentence)}


def render(page: Any, *results: dict[str, Any]) -> list[dict[str, Any]]:
    """The page's own renderResults on these results; per result, its passage's HTML and its marks."""
    filled = [
        {
            "rank": n,
            "score": 0.5,
            "key": f"{TENANT}/doc{n}.md",
            "title": f"Doc {n}",
            "page": None,
            "section": "",
            "kind": "text",
        }
        | r
        for n, r in enumerate(results, start=1)
    ]
    shown: list[dict[str, Any]] = page.execute_script(
        """
        window.winnowPage.renderResults({ results: arguments[0] });
        return Array.from(document.querySelectorAll('#results li.result')).map((item) => {
          const passage = item.querySelector('.passage');
          return { html: passage.innerHTML, text: passage.textContent,
                   marks: Array.from(passage.querySelectorAll('mark')).map((m) => m.textContent),
                   rows: Array.from(passage.querySelectorAll('tr.highlighted td mark'))
                           .map((m) => m.textContent) };
        });
        """,
        filled,
    )
    return shown


def test_a_highlight_after_characters_outside_the_bmp_marks_exactly_its_sentence(page: Any) -> None:
    # Given a passage whose highlighted sentence comes after two emoji (two UTF-16 units each in JS)
    text = "🚀 Launch notes 🛰️. The launch window opens at 06:10 UTC. Crews board at dawn."
    sentence = "The launch window opens at 06:10 UTC."
    # When the page renders it
    (shown,) = render(page, {"text": text, "highlight": [at(text, sentence)]})
    # Then exactly that sentence is marked, and the passage reads as its text
    assert shown["marks"] == [sentence]
    assert shown["text"] == text


def test_text_and_offsets_never_become_html(page: Any) -> None:
    # Given passages that hold markup, highlighted and not, and highlights that are not numbers
    text = 'Say <img src=x onerror="window.pwned=1"> & <b>bold</b>. Then <script>window.pwned=2</script>.'
    hostile = [
        at(text, "<b>bold</b>."),
        {"start": "<img src=x onerror=window.pwned=3>", "end": 4},
        {"start": 0, "end": "4<b>"},
        {"start": 1.5, "end": 4},
        {"start": True, "end": 4},
        None,
        "<mark>",
    ]
    # When the page renders them
    (shown, other) = render(
        page, {"text": text, "highlight": hostile}, {"text": text, "highlight": "<b>x</b>"}
    )
    # Then the markup is shown as text: no element but the one mark, no script run
    assert shown["marks"] == ["<b>bold</b>."]
    assert shown["html"].count("<") == 2 and "&lt;img" in shown["html"] and "&lt;script&gt;" in shown["html"]
    assert shown["text"] == text and other["text"] == text and other["marks"] == []
    assert page.execute_script("return window.pwned === undefined")


def test_bad_and_overlapping_offsets_are_ignored_and_the_better_highlight_stays(page: Any) -> None:
    text = "One short sentence. Two short sentences. Three."
    highlight = [
        at(text, "Two short sentences."),
        {"start": text.index("short sentences"), "end": len(text)},  # overlaps the better one
        {"start": 0, "end": len(text) + 1},  # past the end
        {"start": 5, "end": 5},  # empty
        {"start": -3, "end": 2},
        at(text, "Three."),
    ]
    (shown,) = render(page, {"text": text, "highlight": highlight})
    assert shown["marks"] == ["Two short sentences.", "Three."]
    assert shown["text"] == text


def test_a_highlighted_table_row_has_its_cells_marked(page: Any) -> None:
    text = (
        "Depot managers\nColumns: Site | Manager\nSite: Depot Amsterdam | Manager: Ingrid Bakker\n"
        "Site: Depot Utrecht | Manager: Fatima El Amrani"
    )
    (shown,) = render(
        page,
        {
            "kind": "table",
            "text": text,
            "highlight": [at(text, "Site: Depot Utrecht | Manager: Fatima El Amrani")],
        },
    )
    assert shown["rows"] == ["Depot Utrecht", "Fatima El Amrani"]


def _api_search(server: WinnowHTTPServer, query: str) -> list[dict[str, Any]]:
    host, port = str(server.server_address[0]), int(server.server_address[1])
    connection = http.client.HTTPConnection(host, port, timeout=120)
    try:
        headers = {"X-Winnow-Tenant": TENANT, "content-type": "application/json"}
        connection.request("POST", "/search", body=json.dumps({"query": query}), headers=headers)
        response = connection.getresponse()
        payload = json.loads(response.read())
    finally:
        connection.close()
    assert response.status == 200, payload
    return list(payload["results"])


def _shown_marks(page: Any) -> list[list[str]]:
    marks: list[list[str]] = page.execute_script(
        "return Array.from(document.querySelectorAll('#results li.result')).map((item) =>"
        "  Array.from(item.querySelectorAll('.passage mark')).map((m) => m.textContent));"
    )
    return marks


@pytest.mark.parametrize(
    ("query", "answer"),
    [
        ("When does the launch window open?", "06:10 UTC"),
        ("Who manages Depot Utrecht?", "Fatima El Amrani"),
    ],
)
def test_a_real_search_marks_the_sentences_the_search_core_highlighted(
    page: Any, server: WinnowHTTPServer, query: str, answer: str
) -> None:
    # Given what the API answers for the question (the highlights the search core chose)
    results = _api_search(server, query)
    assert results and all(r["highlight"] for r in results), results
    # When the user asks the same question on the page
    run_search(page, query)
    wait_for(page, "#results li.result mark")
    # Then every result marks exactly its highlighted sentences (or its highlighted rows' cells), in
    # text order, and the top one marks the answer
    shown = _shown_marks(page)
    assert len(shown) == len(results)
    for marks, result in zip(shown, results, strict=True):
        text = result["text"]
        sentences = [
            text[h["start"] : h["end"]] for h in sorted(result["highlight"], key=lambda h: h["start"])
        ]
        if result["kind"] == "table":
            assert all(mark in " ".join(sentences) for mark in marks) and marks
        else:
            assert marks == sentences
    assert answer in " ".join(shown[0])
