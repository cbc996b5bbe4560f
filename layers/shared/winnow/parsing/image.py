"""Image files (PNG, JPEG, TIFF): their text comes from OCR, as one page.

The size is checked on the header before the engine sees the bytes, so an image of 50,000 pixels a
side is refused with a reason instead of being decoded. A multi-page TIFF is read as its first page.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from winnow.errors import UnsupportedDocument
from winnow.models import ParsedDocument
from winnow.parsing.images import check_image, sniff_image

if TYPE_CHECKING:
    from winnow.ports import Ocr
    from winnow.settings import OcrSettings


def parse_image(key: str, data: bytes, ocr: Ocr | None, ocr_settings: OcrSettings | None) -> ParsedDocument:
    from winnow.parsing.blocks import finish_document
    from winnow.parsing.pdf_page import collect_ocr_page
    from winnow.ports import OcrPage
    from winnow.settings import OcrSettings

    settings = ocr_settings or OcrSettings()
    media_type = sniff_image(data)
    if media_type is None:
        raise UnsupportedDocument("not a PNG, JPEG or TIFF image")
    check_image(data, media_type, max_pixels=settings.max_image_pixels, max_side=settings.max_side_pixels)
    if ocr is None:
        raise UnsupportedDocument("image files need OCR, which is off (WINNOW_OCR_ENGINE)")
    if settings.max_pages < 1:
        raise UnsupportedDocument("image files need OCR, and the OCR page cap is 0 (WINNOW_OCR_MAX_PAGES)")
    (text,) = ocr.read([OcrPage(data, media_type)])
    blocks = collect_ocr_page(text, page=1)
    parsed = finish_document(
        blocks, title=None, key=key, source_type="image", empty_reason="OCR found no text in the image"
    )
    return ParsedDocument(parsed.title, parsed.blocks, parsed.source_type, ocr_pages=1)
