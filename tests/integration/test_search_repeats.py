"""No repeats (issue 46, item 2): passages whose texts overlap by more than half are one result, so a
top 3 is never filled by copies of one passage. Through the real ingest and search handlers, with the
real chunker's overlapping windows of a generated manual filed three times (as the same manual in two
formats and once with a preface that shifts every window)."""

from __future__ import annotations

import random
from difflib import SequenceMatcher

import pytest

from tests.support.stack import EmbeddedStack
from winnow.search.overlap import distinct, overlap, shingles

WORDS = [
    "retry",
    "connection",
    "server",
    "timeout",
    "option",
    "download",
    "wait",
    "seconds",
    "between",
    "attempts",
    "network",
    "host",
    "proxy",
    "file",
    "remote",
    "local",
    "mirror",
    "recursive",
    "depth",
    "link",
    "page",
    "header",
    "cookie",
    "certificate",
]


def manual(seed: int, sentences: int) -> str:
    """A generated manual section: sentences of the option vocabulary, deterministic per seed."""
    rng = random.Random(seed)
    out = []
    for _ in range(sentences):
        words = [rng.choice(WORDS) for _ in range(rng.randint(8, 16))]
        out.append(" ".join(words).capitalize() + ".")
    return " ".join(out)


def shared_span(a: str, b: str) -> float:
    """The longest common character span of two texts over the shorter one's length (an independent
    measure of repetition: difflib, not the service's shingles)."""
    match = SequenceMatcher(None, a, b, autojunk=False).find_longest_match(0, len(a), 0, len(b))
    return match.size / min(len(a), len(b))


@pytest.fixture
def filed_thrice(stack: EmbeddedStack) -> EmbeddedStack:
    body = manual(7, 60)
    preface = manual(8, 3)
    answer = "Tries. The number of retries is set by the tries option: wait retry attempts twenty times."
    files = {
        "acme/wget/manual.md": f"# Wget\n\n## Retries\n\n{body}\n".encode(),
        "acme/wget/manual.txt": f"Wget\n\nRetries\n\n{body}\n".encode(),
        "acme/wget/shifted.md": f"# Wget\n\n## Retries\n\n{preface} {body}\n".encode(),
        "acme/wget/tries.md": f"# Tries\n\n{answer}\n".encode(),
    }
    for key, data in files.items():
        assert stack.upload(key, data)["status"] == "indexed"
    return stack


def test_a_top_3_holds_no_two_passages_that_repeat_each_other(filed_thrice: EmbeddedStack) -> None:
    query = "retry connection server timeout wait seconds between attempts"
    status, body = filed_thrice.search(query, top_k=3, relevance_threshold=0)
    assert status == 200
    texts = [r["text"] for r in body["results"]]
    assert len(texts) == 3  # filled with distinct passages, not fewer
    for i, a in enumerate(texts):
        for b in texts[i + 1 :]:
            assert shared_span(a, b) <= 0.5, (a[:80], b[:80])


def test_the_better_scored_of_two_repeats_stays() -> None:
    passage = manual(3, 12)
    items = [
        (0.9, passage),
        (0.8, "An unrelated passage about cookies and certificates."),
        (0.7, passage[40:]),
    ]
    kept = distinct(items, lambda item: item[1], limit=3)
    assert kept == items[:2]


def test_overlap_is_the_shorter_texts_share_and_half_is_not_a_repeat() -> None:
    words = [f"w{i}" for i in range(104)]
    half = shingles(" ".join(words[:54]))  # 50 shingles
    other = shingles(" ".join(words[27:]))  # shares words 27..53 (27 words: 23 shingles) with ``half``
    assert overlap(half, other) == pytest.approx(23 / 50)
    assert overlap(half, shingles(" ".join(words))) == 1.0  # a passage inside a longer one
    assert overlap(frozenset(), half) == 0.0
