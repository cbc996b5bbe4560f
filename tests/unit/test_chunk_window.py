"""Chunks sized to the embedder's window: with the local model (256 tokens), no chunk's embed_text is
cut before embedding; measured with the model's own tokenizer."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from tests.support.samples import DENSE
from winnow.models import Block, ParsedDocument
from winnow.ports import Embedder
from winnow.settings import ChunkingSettings
from winnow.text.chunking import chunk_document, chunk_to_fit, max_chunk_chars
from winnow_local.adapters.onnx_embedder import LocalOnnxEmbedder

WINDOW = 256
PROSE = " ".join(
    f"Paragraph {n} explains how the team reviews every request before the weekly planning meeting."
    for n in range(40)
)


@pytest.fixture(scope="module")
def local_model() -> Embedder:
    return LocalOnnxEmbedder(max_tokens=WINDOW)


def _document(*texts: str) -> ParsedDocument:
    return ParsedDocument(
        title="Cytokine levels", blocks=[Block(text, ("Results",)) for text in texts], source_type="text"
    )


def test_the_local_model_counts_tokens_exactly_and_past_its_window(local_model: Embedder) -> None:
    # Given the local model's tokenizer
    # When it counts a short text and a text far longer than the window
    short, long = local_model.count_tokens(["hello world", DENSE])
    # Then [CLS] hello world [SEP] is 4 tokens, and the long text is counted whole, not truncated
    assert short == 4
    assert long > 4 * WINDOW
    assert local_model.max_input_tokens == WINDOW


def test_token_dense_chunks_are_resized_until_each_fits_the_window(local_model: Embedder) -> None:
    # Given a token-dense document whose default-sized chunks exceed the model's 256-token window
    settings = ChunkingSettings()
    document = _document(DENSE)
    plain = chunk_document(document, settings)
    assert max(local_model.count_tokens([chunk.embed_text for chunk in plain])) > WINDOW
    # When it is chunked to fit the window
    fitted = chunk_to_fit(document, settings, local_model.count_tokens, WINDOW)
    # Then every chunk, with its title and section header, fits
    assert max(local_model.count_tokens([chunk.embed_text for chunk in fitted])) <= WINDOW
    # and the text is all there, in order (overlap aside)
    joined = " ".join(chunk.text for chunk in fitted)
    assert all(f"IL-{n}:" in joined for n in range(120))
    # and the chunks keep the size rules of the settings they were cut with (smaller than the default)
    assert max(len(chunk.text) for chunk in fitted) <= max_chunk_chars(settings)


def test_a_document_that_fits_keeps_its_configured_chunk_sizes(local_model: Embedder) -> None:
    # Given plain English prose whose default chunks fit the window
    settings = ChunkingSettings(target_chars=800)
    document = _document(PROSE)
    # When it is chunked to fit
    # Then the chunks are exactly the ones the settings give
    assert chunk_to_fit(document, settings, local_model.count_tokens, WINDOW) == chunk_document(
        document, settings
    )


def test_the_port_default_never_under_counts_the_local_models_tokens(local_model: Embedder) -> None:
    # Given an embedder that only has the port's conservative estimate
    class Estimating(Embedder):
        profile = local_model.profile  # type: ignore[assignment]

        def embed(self, texts: object, input_type: object) -> list[list[float]]:
            raise NotImplementedError

    texts = [DENSE, PROSE, "naïve café 東京 Ωmega", "x"]
    # When both count the same texts
    # Then the estimate is never below the real count
    estimated = Estimating().count_tokens(texts)
    exact = local_model.count_tokens(texts)
    assert all(guess >= real for guess, real in zip(estimated, exact, strict=True))


def test_only_the_chunks_over_the_window_are_cut_again(local_model: Embedder) -> None:
    # Given a document with a prose section whose chunks fit the window and a token-dense section
    settings = ChunkingSettings(target_chars=800)
    document = ParsedDocument(
        title="Report",
        blocks=[Block(PROSE, ("Method",)), Block(DENSE, ("Results",))],
        source_type="text",
    )
    plain = chunk_document(document, settings)
    prose = [chunk.text for chunk in plain if chunk.section_path == ("Method",)]
    assert (
        max(local_model.count_tokens([c.embed_text for c in plain if c.section_path == ("Method",)]))
        <= WINDOW
    )
    # When it is chunked to fit the window
    fitted = chunk_to_fit(document, settings, local_model.count_tokens, WINDOW)
    # Then every chunk fits, the prose chunks are exactly as configured, and the dense text is all there
    assert max(local_model.count_tokens([chunk.embed_text for chunk in fitted])) <= WINDOW
    assert [chunk.text for chunk in fitted if chunk.section_path == ("Method",)] == prose
    assert [chunk.index for chunk in fitted] == list(range(len(fitted)))
    joined = " ".join(chunk.text for chunk in fitted if chunk.section_path == ("Results",))
    assert all(f"IL-{n}:" in joined for n in range(120))


def test_a_document_of_one_section_is_refitted_as_a_whole(local_model: Embedder) -> None:
    # Given prose and token-dense text under one heading (an abstract has no headings at all)
    document = ParsedDocument(title="Report", blocks=[Block(PROSE, ()), Block(DENSE, ())], source_type="text")
    settings = ChunkingSettings(target_chars=800)
    plain = chunk_document(document, settings)
    # When it is fitted to the window
    fitted = chunk_to_fit(document, settings, local_model.count_tokens, WINDOW)
    # Then every chunk fits and the one section was chunked again at one smaller size: more chunks, none
    # of them as long as the configured target allows
    assert max(local_model.count_tokens([chunk.embed_text for chunk in fitted])) <= WINDOW
    assert len(fitted) > len(plain)
    assert max(len(chunk.text) for chunk in fitted) < max(len(chunk.text) for chunk in plain)


def _digit_tokens(texts: Sequence[str]) -> list[int]:
    """A tokenizer stand-in: every digit a token, four other characters a token (numbers are dense)."""
    return [sum(c.isdigit() for c in t) + (sum(not c.isdigit() for c in t) + 3) // 4 + 2 for t in texts]


def _digits(n: int, seed: int) -> str:
    return " ".join(f"{(i * 7 + seed) % 100000:05d}" for i in range(n // 6 + 1))[:n].strip() + "."


def _prose(n: int, tag: str) -> str:
    text = " ".join(f"The {tag} team reviews request {i} before planning." for i in range(n // 40 + 1))
    return text[:n].rsplit(" ", 1)[0] + "."


@pytest.mark.parametrize(
    ("blocks", "settings", "window"),
    [
        # tiny dense sections that rule 5 folds into prose chunks fitted at the configured size
        (
            [
                b
                for i in range(4)
                for b in (Block(_prose(1190, f"s{i}"), (f"P{i}",)), Block(_digits(95, i), (f"T{i}",)))
            ],
            ChunkingSettings(),
            380,
        ),
        # small dense sections packed together (packing crosses sections)
        (
            [Block(_digits(150, i), (f"S{i}",)) for i in range(12)],
            ChunkingSettings(pack_sections=True),
            256,
        ),
    ],
    ids=["tiny-dense-folded", "packed"],
)
def test_fitting_section_by_section_never_leaves_a_chunk_over_the_window(
    blocks: list[Block], settings: ChunkingSettings, window: int
) -> None:
    document = ParsedDocument(title="T", blocks=blocks, source_type="text")
    fitted = chunk_to_fit(document, settings, _digit_tokens, window)
    assert max(_digit_tokens([chunk.embed_text for chunk in fitted])) <= window
    joined = "\n".join(chunk.text for chunk in fitted)
    assert all(block.text[:20] in joined and block.text[-20:] in joined for block in blocks)
