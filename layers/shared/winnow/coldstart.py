"""Python's cyclic garbage collector during a Lambda's cold start.

Importing qdrant-client, pydantic and Powertools allocates a few hundred thousand container objects that
live as long as the process, and every full collector pass walks them all for almost nothing. So the
handler builds its long-lived objects with the collector paused and then ``gc.freeze()``s them: later
passes, during the cold request and every warm one, skip them. The price: cyclic garbage already made
when freezing is never reclaimed. What it saves and costs: training/NOTEBOOK.md, "Figures behind design
choices"."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


def freeze_long_lived() -> None:
    """Everything alive now outlives any request: keep later collections from walking it."""
    gc.freeze()


@contextmanager
def building_long_lived_objects() -> Iterator[None]:
    """Build clients and import their libraries without collector passes, then freeze what was built.

    The collector is back on when the block ends, even on an exception. If something else already turned
    it off, that choice is left alone (and nothing is frozen)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()
