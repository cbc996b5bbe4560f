"""Product benchmarks: speed, cost and scale of the real handlers, each figure beside a baseline measured
in the same run (docs/quality.md). Retrieval quality and the relevance model are in ``training``."""
