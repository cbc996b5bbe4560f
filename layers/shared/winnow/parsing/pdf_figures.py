"""The images a PDF page draws that may be figures, less the furniture drawn on every page."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pypdf._page import PageObject

    from winnow.models import Figure
    from winnow.parsing.blocks import BlockCollector
    from winnow.settings import IngestSettings

__all__ = ["drop_furniture", "page_figures"]

_MAX_PAGE_IMAGES = 200  # image XObjects looked at per page for figures
_MAX_CONTENT_BYTES = 5_000_000  # of a page's content stream, scanned for the images it draws
# "/Im1 Do": an XObject drawn. Names run to the next delimiter; bounded, so a hostile stream scans linearly.
_DRAWN = re.compile(rb"/([^\s/\[\]()<>{}%]{1,127})\s{1,8}Do\b")


def page_figures(
    page: PageObject, collector: BlockCollector, settings: IngestSettings, max_side: int
) -> list[Figure]:
    """The image XObjects the page draws that may be figures (``parsing.figures``), in the order it
    draws them (``Do``), so its captions pair with them in reading order; an image the page names but
    never draws is no figure. An image that cannot be read is skipped, never a reason to fail the page."""
    from winnow.parsing.figures import pdf_image

    found: list[Figure] = []
    try:
        resources = page.get("/Resources")
        xobjects = resources.get_object().get("/XObject") if resources is not None else None
        if xobjects is None:
            return found
        named = xobjects.get_object()
        contents = page.get_contents()
        drawn = _DRAWN.findall(contents.get_data()[:_MAX_CONTENT_BYTES]) if contents is not None else []
        order = list(dict.fromkeys("/" + name.decode("latin-1") for name in drawn))
        references = [named[name] for name in order if name in named][:_MAX_PAGE_IMAGES]
    except RecursionError:
        raise
    except Exception:
        return found
    for reference in references:
        try:
            xobject = reference.get_object()
            if xobject.get("/Subtype") != "/Image":
                continue
            figure = pdf_image(
                xobject,
                min_side=settings.figure_min_side_pixels,
                max_side=max_side,
                wanted=collector.wants_figure,
            )
        except (RecursionError, MemoryError):
            raise
        except Exception:
            figure = None  # a damaged or hostile image (LimitReachedError past pypdf's inflate limit)
        if figure is not None:
            found.append(figure)
    return found


def drop_furniture(figures: list[list[Figure]]) -> None:
    """Take out images drawn on two pages or more (a logo, a page border), before the pages' captions
    are matched to their figures: a logo must not take a chart's caption."""
    pages: dict[str, int] = {}
    for page_figures in figures:
        for digest in {figure.digest for figure in page_figures}:
            pages[digest] = pages.get(digest, 0) + 1
    for page_figures in figures:
        page_figures[:] = [figure for figure in page_figures if pages[figure.digest] < 2]
