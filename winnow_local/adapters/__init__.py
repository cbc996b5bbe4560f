"""The embedded default's adapters: the folder bucket, the SQLite ledger, the in-process queue, the local
Qdrant engines and the ONNX embedder. They run only here, never in Lambda; the composition root finds them
through the ``winnow.embedded`` entry points (pyproject.toml, ``winnow.embedded``)."""
