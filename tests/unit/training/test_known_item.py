"""Known-item queries generated from a corpus (training.known_item): the keyword and phrase styles the
relevance model's ordering is also fitted on. Generated corpus only."""

from __future__ import annotations

import random

from training.known_item import STYLES, content_words, known_item_queries, sentences
from winnow.text.sparse import ENGLISH_STOP_WORDS

WORDS = [
    "insulin",
    "glucose",
    "hepatic",
    "receptor",
    "mitochondria",
    "protein",
    "kinase",
    "tumour",
    "suppressor",
    "pathway",
    "neurons",
    "cortex",
    "synapse",
    "vaccine",
    "antibody",
    "antigen",
    "lymphocyte",
    "cytokine",
    "membrane",
    "transport",
    "channel",
    "calcium",
]


def _corpus(n: int = 30) -> dict[str, str]:
    rng = random.Random(4)
    docs = {}
    for d in range(n):
        parts = []
        for _ in range(4):
            words = [
                rng.choice(WORDS) if i % 2 else rng.choice(("the", "of", "and", "in", "with"))
                for i in range(14)
            ]
            parts.append(" ".join(words).capitalize() + ".")
        docs[f"doc{d}"] = " ".join(parts) + " Short one."
    return docs


def test_every_query_comes_from_the_document_it_is_judged_against() -> None:
    # Given a corpus
    docs = _corpus()
    # When known-item queries are generated
    queries, qrels = known_item_queries(docs, per_style=20)
    # Then each style has its quota, each query has exactly one relevant document, the one it came from
    assert {q.split("-")[0] for q in queries} == set(STYLES)
    assert sum(q.startswith("phrase-") for q in queries) == 20
    assert sum(q.startswith("keywords-") for q in queries) == 20
    for qid, text in queries.items():
        (doc,) = qrels[qid]
        source = " ".join(docs[doc].split())
        if qid.startswith("phrase-"):
            assert text in source and 5 <= len(text.split()) <= 9
        else:
            words = text.split()
            assert 2 <= len(words) <= 4
            assert all(w in source.lower() and w not in ENGLISH_STOP_WORDS and len(w) >= 4 for w in words)
    assert len(set(queries.values())) == len(queries)


def test_generation_is_deterministic_and_seeded() -> None:
    docs = _corpus()
    assert known_item_queries(docs, 10) == known_item_queries(dict(reversed(list(docs.items()))), 10)
    assert known_item_queries(docs, 10, seed=1) != known_item_queries(docs, 10, seed=2)


def test_short_sentences_and_stop_words_give_no_queries() -> None:
    # Given documents whose sentences are all too short, and a sentence of stop-words and short words
    assert sentences("Too short. Also short here.") == []
    assert content_words("the of and a to in it is was be at by") == []
    # When generating from a corpus with nothing to take
    queries, qrels = known_item_queries({"a": "Too short.", "b": "Tiny text here."}, per_style=5)
    # Then none are made, and the bounded loop ends
    assert queries == {} and qrels == {}
