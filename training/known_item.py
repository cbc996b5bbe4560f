"""Known-item queries generated from a corpus: the query styles its judged queries lack.

SciFact's judged queries are all one style (a claim that paraphrases an abstract). People also type a
few keywords, or paste a phrase they remember. A relevance model fitted on claims alone learns to
trust the small dense model and to discount an exact keyword match, which is wrong for those styles.
So the ordering model is also fitted on queries generated from the corpus itself, whose right answer is
known by construction (the document the words were taken from):

- ``keywords``: two to four content words of one sentence, in their order ("insulin resistance mice");
- ``phrase``: five to nine consecutive words of one sentence, as written.

Generated with a fixed seed, so every run and every fold sees the same queries. They are fitted on and
cross-validated like the judged queries (training/NOTEBOOK.md), never mixed into the judged figures.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping

from winnow.text.sparse import ENGLISH_STOP_WORDS

STYLES = ("keywords", "phrase")
DEFAULT_PER_STYLE = 100
SEED = 20261123
MIN_SENTENCE_WORDS = 10
_SENTENCE_END = re.compile(r"(?<=[.;?!])\s+")
_EDGE_PUNCTUATION = ".,;:()[]{}\"'"


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` long enough to take a query from."""
    return [s for s in _SENTENCE_END.split(" ".join(text.split())) if len(s.split()) >= MIN_SENTENCE_WORDS]


def content_words(sentence: str) -> list[str]:
    """Distinct lower-cased words of four letters or more that are not stop-words, in sentence order."""
    words = (w.strip(_EDGE_PUNCTUATION).lower() for w in sentence.split())
    kept = [w for w in words if len(w) >= 4 and w.isalpha() and w not in ENGLISH_STOP_WORDS]
    return list(dict.fromkeys(kept))


def known_item_queries(
    documents: Mapping[str, str], per_style: int = DEFAULT_PER_STYLE, seed: int = SEED
) -> tuple[dict[str, str], dict[str, dict[str, int]]]:
    """``per_style`` queries of each style as (query id -> text, query id -> {document id: 1}). Query
    ids are ``<style>-<n>``; a query text is used once."""
    ids = sorted(documents)
    queries: dict[str, str] = {}
    qrels: dict[str, dict[str, int]] = {}
    for style in STYLES:
        rng = random.Random(f"{style}-{seed}")
        made = 0
        for _ in range(per_style * 50):  # bounded: a corpus of short documents may not fill the quota
            if made == per_style or not ids:
                break
            doc_id = rng.choice(ids)
            candidates = sentences(documents[doc_id])
            if not candidates:
                continue
            sentence = rng.choice(candidates)
            words = sentence.split()
            if style == "phrase":
                length = rng.randint(5, 9)
                start = rng.randint(0, len(words) - length)
                text = " ".join(words[start : start + length])
            else:
                content = content_words(sentence)
                if len(content) < 3:
                    continue
                picks = sorted(rng.sample(range(len(content)), rng.randint(2, min(4, len(content)))))
                text = " ".join(content[i] for i in picks)
            if text in queries.values():
                continue
            qid = f"{style}-{made}"
            queries[qid] = text
            qrels[qid] = {doc_id: 1}
            made += 1
    return queries, qrels
