"""What the ``winnow`` subcommands share: tenant and prefix checks, output helpers and the one way a failed
API response becomes a one-line error."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import textwrap
from collections.abc import Collection
from dataclasses import dataclass
from typing import IO, Any, NoReturn

from winnow.ingest.results import IngestOutcome
from winnow.rules import TENANT_RULE, is_tenant, path_in_tenant
from winnow_local.errors import CliError
from winnow_local.highlights import mark, spans
from winnow_local.runtime import DEFAULT_TENANT, ApiResponse

SIDECAR_SUFFIX = ".metadata.json"
INGEST_FIELDS = ("key", "status", "chunks", "embedded", "reused", "error")
FAILED_STATUSES = frozenset({IngestOutcome.FAILED, IngestOutcome.RETRY})
TENANT_HELP = f"tenant (default {DEFAULT_TENANT!r})"


def print_json(value: Any, stream: IO[str] | None = None) -> None:
    print(json.dumps(value, ensure_ascii=False), file=stream or sys.stdout, flush=True)


class Progress:
    """A one-line progress bar on stderr, drawn only when stderr is a terminal (stdlib only)."""

    def __init__(self, total: int, stream: IO[str] | None = None) -> None:
        self.total = total
        self.done = 0
        self.stream = stream or sys.stderr
        self.enabled = total > 0 and self.stream.isatty()
        self._drawn = False

    def draw(self, label: str = "") -> None:
        if not self.enabled:
            return
        width = shutil.get_terminal_size((80, 20)).columns
        bar_width = 24
        filled = int(bar_width * self.done / self.total)
        head = f"[{'#' * filled}{'.' * (bar_width - filled)}] {self.done}/{self.total} "
        room = max(0, width - len(head) - 1)
        tail = label if len(label) <= room else "..." + label[-max(0, room - 3) :]
        self.stream.write("\r" + head + tail[:room] + "\x1b[K")
        self.stream.flush()
        self._drawn = True

    def clear(self) -> None:
        if self.enabled and self._drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._drawn = False

    def advance(self, label: str = "") -> None:
        self.done += 1
        self.draw(label)


def document_name(key: str, tenant: str) -> str:
    return path_in_tenant(tenant, key)


def add_identity_arguments(parser: Any) -> None:
    """``--user`` and ``--groups``: who the request comes from, as a token's claims would say."""
    parser.add_argument("--user", default=None, help="user id (the token's user claim); default: anonymous")
    parser.add_argument("--groups", default="", help="groups, comma-separated (the token's groups claim)")


def identity(args: Any) -> tuple[str | None, list[str]]:
    """The ``--user`` and ``--groups`` of a command (the same reading as ``winnow mcp``'s)."""
    from winnow_local.mcp_server import split_groups

    return getattr(args, "user", None), split_groups(getattr(args, "groups", ""))


def check_tenant(tenant: str) -> str:
    if not is_tenant(tenant):
        raise CliError(f"invalid tenant {tenant!r}: use {TENANT_RULE}")
    return tenant


def check_prefix(prefix: str) -> str:
    if prefix.startswith("/") or ".." in prefix.split("/"):
        raise CliError(f"invalid prefix {prefix!r}: give a relative path such as 'docs/'")
    return prefix


def wrap(text: str, indent: str = "    ", width: int = 100) -> str:
    """Paragraphs (parted by a blank line) filled to ``width``; a paragraph with line breaks of its own
    (code, a sample file, a list: passages keep breaks only where they mean something) keeps its lines
    and their indentation, each line wrapped alone."""
    out: list[str] = []
    for part in text.split("\n\n"):
        if not part.strip():
            continue
        if "\n" not in part.strip("\n"):
            out.append(
                textwrap.fill(" ".join(part.split()), width, initial_indent=indent, subsequent_indent=indent)
            )
            continue
        for line in part.strip("\n").split("\n"):
            lead = indent + line[: len(line) - len(line.lstrip(" "))]
            body = line.strip()
            out.append(
                textwrap.fill(body, width, initial_indent=lead, subsequent_indent=lead) if body else ""
            )
    return "\n".join(out)


def table_text(
    caption: str,
    columns: list[str],
    rows: list[dict[str, str]],
    indent: str = "    ",
    marked: Collection[int] = (),
    marks: Marks | None = None,
) -> str:
    """A table passage as a reader expects it at a terminal: a header, a rule, one row a line, columns
    aligned, long cells wrapped within their column to fit ``width``; too many columns for that, one
    block of ``column: value`` lines per row. The rows numbered in ``marked`` are marked (``marks``)."""
    marks = marks or PLAIN_MARKS

    def marking(number: int, lines: list[str]) -> list[str]:
        return [marks.row(line) for line in lines] if number in marked else lines

    width = 100 - len(indent)
    gap = " | "
    natural = [max([len(name), *(len(row.get(name, "")) for row in rows)]) for name in columns]
    room = width - len(gap) * (len(columns) - 1)
    if room < 8 * len(columns):  # too narrow for a grid: one block per row
        name_width = max(len(name) for name in columns)
        blocks = []
        for number, row in enumerate(rows):
            block = "\n".join(
                textwrap.fill(
                    row[name],
                    width,
                    initial_indent=f"{indent}{name:<{name_width}}  ",
                    subsequent_indent=indent + " " * (name_width + 2),
                )
                for name in columns
                if row.get(name)
            )
            blocks.append("\n".join(marking(number, block.split("\n"))))
        head = (
            [textwrap.fill(caption, width, initial_indent=indent, subsequent_indent=indent)]
            if caption
            else []
        )
        return "\n\n".join(head + blocks)
    widths = list(natural)
    while sum(widths) > room:  # narrow the widest column a step at a time
        widest = max(range(len(widths)), key=widths.__getitem__)
        widths[widest] -= 1

    def line(cells: list[str]) -> list[str]:
        wrapped = [
            textwrap.wrap(cell, w, break_on_hyphens=False) or [""]
            for cell, w in zip(cells, widths, strict=True)
        ]
        height = max(len(lines) for lines in wrapped)
        return [
            (
                indent
                + gap.join(
                    f"{(c[i] if i < len(c) else ''):<{w}}" for c, w in zip(wrapped, widths, strict=True)
                )
            ).rstrip()
            for i in range(height)
        ]

    out = [textwrap.fill(caption, width, initial_indent=indent, subsequent_indent=indent)] if caption else []
    out += line(columns)
    out.append(indent + "-+-".join("-" * w for w in widths))
    for number, row in enumerate(rows):
        out += marking(number, line([row.get(name, "") for name in columns]))
    return "\n".join(out)


@dataclass(frozen=True)
class Marks:
    """How a highlighted sentence is marked: ``opener`` and ``closer`` around it in prose, ``row`` for
    a highlighted table row's lines. ``per_line``: the marks close at each line's end and open again
    after the next line's indent (a terminal's bold, so a pager or a line-by-line reader keeps it)."""

    opener: str
    closer: str
    row_prefix: str
    per_line: bool = False

    def row(self, line: str) -> str:
        if self.per_line:
            body = line.lstrip(" ")
            return f"{line[: len(line) - len(body)]}{self.opener}{body}{self.closer}"
        return self.row_prefix + line[len(self.row_prefix) :]


# Plain text (a pipe, a file, NO_COLOR): the sentence in **…**, a table row starting with ">".
PLAIN_MARKS = Marks("**", "**", "  > ")
# A terminal: bold (SGR 1, ended by SGR 22, which leaves colours alone).
BOLD_MARKS = Marks("\x1b[1m", "\x1b[22m", "", per_line=True)
_OPEN, _CLOSE = "\ue000", "\ue001"  # stand-ins while wrapping: one character each, never in a passage


def marks_for(stream: IO[str]) -> Marks:
    """Bold on a terminal, unless NO_COLOR is set (https://no-color.org); plain marks otherwise."""
    import os

    isatty = getattr(stream, "isatty", None)
    if callable(isatty) and isatty() and not os.environ.get("NO_COLOR"):
        return BOLD_MARKS
    return PLAIN_MARKS


def passage_text(result: dict[str, Any], indent: str = "    ", marks: Marks | None = None) -> str:
    """A search result's text for the terminal: a table passage drawn as a table, prose wrapped; the
    result's highlighted sentences marked (``marks``, plain by default)."""
    marks = marks or PLAIN_MARKS
    text = str(result.get("text") or "")
    highlight = result.get("highlight")
    if result.get("kind") == "table":
        from winnow.text.tables import read_rendered

        table = read_rendered(text)
        if table is not None:
            marked = _marked_rows(text, spans(text, highlight))
            return table_text(*table, indent=indent, marked=marked, marks=marks)
    if not marks.per_line:
        return wrap(mark(text, highlight, marks.opener, marks.closer), indent=indent)
    lines = []
    inside = False
    for line in wrap(mark(text, highlight, _OPEN, _CLOSE), indent=indent).split("\n"):
        body = line.lstrip(" ")
        head = line[: len(line) - len(body)] + (marks.opener if inside else "")
        for char in body:
            inside = {_OPEN: True, _CLOSE: False}.get(char, inside)
        body = body.replace(_OPEN, marks.opener).replace(_CLOSE, marks.closer)
        lines.append(head + body + (marks.closer if inside else ""))
    return "\n".join(lines)


def _marked_rows(text: str, highlighted: list[tuple[int, int]]) -> set[int]:
    """The numbers of a table passage's rows (the lines after its column line) a highlight touches."""
    from winnow.text.tables import COLUMNS_PREFIX

    rows: set[int] = set()
    at, number = 0, None
    for line in text.split("\n"):
        end = at + len(line)
        if number is not None:
            if any(start < end and at < stop for start, stop in highlighted):
                rows.add(number)
            number += 1
        elif line.startswith(COLUMNS_PREFIX):
            number = 0
        at = end + 1
    return rows


# The API's request fields, as this command spells them.
_FLAGS = {
    "query": "QUERY",
    "top_k": "--top-k",
    "candidates": "--candidates",
    "filters": "--filter",
    "mode": "--mode",
    "rerank": "--no-rerank",
    "relevance_threshold": "--threshold",
}


def _validation_message(response: ApiResponse) -> str | None:
    """A 422's field errors in the command's own terms: ``--top-k: Input should be ... 50``."""
    try:
        details = response.json()["error"]["details"]
    except (ValueError, KeyError, TypeError):
        return None
    if not isinstance(details, list) or not details:
        return None
    parts = []
    for detail in details[:5]:
        field = str(detail.get("field") or "")
        head = field.split(".", 1)[0]
        name = _FLAGS.get(head, field)
        if head == "filters" and "." in field:
            name = f"--filter {field.split('.', 2)[1]}"
        message = str(detail.get("message") or "invalid").removeprefix("Value error, ")
        parts.append(f"{name}: {message}")
    return "; ".join(parts)


def fail_response(response: ApiResponse) -> NoReturn:
    if response.status == 422:
        message = _validation_message(response)
        if message:
            raise CliError(message)
    hint = ""
    if response.status == 401:
        hint = " (the request carried no tenant, or its token is missing, expired or not for this API)"
    elif response.status == 500 and "internal" in response.error_message:
        hint = " (run with --verbose to see the handler's log)"
    raise CliError(f"{response.error_message}{hint}")


def whole_number(text: str) -> int:
    """A whole number; its range is the API's to check, so every out-of-range value reads the same."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def unit_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError("must be between 0 and 1")
    return value
