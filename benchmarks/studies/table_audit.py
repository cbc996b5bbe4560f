"""Table chunks of documents we did not write, checked from outside.

Tables this machine ships (HTML, Markdown and reStructuredText under /usr/share/doc and beside the
Cloud SDK, PDFs under /usr/share/doc, /etc/services, /etc/passwd and /etc/group as CSV/TSV) and office
files generated here with awkward tables (cells merged across columns and down rows, empty cells,
100 columns, one column, a paragraph in a cell, column names only, ragged CSV rows) go through the real
ingest handler of an embedded stack. Then, per file, from the chunks stored in Qdrant: how many table
chunks, the largest in the embedder's tokens (title and section included, as embedded) against its
window, table chunks without a column line or context line, and for the files whose cells we know, the
cells that no chunk holds under their column.

    python -m benchmarks.studies.table_audit [--json]
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import json
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from benchmarks.stack import EmbeddedStack

DOCS = Path("/usr/share/doc")
SDK_DOCS = Path("/usr/lib/google-cloud-sdk/platform/gsutil/third_party")
SHIPPED = [
    DOCS / "nodejs/api/os.html",
    DOCS / "nodejs/api/url.html",
    DOCS / "fontconfig/fontconfig-user.html",
    DOCS / "ninja-build/manual.html",
    DOCS / "nettle-dev/nettle.html",
    DOCS / "libffi8/html/Index.html",
    DOCS / "nodejs/api/url.md",
    DOCS / "nodejs/BUILDING.md",
    DOCS / "nodejs/api/intl.md",
    SDK_DOCS / "charset_normalizer/docs/user/support.rst",
    SDK_DOCS / "crcmod/docs/source/crcmod.predefined.rst",
    SDK_DOCS / "pyparsing/docs/HowToUsePyparsing.rst",
    DOCS / "zlib1g-dev/crc-doc.1.0.pdf.gz",
    DOCS / "nettle-dev/nettle.pdf.gz",
    DOCS / "bzip2/manual.pdf.gz",
]
PARAGRAPH = (
    "When we speak of free software, we are referring to freedom, not price. Our General Public Licenses "
    "are designed to make sure that you have the freedom to distribute copies of free software (and "
    "charge for them if you wish), that you receive source code or can get it if you want it, that you "
    "can change the software or use pieces of it in new free programs, and that you know you can do "
    "these things. To protect your rights, we need to prevent others from denying you these rights."
)


@dataclass
class FileAudit:
    name: str
    status: str
    table_chunks: int
    max_tokens: int
    over_window: int
    without_context: int
    known_cells: int
    cells_lost: int


def _services() -> list[list[str]]:
    rows = []
    for line in Path("/etc/services").read_text().splitlines():
        body, _, comment = line.partition("#")
        fields = body.split()
        if len(fields) >= 2:
            rows.append([fields[0], fields[1], " ".join(fields[2:]), comment.strip()])
    return rows


def shipped_files() -> list[tuple[str, bytes, list[list[str]]]]:
    """(name, bytes, known rows: header first, or [] when the cells are not known)."""
    files: list[tuple[str, bytes, list[list[str]]]] = []
    for path in SHIPPED:
        if path.is_file():
            data = path.read_bytes()
            name = path.name
            if name.endswith(".gz"):
                data, name = gzip.decompress(data), name[: -len(".gz")]
            files.append((f"shipped/{path.parent.name}-{name}", data, []))
    if Path("/etc/services").is_file():
        services = [["Service", "Port/protocol", "Aliases", "Comment"], *_services()]
        text = io.StringIO()
        csv.writer(text).writerows(services)
        files.append(("etc/services.csv", text.getvalue().encode(), services))
        tsv = "\n".join("\t".join(row) for row in services)
        files.append(("etc/services.tsv", tsv.encode(), services))
    for name, header in (("passwd", "user:pw:uid:gid:gecos:home:shell"), ("group", "name:pw:gid:members")):
        path = Path("/etc") / name
        if path.is_file():
            text = header + "\n" + path.read_text()
            rows = [line.split(":") for line in text.splitlines() if line]
            files.append((f"etc/{name}.csv", text.replace(":", ";").encode(), rows))
    return files


def generated_files() -> list[tuple[str, bytes, list[list[str]]]]:
    import docx
    import openpyxl
    from pptx import Presentation
    from pptx.util import Inches

    files: list[tuple[str, bytes, list[list[str]]]] = []
    document = docx.Document()
    document.add_heading("Warehouse contacts", level=1)
    contacts = [
        ["Site", "Contact", "Contact", "Hours"],
        ["Delft", "Ann", "ann@example.org", ""],
        ["Gouda", "", "bob@example.org", "9-17"],
    ]
    table = document.add_table(rows=3, cols=4)
    for r, row in enumerate(contacts):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    table.cell(0, 1).merge(table.cell(0, 2)).text = "Contact"
    document.add_heading("Licence clause", level=1)
    clause = document.add_table(rows=2, cols=2)
    for r, row in enumerate([["Clause", "Text"], ["7", PARAGRAPH]]):
        for c, value in enumerate(row):
            clause.cell(r, c).text = value
    document.add_heading("Depots", level=1)
    depots = document.add_table(rows=3, cols=2)
    for r, row in enumerate([["Region", "City"], ["North", "Groningen"], ["", "Assen"]]):
        for c, value in enumerate(row):
            depots.cell(r, c).text = value
    depots.cell(1, 0).merge(depots.cell(2, 0))
    buffer = io.BytesIO()
    document.save(buffer)
    known = [
        ["Site", "Contact", "Contact (2)", "Hours"],
        *[[row[0], row[1], row[2], row[3]] for row in contacts[1:]],
    ]
    files.append(("generated/tables.docx", buffer.getvalue(), known))

    workbook = openpyxl.Workbook()
    wide = workbook.active
    assert wide is not None
    wide.title = "Wide"
    wide_rows = [[f"Measurement {n}" for n in range(100)]] + [
        [f"r{r}c{n}" for n in range(100)] for r in range(5)
    ]
    for row in wide_rows:
        wide.append(row)
    sparse = workbook.create_sheet("Sparse")
    for row in [["Region", "Q1", "Q2", "Notes"], ["North", 10, None, "steady"], ["East", None, 4, PARAGRAPH]]:
        sparse.append(row)
    workbook.create_sheet("Names only").append(["Name", "Email", "Phone"])
    buffer = io.BytesIO()
    workbook.save(buffer)
    files.append(("generated/sheets.xlsx", buffer.getvalue(), wide_rows))

    presentation = Presentation()
    slide = presentation.slides.add_slide(presentation.slide_layouts[5])
    slide.shapes.title.text = "Quarterly results"
    grid = [["Team", "Units", ""], ["Red", "5", ""], ["Blue", "", "7"]]
    shape = slide.shapes.add_table(3, 3, Inches(1), Inches(2), Inches(8), Inches(2))
    for r, row in enumerate(grid):
        for c, value in enumerate(row):
            shape.table.cell(r, c).text = value
    shape.table.cell(0, 1).merge(shape.table.cell(0, 2))
    buffer = io.BytesIO()
    presentation.save(buffer)
    files.append(("generated/slides.pptx", buffer.getvalue(), [["Team", "Units", "Units (2)"], *grid[1:]]))

    ragged = [["a", "b", "c"], ["1", "2"], ["3", "4", "5", "6", "7"], ["8"]]
    files.append(("generated/ragged.csv", "\n".join(",".join(row) for row in ragged).encode() + b"\n", []))
    files.append(("generated/names-only.csv", b"Name,Email,Phone\n", []))
    files.append(
        ("generated/one-column.csv", b"City\nDelft\nGouda\nBreda\n", [["City"], ["Delft"], ["Gouda"]])
    )
    return files


def _pairs(text: str) -> set[tuple[str, str]]:
    """The (column, value) pairs of a table chunk, read as the search page reads them."""
    found = set()
    for line in text.split("\n"):
        for pair in line.split(" | "):
            name, separator, value = pair.replace("\\|", "|").partition(": ")
            if separator:
                found.add((name.replace(":\u00a0", ": "), value))
    return found


def audit(files: list[tuple[str, bytes, list[list[str]]]]) -> tuple[list[FileAudit], int]:
    """Each file's audit, and the embedder's window in tokens."""
    from winnow.adapters.qdrant_filters import document_filter

    results = []
    with tempfile.TemporaryDirectory() as home, EmbeddedStack(Path(home)) as stack:
        store, embedder = stack.container.store, stack.container.embedder
        window = embedder.max_input_tokens or 10**9
        for name, data, known in files:
            key = stack.key_for(name)
            info, sequencer = stack.container.objects.put(key, data)
            [result] = stack.send_ingest_event([("ObjectCreated:Put", key, info.size, info.etag, sequencer)])
            # The stored chunks, read back as the store holds them (no public listing of chunk texts).
            points = store._scroll(document_filter(store.conditions, stack.tenant, key), True)
            tables = [p.payload for p in points if p.payload.get("kind") == "table"]
            embedded = [
                "\n\n".join(
                    part
                    for part in (" > ".join(filter(None, [c["title"], *c["section_path"]])), c["text"])
                    if part
                )
                for c in tables
            ]
            tokens = embedder.count_tokens(embedded) if embedded else []
            pairs = set().union(*(_pairs(c["text"]) for c in tables)) if tables else set()
            cells = [
                (header, value)
                for row in known[1:]
                for header, value in zip(known[0], row, strict=False)
                if value
            ]
            results.append(
                FileAudit(
                    name=name,
                    status=str(result.get("status")),
                    table_chunks=len(tables),
                    max_tokens=max(tokens, default=0),
                    over_window=sum(count > window for count in tokens),
                    without_context=sum(not (c["section"] or c["text"].split("\n")[0]) for c in tables),
                    known_cells=len(cells),
                    cells_lost=sum((header, value) not in pairs for header, value in cells),
                )
            )
    return results, window


def report(results: list[FileAudit], window: int) -> str:
    lines = [
        f"{'file':48} {'status':8} {'tables':>6} {'max tokens':>10} {'> ' + str(window):>6} "
        f"{'no context':>10} {'known cells':>11} {'lost':>4}"
    ]
    for r in results:
        lines.append(
            f"{r.name:48} {r.status:8} {r.table_chunks:6} {r.max_tokens:10} {r.over_window:6} "
            f"{r.without_context:10} {r.known_cells:11} {r.cells_lost:4}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    results, window = audit(shipped_files() + generated_files())
    if args.json:
        print(json.dumps([asdict(r) for r in results], indent=1))
    else:
        print(report(results, window))
    return 0 if all(r.status == "indexed" and not r.cells_lost and not r.over_window for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
