"""Keyword evidence inside the candidates (``winnow.search.lexical``): a candidate's best segment's
share of the query's keyword IDF, and its document's rank among the candidates' documents."""

from __future__ import annotations

import pytest

from winnow.search.lexical import keyword_readings
from winnow.text.sparse import Bm25Encoder

EXIT = (
    "Gzip reduces the size of the named files using Lempel-Ziv coding. "
    "The exit status of gzip is normally 0; if an error occurs, it is 1."
)
SPREAD = (
    "Gzip keeps the ownership of compressed files and never deletes them on error. "
    "Its status line shows the compression ratio of each file."
)
OTHER = "Tar writes archives. Its exit status is 2 on a fatal error, and it names the file."


def test_the_candidate_whose_one_sentence_holds_the_rare_keywords_together_scores_highest() -> None:
    # Given three candidates: the keywords in one sentence, the same keywords spread over two
    # sentences, and another document holding the common ones
    encoder = Bm25Encoder()
    query = encoder.encode_query("gzip exit status on error")
    readings = keyword_readings(encoder, query, [SPREAD, EXIT, OTHER], ["gzip.1", "gzip.1", "tar.1"])
    # Then the one sentence holding them together scores highest, every score a share in [0, 1]
    best = [r.best_segment for r in readings]
    assert best[1] > best[0] and best[1] > best[2]
    assert all(0.0 <= b <= 1.0 for b in best)
    # And a document ranks where its first candidate does
    assert [r.document_rank for r in readings] == [1, 1, 2]


def test_a_sentence_holding_every_keyword_any_segment_holds_scores_one() -> None:
    encoder = Bm25Encoder()
    query = encoder.encode_query("lempel ziv coding")
    readings = keyword_readings(encoder, query, [EXIT, OTHER], ["a", "b"])
    assert readings[0].best_segment == pytest.approx(1.0)
    assert readings[1].best_segment == 0.0


def test_a_query_no_candidate_holds_scores_zero_everywhere() -> None:
    encoder = Bm25Encoder()
    readings = keyword_readings(encoder, encoder.encode_query("kubernetes"), [EXIT, ""], ["a", "b"])
    assert [r.best_segment for r in readings] == [0.0, 0.0]
    assert keyword_readings(encoder, encoder.encode_query("gzip"), [], []) == []
