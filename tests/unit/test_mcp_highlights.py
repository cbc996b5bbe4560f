"""The MCP ``search`` tool puts a passage's highlighted sentences, quoted, ahead of its text: the tool's
text is its result as JSON, read in order, so an agent reads the answering sentence first."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from winnow_local.mcp_server import WinnowTools

TEXT = "🚀 Launch day. The launch window opens at 06:10 UTC. Crews board an hour before."
WINDOW = "The launch window opens at 06:10 UTC."


class OneAnswer:
    """A backend that answers every request with one ``POST /search`` body, as the API would send it."""

    def __init__(self, payload: dict[str, Any]) -> None:
        self.payload = payload

    def request(
        self, method: str, path: str, *, body: Any = None, query: Mapping[str, Any] | None = None
    ) -> tuple[int, Any]:
        return 200, self.payload

    def why_nothing(self) -> str | None:
        return None


def result(highlight: Any) -> dict[str, Any]:
    return {
        "rank": 1,
        "score": 0.8,
        "key": "t/launch.md",
        "title": "Launch",
        "page": None,
        "section": "",
        "text": TEXT,
        "metadata": {},
        "highlight": highlight,
    }


def test_the_highlighted_sentences_are_quoted_before_the_text_with_their_offsets_after() -> None:
    # Given a result whose highlight follows an emoji (offsets in code points, as the API gives them)
    start = TEXT.index(WINDOW)
    payload = {
        "relevant": True,
        "message": "ok",
        "results": [result([{"start": start, "end": start + len(WINDOW)}])],
    }
    # When the tool searches
    found = WinnowTools(OneAnswer(payload)).search("when does the launch window open?")
    (passage,) = found["passages"]
    # Then the sentence is quoted whole, and comes before the text in the JSON an agent reads
    assert passage["highlights"] == [WINDOW]
    assert passage["highlight"] == [{"start": start, "end": start + len(WINDOW)}]
    keys = list(passage)
    assert keys.index("highlights") < keys.index("text") < keys.index("highlight")
    as_text = json.dumps(found, ensure_ascii=False)
    assert as_text.index(WINDOW) < as_text.index('"text"')


def test_unusable_or_overlapping_highlights_are_left_out() -> None:
    start = TEXT.index(WINDOW)
    highlight = [
        {"start": start, "end": start + len(WINDOW)},
        {"start": start + 4, "end": start + 20},  # inside the first
        {"start": 0, "end": 10_000},  # past the end
        {"start": "0", "end": 3},
    ]
    payload = {"relevant": True, "message": "ok", "results": [result(highlight)]}
    (passage,) = WinnowTools(OneAnswer(payload)).search("launch window")["passages"]
    assert passage["highlights"] == [WINDOW] and len(passage["highlight"]) == 1
    payload["results"] = [result(None)]
    (passage,) = WinnowTools(OneAnswer(payload)).search("launch window")["passages"]
    assert passage["highlights"] == [] and passage["highlight"] == []
