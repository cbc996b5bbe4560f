"""Text processing shared by ingest and search: chunking and the BM25 sparse encoder."""
