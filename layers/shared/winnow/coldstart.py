"""Python's cyclic garbage collector during a Lambda's cold start.

Importing qdrant-client, pydantic and Powertools allocates a few hundred thousand container objects that
live as long as the process, and every full collector pass walks them all for almost nothing. So the
handler builds its long-lived objects with the collector paused and then ``gc.freeze()``s them: later
passes, during the cold request and every warm one, skip them. The price: cyclic garbage already made
when freezing is never reclaimed. So the build is paused and frozen once per process, the cold start's:
a later one (a long-running server's next container, every test's) would make immortal whatever the
process had dropped since, an embedded store's files and mappings and a model session among them. What
it saves and costs: training/NOTEBOOK.md, "Figures behind design choices"."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

_built = False  # whether this process has built its long-lived objects (``building_long_lived_objects``)


def freeze_long_lived() -> None:
    """Everything alive now outlives any request: keep later collections from walking it."""
    gc.freeze()


@contextmanager
def building_long_lived_objects() -> Iterator[None]:
    """Build clients and import their libraries without collector passes, then freeze what was built.

    The collector is back on when the block ends, even on an exception. If something else already turned
    it off, that choice is left alone (and nothing is frozen). Once per process: a later block builds with
    the collector on and freezes nothing (see the module's docstring)."""
    global _built
    if _built or not gc.isenabled():
        yield
        return
    _built = True
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()
