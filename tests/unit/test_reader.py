"""The finer reader (``winnow.search.reader``) with the real local ONNX model: the answering sentence is
highlighted first, offsets stay inside the text, segments are scored best first, every passage of a
search is read in one embed call, and the work per search is bounded."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import pytest

from winnow.models import EmbeddingProfile
from winnow.ports import Embedder, InputType
from winnow.search.reader import HIGHLIGHT_MARGIN, NOT_READ, Reading, SegmentVectors, lexical_scores, read
from winnow.text.segments import Segment, segments
from winnow.text.sparse import Bm25Encoder

WGET = (
    "Wget downloads files from the web over HTTP, HTTPS and FTP. "
    "The tries option sets how many times a download is retried; the default is twenty. "
    "A proxy is read from the http_proxy environment variable. "
    "Cookies are kept between runs when the save-cookies option names a file."
)
GZIP = (
    "Gzip reduces the size of the named files using Lempel-Ziv coding. "
    "The exit status is normally 0; if an error occurs, the exit status is 1. "
    "Compressed files keep their ownership and modification times."
)


class Counting(Embedder):
    """The real model, with each call's texts recorded."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.calls: list[tuple[list[str], InputType]] = []

    @property
    def profile(self) -> EmbeddingProfile:
        return self.inner.profile

    def embed(self, texts: Sequence[str], input_type: InputType) -> list[list[float]]:
        self.calls.append((list(texts), input_type))
        return self.inner.embed(texts, input_type)


@pytest.fixture
def model(onnx_embedder: Embedder) -> Counting:
    return Counting(onnx_embedder)


def _query(model: Counting, text: str) -> list[float]:
    return model.inner.embed([text], "query")[0]


def test_the_answering_sentence_is_highlighted_first_inside_the_text(model: Counting) -> None:
    [reading] = read(model, _query(model, "how many times does wget retry a download?"), [WGET])
    spans = reading.highlight()
    assert spans, "a passage of several sentences gets a highlight"
    assert all(0 <= s.start < s.end <= len(WGET) for s in spans)
    assert "tries option" in WGET[spans[0].start : spans[0].end]
    scores = [score for _, score in reading.ranked]
    assert all(score is not None for score in scores)
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    assert reading.best == scores[0]


def test_a_second_highlight_only_when_close_to_the_best(model: Counting) -> None:
    readings = read(model, _query(model, "what does the exit status of gzip mean?"), [GZIP, WGET])
    for reading in readings:
        spans = reading.highlight()
        best = reading.ranked[0][1]
        assert best is not None
        for seg in spans[1:]:
            score = dict(reading.ranked)[seg]
            assert score is not None and score >= best - HIGHLIGHT_MARGIN
        starts = sorted((s.start, s.end) for s in spans)
        assert all(a[1] <= b[0] for a, b in itertools.pairwise(starts))  # never overlapping
    assert "exit status" in GZIP[readings[0].highlight()[0].start : readings[0].highlight()[0].end]


def test_all_passages_are_read_in_one_document_embed_call(model: Counting) -> None:
    read(model, _query(model, "proxy"), [WGET, GZIP, None, "One short line."])
    assert len(model.calls) == 1
    texts, input_type = model.calls[0]
    assert input_type == "document"
    assert len(texts) == 4 + 3  # the segments of the two passages of several sentences, nothing else


def test_figures_and_single_segments_cost_no_embedding(model: Counting) -> None:
    short = "The exit status is zero on success."
    readings = read(model, _query(model, "exit status"), [None, short])
    assert model.calls == []
    assert readings[0] == NOT_READ and readings[0].highlight() == []
    assert readings[1] == Reading(((Segment(0, len(short)), None),))
    assert readings[1].highlight() == [Segment(0, len(short))]


def test_a_search_embeds_at_most_its_budget_of_segments(model: Counting) -> None:
    many = [WGET] * 10  # 4 segments each
    readings = read(model, _query(model, "proxy"), many, budget=10)
    assert len(model.calls) == 1 and len(model.calls[0][0]) == 10
    assert [len(r.ranked) for r in readings] == [4, 4, 4, 0, 0, 0, 0, 0, 0, 0]
    assert [sum(score is not None for _, score in r.ranked) for r in readings[:3]] == [4, 4, 2]
    assert readings[3].highlight() == []  # past the budget: not read here (the search reads results again)


def test_keywords_preselect_the_segments_embedded_and_the_answer_stays_highlighted(model: Counting) -> None:
    encoder = Bm25Encoder()
    question = "how many times does wget retry a download?"
    keywords = (encoder, encoder.encode_query(question))
    [reading, other] = read(model, _query(model, question), [WGET, GZIP], keywords=keywords, keep=2)
    [(texts, _)] = model.calls
    assert len(texts) == 2 + 2  # two segments of each passage, not all seven
    assert "The tries option sets how many times a download is retried; the default is twenty." in texts
    spans = reading.highlight()
    assert "tries option" in WGET[spans[0].start : spans[0].end]
    assert len(reading.ranked) == len(segments(WGET)) and len(other.ranked) == len(segments(GZIP))
    unscored = [seg for seg, score in reading.ranked if score is None]
    assert len(unscored) == 2 and not set(unscored) & set(spans)  # never highlighted unread


def test_keyword_scores_weigh_rare_terms_over_common_ones() -> None:
    encoder = Bm25Encoder()
    texts = ["The exit status is one.", "The exit code of gzip.", "Gzip keeps the exit status."]
    scores = lexical_scores(encoder, encoder.encode_query("gzip status"), texts)
    assert scores[2] > scores[0] > 0 and scores[2] > scores[1] > 0
    assert lexical_scores(encoder, encoder.encode_query("proxy"), texts) == [0.0, 0.0, 0.0]


def test_cached_segment_vectors_are_not_embedded_again_within_their_scope_only(model: Counting) -> None:
    cache = SegmentVectors(max_entries=100)
    query = _query(model, "exit status")
    first = read(model, query, [GZIP], cache=cache, scope="acme")
    again = read(model, query, [GZIP], cache=cache, scope="acme")
    assert len(model.calls) == 1 and again == first  # the same scores, from the cache
    read(model, query, [GZIP], cache=cache, scope="globex")
    assert len(model.calls) == 2  # another tenant's scope never reads acme's vectors
    assert all(isinstance(k[1], bytes) and len(k[1]) == 32 for k in cache._vectors)  # a hash, not the text


def test_the_segment_cache_keeps_at_most_its_bound_least_recent_out() -> None:
    cache = SegmentVectors(max_entries=2)
    a, b, c = (cache.key("acme", t) for t in ("a", "b", "c"))
    cache.put(a, [1.0])
    cache.put(b, [2.0])
    assert cache.get(a) is not None  # a is now the most recent
    cache.put(c, [3.0])
    assert len(cache) == 2 and cache.get(b) is None and cache.get(a) is not None


def test_keep_zero_highlights_the_best_keyword_segment_without_embedding(model: Counting) -> None:
    encoder = Bm25Encoder()
    question = "which environment variable holds the proxy?"
    keywords = (encoder, encoder.encode_query(question))
    [reading, other] = read(model, _query(model, question), [WGET, GZIP], keywords=keywords, keep=0)
    assert model.calls == []
    [span] = reading.highlight()
    assert "http_proxy" in WGET[span.start : span.end]  # "proxy" and "environment": one sentence
    assert len(reading.ranked) == len(segments(WGET)) and reading.best is None
    assert other.highlight() == [segments(GZIP)[0]]  # no keyword anywhere: its first segment


EXIT_STATUS = (
    "tidesync exits with one of the following statuses:\n"
    "0 All files were synchronised.\n"
    "1 Some files could not be copied; the others were.\n"
    "3 The remote host could not be reached.\n"
    "4 The run was interrupted by a signal."
)


def test_a_list_introduction_is_never_the_highlight_when_an_item_holds_a_keyword(model: Counting) -> None:
    encoder = Bm25Encoder()
    question = "what exit status does tidesync return when the remote host is unreachable?"
    keywords = (encoder, encoder.encode_query(question))
    [reading] = read(model, _query(model, question), [EXIT_STATUS], keywords=keywords, keep=0)
    [span] = reading.highlight()
    assert EXIT_STATUS[span.start : span.end].startswith("3 The remote host could not be reached.")
    # embedded, the introduction can score best; the highlight is the best item all the same
    [embedded] = read(model, _query(model, question), [EXIT_STATUS], keywords=keywords, keep=2)
    assert EXIT_STATUS[embedded.highlight()[0].start : embedded.highlight()[0].end].startswith("3 ")


def test_an_introduction_is_still_highlighted_when_nothing_else_answers(model: Counting) -> None:
    encoder = Bm25Encoder()
    question = "which statuses does tidesync exit with?"
    keywords = (encoder, encoder.encode_query(question))
    [reading] = read(model, _query(model, question), [EXIT_STATUS], keywords=keywords, keep=0)
    [span] = reading.highlight()
    assert EXIT_STATUS[span.start : span.end] == "tidesync exits with one of the following statuses:"


def test_a_sentence_that_introduces_an_example_can_be_the_highlight(model: Counting) -> None:
    encoder = Bm25Encoder()
    text = (
        "To see every process on the system using standard syntax:\n   ps -e\n   ps -ef\n\n"
        "To print a process tree:\n   ps -ejH\n   ps axjf\n\n"
        "To see every process running as root in user format: ps -U root -u root u"
    )
    question = "list every process on the system"
    keywords = (encoder, encoder.encode_query(question))
    [reading] = read(model, _query(model, question), [text], keywords=keywords, keep=0)
    [span] = reading.highlight()
    assert text[span.start : span.end].startswith("To see every process on the system using standard syntax:")
