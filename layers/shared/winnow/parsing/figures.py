"""Figures inside documents: charts, diagrams and photos become passages of their own (``kind="figure"``).

The format parsers only point at pictures: each image the document itself holds (nothing is fetched)
becomes a candidate block with its caption ("Figure 3: ..." near it, a ``<figcaption>``, a Word caption
paragraph) and alt text, where it stands in the reading order. ``resolve_figures`` then decides, for
the whole document at once, what is a figure and what it says:

- **decoration is dropped**: an image with a side under ``figure_min_side_pixels`` (bullets, rules,
  icons), an image drawn on two pages or more, or three times in a document without pages (logos, page
  furniture: judged by the SHA-256 of its bytes), the second sight of an image, and every figure past
  ``max_figures``;
- **pixels are bounded before decoding**: sizes come from the image header or the PDF's declared
  ``/Width`` and ``/Height`` (``parsing.images``); an image over ``_MAX_FIGURE_PIXELS`` or the OCR
  side limit is never decoded and is no figure;
- **its text**: the caption and the alt text, then what OCR reads in the image (Textract in AWS,
  tesseract locally, marked ``OcrPage.figure``); ``figure_text``
  says "ocr" when OCR added words, else "caption". A provider's permanent refusal keeps the caption
  (the document is never failed for a figure); an outage (``TransientError``) propagates, so the
  document is retried like any other OCR outage. A figure with no text at all (an uncaptioned photo)
  is dropped: nothing could find it.

Nothing here decodes pixels or imports Pillow (the Lambda bundle has none): PDF images are handed on
as their JPEG stream, or as a PNG built from their 8-bit samples with ``zlib``.
"""

from __future__ import annotations

import hashlib
import re
import struct
import zlib
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from winnow.errors import EmptyDocument, ParseBudgetExceeded, PermanentError
from winnow.models import Block, Figure, ParsedDocument
from winnow.parsing.images import PNG_MAGIC, image_size, sniff_image

if TYPE_CHECKING:
    from winnow.ports import Ocr
    from winnow.settings import IngestSettings, OcrSettings

__all__ = [
    "FIGURE_TEXT_KINDS",
    "figure_candidate",
    "is_figure_caption",
    "pdf_image",
    "resolve_figures",
]

FIGURE_TEXT_KINDS = ("vision", "ocr", "caption")
# Larger images are not figures (a full-page scan is read as a page): never decoded, never sent to OCR.
_MAX_FIGURE_PIXELS = 16_000_000
# Distinct images held while parsing, as a multiple of max_figures: repetition is judged on all of
# them (digests are cheap), bytes are kept only for this many (10,000 tiny images cost nothing).
_HELD_PER_FIGURE = 4
_MAX_CAPTION_CHARS = 300
_MAX_OCR_CHARS = 1_500
# "Figure 3: ...", "Fig. 2.1 ...", "Chart 4 -", "Diagram A", "Photo 12". Bounded: a caption is one line.
_CAPTION = re.compile(
    r"^(?:figure|fig\.?|chart|diagram|graph|photo(?:graph)?|plate|illustration|image|exhibit|abbildung)"
    r"(?:\s{1,3}|(?<=\.))(?:[0-9]{1,4}(?:[.\-][0-9]{1,4}){0,3}[a-z]?|(?-i:[A-Z]|[IVXLC]{1,6}))\b",
    re.IGNORECASE,
)
# Alt text that is only the picture's file name ("image.png", as Office tools write it) says nothing.
_FILE_NAME = re.compile(r"^[\w .-]{0,200}\.(?:png|jpe?g|gif|tiff?|bmp|emf|wmf|svg|webp)$", re.IGNORECASE)
_WORD = re.compile(r"[^\W_]{3,}")


def is_figure_caption(line: str) -> bool:
    """Whether a line reads as a figure's caption ("Figure 3: Revenue by region")."""
    stripped = line.strip()
    return 0 < len(stripped) <= _MAX_CAPTION_CHARS and bool(_CAPTION.match(stripped))


def figure_candidate(
    data: bytes, *, caption: str = "", alt: str = "", min_side: int = 1, max_side: int = 20_000
) -> Figure | None:
    """A figure candidate from an image's bytes, or None when they are no PNG/JPEG/TIFF, their header is
    unreadable, or its size is outside the bounds (read from the header: nothing is decoded)."""
    media_type = sniff_image(data)
    if media_type is None:
        return None
    size = image_size(data, media_type)
    if size is None:
        return None
    width, height = size
    if not _within(width, height, min_side, max_side):
        return None
    figure = Figure(
        media_type=media_type, digest=hashlib.sha256(data).hexdigest(), width=width, height=height, data=data
    )
    return labelled(figure, caption, alt)


def labelled(figure: Figure, caption: str, alt: str) -> Figure:
    """The figure with this sight's caption and alt text (a file name for alt text says nothing)."""
    return replace(figure, caption=_clip(caption), alt="" if _FILE_NAME.match(alt.strip()) else _clip(alt))


class PackageImages:
    """Figure candidates of a package's image members, each member read and judged once per document
    (issue 44: an EPUB showing one 3 MB image 20,000 times read and hashed it 20,000 times, 46 s). A
    later sight of a member carries the first sight's facts without its bytes, which is what the
    block collector keeps of a repeated image anyway; the work per sight is a dictionary lookup."""

    def __init__(self, min_side: int) -> None:
        self._min_side = min_side
        self._seen: dict[str, Figure | None] = {}

    def candidate(
        self, name: str, read: Callable[[], bytes], caption: str = "", alt: str = ""
    ) -> Figure | None:
        if name in self._seen:
            facts = self._seen[name]
            return None if facts is None else labelled(facts, caption, alt)
        figure = figure_candidate(read(), caption=caption, alt=alt, min_side=self._min_side)
        self._seen[name] = None if figure is None else replace(figure, data=b"", caption="", alt="")
        return figure


def _within(width: int, height: int, min_side: int, max_side: int) -> bool:
    small = min(width, height) < min_side
    return not small and max(width, height) <= max_side and width * height <= _MAX_FIGURE_PIXELS


def _clip(text: str) -> str:
    from winnow.parsing.blocks import clean_inline

    return clean_inline(text)[:_MAX_CAPTION_CHARS]


def pdf_image(xobject: Any, *, min_side: int, max_side: int, wanted: Any = None) -> Figure | None:
    """A PDF image XObject as a figure candidate (``wanted(digest)`` false: without its bytes): a JPEG
    stream as it is, 8-bit gray or RGB samples as a PNG (Flate alone: inflated by us, never past the
    declared size; other chains such as ASCII85 + Flate: by pypdf, under its own output limit). The declared
    size is checked first, so a hostile image is skipped without inflating a byte; anything else (CMYK
    or indexed samples, JBIG2, CCITT, JPEG 2000) is no figure."""
    from pypdf.generic import ArrayObject

    width, height = int(xobject.get("/Width", 0) or 0), int(xobject.get("/Height", 0) or 0)
    if not _within(width, height, min_side, max_side):
        return None
    filters = xobject.get("/Filter")
    names = [str(name) for name in filters] if isinstance(filters, ArrayObject) else [str(filters or "")]
    raw = xobject._data  # the stream as stored: its digest needs no decoding
    digest = hashlib.sha256(raw).hexdigest()
    if wanted is not None and not wanted(digest):
        # seen before, or past what the parser holds: the digest is all the judging needs
        return Figure(digest=digest, width=width, height=height)
    if names == ["/DCTDecode"]:
        if sniff_image(raw) != "image/jpeg":
            return None
        return Figure(media_type="image/jpeg", digest=digest, width=width, height=height, data=raw)
    if int(xobject.get("/BitsPerComponent", 0) or 0) != 8 or "/DCTDecode" in names:
        return None
    channels = _channels(xobject.get("/ColorSpace"))
    if channels is None:
        return None
    if names == ["/FlateDecode"]:
        return _flate_image(xobject, raw, digest, width, height, channels)
    samples = xobject.get_data()
    if len(samples) != width * height * channels:
        return None  # a stream that does not hold what it declares
    return Figure(
        media_type="image/png",
        digest=digest,
        width=width,
        height=height,
        data=png_from_samples(width, height, channels, samples),
    )


def _flate_image(
    xobject: Any, raw: bytes, digest: str, width: int, height: int, channels: int
) -> Figure | None:
    """A Flate-only image inflated by us, never past the size its header declares (a stream that
    inflates further is a bomb, and no figure). PNG-predicted samples are already PNG scanlines: the
    stream itself becomes the PNG's data, unchanged."""
    parameters = xobject.get("/DecodeParms")
    parameters = parameters.get_object() if parameters is not None else None
    predictor = int(parameters.get("/Predictor", 1)) if isinstance(parameters, dict) else 1
    if predictor >= 10:
        colors = int(parameters.get("/Colors", 1)) if isinstance(parameters, dict) else 1
        columns = int(parameters.get("/Columns", 1)) if isinstance(parameters, dict) else 1
        if (colors, columns) != (channels, width):
            return None
        expected = (width * channels + 1) * height
    elif predictor == 1:
        expected = width * height * channels
    else:
        return None  # TIFF predictor: rare in figures
    inflater = zlib.decompressobj()
    inflated = inflater.decompress(raw, expected + 1)
    if len(inflated) != expected:
        return None  # shorter than declared, or longer: a bomb stops here, one byte past the size
    if predictor >= 10:
        data = _png(width, height, channels, raw)
    else:
        data = png_from_samples(width, height, channels, inflated)
    return Figure(media_type="image/png", digest=digest, width=width, height=height, data=data)


def _channels(space: Any) -> int | None:
    """Samples per pixel of a gray or RGB colour space (ICC-based included), else None."""
    if space is None:
        return None
    space = space.get_object() if hasattr(space, "get_object") else space
    if isinstance(space, list) and len(space) == 2 and str(space[0]) == "/ICCBased":
        count = int(space[1].get_object().get("/N", 0) or 0)
        return count if count in (1, 3) else None
    return {"/DeviceGray": 1, "/CalGray": 1, "/DeviceRGB": 3, "/CalRGB": 3}.get(str(space))


def png_from_samples(width: int, height: int, channels: int, samples: bytes) -> bytes:
    """A PNG of 8-bit gray (1) or RGB (3) samples, rows unfiltered: ``zlib`` and ``struct`` only."""
    stride = width * channels
    rows = b"".join(b"\x00" + samples[row * stride : (row + 1) * stride] for row in range(height))
    return _png(width, height, channels, zlib.compress(rows, 6))


def _png(width: int, height: int, channels: int, compressed_rows: bytes) -> bytes:
    color_type = 0 if channels == 1 else 2

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", width, height, 8, color_type, 0, 0, 0)
    return PNG_MAGIC + chunk(b"IHDR", header) + chunk(b"IDAT", compressed_rows) + chunk(b"IEND", b"")


def resolve_figures(
    document: ParsedDocument,
    settings: IngestSettings,
    ocr: Ocr | None = None,
    ocr_settings: OcrSettings | None = None,
) -> ParsedDocument:
    """The document with its figure candidates judged (see the module docstring): kept figures carry
    their text and ``figure_text``, the rest are gone. Raises ``EmptyDocument`` when nothing is left."""
    candidates = [(index, block) for index, block in enumerate(document.blocks) if block.figure is not None]
    if not candidates:
        return document
    kept = _select(candidates, settings)
    texts = _read_figures([block.figure for _, block in kept if block.figure], ocr, ocr_settings)
    resolved: dict[int, Block | None] = {index: None for index, _ in candidates}
    ocr_read = 0
    for (index, block), ocr_text in zip(kept, texts, strict=True):
        resolved[index] = _figure_block(block, ocr_text)
        ocr_read += ocr_text is not None
    blocks: list[Block] = []
    for index, block in enumerate(document.blocks):
        chosen = resolved.get(index, block) if index in resolved else block
        if chosen is not None:
            blocks.append(chosen)
        elif block.figure is not None and block.figure.owns_caption and block.figure.caption:
            blocks.append(Block(block.figure.caption, block.section_path, block.page))  # a dropped figure
    if not blocks:
        raise EmptyDocument(f"{document.source_type.upper()} has no text, and its images no caption or text")
    return replace(document, blocks=blocks, ocr_pages=document.ocr_pages + ocr_read)


def _select(candidates: list[tuple[int, Block]], settings: IngestSettings) -> list[tuple[int, Block]]:
    """The candidates that are figures, in document order, at most ``max_figures``."""
    pages: dict[str, set[int | None]] = {}
    sightings: dict[str, int] = {}
    for _, block in candidates:
        assert block.figure is not None
        pages.setdefault(block.figure.digest, set()).add(block.page)
        sightings[block.figure.digest] = sightings.get(block.figure.digest, 0) + 1
    kept: list[tuple[int, Block]] = []
    seen: set[str] = set()
    for index, block in candidates:
        assert block.figure is not None
        digest = block.figure.digest
        numbered = {page for page in pages[digest] if page is not None}
        if len(numbered) >= 2 or (not numbered and sightings[digest] >= 3) or digest in seen:
            continue  # page furniture (a logo on every page), or an image already kept
        seen.add(digest)
        if not block.figure.data:
            continue  # past what the parser held (see _HELD_PER_FIGURE)
        if len(kept) >= settings.max_figures:
            break
        kept.append((index, block))
    return kept


def held_limit(settings: IngestSettings) -> int:
    """Distinct images whose bytes a parser keeps while parsing."""
    return settings.max_figures * _HELD_PER_FIGURE


def _read_figures(
    figures: Sequence[Figure], ocr: Ocr | None, ocr_settings: OcrSettings | None
) -> list[str | None]:
    """OCR text of each figure (None: not read, or nothing useful in it). A permanent refusal or a
    figure over local OCR's memory cap keeps the captions; an outage raises."""
    from winnow.ports import OcrPage
    from winnow.settings import OcrSettings

    if ocr is None or not figures:
        return [None] * len(figures)
    limit = (ocr_settings or OcrSettings()).max_pages
    pages = [OcrPage(figure.data, figure.media_type, figure=True) for figure in figures[:limit]]
    try:
        texts: list[str] = ocr.read(pages)
    except (PermanentError, ParseBudgetExceeded):
        texts = [""] * len(pages)
    read: list[str | None] = [_useful(text) for text in texts]
    return read + [None] * (len(figures) - len(read))


def _useful(text: str) -> str | None:
    """OCR text worth indexing: at least two words of three letters, not the speckle a photo gives."""
    from winnow.parsing.blocks import clean_lines

    cleaned = clean_lines(text)[:_MAX_OCR_CHARS]
    words = _WORD.findall(cleaned)
    if len(words) < 2:
        return None
    letters = sum(len(word) for word in words)
    visible = sum(1 for char in cleaned if not char.isspace())
    return cleaned if visible and letters / visible >= 0.5 else None


def _figure_block(block: Block, ocr_text: str | None) -> Block | None:
    """The figure's passage text: caption, alt text (when it says more), OCR text."""
    from winnow.parsing.blocks import clean_lines

    figure = block.figure
    assert figure is not None
    parts = [figure.caption] if figure.caption else []
    if figure.alt and figure.alt.casefold() not in figure.caption.casefold():
        parts.append(figure.alt)
    if ocr_text:
        parts.append(ocr_text)
    text = clean_lines("\n".join(parts))
    if not text:
        return None
    kind = "ocr" if ocr_text else "caption"
    return replace(block, text=text, figure=replace(figure, figure_text=kind))
