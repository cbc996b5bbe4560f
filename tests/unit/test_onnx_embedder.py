"""The local ONNX embedder with the real all-MiniLM-L6-v2 int8 model and tokenizer from the installed
packages: vector shape and norm, meaning, batch/single agreement, the sha256 guard, and the prepared
query model (same vectors, a fraction of the memory)."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from winnow.errors import ConfigurationError
from winnow.models import EmbeddingProfile
from winnow_local.adapters.onnx_embedder import (
    DIMENSION,
    MODEL_SHA256,
    QUERY_DATA_FILE,
    QUERY_DATA_SHA256,
    QUERY_MODEL_FILE,
    QUERY_MODEL_SHA256,
    TOKENIZER_SHA256,
    LocalOnnxEmbedder,
    main,
    prepare_query_model,
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


@pytest.mark.parametrize(("parallel_runs", "threads"), [(1, min(2, os.cpu_count() or 1)), (3, 1)])
def test_document_runs_one_at_a_time_use_both_cores(parallel_runs: int, threads: int) -> None:
    # One run at a time gets two threads (the memory of one run, both cores); runs side by side one each
    embedder = LocalOnnxEmbedder(parallel_runs=parallel_runs)
    embedder.embed(["warm up"], "document")
    assert embedder._document_session.get_session_options().intra_op_num_threads == threads


def test_sharing_cores_puts_document_runs_on_one_thread_and_keeps_the_vectors(
    embedder: LocalOnnxEmbedder,
) -> None:
    # Given an embedder whose document runs use both cores
    shared = LocalOnnxEmbedder()
    (before,) = shared.embed(["Descale the kettle every four weeks."], "document")
    # When a process that also answers searches has it share the cores (``winnow serve``)
    shared.share_cores()
    (after,) = shared.embed(["Descale the kettle every four weeks."], "document")
    # Then its document runs take one thread, queries keep theirs, and the vectors are the same
    assert shared._document_session.get_session_options().intra_op_num_threads == 1
    shared.embed(["kettle"], "query")
    assert shared._session.get_session_options().intra_op_num_threads == min(2, os.cpu_count() or 1)
    assert cosine(before, after) > 0.9999


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


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("query-model") / "prepared"
    prepare_query_model(folder)
    return folder


QUESTIONS = [
    "does vitamin D improve bone density",
    "How do chloroplasts turn light into chemical energy in plant cells?",
    "x " * 300,
]


def test_prepared_query_model_gives_the_folded_models_vectors(prepared: Path, tmp_path: Path) -> None:
    # Given the prepared query model, and an embedder that finds none and folds the pinned model at load
    lean = LocalOnnxEmbedder(query_model_dir=prepared)
    folded = LocalOnnxEmbedder(query_model_dir=tmp_path / "never-prepared")
    # When both embed the same questions
    ours, theirs = lean.embed(QUESTIONS, "query"), folded.embed(QUESTIONS, "query")
    # Then each ran its own model file and the vectors agree to float32 rounding
    assert lean.query_model == (prepared / QUERY_MODEL_FILE).resolve()
    assert folded.query_model == verify_model_files()["model"]
    for a, b in zip(ours, theirs, strict=True):
        assert max(abs(x - y) for x, y in zip(a, b, strict=True)) < 1e-6


_QUERY_MEMORY = """
import json, sys
from pathlib import Path
import numpy, onnxruntime, tokenizers
from winnow_local.adapters.onnx_embedder import LocalOnnxEmbedder
def peak():
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:")) / 1024
before = peak()
embedder = LocalOnnxEmbedder(query_model_dir=Path(sys.argv[1]))
embedder.embed(["does vitamin D improve bone density"], "query")
print(json.dumps({"grew_mb": peak() - before}))
"""


def query_session_growth(folder: Path) -> float:
    """How much one fresh process's peak RSS grows to build the query session and embed one question."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "layers" / "shared")}
    done = subprocess.run(
        [sys.executable, "-c", _QUERY_MEMORY, str(folder)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return float(json.loads(done.stdout.strip().splitlines()[-1])["grew_mb"])


def test_prepared_query_model_holds_a_fraction_of_the_folded_ones_memory(
    prepared: Path, tmp_path: Path
) -> None:
    # The folded model holds float32 copies of every table (the 30,522-row word table among them) and the
    # folding's scratch; the prepared one keeps that table int8 and maps its float weights from the file
    lean = query_session_growth(prepared)
    folded = query_session_growth(tmp_path / "never-prepared")
    assert lean < 120
    assert folded > lean + 80


def test_altered_prepared_model_is_refused(prepared: Path, tmp_path: Path) -> None:
    # Given a copy of the prepared files with one byte of the weights changed
    copy = tmp_path / "prepared"
    shutil.copytree(prepared, copy)
    weights = bytearray((copy / QUERY_DATA_FILE).read_bytes())
    weights[len(weights) // 2] ^= 0xFF
    (copy / QUERY_DATA_FILE).write_bytes(bytes(weights))
    # When the embedder builds its query session; Then it refuses, saying how to prepare again
    with pytest.raises(ConfigurationError, match="sha256") as caught:
        LocalOnnxEmbedder(query_model_dir=copy).embed(["hello"], "query")
    assert "--prepare" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_prepare_entry_point_writes_the_pinned_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--prepare", "--target", str(tmp_path / "q")]) == 0
    printed = capsys.readouterr().out
    assert QUERY_MODEL_SHA256 in printed and QUERY_DATA_SHA256 in printed
    assert sha256_of(tmp_path / "q" / QUERY_MODEL_FILE) == QUERY_MODEL_SHA256
    assert sha256_of(tmp_path / "q" / QUERY_DATA_FILE) == QUERY_DATA_SHA256
    assert sorted(p.name for p in tmp_path.iterdir()) == ["q"]  # no scratch folder left behind


def test_released_waits_for_runs_in_flight_holds_new_ones_and_drops_the_document_session(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given an embedder whose document run is in flight (held inside the model run until told to go on)
    import threading

    embedder = LocalOnnxEmbedder()
    texts = ["sealing a segment", "the model gives its memory back"]
    before = embedder.embed(texts, "document")
    pool, in_run, go_on = embedder._pool, threading.Event(), threading.Event()

    def held_pool(*args: object) -> object:
        in_run.set()
        go_on.wait(10)
        return pool(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(embedder, "_pool", held_pool)
    results: dict[str, object] = {}
    running = threading.Thread(target=lambda: results.update(first=embedder.embed(texts, "document")))
    running.start()
    assert in_run.wait(10)
    # When a step asks for the memory back
    entered, leave = threading.Event(), threading.Event()

    def step() -> None:
        with embedder.released():
            results["session during the step"] = embedder._document_session
            entered.set()
            leave.wait(10)

    stepping = threading.Thread(target=step)
    stepping.start()
    # Then it waits for the run in flight to finish
    assert not entered.wait(0.3)
    go_on.set()
    assert entered.wait(10)
    assert results["first"] == before
    assert results["session during the step"] is None
    # And a document run asked for meanwhile waits for the step, while a query does not
    later = threading.Thread(target=lambda: results.update(later=embedder.embed(texts, "document")))
    later.start()
    assert embedder.embed(["a question"], "query")
    later.join(0.3)
    assert later.is_alive()
    leave.set()
    stepping.join(10)
    later.join(30)
    # And the run after the step rebuilt the session and gives the same vectors
    assert results["later"] == before
    assert embedder._document_session is not None
