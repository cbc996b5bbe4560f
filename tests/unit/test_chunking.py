"""The structure-aware chunker: sections as walls, balanced sentence splits with overlap, tiny fragments
merged by the documented rule, and invariants checked on generated documents."""

from __future__ import annotations

import itertools
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.documents import make_pdf
from winnow.models import Block, ParsedDocument
from winnow.parsing import parse_document
from winnow.settings import ChunkingSettings
from winnow.text.chunking import chunk_document, max_chunk_chars

# Rules 1-6 on their own: small sections are not packed (rule 7 has its own tests below).
SMALL = ChunkingSettings(target_chars=300, overlap_chars=60, min_chars=80, pack_sections=False)
PACKED = ChunkingSettings(target_chars=300, overlap_chars=60, min_chars=80, pack_sections=True)


def _doc(*blocks: Block, title: str = "Doc") -> ParsedDocument:
    return ParsedDocument(title=title, blocks=list(blocks), source_type="text")


def _sentences(prefix: str, count: int, words: int = 8) -> str:
    """``count`` distinct sentences of ``words`` words, each word unique so tests can trace it."""
    return " ".join(
        " ".join(f"{prefix}{sentence}x{word}" for word in range(words)).capitalize() + "."
        for sentence in range(count)
    )


# --- accumulation and walls --------------------------------------------------------------------------
def test_short_paragraphs_of_one_section_accumulate_up_to_the_target() -> None:
    paragraphs = [_sentences(f"p{i}", 1, 10) for i in range(8)]  # about 70 characters each
    chunks = chunk_document(_doc(*(Block(p, ("S",), 1) for p in paragraphs)), SMALL)
    # Then whole paragraphs are packed, separated by blank lines, none split, none over the target
    rebuilt = [part for chunk in chunks for part in chunk.text.split("\n\n")]
    assert rebuilt == paragraphs
    assert all(len(chunk.text) <= SMALL.target_chars for chunk in chunks)
    assert len(chunks) < len(paragraphs)
    assert [chunk.index for chunk in chunks] == list(range(len(chunks)))


def test_a_definition_list_entry_is_a_chunk_of_its_own() -> None:
    # Given a section of ordinary paragraphs around three option entries, all small enough to pack
    before, after = _sentences("a", 1, 16), _sentences("b", 1, 16)  # over min_chars: rule 5 stays out
    entries = [f"--opt{i} " + _sentences(f"e{i}", 1, 16) for i in range(3)]
    blocks = [Block(before, ("S",)), *(Block(e, ("S",), entry=True) for e in entries), Block(after, ("S",))]
    chunks = chunk_document(_doc(*blocks), SMALL)
    # Then each entry is alone in its chunk, and nothing else changed place
    assert [chunk.text for chunk in chunks] == [before, *entries, after]


def test_a_long_entry_is_split_and_nothing_after_it_joins_its_last_piece() -> None:
    entry = "--long " + _sentences("l", 6, 10)  # over the 300-character target
    closing = _sentences("c", 1, 16)  # over min_chars: rule 5 leaves it alone
    chunks = chunk_document(_doc(Block(entry, ("S",), entry=True), Block(closing, ("S",))), SMALL)
    assert len(chunks) >= 3 and chunks[-1].text == closing
    assert all(closing not in chunk.text for chunk in chunks[:-1])


def test_a_chunk_never_takes_text_from_two_sections() -> None:
    chunks = chunk_document(
        _doc(Block(_sentences("a", 12), ("Intro",)), Block(_sentences("b", 12), ("M", "S"))), SMALL
    )
    assert len(chunks) >= 4
    for chunk in chunks:
        sections = {word[0].lower() for word in chunk.text.split()}
        assert len(sections) == 1
        assert chunk.section_path == {"a": ("Intro",), "b": ("M", "S")}[sections.pop()]
        assert chunk.title == "Doc"


def test_the_same_path_after_another_section_starts_a_new_run() -> None:
    blocks = [
        Block(_sentences("a", 2), ("X",)),
        Block(_sentences("b", 2), ("Y",)),
        Block(_sentences("c", 2), ("X",)),
    ]
    chunks = chunk_document(_doc(*blocks), SMALL)
    assert [chunk.section_path for chunk in chunks] == [("X",), ("Y",), ("X",)]


# --- splitting long blocks ---------------------------------------------------------------------------
def test_a_long_paragraph_is_split_at_sentence_ends_into_balanced_pieces_with_overlap() -> None:
    text = _sentences("s", 20)  # 20 sentences of about 70 characters
    chunks = chunk_document(_doc(Block(text, ("S",), 3)), SMALL)
    assert len(chunks) > 3
    lengths = [len(chunk.text) for chunk in chunks]
    assert max(lengths) <= SMALL.target_chars
    # balanced: the last piece is not a stub
    assert min(lengths) >= SMALL.target_chars // 2
    for previous, current in itertools.pairwise(chunks):
        # every piece ends at a sentence end, and the next starts with whole trailing sentences of it
        assert previous.text.endswith(".")
        overlap = _leading_overlap(previous.text, current.text)
        assert overlap, "consecutive pieces of one paragraph overlap"
        assert len(overlap) <= SMALL.overlap_chars
        assert overlap[0].isupper() and overlap.endswith(".")
    assert all(chunk.page == 3 for chunk in chunks)


def test_no_overlap_starts_mid_sentence_when_a_sentence_is_longer_than_the_overlap() -> None:
    # issue 46: an overlap of trailing words made passages that start mid-sentence ("as -1 for files
    # not in gzip format"); a piece now starts at a sentence, without overlap when none fits
    text = _sentences("w", 12, words=20)  # sentences of about 170 characters > overlap of 60
    chunks = chunk_document(_doc(Block(text)), SMALL)
    assert len(chunks) > 2
    for previous, current in itertools.pairwise(chunks):
        assert not _leading_overlap(previous.text, current.text)
        assert current.text[0].isupper() and previous.text.endswith(".")


def test_overlap_after_a_sentence_split_at_words_starts_at_a_sentence() -> None:
    # a sentence longer than the room is cut at words; the overlap of the piece after it may not start
    # inside that sentence, only at a sentence that follows it
    long = " ".join(f"long{i}" for i in range(90)) + "."
    text = f"{long} Short one. Another short one. " + _sentences("z", 6)
    chunks = chunk_document(_doc(Block(text)), SMALL)
    for chunk in chunks[1:]:
        first = chunk.text.split()[0]
        assert first[0].isupper() or first.startswith("long"), chunk.text[:40]
        if first.startswith("long"):
            assert not any(first in other.text.split() for other in chunks[: chunks.index(chunk)])


def test_a_sentence_longer_than_the_target_is_split_at_word_boundaries() -> None:
    sentence = " ".join(f"word{i}" for i in range(200)) + "."
    chunks = chunk_document(_doc(Block(sentence)), SMALL)
    words = [word for chunk in chunks for word in chunk.text.split()]
    assert set(words) == set(sentence.split())
    assert all(len(chunk.text) <= SMALL.target_chars for chunk in chunks)
    for chunk in chunks:  # no word cut in half
        assert all(re.fullmatch(r"word\d+\.?", word) for word in chunk.text.split())


def test_a_token_longer_than_the_room_is_cut_and_nothing_is_lost() -> None:
    token = "".join(chr(ord("a") + i % 26) for i in range(2000))
    chunks = chunk_document(_doc(Block(f"Before. {token} After.")), SMALL)
    assert all(len(chunk.text) <= SMALL.target_chars for chunk in chunks)
    joined = "".join(chunk.text.replace(" ", "") for chunk in chunks)
    # overlaps repeat some text, so check that the token survives in order across the pieces
    assert _is_subsequence(f"Before.{token}After.", joined)
    assert token[:200] in chunks[0].text + chunks[1].text


def test_a_long_entry_leads_every_piece_with_its_head() -> None:
    # issue 46: the pieces of a long option entry after the first lacked the option's name
    head = "-O file --output-document=file"
    body = _sentences("o", 14)
    block = Block(f"{head} {body}", ("Options",), entry=True, head=head)
    chunks = chunk_document(_doc(Block(_sentences("b", 2), ("Options",)), block), SMALL)
    pieces = [chunk for chunk in chunks if re.search(r"\bo\d+x\d+", chunk.text, re.IGNORECASE)]
    assert len(pieces) >= 3
    assert all(piece.text.startswith(head + "\n") for piece in pieces)
    assert all(len(piece.text) <= SMALL.target_chars for piece in pieces)
    # every sentence of the entry is in a piece, in order, and no piece starts mid-sentence
    words = [
        word.lower() for piece in pieces for word in re.findall(r"\bo\d+x\d+", piece.text, re.IGNORECASE)
    ]
    assert list(dict.fromkeys(words)) == re.findall(r"\bo\d+x\d+", body.lower())
    assert all(piece.text.split("\n", 1)[1][0].isupper() for piece in pieces)


def test_a_tiny_last_piece_of_an_entry_merges_without_repeating_its_head() -> None:
    head = "--tries=NUMBER"
    tight = ChunkingSettings(target_chars=200, overlap_chars=40, min_chars=150)
    block = Block(f"{head} {_sentences('t', 9, words=4)}", ("Options",), entry=True, head=head)
    chunks = chunk_document(_doc(block), tight)
    assert all(chunk.text.startswith(head) for chunk in chunks)
    assert all(chunk.text.count(head) == 1 for chunk in chunks)


def test_whole_paragraphs_get_no_overlap() -> None:
    paragraphs = [_sentences(f"p{i}", 5) for i in range(4)]  # about 240 characters each
    chunks = chunk_document(_doc(*(Block(p, ("S",)) for p in paragraphs)), SMALL)
    assert [chunk.text for chunk in chunks] == paragraphs


def test_a_tiny_paragraph_before_a_long_one_is_split_together_with_it() -> None:
    tiny = "Short lead-in."
    long = _sentences("l", 10)
    chunks = chunk_document(_doc(Block(tiny, (), 1), Block(long, (), 2)), SMALL)
    assert chunks[0].text.startswith(tiny + "\n\n")
    assert chunks[0].page == 1
    assert all(chunk.page == 2 for chunk in chunks[1:])
    assert all(len(chunk.text) <= SMALL.target_chars for chunk in chunks)


# --- tiny fragments ----------------------------------------------------------------------------------
def _paragraph(prefix: str, chars: int) -> str:
    """Sentences of unique words, exactly ``chars`` characters long."""
    text = _sentences(prefix, 40)
    return text[: chars - 1].rstrip() + "."


def test_a_tiny_fragment_joins_the_following_chunk_of_its_section() -> None:
    # Given full paragraphs around a tiny one, none of which fits beside it
    full_a, tiny, full_b = _paragraph("a", 295), "Tiny note.", _paragraph("b", 295)
    chunks = chunk_document(
        _doc(Block(full_a, ("S",)), Block(tiny, ("S",), 2), Block(full_b, ("S",), 3)), SMALL
    )
    # Then the tiny one is not indexed alone: it leads the following chunk, whose page is now its own
    assert [(chunk.text, chunk.page) for chunk in chunks] == [(full_a, None), (tiny + "\n\n" + full_b, 2)]


def test_a_tiny_fragment_at_the_end_of_its_section_joins_the_previous_chunk_of_that_section() -> None:
    full_a, tiny, other = _paragraph("a", 295), "Tiny note.", _paragraph("c", 295)
    chunks = chunk_document(_doc(Block(full_a, ("S",)), Block(tiny, ("S",)), Block(other, ("T",))), SMALL)
    assert [(chunk.section_path, chunk.text) for chunk in chunks] == [
        (("S",), full_a + "\n\n" + tiny),
        (("T",), other),
    ]


def test_a_tiny_section_merges_with_the_next_section_and_keeps_its_path_when_it_is_the_ancestor() -> None:
    # Given "Chapter" with one short line, then "Chapter > Part" with real text
    intro = "A short introduction."
    body = _sentences("b", 3)
    chunks = chunk_document(_doc(Block(intro, ("Chapter",), 4), Block(body, ("Chapter", "Part"), 5)), SMALL)
    assert len(chunks) == 1
    assert chunks[0].text == intro + "\n\n" + body
    # Then the merged passage lies wholly inside "Chapter", so that is its citation; page is the first
    assert chunks[0].section_path == ("Chapter",)
    assert chunks[0].page == 4


def test_a_tiny_sibling_section_takes_the_path_of_the_chunk_it_joins() -> None:
    intro = "A short aside."
    body = _sentences("b", 3)
    chunks = chunk_document(_doc(Block(intro, ("Aside",)), Block(body, ("Main",))), SMALL)
    assert [(chunk.section_path, chunk.text) for chunk in chunks] == [(("Main",), intro + "\n\n" + body)]


def test_a_tiny_last_section_joins_the_previous_chunk() -> None:
    body = _sentences("b", 3)
    outro = "The end."
    chunks = chunk_document(_doc(Block(body, ("Main",)), Block(outro, ("Main", "Coda"))), SMALL)
    assert [(chunk.section_path, chunk.text) for chunk in chunks] == [(("Main",), body + "\n\n" + outro)]


def test_a_document_smaller_than_min_chars_is_one_chunk() -> None:
    chunks = chunk_document(_doc(Block("Hi.", ("A",)), Block("There.", ("B",)), Block("Bye.", ("C",))), SMALL)
    assert len(chunks) == 1
    assert chunks[0].text == "Hi.\n\nThere.\n\nBye."


def test_merging_a_tiny_piece_does_not_repeat_its_overlap() -> None:
    # Given settings where a split piece can be smaller than min_chars
    tight = ChunkingSettings(target_chars=200, overlap_chars=90, min_chars=190)
    text = _sentences("t", 9, words=4)
    chunks = chunk_document(_doc(Block(text)), tight)
    for chunk in chunks:
        words = chunk.text.split()
        assert len(words) == len(set(words)), "a merge must not duplicate the overlapped words"


# --- pages, titles, defaults -------------------------------------------------------------------------
def test_chunks_of_a_real_pdf_carry_the_page_they_start_on_and_the_bookmark_section() -> None:
    pages = [
        "Overview\n\n" + _sentences("o", 12),
        "Details\n\n" + _sentences("d", 12),
    ]
    doc = parse_document("acme/manual.pdf", make_pdf(pages, outline=[("Overview", 0, 0), ("Details", 1, 0)]))
    chunks = chunk_document(doc, SMALL)
    for chunk in chunks:
        first_word = chunk.text.split()[0].lower()
        assert chunk.page == (1 if first_word.startswith("o") else 2)
        assert chunk.section_path == (("Overview",) if chunk.page == 1 else ("Details",))
        assert chunk.title == "manual"
        assert chunk.embed_text.startswith(f"manual > {chunk.section_path[0]}\n\n")


def test_default_settings_are_used_when_none_are_given() -> None:
    text = _sentences("d", 60)
    chunks = chunk_document(_doc(Block(text)))
    defaults = ChunkingSettings()
    assert len(chunks) > 1
    assert all(defaults.min_chars <= len(chunk.text) <= defaults.target_chars for chunk in chunks)


# --- invariants on generated documents ---------------------------------------------------------------
_PATHS = [(), ("A",), ("A", "B"), ("A", "B", "C"), ("D",)]


@st.composite
def _documents(draw: st.DrawFn) -> tuple[ParsedDocument, dict[str, tuple[tuple[str, ...], int]]]:
    """Documents whose every word is unique, so each word of every chunk can be traced to its block."""
    blocks: list[Block] = []
    origin: dict[str, tuple[tuple[str, ...], int]] = {}
    page = 1
    word_number = 0
    for _ in range(draw(st.integers(1, 14))):
        path = draw(st.sampled_from(_PATHS))
        page += draw(st.integers(0, 1))
        sentences = []
        for length in draw(st.lists(st.integers(1, 45), min_size=1, max_size=25)):
            words = []
            for _ in range(length):
                word = f"w{word_number}" + "x" * (word_number * 7 % 9)
                origin[word.lower()] = (path, page)
                words.append(word)
                word_number += 1
            sentences.append(" ".join(words) + draw(st.sampled_from([".", "!", "?", ";", ""])))
        joiner = draw(st.sampled_from([" ", " ", "\n"]))
        blocks.append(Block(joiner.join(sentences), path, page))
    return ParsedDocument(title="Generated", blocks=blocks, source_type="text"), origin


@st.composite
def _settings(draw: st.DrawFn) -> ChunkingSettings:
    target = draw(st.integers(200, 2000))
    overlap = draw(st.integers(0, target // 2 - 1))
    min_chars = draw(st.integers(0, target - 1))
    pack = draw(st.booleans())
    return ChunkingSettings(
        target_chars=target, overlap_chars=overlap, min_chars=min_chars, pack_sections=pack
    )


def _bare(word: str) -> str:
    return word.rstrip(".!?;").lower()


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(generated=_documents(), chunking=_settings())
def test_chunker_invariants(
    generated: tuple[ParsedDocument, dict[str, tuple[tuple[str, ...], int]]], chunking: ChunkingSettings
) -> None:
    doc, origin = generated
    chunks = chunk_document(doc, chunking)

    # Deterministic, indexed in order, titled
    assert chunks == chunk_document(doc, chunking)
    assert [chunk.index for chunk in chunks] == list(range(len(chunks)))
    assert all(chunk.title == "Generated" for chunk in chunks)

    # Every word of the source lands in a chunk, in order, exactly once apart from overlaps, and an
    # overlap is a suffix of the previous chunk no longer than overlap_chars (the section lines that
    # packing puts in front of each packed part are not source words: set aside)
    source_words = [_bare(word) for block in doc.blocks for word in block.text.split()]
    stream: list[str] = []
    previous_words: list[str] = []
    for chunk in chunks:
        words = [_bare(word) for word in chunk.text.split() if _bare(word) in origin]
        repeated = 0
        seen = set(previous_words)
        while repeated < len(words) and words[repeated] in seen:
            repeated += 1
        if repeated:
            assert words[:repeated] == previous_words[-repeated:]
            assert len(" ".join(chunk.text.split()[:repeated])) <= chunking.overlap_chars
        stream.extend(words[repeated:])
        previous_words = words
    assert stream == source_words

    # Sizes: within the documented bound, and no tiny chunk unless the document is a single chunk
    for chunk in chunks:
        assert len(chunk.text) <= max_chunk_chars(chunking)
        if len(chunks) > 1:
            assert len(chunk.text) >= chunking.min_chars

    for chunk in chunks:
        words = [_bare(word) for word in chunk.text.split() if _bare(word) in origin]
        # page: where the chunk's text starts
        assert chunk.page == origin[words[0]][1]
        # sections: the path is one of its words' paths (packed: their common ancestor); a word from
        # another section either lies inside the cited one (the ancestor rule) or belongs to a merged
        # tiny fragment
        path = chunk.section_path
        if not chunking.pack_sections:
            assert path in {origin[word][0] for word in words}
        outside = sum(len(word) + 1 for word in words if origin[word][0][: len(path)] != path)
        assert outside <= 2 * chunking.min_chars + 4


def _leading_overlap(previous: str, current: str) -> str:
    """The longest prefix of ``current`` that is a suffix of ``previous``."""
    for size in range(min(len(previous), len(current)), 0, -1):
        if previous.endswith(current[:size]) and (size == len(current) or current[size] in " \n"):
            return current[:size]
    return ""


def _is_subsequence(needle: str, haystack: str) -> bool:
    position = 0
    for char in haystack:
        if position < len(needle) and needle[position] == char:
            position += 1
    return position == len(needle)


def _numbered(first: int, sentence_lengths: list[int]) -> str:
    """Sentences of unique words w<first>, w<first+1>, ... of the given lengths."""
    sentences, number = [], first
    for length in sentence_lengths:
        sentences.append(" ".join(f"w{n}" for n in range(number, number + length)) + ".")
        number += length
    return " ".join(sentences)


def test_a_chunk_never_collects_more_tiny_fragments_than_the_size_bound_allows() -> None:
    # Given min_chars close to the target, so split pieces and sections come out under min_chars and
    # the greedy merge folded three of them into one chunk (found by the property test: 541
    # characters with a bound of 540; this document became one chunk of 887 characters, bound 739)
    settings = ChunkingSettings(target_chars=249, overlap_chars=0, min_chars=243)
    document = ParsedDocument(
        title="T",
        blocks=[
            Block(_numbered(0, [1, 8, 7, 12, 2, 7, 6, 8, 1, 1, 5]), ("A",)),
            Block(_numbered(58, [1, 5, 11, 11, 10, 12, 5, 11, 4, 9, 9, 6]), ("D",)),
            Block(_numbered(152, [5, 4, 2, 10, 6, 4, 10]), ("A",)),
        ],
        source_type="text",
    )
    # When it is chunked
    chunks = chunk_document(document, settings)
    # Then every chunk is within the documented bound and none is tiny
    assert len(chunks) > 1
    assert all(settings.min_chars <= len(chunk.text) <= max_chunk_chars(settings) for chunk in chunks)
    # and every word is there once, in order
    words = " ".join(chunk.text for chunk in chunks).replace(".", "").split()
    assert words == [f"w{n}" for n in range(193)]


# --- rule 7: small sections packed -----------------------------------------------------------------------
def test_small_sibling_sections_are_packed_under_their_parent_with_each_part_named() -> None:
    # Given three short option sections under OPTIONS, then a long DESCRIPTION
    options = [
        Block(
            f"Option {name} changes how {name} output is shown in the listing of every file.",
            ("OPTIONS", name),
        )
        for name in ("Context", "Colours", "Counter")
    ]
    chunks = chunk_document(_doc(*options, Block(_sentences("d", 12), ("DESCRIPTION",))), PACKED)
    # Then the options form one passage cited under OPTIONS, each part led by its own section's name
    first = chunks[0]
    assert first.section_path == ("OPTIONS",)
    assert first.text.split("\n\n") == [f"{b.section_path[1]}\n{b.text}" for b in options]
    # and the long section after them keeps its own chunks and path
    assert all(chunk.section_path == ("DESCRIPTION",) for chunk in chunks[1:])
    # while without packing each option section stays alone
    assert len(chunk_document(_doc(*options), SMALL)) == 3


def test_packing_stops_at_the_target_and_at_a_new_page() -> None:
    # Given twelve sections of about 100 characters, the last four on page 2 (block i's words start
    # with the i-th letter)
    letters = "abcdefghijkl"
    blocks = [
        Block(_sentences(letter, 1, 12), ("API", f"part{i}"), 1 if i < 8 else 2)
        for i, letter in enumerate(letters)
    ]
    chunks = chunk_document(_doc(*blocks), PACKED)
    # Then no passage passes the target, none spans two pages, and every block is kept, in order
    assert all(len(chunk.text) <= PACKED.target_chars for chunk in chunks)
    for chunk in chunks:
        words = [w for w in chunk.text.split() if not w.startswith("part")]
        assert {blocks[letters.index(w[0].lower())].page for w in words} == {chunk.page}
    order = [w[0].lower() for chunk in chunks for w in chunk.text.split() if not w.startswith("part")]
    assert "".join(dict.fromkeys(order)) == letters
    assert 3 <= len(chunks) < len(blocks)


def test_tables_are_never_packed_with_text() -> None:
    # Given a short section, a table, and another short section
    from winnow.models import Table

    table = Table(caption="Ports", header=["name", "port"], rows=[["ssh", "22"], ["http", "80"]])
    blocks = [
        Block("Short intro paragraph about the services.", ("A",)),
        Block("name port", ("B",), table=table),
        Block("Short outro paragraph about the services.", ("C",)),
    ]
    chunks = chunk_document(_doc(*blocks), PACKED)
    assert [chunk.kind for chunk in chunks].count("table") == 1
    assert all("Short" not in chunk.text for chunk in chunks if chunk.kind == "table")


def test_a_tiny_part_outside_any_section_takes_the_section_of_the_chunk_it_joins() -> None:
    # Given a title slide's subtitle (no section) before a slide of bullets under its title
    subtitle = "Mandatory for all staff, yearly"
    bullets = _sentences("b", 3)
    chunks = chunk_document(_doc(Block(subtitle, (), 1), Block(bullets, ("Recognising phishing",), 2)), SMALL)
    # Then the passage keeps the heading of the text it mostly is: the root names no section
    assert [(chunk.section_path, chunk.text, chunk.page) for chunk in chunks] == [
        (("Recognising phishing",), subtitle + "\n\n" + bullets, 1)
    ]
