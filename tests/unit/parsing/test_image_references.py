"""Work per image reference is bounded (issue 44, item 12): an EPUB of 3 MB showing one 3 MB image
5,000 / 10,000 / 20,000 times took 13 / 24 / 46 s to parse, as each sight read the member and hashed
its bytes again. Each image member is now read and judged once per document, whatever the number of
sights: counted here, not timed."""

from __future__ import annotations

import random
from typing import Any

import pytest

from tests.support.office import make_epub, with_member
from winnow.parsing import figures
from winnow.parsing.epub import parse_epub
from winnow.parsing.office_package import Package
from winnow.settings import IngestSettings

SIGHTS = 5_000


def _noise_png(width: int = 200, height: int = 150) -> bytes:
    rng = random.Random(4)
    samples = bytes(rng.randrange(256) for _ in range(width * height * 3))
    return figures.png_from_samples(width, height, 3, samples)


def test_an_image_shown_thousands_of_times_is_read_and_judged_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given an EPUB whose chapter shows the same picture 5,000 times
    sights = "".join('<p><img src="pic.png" alt="The boiler"/></p>' for _ in range(SIGHTS))
    chapter = (
        '<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title>Parts</title></head>'
        f"<body><h1>Parts</h1><p>The boiler and its valve.</p>{sights}</body></html>"
    )
    book = make_epub("Manual", [("Parts", "The boiler and its valve.")])
    book = with_member(with_member(book, "OEBPS/ch1.xhtml", chapter.encode()), "OEBPS/pic.png", _noise_png())
    reads: list[str] = []
    judged: list[int] = []
    read, candidate = Package.read, figures.figure_candidate

    def counting_read(self: Any, name: str) -> bytes:
        reads.append(name)
        return read(self, name)

    def counting_candidate(data: bytes, **kwargs: Any) -> Any:
        judged.append(len(data))
        return candidate(data, **kwargs)

    monkeypatch.setattr(Package, "read", counting_read)
    monkeypatch.setattr(figures, "figure_candidate", counting_candidate)
    # When it is parsed
    parsed = parse_epub("t/manual.epub", book, IngestSettings())
    # Then the picture was read and judged once, and the book's text is there
    assert reads.count("OEBPS/pic.png") == 1
    assert len(judged) == 1
    assert "The boiler and its valve." in "\n".join(block.text for block in parsed.blocks)
    # and every sight still stands where it is, carrying the picture's facts (the first its bytes)
    shown = [block.figure for block in parsed.blocks if block.figure is not None]
    assert len(shown) == SIGHTS
    assert {figure.digest for figure in shown} == {shown[0].digest} and shown[0].data
    assert all(figure.alt == "The boiler" for figure in shown)
