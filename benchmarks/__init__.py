"""Benchmarks that prove Winnow's retrieval quality, speed and embedding cost with figures anyone can
reproduce: ``python -m benchmarks.quality``, ``python -m benchmarks.speed``, ``python -m benchmarks.cost``.
They run the real Lambda handlers on an embedded stack; see docs/benchmarks.md for the latest figures."""
