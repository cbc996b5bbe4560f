"""Ingest with the true embedded default (local ONNX model, 256-token window): every indexed chunk of a
token-dense document fits the window, so nothing is cut before it is embedded."""

from __future__ import annotations

from tests.support.samples import DENSE
from tests.support.stack import EmbeddedStack

WINDOW = 256


def test_every_chunk_of_a_token_dense_document_fits_the_local_models_window(
    onnx_stack: EmbeddedStack,
) -> None:
    # Given a Markdown report of lab values, about two characters per token
    text = f"# Cytokine levels\n\n## Results\n\n{DENSE}\n".encode()
    # When it is ingested through the handler with the local model
    result = onnx_stack.upload("acme/labs.md", text)
    assert result["status"] == "indexed", result
    # Then every stored chunk, title and section included, is at most 256 tokens of the model
    status, body = onnx_stack.search("IL-7 ng/mL confidence interval", relevance_threshold=0, top_k=50)
    assert status == 200
    hits = body["results"]
    assert len(hits) == result["chunks"] > 1
    embedder = onnx_stack.container.embedder
    header = "Cytokine levels > Results\n\n"
    assert max(embedder.count_tokens([header + hit["text"] for hit in hits])) <= WINDOW
