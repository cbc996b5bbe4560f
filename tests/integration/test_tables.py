"""Table chunks through the real ingest and search handlers: a question answered by one cell finds its
row with the column names, and ``kind`` is filterable."""

from __future__ import annotations

from tests.support.office import Slide, make_pptx, make_xlsx
from tests.support.stack import EmbeddedStack

ROWS = [["Site", "Manager", "Opening hours", "Phone"]] + [
    [f"Depot {name}", manager, hours, f"+31 20 555 {n:04d}"]
    for n, (name, manager, hours) in enumerate(
        [
            ("Amsterdam", "Ingrid Bakker", "06:00-22:00"),
            ("Rotterdam", "Pieter de Vries", "07:00-19:00"),
            ("Utrecht", "Fatima El Amrani", "05:30-23:00"),
            ("Eindhoven", "Joost Smit", "08:00-18:00"),
            ("Groningen", "Anouk Visser", "07:30-20:30"),
        ]
    )
]
NOTES = b"""# Depot guide

Every depot accepts returns during its opening hours. Managers approve refunds above one hundred euros.
"""


def test_a_cell_question_finds_its_row_with_column_names_and_kind_filters(stack: EmbeddedStack) -> None:
    # Given a depot sheet, a slide deck with the same facts in a table, and a prose guide
    assert stack.upload("acme/depots.xlsx", make_xlsx({"Depots": ROWS}))["status"] == "indexed"
    deck = make_pptx([Slide("Depot managers", ["Who runs which depot"], table=[r[:2] for r in ROWS])])
    assert stack.upload("acme/managers.pptx", deck)["status"] == "indexed"
    assert stack.upload("acme/guide.md", NOTES)["status"] == "indexed"
    # When someone asks a question answered by one cell
    status, body = stack.search("who is the manager of Depot Utrecht", relevance_threshold=0, top_k=3)
    # Then a table row comes back whole, with its column names, marked as a table
    assert status == 200
    tables = [hit for hit in body["results"] if hit["kind"] == "table"]
    assert tables, body["results"]
    assert any("Site: Depot Utrecht | Manager: Fatima El Amrani" in hit["text"] for hit in tables)
    # And a filter on kind keeps only tables (or only text)
    _, only_tables = stack.search(
        "depot opening hours", relevance_threshold=0, top_k=10, filters={"kind": "table"}
    )
    assert only_tables["results"] and all(hit["kind"] == "table" for hit in only_tables["results"])
    _, only_text = stack.search(
        "depot opening hours", relevance_threshold=0, top_k=10, filters={"kind": "text"}
    )
    assert only_text["results"] and all(hit["kind"] == "text" for hit in only_text["results"])
    assert "acme/guide.md" in {hit["key"] for hit in only_text["results"]}
    # And the slide's table keeps its slide as the page and its title as the section
    slide_rows = [hit for hit in only_tables["results"] if hit["key"] == "acme/managers.pptx"]
    assert slide_rows and slide_rows[0]["page"] == 1 and slide_rows[0]["section"] == "Depot managers"


def test_a_pdf_tables_cell_question_finds_its_row_through_the_real_handlers(stack: EmbeddedStack) -> None:
    from tests.support.documents import make_table_pdf

    # Given a PDF (text layer) with a captioned depot table between two paragraphs, and a prose guide
    pdf = make_table_pdf(
        [row[:3] for row in ROWS],
        caption="Table 4: Depot managers and opening hours",
        before="Every depot of the network is listed below with the manager who runs it.",
        after="Holiday hours are announced a week ahead.",
    )
    assert stack.upload("acme/depots.pdf", pdf)["status"] == "indexed"
    assert stack.upload("acme/guide.md", NOTES)["status"] == "indexed"
    # When someone asks a question answered by one cell
    status, body = stack.search(
        "what are the opening hours of Depot Groningen", relevance_threshold=0, top_k=3
    )
    # Then the row comes back whole with its column names, as a table on the PDF's page 1, captioned
    assert status == 200
    [top, *_] = body["results"]
    assert top["key"] == "acme/depots.pdf" and top["kind"] == "table" and top["page"] == 1
    assert "Site: Depot Groningen | Manager: Anouk Visser | Opening hours: 07:30-20:30" in top["text"]
    assert top["text"].startswith(
        "Table 4: Depot managers and opening hours\nColumns: Site | Manager | Opening hours"
    )
    assert top["ocr"] is False
