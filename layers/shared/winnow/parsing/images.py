"""Page images: what kind an image is and how large, read from its header alone.

Nothing here decodes pixels or needs Pillow (the Lambda bundle has none), so a 50,000-pixel-wide image
is refused from its first bytes, before any engine allocates memory for it.
"""

from __future__ import annotations

import struct

from winnow.errors import OversizedDocument, UnsupportedDocument

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
JPEG_MAGIC = b"\xff\xd8\xff"
TIFF_MAGICS = (b"II*\x00", b"MM\x00*")
IMAGE_TYPES = {"image/png": "PNG", "image/jpeg": "JPEG", "image/tiff": "TIFF"}
# JPEG start-of-frame markers (baseline, progressive, lossless, ...): the frame header holds the size.
_SOF_MARKERS = frozenset({0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF})
_MAX_JPEG_SEGMENTS = 10_000
_MAX_TIFF_TAGS = 4_096


def sniff_image(data: bytes) -> str | None:
    """The media type of a PNG, JPEG or TIFF, from its magic bytes; None for anything else."""
    if data.startswith(PNG_MAGIC):
        return "image/png"
    if data.startswith(JPEG_MAGIC):
        return "image/jpeg"
    if data.startswith(TIFF_MAGICS):
        return "image/tiff"
    return None


def image_size(data: bytes, media_type: str) -> tuple[int, int] | None:
    """(width, height) from the header, or None when the header cannot be read."""
    try:
        if media_type == "image/png":
            if len(data) < 24 or data[12:16] != b"IHDR":
                return None
            width, height = struct.unpack(">II", data[16:24])
            return int(width), int(height)
        if media_type == "image/jpeg":
            return _jpeg_size(data)
        if media_type == "image/tiff":
            return _tiff_size(data)
    except (struct.error, IndexError):
        return None
    return None


def check_image(data: bytes, media_type: str, *, max_pixels: int, max_side: int) -> tuple[int, int]:
    """The image's size, or a one-line refusal: unreadable header, or too large to decode safely."""
    size = image_size(data, media_type)
    if size is None or size[0] <= 0 or size[1] <= 0:
        raise UnsupportedDocument(f"{IMAGE_TYPES.get(media_type, 'image')} header is unreadable")
    width, height = size
    if max(width, height) > max_side or width * height > max_pixels:
        raise OversizedDocument(
            f"image is {width} x {height} pixels (limit {max_side} per side, {max_pixels} in all)"
        )
    return size


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    position = 2
    for _ in range(_MAX_JPEG_SEGMENTS):
        while position < len(data) and data[position] == 0xFF:
            position += 1  # fill bytes before a marker
        if position >= len(data):
            return None
        marker = data[position]
        position += 1
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            continue  # markers without a length
        if marker == 0xD9:
            return None
        (length,) = struct.unpack(">H", data[position : position + 2])
        if marker in _SOF_MARKERS:
            height, width = struct.unpack(">HH", data[position + 3 : position + 7])
            return int(width), int(height)
        if length < 2:
            return None
        position += length
    return None


def _tiff_size(data: bytes) -> tuple[int, int] | None:
    order = "<" if data[:2] == b"II" else ">"
    (offset,) = struct.unpack(order + "I", data[4:8])
    (count,) = struct.unpack(order + "H", data[offset : offset + 2])
    width = height = None
    for index in range(min(count, _MAX_TIFF_TAGS)):
        entry = data[offset + 2 + 12 * index : offset + 14 + 12 * index]
        tag, kind = struct.unpack(order + "HH", entry[:4])
        if kind == 3:  # SHORT
            (value,) = struct.unpack(order + "H", entry[8:10])
        elif kind == 4:  # LONG
            (value,) = struct.unpack(order + "I", entry[8:12])
        else:
            continue
        if tag == 256:
            width = value
        elif tag == 257:
            height = value
    if width is None or height is None:
        return None
    return int(width), int(height)
