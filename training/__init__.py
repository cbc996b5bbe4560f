"""The relevance lab, outside the shipped code: fits the relevance model the search reads (its artifact
in ``winnow/search/models/``) and measures retrieval quality on data the repository names (README.md)."""
