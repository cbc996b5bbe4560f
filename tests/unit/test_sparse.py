"""The BM25 sparse encoder: analysis, stable term ids, BM25 saturation, and the invariants that let
documents and queries meet in Qdrant."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from winnow.models import SparseVector
from winnow.text.sparse import DEFAULT_AVGDL, Bm25Encoder

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def encoder() -> Bm25Encoder:
    return Bm25Encoder()


def _as_dict(vector: SparseVector) -> dict[int, float]:
    return dict(zip(vector.indices, vector.values, strict=True))


# --- analysis ----------------------------------------------------------------------------------------
def test_analysis_lowercases_drops_stop_words_and_stems(encoder: Bm25Encoder) -> None:
    assert encoder.analyze("The Runners were RUNNING and it runs!") == ["runner", "were", "run", "run"]


def test_running_and_runs_match_run(encoder: Bm25Encoder) -> None:
    run = encoder.term_id("run")
    for word in ("run", "runs", "running", "Running"):
        assert encoder.encode_query(word).indices == [run]
    assert run in encoder.encode_document("She keeps running every morning.").indices


def test_unicode_words_are_tokens_and_punctuation_and_underscores_split_them(encoder: Bm25Encoder) -> None:
    assert encoder.analyze("Zürich café_menu: naïve 日本語 Straße") == [
        "zürich",
        "café",
        "menu",
        "naïv",
        "日本語",
        "strass",
    ]


def test_ligatures_and_full_width_letters_match_their_plain_spelling(encoder: Bm25Encoder) -> None:
    # PDF text layers often hold the "\ufb01" ligature; full-width letters come from CJK input methods
    assert encoder.analyze("e\ufb03cient \uff21\uff30\uff29") == encoder.analyze("efficient API")


def test_stop_words_only_and_empty_text_give_empty_vectors(encoder: Bm25Encoder) -> None:
    for text in ("", "   ", "the and of to it is", "...!!!"):
        assert encoder.encode_document(text) == SparseVector(indices=[], values=[])
        assert encoder.encode_query(text) == SparseVector(indices=[], values=[])


def test_tokens_longer_than_64_characters_are_dropped(encoder: Bm25Encoder) -> None:
    blob = "a1" * 40
    assert encoder.analyze(f"checksum {blob} verified") == ["checksum", "verifi"]


# --- term ids ----------------------------------------------------------------------------------------
def test_term_ids_are_crc32_of_the_stem_and_fit_in_32_bits(encoder: Bm25Encoder) -> None:
    for term in ("run", "zürich", "日本語"):
        term_id = encoder.term_id(term)
        assert term_id == zlib.crc32(term.encode("utf-8"))
        assert 0 <= term_id < 2**32


def test_term_ids_are_the_same_in_another_process_with_another_hash_seed(encoder: Bm25Encoder) -> None:
    # Given a fresh interpreter whose str hash() is randomised differently
    text = "Quarterly revenue grew in Zürich and Berlin"
    script = (
        "import json; from winnow.text.sparse import Bm25Encoder; "
        f"v = Bm25Encoder().encode_document({text!r}); print(json.dumps([v.indices, v.values]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(REPO_ROOT / "layers" / "shared")},
        timeout=120,
        check=True,
    )
    indices, values = json.loads(result.stdout)
    here = encoder.encode_document(text)
    assert indices == here.indices
    assert values == pytest.approx(here.values)


def test_colliding_terms_share_one_dimension_and_their_counts_add_up() -> None:
    class CollidingEncoder(Bm25Encoder):
        @staticmethod
        def term_id(term: str) -> int:
            return 7 if term in ("alpha", "beta") else zlib.crc32(term.encode())

    colliding, plain = CollidingEncoder(), Bm25Encoder()
    vector = colliding.encode_document("alpha beta gamma")
    assert vector.indices == sorted(set(vector.indices))
    assert 7 in vector.indices and len(vector.indices) == 2
    # alpha and beta count as one term seen twice
    doubled = _as_dict(plain.encode_document("alpha alpha gamma"))[plain.term_id("alpha")]
    assert _as_dict(vector)[7] == pytest.approx(doubled)
    assert colliding.encode_query("alpha beta").indices == [7]


# --- BM25 weights ------------------------------------------------------------------------------------
def test_document_weights_follow_bm25_saturation() -> None:
    k1, b, avgdl = 1.2, 0.75, 10.0
    encoder = Bm25Encoder(k1=k1, b=b, avgdl=avgdl)
    # Given five analysed terms: "cat" three times, "dog" once, "bird" once
    weights = _as_dict(encoder.encode_document("cat cat cat dog bird"))
    norm = k1 * (1 - b + b * 5 / avgdl)
    assert weights[encoder.term_id("cat")] == pytest.approx(3 * (k1 + 1) / (3 + norm))
    assert weights[encoder.term_id("dog")] == pytest.approx(1 * (k1 + 1) / (1 + norm))
    # Then repetition helps less and less, and nothing exceeds k1 + 1
    assert weights[encoder.term_id("cat")] < 3 * weights[encoder.term_id("dog")]
    assert all(0 < weight < k1 + 1 for weight in weights.values())


def test_longer_documents_weigh_the_same_term_frequency_less(encoder: Bm25Encoder) -> None:
    short = _as_dict(encoder.encode_document("solar panel efficiency"))
    long = _as_dict(
        encoder.encode_document("solar panel efficiency " + " ".join(f"filler{i}" for i in range(300)))
    )
    term = encoder.term_id("solar")
    assert long[term] < short[term]


def test_b_zero_ignores_length_and_k1_zero_gives_binary_weights() -> None:
    no_length = Bm25Encoder(b=0.0)
    assert _as_dict(no_length.encode_document("tea"))[no_length.term_id("tea")] == pytest.approx(
        _as_dict(no_length.encode_document("tea " + "cake " * 50))[no_length.term_id("tea")]
    )
    binary = Bm25Encoder(k1=0.0)
    assert set(binary.encode_document("tea tea tea cake").values) == {1.0}


def test_invalid_parameters_are_refused() -> None:
    for kwargs in ({"k1": -1.0}, {"b": 1.5}, {"avgdl": 0.0}):
        with pytest.raises(ValueError, match="BM25"):
            Bm25Encoder(**kwargs)  # type: ignore[arg-type]


def test_default_avgdl_matches_default_chunks_of_real_abstracts() -> None:
    # Given SciFact abstracts chunked with the default settings, as ingest would embed them
    from winnow.models import ParsedDocument
    from winnow.parsing.text import parse_text
    from winnow.text.chunking import chunk_document

    corpus = REPO_ROOT / "tests" / "data" / "scifact" / "corpus.jsonl"  # 100 abstracts shipped here
    encoder = Bm25Encoder()
    lengths: list[int] = []
    with corpus.open(encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            parsed = parse_text(f"scifact/{record['_id']}.txt", record["text"])
            doc = ParsedDocument(title=parsed.title, blocks=parsed.blocks, source_type="text")
            lengths.extend(len(encoder.analyze(chunk.embed_text)) for chunk in chunk_document(doc))
    mean = sum(lengths) / len(lengths)
    # Then the constant is within a fifth of what such chunks really hold
    assert abs(mean - DEFAULT_AVGDL) / DEFAULT_AVGDL < 0.2, mean


# --- queries and documents meet ----------------------------------------------------------------------
def test_query_has_unique_terms_of_weight_one(encoder: Bm25Encoder) -> None:
    query = encoder.encode_query("running runs run fast FAST")
    assert query.indices == sorted({encoder.term_id("run"), encoder.term_id("fast")})
    assert query.values == [1.0, 1.0]


def test_a_query_scores_the_document_that_contains_its_terms_highest(encoder: Bm25Encoder) -> None:
    documents = [
        "Employees accrue twenty-five days of paid leave each year.",
        "Expense reports must include receipts for every purchase.",
        "The cafeteria opens at eight and closes at three.",
    ]
    vectors = [_as_dict(encoder.encode_document(text)) for text in documents]
    query = encoder.encode_query("how many leave days do employees get")
    scores = [sum(vector.get(index, 0.0) for index in query.indices) for vector in vectors]
    assert scores.index(max(scores)) == 0
    assert scores[2] == 0.0


def test_encoding_is_thread_safe_and_deterministic(encoder: Bm25Encoder) -> None:
    texts = [f"Document {i} discusses running, swimming and cycling {i % 7} times." for i in range(200)]
    expected = [Bm25Encoder().encode_document(text) for text in texts]
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(encoder.encode_document, texts))
    assert results == expected


_WORDS = st.text(alphabet=st.characters(categories=["L", "N", "P", "Zs"]), max_size=400)


@settings(max_examples=300, deadline=None)
@given(text=st.one_of(_WORDS, st.text(max_size=400)))
def test_encoder_invariants(text: str) -> None:
    encoder = Bm25Encoder()
    document = encoder.encode_document(text)
    query = encoder.encode_query(text)
    # Deterministic, also across instances
    assert document == Bm25Encoder().encode_document(text)
    assert query == encoder.encode_query(text)
    # Sorted, unique, 32-bit indices with one positive, finite value each
    for vector in (document, query):
        assert vector.indices == sorted(set(vector.indices))
        assert len(vector.values) == len(vector.indices)
        assert all(0 <= index < 2**32 for index in vector.indices)
        assert all(value > 0 and math.isfinite(value) for value in vector.values)
    # Both sides share their term ids: the same text gives the same set of dimensions
    assert query.indices == document.indices
    assert all(value == 1.0 for value in query.values)
    # And the ids are those of the analysed terms
    assert set(document.indices) == {encoder.term_id(term) for term in encoder.analyze(text)}


_ASCII = st.text(alphabet=st.characters(max_codepoint=127), max_size=400)  # split without the regex


@settings(max_examples=300, deadline=None)
@given(text=st.one_of(_WORDS, _ASCII, st.text(max_size=400)))
def test_the_terms_are_the_runs_of_letters_and_digits_of_the_normalised_text(text: str) -> None:
    import re
    import unicodedata

    encoder = Bm25Encoder()
    runs = re.findall(r"[^\W_]+", unicodedata.normalize("NFKC", text).casefold())
    kept = [run for run in runs if run not in encoder.stop_words and len(run) <= 64]
    assert encoder.analyze(text) == [encoder._stemmer().stemWord(run) for run in kept]


def _coverage(encoder: Bm25Encoder, query: SparseVector, text: str) -> float:
    """A passage's keyword coverage, as the search service measures it."""
    return encoder.share(query, encoder.covered(query, text))


@settings(max_examples=300, deadline=None)
@given(question=st.one_of(_WORDS, _ASCII), passage=st.one_of(_WORDS, _ASCII, st.text(max_size=400)))
def test_coverage_is_the_share_of_the_question_terms_among_the_passage_terms(
    question: str, passage: str
) -> None:
    encoder = Bm25Encoder()
    query = encoder.encode_query(question)
    held = set(encoder.encode_document(passage).indices)
    expected = len(set(query.indices) & held) / len(query.indices) if query.indices else 0.0
    assert _coverage(encoder, query, passage) == expected
    assert encoder.covered(query, passage) == frozenset(query.indices) & held
    if query.indices:
        assert _coverage(encoder, query, question) == 1.0


def test_coverage_is_the_share_of_the_query_terms_a_passage_holds() -> None:
    encoder = Bm25Encoder()
    # Given a question of three keyword terms (stop-words drop out, stems match inflections)
    query = encoder.encode_query("Who owns the laptops?")
    assert len(query.indices) == 3  # who, own, laptop
    # When passages holding all, some or none of them are measured
    every = _coverage(encoder, query, "The laptop you are given owns no data; ask who to return it to.")
    some = _coverage(encoder, query, "Every new employee is given a laptop.")
    none = _coverage(encoder, query, "Parental leave is sixteen weeks.")
    # Then coverage is the share of the question's terms found, and a query without terms covers nothing
    assert (every, some, none) == (1.0, pytest.approx(1 / 3), 0.0)
    assert _coverage(encoder, encoder.encode_query("the of and"), "the of and") == 0.0
    # And a word too long to be a term holds nothing, even one whose stem a question's term shares
    long_word = "walk" * 16  # 64 characters: a term
    assert _coverage(encoder, encoder.encode_query(long_word), long_word + "ing") == 0.0


def test_the_token_cache_stays_within_its_size_and_changes_no_answer() -> None:
    # Given an encoder whose cache holds at most 10 tokens, and one that holds them all
    small, large = Bm25Encoder(cache_size=10), Bm25Encoder()
    text = " ".join(f"word{i} thing{i}s" for i in range(40))
    query = small.encode_query("word3 thing7s word39 absent")
    # When both encode and measure coverage over 80 distinct tokens, twice
    for _ in range(2):
        assert small.encode_document(text) == large.encode_document(text)
        assert _coverage(small, query, text) == _coverage(large, query, text) == 0.75
        # Then the small one never holds more than its size
        assert len(small._analysed) <= 10
