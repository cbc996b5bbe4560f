"""OCR text into paragraphs: the blank lines an OCR engine puts inside a sentence do not split it."""

from __future__ import annotations

from winnow.parsing.pdf_page import collect_ocr_page

# As tesseract reads a page of /usr/share/doc/dpkg/spec/triggers.txt rendered at 200 dpi: a blank line
# where the line spacing looked wider, in the middle of a sentence.
OCR_PAGE = """A package management tool which will run dpkg --configure --pending at the
end may use --no-triggers on its other dpkg runs. This would be more
efficient as it allows more aggressive deferral (and hence more unification)

of trigger processing.

Packages should be written so that they DO NOT BREAK just because their
pending triggers have not yet been run.

relating to the unprocessed trigger
"""


def test_a_blank_line_inside_a_sentence_does_not_split_the_paragraph() -> None:
    # Given OCR text with a blank line between "(and hence more unification)" and "of trigger processing."
    # When it becomes paragraph blocks
    blocks = collect_ocr_page(OCR_PAGE, page=4)
    texts = [block.text for block in blocks]
    # Then the sentence is whole in one paragraph, still marked as OCR on its page
    assert texts[0].endswith(
        "more efficient as it allows more aggressive deferral (and hence more unification)"
        " of trigger processing."
    )
    assert all(block.ocr and block.page == 4 for block in blocks)
    # And a blank line after a finished sentence is still a paragraph break, even before lower case
    assert (
        texts[1] == "Packages should be written so that they DO NOT BREAK just because their"
        " pending triggers have not yet been run."
    )
    assert texts[2] == "relating to the unprocessed trigger"
    assert len(texts) == 3
