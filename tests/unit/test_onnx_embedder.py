"""The local ONNX embedder with the real all-MiniLM-L6-v2 int8 model and tokenizer from the installed
packages: vector shape and norm, meaning, batch/single agreement, and the sha256 guard."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest

from winnow.errors import ConfigurationError
from winnow.models import EmbeddingProfile
from winnow_local.adapters.onnx_embedder import (
    DIMENSION,
    MODEL_SHA256,
    TOKENIZER_SHA256,
    LocalOnnxEmbedder,
    main,
    sha256_of,
    verify_model_files,
)


@pytest.fixture(scope="module")
def embedder() -> LocalOnnxEmbedder:
    return LocalOnnxEmbedder()


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / math.sqrt(
        sum(x * x for x in a) * sum(y * y for y in b)
    )


def test_profile_names_the_local_model() -> None:
    assert LocalOnnxEmbedder().profile == EmbeddingProfile("local", "all-MiniLM-L6-v2-int8", 384)


def test_vectors_have_384_dimensions_and_unit_norm(embedder: LocalOnnxEmbedder) -> None:
    # Given texts of very different lengths, including one far over the token limit
    texts = ["hi", "A short sentence about retrieval.", "long text " * 400]
    # When embedded
    vectors = embedder.embed(texts, "document")
    # Then each is a finite 384-dimensional unit vector
    assert [len(v) for v in vectors] == [DIMENSION] * 3
    for vector in vectors:
        assert all(math.isfinite(x) for x in vector)
        assert math.sqrt(sum(x * x for x in vector)) == pytest.approx(1.0, abs=1e-4)


def test_related_sentences_are_closer_than_unrelated_ones(embedder: LocalOnnxEmbedder) -> None:
    # Given paraphrases sharing almost no words, and an unrelated sentence
    food, bread, market = embedder.embed(
        [
            "A man is eating food.",
            "Someone is having a meal of bread.",
            "The central bank raised interest rates again.",
        ],
        "query",
    )
    # Then the paraphrases are much closer to each other than to the unrelated sentence
    assert cosine(food, bread) > 0.4
    assert cosine(food, bread) > cosine(food, market) + 0.3
    assert cosine(bread, market) < 0.3


@pytest.mark.parametrize("parallel_runs", [1, 3], ids=["runs-one-at-a-time", "runs-side-by-side"])
def test_batch_results_match_single_results(embedder: LocalOnnxEmbedder, parallel_runs: int) -> None:
    # Given texts of mixed lengths embedded together (sorted, padded, split into runs of two texts,
    # the runs either one after another or side by side on single-threaded sessions)
    texts = [
        "Penguins cannot fly but swim very well.",
        "short",
        "Photosynthesis converts light into chemical energy in chloroplasts. " * 6,
        "Rust and Python are programming languages.",
        "x " * 300,
    ]
    together = LocalOnnxEmbedder(batch_size=2, parallel_runs=parallel_runs).embed(texts, "document")
    # Then each vector matches embedding that text alone, in the original order
    for text, vector in zip(texts, together, strict=True):
        (alone,) = embedder.embed([text], "document")
        assert cosine(vector, alone) > 0.999


def test_parallel_runs_must_be_positive() -> None:
    with pytest.raises(ValueError, match="parallel_runs"):
        LocalOnnxEmbedder(parallel_runs=0)


def test_input_type_does_not_change_the_vector(embedder: LocalOnnxEmbedder) -> None:
    # The model is symmetric: query and document embeddings of one text are the same
    (as_query,) = embedder.embed(["what is a vector database"], "query")
    (as_document,) = embedder.embed(["what is a vector database"], "document")
    assert cosine(as_query, as_document) > 0.9999


def test_truncation_to_max_tokens_ignores_text_beyond_it() -> None:
    # Given a 16-token limit; When two texts differ only after the first ~40 words
    short_limit = LocalOnnxEmbedder(max_tokens=16)
    head = "the committee approved the annual budget after a long debate " * 4
    a, b = short_limit.embed([head + "about schools", head + "about submarines and volcanoes"], "document")
    # Then their vectors are identical, because only the first 16 tokens were read
    assert cosine(a, b) > 0.99999


def test_no_texts_no_work() -> None:
    # An embedder whose model files do not exist can still embed nothing (the session is created lazily)
    assert LocalOnnxEmbedder(model_path=Path("/nonexistent/model.onnx")).embed([], "query") == []


def test_installed_files_verify() -> None:
    files = verify_model_files()
    assert sha256_of(files["model"]) == MODEL_SHA256
    assert sha256_of(files["tokenizer"]) == TOKENIZER_SHA256


def test_altered_model_file_is_refused(tmp_path: Path) -> None:
    # Given a copy of model.onnx with one byte changed
    tampered = tmp_path / "model.onnx"
    shutil.copyfile(verify_model_files()["model"], tampered)
    data = bytearray(tampered.read_bytes())
    data[len(data) // 2] ^= 0xFF
    tampered.write_bytes(bytes(data))
    # When the embedder first runs; Then it refuses with a message that says what to do
    with pytest.raises(ConfigurationError, match="sha256") as caught:
        LocalOnnxEmbedder(model_path=tampered).embed(["hello"], "query")
    assert "make install" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_altered_tokenizer_is_refused(tmp_path: Path) -> None:
    tampered = tmp_path / "tokenizer.json"
    tampered.write_bytes(verify_model_files()["tokenizer"].read_bytes().replace(b"[UNK]", b"[UNX]", 1))
    with pytest.raises(ConfigurationError, match="tokenizer"):
        LocalOnnxEmbedder(tokenizer_path=tampered).embed(["hello"], "query")


def test_missing_model_file_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"not found.*make install"):
        LocalOnnxEmbedder(model_path=tmp_path / "absent.onnx").embed(["hello"], "query")


def test_verify_entry_point_prints_and_fails_on_mismatch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the real files, the --verify entry prints both paths with their checksums and exits 0
    assert main(["--verify"]) == 0
    printed = capsys.readouterr().out
    assert MODEL_SHA256 in printed and TOKENIZER_SHA256 in printed
    # And given an altered tokenizer it exits 1 with a one-line error
    bad = tmp_path / "tokenizer.json"
    bad.write_text("{}")
    assert main(["--verify", "--tokenizer", str(bad)]) == 1
    assert "sha256" in capsys.readouterr().err


def test_module_import_stays_light() -> None:
    # The search Lambda imports the factory, which imports this module: no onnxruntime/numpy at import
    import os
    import subprocess
    import sys

    layer = Path(__file__).resolve().parents[2] / "layers" / "shared"
    env = {**os.environ, "PYTHONPATH": str(layer)}
    code = (
        "import sys; import winnow_local.adapters.onnx_embedder; "
        "print(sorted(m for m in ('onnxruntime', 'numpy', 'tokenizers') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.strip() == "[]"
