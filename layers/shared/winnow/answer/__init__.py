"""Grounded answers: the search pipeline's kept passages, a generator, and citations checked against
the passages that were actually sent."""
