"""A document's figure images in the bucket: stored before any point names them, pruned when the
version that showed them is replaced, removed or failed."""

from __future__ import annotations

from contextlib import suppress

from winnow.models import Chunk, ParsedDocument
from winnow.ports import ObjectSource


class FigureImages:
    def __init__(self, objects: ObjectSource) -> None:
        self.objects = objects

    def store(self, key: str, parsed: ParsedDocument, chunks: list[Chunk]) -> set[str]:
        """Store each figure image a chunk shows, once, before any point names it (a result never links
        to an image not yet there); returns their names."""
        from winnow.rules import FIGURE_CONTENT_TYPES, figure_key, figure_name

        wanted = {chunk.image for chunk in chunks if chunk.image}
        stored: set[str] = set()
        for block in parsed.blocks:
            figure = block.figure
            if figure is None or not figure.data:
                continue
            name = figure_name(figure.digest, figure.media_type)
            target = figure_key(key, name)
            if name in wanted and name not in stored and target is not None:
                self.objects.put_figure(target, figure.data, FIGURE_CONTENT_TYPES[name.rsplit(".", 1)[1]])
                stored.add(name)
        return stored

    def prune(self, key: str, keep: set[str]) -> None:
        """Delete the document's figure images other than ``keep`` (all of them when it is removed or
        failed). A bucket that stores no figures has none to delete."""
        from winnow.errors import FeatureDisabled
        from winnow.rules import figure_folder

        folder = figure_folder(key)
        with suppress(FeatureDisabled):
            for info in list(self.objects.list(folder)):
                if info.key[len(folder) :] not in keep:
                    self.objects.delete(info.key)
