"""Winnow: serverless document retrieval with hybrid search, re-ranking and a relevance threshold."""

__version__ = "0.1.0"
