"""Scanned pages made here: known text rendered to an image at about 200 dpi, with scanner-like noise.

Tests and the documents benchmark use these to know exactly what OCR should read. Pillow's built-in
FreeType font is used, so no system font is needed.
"""

from __future__ import annotations

import random
import textwrap
from io import BytesIO
from typing import Any

DPI = 200
PAGE_SIZE = (int(8.27 * DPI), int(11.69 * DPI))  # A4 at 200 dpi
MARGIN = int(0.8 * DPI)
FONT_PIXELS = 34  # about 12 pt at 200 dpi


def render_page(
    text: str,
    *,
    seed: int = 0,
    noise: float = 0.0,
    size: tuple[int, int] = PAGE_SIZE,
    font_pixels: int = FONT_PIXELS,
    rotate: float = 0.0,
) -> tuple[Any, str]:
    """A grayscale page with ``text`` (paragraphs separated by blank lines) wrapped to the width, and
    the text that fitted on it. ``noise`` is the share of pixels set to a random grey (speckle);
    ``rotate`` skews the page by that many degrees."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default(size=font_pixels)
    image = Image.new("L", size, 255)
    draw = ImageDraw.Draw(image)
    average = max(1.0, font.getlength("abcdefghijklmnopqrstuvwxyz") / 26)
    width_chars = int((size[0] - 2 * MARGIN) / average)
    y = MARGIN
    line_height = int(font_pixels * 1.45)
    drawn: list[str] = []
    for paragraph in text.split("\n\n"):
        lines = textwrap.wrap(" ".join(paragraph.split()), width_chars)
        if not lines or y + line_height > size[1] - MARGIN:
            continue
        for line in lines:
            if y + line_height > size[1] - MARGIN:
                break
            draw.text((MARGIN, y), line, font=font, fill=0)
            drawn.append(line)
            y += line_height
        y += line_height // 2
    if rotate:
        image = image.rotate(rotate, expand=False, fillcolor=255)
    if noise:
        rng = random.Random(seed)
        pixels = image.load()
        assert pixels is not None
        for _ in range(int(size[0] * size[1] * noise)):
            x, y2 = rng.randrange(size[0]), rng.randrange(size[1])
            pixels[x, y2] = rng.randrange(0, 256)
    return image, "\n".join(drawn)


def checkerboard_page(size: tuple[int, int] = PAGE_SIZE, cell: int = 2) -> Any:
    """A page of black and white squares ``cell`` pixels wide: a few KB compressed, and the worst case
    for an OCR engine's layout analysis (every square is a component; tesseract needs about 190 MB and
    seconds for one A4 page at 200 dpi, against 55 MB for a page of text)."""
    from PIL import Image

    width, height = size
    even = bytes(0 if (x // cell) % 2 else 255 for x in range(width))
    odd = bytes(255 - value for value in even)
    return Image.frombytes("L", size, b"".join(odd if (y // cell) % 2 else even for y in range(height)))


def png_bytes(image: Any) -> bytes:
    out = BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def jpeg_bytes(image: Any, quality: int = 85) -> bytes:
    out = BytesIO()
    image.convert("L").save(out, format="JPEG", quality=quality)
    return out.getvalue()


def scanned_pdf(images: list[Any]) -> bytes:
    """An image-only PDF (no text layer), one image per page, as a scanner writes it."""
    out = BytesIO()
    first, *rest = [image.convert("L") for image in images]
    first.save(out, format="PDF", resolution=DPI, save_all=True, append_images=rest)
    return out.getvalue()


def character_error_rate(expected: str, actual: str) -> float:
    """Levenshtein distance over the expected length, after collapsing whitespace on both sides. One
    row of the distance table per expected character, each row in numpy: the insertions along a row are
    a running minimum of ``cell - column``, so a page takes milliseconds, not seconds."""
    import numpy as np

    a = " ".join(expected.split())
    b = np.frombuffer(" ".join(actual.split()).encode("utf-32-le"), dtype=np.uint32)
    if not a:
        return 0.0 if not len(b) else 1.0
    columns = np.arange(len(b) + 1)
    previous = columns.copy()
    for i, char in enumerate(a, 1):
        current = np.empty_like(previous)
        current[0] = i
        current[1:] = np.minimum(previous[1:] + 1, previous[:-1] + (b != ord(char)))
        previous = np.minimum.accumulate(current - columns) + columns
    return float(previous[-1]) / len(a)


def huge_png_header(width: int, height: int) -> bytes:
    """A valid PNG declaring ``width`` x ``height`` pixels whose data is one tiny row: a decompression
    bomb for any reader that trusts the header and allocates the image."""
    import struct
    import zlib

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00" * 64))
        + chunk(b"IEND", b"")
    )
