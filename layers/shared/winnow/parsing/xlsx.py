"""XLSX, read with openpyxl in read-only, streaming mode, with defusedxml guarding its XML.

A visible sheet is a section and becomes one table, its first non-empty row the header. Sheets, rows
and cells are counted as they are read and a workbook over a limit is refused with its reason, so a
hostile file costs bounded time and memory by construction.
"""

from __future__ import annotations

import itertools
import re
import zipfile
from io import BytesIO
from typing import Any

from winnow.errors import CorruptDocument, OversizedDocument
from winnow.models import ParsedDocument
from winnow.parsing.blocks import BlockCollector, finish_document, one_line
from winnow.parsing.cleaning import clean_inline
from winnow.parsing.containers import check_archive
from winnow.parsing.office_package import guarded
from winnow.settings import IngestSettings

__all__ = ["parse_xlsx"]

MAX_SHEETS = 200
MAX_SHEET_ROWS = 100_000  # rows with a value, over all sheets of a workbook
MAX_SHEET_CELLS = 6_400_000  # likewise, up to the last non-empty cell of each row
# Rows read, empty ones included: a reader fills the gap up to a cell far down (a stray value in row
# 1,048,576), so a sheet of a few rows can span a million. Two full-height sheets, then refused.
MAX_ROWS_SPANNED = 2 * 1_048_576
# A formula cell of a sheet's XML without a cached result: <c r="D2"><f>B2*C2</f><v></v></c> (or no
# <v>); prefixes allowed (<x:c>). Shared-formula followers (<f t="shared" si="0"/>) count too. Tag
# attributes are matched up to a bound, so hostile XML costs linear time.
_P = rb"(?:[\w.-]+:)?"
_UNCACHED_FORMULA = re.compile(
    rb"<" + _P + rb"c\b(?![^<>]{0,1000}\bt=[\"'](?:str|e)[\"'])[^<>]{0,1000}>\s*"
    rb"(?:<" + _P + rb"f\b[^<>]{0,1000}/>|<" + _P + rb"f\b[^<>]{0,1000}>[^<]*</" + _P + rb"f>)\s*"
    rb"(?:<" + _P + rb"v\s*/>|<" + _P + rb"v>\s*</" + _P + rb"v>)?\s*</" + _P + rb"c>"
)
_SCAN_STEP_BYTES = 1024 * 1024
_SCAN_OVERLAP_BYTES = 64 * 1024  # longer than a formula cell (formulas are at most 8,192 characters)


def parse_xlsx(key: str, data: bytes, settings: IngestSettings) -> ParsedDocument:
    check_archive(data, settings, "XLSX")
    return guarded("XLSX", lambda: _parse_xlsx(key, data))


def _parse_xlsx(key: str, data: bytes) -> ParsedDocument:
    import warnings

    import openpyxl
    from openpyxl.utils.exceptions import InvalidFileException

    from winnow.parsing.tables import MAX_COLUMNS

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "unknown extension", "no default style": not the reader's concern
        try:
            workbook = openpyxl.load_workbook(BytesIO(data), read_only=True, data_only=True, keep_links=False)
            # Formulas a library wrote without computing them (openpyxl) have no cached value:
            # their text is read beside the values, so a reader sees "=B2*C2", not an empty column.
            formulas = (
                openpyxl.load_workbook(BytesIO(data), read_only=True, data_only=False, keep_links=False)
                if _has_uncached_formulas(data)
                else None
            )
        except InvalidFileException as error:
            raise CorruptDocument(f"corrupt XLSX ({one_line(error)})") from error
        try:
            sheets = workbook.worksheets
            if len(sheets) > MAX_SHEETS:
                raise OversizedDocument(f"XLSX has {len(sheets)} sheets (limit {MAX_SHEETS})")
            collector = BlockCollector()
            total_rows = total_cells = spanned_rows = 0
            gap: tuple[Any, ...] = ()
            for sheet in sheets:
                if sheet.sheet_state != "visible":
                    continue  # a hidden sheet is not what a reader of the workbook sees
                rows: list[list[str]] = []
                texts = (
                    formulas[sheet.title].iter_rows(max_col=MAX_COLUMNS, values_only=True)
                    if formulas
                    else None
                )
                for values in sheet.iter_rows(max_col=MAX_COLUMNS, values_only=True):
                    if texts is not None:  # the same XML read twice: its rows come in step
                        values = _with_formula_text(values, next(texts, ()))
                    spanned_rows += 1
                    if spanned_rows > MAX_ROWS_SPANNED:
                        raise OversizedDocument(f"XLSX sheets span more than {MAX_ROWS_SPANNED} rows (limit)")
                    # openpyxl fills a gap with one tuple of MAX_COLUMNS Nones, yielded for every row:
                    # judged once, then known by identity, so a gap row costs a step, not 256.
                    if values is gap or values.count(None) == len(values):
                        gap = values
                        continue
                    total_rows += 1
                    if total_rows > MAX_SHEET_ROWS:
                        raise OversizedDocument(f"XLSX has more than {MAX_SHEET_ROWS} rows (limit)")
                    row = [_cell_text(value) for value in _trimmed(values)]
                    while row and not row[-1]:  # rows come padded to the widest: keep what they hold
                        row.pop()
                    total_cells += len(row)
                    if total_cells > MAX_SHEET_CELLS:
                        raise OversizedDocument(f"XLSX has more than {MAX_SHEET_CELLS} cells (limit)")
                    rows.append(row)
                title = clean_inline(str(sheet.title)) or "Sheet"
                collector.add_table(rows, (title,), caption=title)
            doc_title = clean_inline(str(workbook.properties.title or "")) if workbook.properties else ""
        finally:
            workbook.close()
            if formulas is not None:
                formulas.close()
    return finish_document(
        collector.blocks,
        title=doc_title or None,
        key=key,
        source_type="xlsx",
        empty_reason="workbook has no cells",
    )


def _has_uncached_formulas(data: bytes) -> bool:
    """Whether a sheet holds a formula cell without a cached result (an empty or missing ``<v>``;
    a ``t="str"`` cell's empty value is a computed empty string). Inflates the sheets once more,
    in steps, stopping at the first one: far cheaper than parsing them twice."""
    with zipfile.ZipFile(BytesIO(data)) as archive:
        for member in archive.infolist():
            name = member.filename
            if not (name.startswith("xl/worksheets/") and name.endswith(".xml")):
                continue
            with archive.open(member) as stream:
                tail = b""
                while chunk := stream.read(_SCAN_STEP_BYTES):
                    window = tail + chunk
                    if _UNCACHED_FORMULA.search(window):
                        return True
                    tail = window[-_SCAN_OVERLAP_BYTES:]
    return False


def _with_formula_text(values: tuple[Any, ...], formulas: tuple[Any, ...]) -> tuple[Any, ...]:
    """Each empty value whose cell holds a formula, as the formula's text (``=SUM(D2:D3)``)."""

    def text(value: Any, formula: Any) -> Any:
        if value is not None:
            return value
        if isinstance(formula, str) and formula.startswith("="):
            return formula
        array_text = getattr(formula, "text", None)  # an array formula ({=...})
        return array_text if isinstance(array_text, str) and array_text.startswith("=") else None

    return tuple(
        text(value, formula) for value, formula in itertools.zip_longest(values, formulas[: len(values)])
    )


def _trimmed(values: tuple[Any, ...]) -> tuple[Any, ...]:
    """``values`` up to the last one that is not None. openpyxl pads every row to ``MAX_COLUMNS``: a
    row of a few values is mostly padding, counted here in C instead of converted cell by cell."""
    held = len(values) - values.count(None)
    if values[held:].count(None) == len(values) - held:  # the values first, then only padding
        return values[:held]
    end = len(values)
    while values[end - 1] is None:  # a row with empty cells between its values
        end -= 1
    return values[:end]


def _cell_text(value: Any) -> str:
    import datetime

    if value is None:
        return ""
    if isinstance(value, datetime.datetime):
        return value.isoformat(sep=" ", timespec="minutes").removesuffix(" 00:00")
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
