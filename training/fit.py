"""Fit the relevance model and write its artifact: ``python -m training.fit [--eval-dir DIR]``.

The quality benchmark with ``--write-model --passages --demo --json``: SciFact (``../shared/eval/scifact``),
the generated known-item queries, the passage questions and the off-topic questions of
``training/data``, 5 folds with a fixed seed. It writes ``winnow/search/models/<profile>.json`` with the
models, the threshold its rule chose, the next version and the provenance (training/README.md)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from training import quality


def main(argv: Sequence[str] | None = None) -> int:
    extra = list(sys.argv[1:] if argv is None else argv)
    return quality.main(["--write-model", "--passages", "--demo", "--json", *extra])


if __name__ == "__main__":
    raise SystemExit(main())
