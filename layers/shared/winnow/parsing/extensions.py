"""Which file extensions name which document type: the one table detection (``winnow.parsing``) and
titles (``blocks.title_from_key``) read, kept in a leaf so that neither imports the other."""

from __future__ import annotations

import re

TYPE_BY_EXTENSION: dict[str, str] = {
    ".pdf": "pdf",
    ".docx": "docx",
    ".md": "markdown",
    ".markdown": "markdown",
    ".txt": "text",
    ".text": "text",
    ".info": "text",  # GNU info: read as text, its nodes recognised by the text parser
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".png": "image",
    ".jpg": "image",
    ".jpeg": "image",
    ".tif": "image",
    ".tiff": "image",
    ".pptx": "pptx",
    ".xlsx": "xlsx",
    ".xlsm": "xlsx",
    ".csv": "csv",
    ".tsv": "csv",
    ".tab": "csv",
    ".rst": "rst",
    ".rest": "rst",
    ".epub": "epub",
}

_INFO_PART = re.compile(r"^\.info-\d{1,4}$")  # find.info-1: the parts of a split info manual


def document_extension(suffix: str) -> str:
    """A file's suffix as the table names it: lower case, a split info manual's part as ``.info``."""
    return _INFO_PART.sub(".info", suffix.lower())


def is_document_extension(suffix: str) -> bool:
    """Whether ``suffix`` (``.pdf``, ``.info-2``) names a document type, not part of a file's name."""
    return document_extension(suffix) in TYPE_BY_EXTENSION
