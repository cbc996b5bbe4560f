"""Documents as this machine ships them (a gzip'd GNU info manual, a man page saved as text, a page
laid out in tables, an EPUB with spaces in its chapter names), generated in the same shapes and sent
through the real ingest and search handlers: each passage comes back with its section and without
navigation, and a broken file is ``failed`` with a one-line reason."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from tests.support.office import make_epub
from tests.support.reliability import point_snapshot
from tests.support.stack import EmbeddedStack
from tests.unit.test_clean_extraction import INFO_FILE, LAYOUT_TABLE_PAGE, MAN_PAGE
from winnow.settings import ChunkingSettings
from winnow_fakes.fake_voyage import FakeVoyageServer


def test_shipped_document_shapes_are_indexed_by_section_without_navigation(
    tmp_path: Path, fake_voyage: FakeVoyageServer
) -> None:
    # (fragments are not merged into neighbours here, so every section keeps its own chunk)
    stack = EmbeddedStack(tmp_path / "home", fake_voyage, chunking=ChunkingSettings(min_chars=0))
    try:
        _index_and_check(stack)
    finally:
        stack.close()


def _index_and_check(stack: EmbeddedStack) -> None:
    # Given the four shapes uploaded as people have them
    uploads = {
        "acme/grep.info.gz": gzip.compress(INFO_FILE.encode()),
        "acme/grep.txt": MAN_PAGE.encode(),
        "acme/FAQ.html": LAYOUT_TABLE_PAGE.encode("latin-1"),
        "acme/guide.epub": make_epub(
            "Field guide", [("Herons", "Herons wade in shallow water.")], "Part {number}.xhtml"
        ),
    }
    for key, data in uploads.items():
        assert stack.upload(key, data)["status"] == "indexed", key
    # When their chunks are read back from the index
    chunks = [json.loads(payload) for payload, _, _ in point_snapshot(stack.container.store).values()]
    sections: dict[str, set[str]] = {}
    for chunk in chunks:
        sections.setdefault(chunk["key"], set()).add(chunk["section"])
    # Then each passage carries its section, and no navigation text was indexed
    assert {"1 Introduction", "1 Introduction > 2.1.2 Matching Control", "Usage"} <= sections[
        "acme/grep.info.gz"
    ]
    assert {"NAME", "OPTIONS > Pattern Syntax"} <= sections["acme/grep.txt"]
    assert any(section.endswith("Troubles linking programs") for section in sections["acme/FAQ.html"])
    assert sections["acme/guide.epub"] == {"Herons"}
    every_text = " ".join(chunk["text"] for chunk in chunks)
    for navigation in ("Node:", "* Menu", "Main Menu", "GREP(1)", "INFO-DIR", "libraryFAQ"):
        assert navigation not in every_text


def test_a_broken_gzip_is_failed_with_a_one_line_reason(stack: EmbeddedStack) -> None:
    result = stack.upload("acme/notes.txt.gz", gzip.compress(b"notes that will be cut short")[:-10])
    assert result["status"] == "failed"
    assert str(result["error"]).startswith("corrupt gzip") and "\n" not in str(result["error"])
