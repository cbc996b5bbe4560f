"""The ingest process's peak memory on the largest accepted inputs (issue 44: within 400 MB on any
accepted input). The largest accepted document is one just under the chunk cap (the embedded default's
``EMBEDDED_MAX_CHUNKS``, 6,000, unless ``WINNOW_INGEST_MAX_CHUNKS`` is set) and the size cap (25 MB);
``--chunks`` past the cap shows the document refused (``failed``). For each kind of input, a sample is
chunked to learn its chunks per byte, a file of about ``--chunks`` chunks is written, and ``winnow
ingest`` runs on it in a child process of its own (``benchmarks.table_ingest``'s child: the local
embedder, Qdrant Edge): its seconds, chunks and peak RSS. ``--baseline`` runs the same children on
another checkout in the same run.

The local model embeds about 6 chunks a second on a loaded 2-core machine (an hour a file at the cap):
``--model-runs off`` keeps every step of the real path (tokenizer, chunking to the window, BM25, Qdrant
Edge, the checkpoints) but returns each model run's vectors without running the model, so what is
measured is what grows with the document; the model's own memory (its session and the arena of its
largest run, bounded by ``PADDED_TOKENS_PER_RUN`` whatever the document) is the difference between the
two modes on the same small file (``--chunks 1500``)."""

from __future__ import annotations

import argparse
import os
import random
import tempfile
from collections.abc import Callable
from pathlib import Path

from benchmarks.common import AS_THE_COMMAND, REPO_ROOT, machine, positive_int, table
from benchmarks.table_ingest import _INGEST, ingest_row
from tests.support.tables import WORDS, table_csv
from winnow.settings import EMBEDDED_MAX_CHUNKS

# The model's runs skipped (see the module's note): the session is never built, the vectors are unit.
_NO_MODEL_RUNS = """
import numpy as np
from winnow_local.adapters import onnx_embedder as _onnx
_onnx.LocalOnnxEmbedder._load = lambda self, input_type="query": (None, self._load_tokenizer())
def _load_tokenizer(self):
    from tokenizers import Tokenizer
    if self._tokenizer is None:
        files = _onnx.verify_model_files(self._model_path, self._tokenizer_path)
        self._tokenizer = Tokenizer.from_file(str(files["tokenizer"]))
        self._tokenizer.enable_truncation(max_length=self._max_tokens)
        self._tokenizer.no_padding()
    return self._tokenizer
_onnx.LocalOnnxEmbedder._load_tokenizer = _load_tokenizer
def _pool(self, session, input_ids, attention):
    out = np.zeros((input_ids.shape[0], _onnx.DIMENSION), dtype=np.float32)
    out[:, 0] = 1.0
    return out
_onnx.LocalOnnxEmbedder._pool = _pool
"""


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def markdown_table(size: int) -> bytes:
    rng = random.Random(2)
    lines = ["| " + " | ".join(f"column {i}" for i in range(5)) + " |", "|" + "---|" * 5]
    total = 0
    while total < size:
        lines.append("| " + " | ".join(_words(rng, 300) for _ in range(5)) + " |")
        total += len(lines[-1]) + 1
    return "\n".join(lines).encode()


def prose(size: int) -> bytes:
    rng = random.Random(3)
    parts, total = [], 0
    while total < size:
        parts.append(_words(rng, 120) + ".")
        total += len(parts[-1]) + 2
    return "\n\n".join(parts).encode()


def small_sections(size: int) -> bytes:
    """Markdown of many short sections under long, deep headings: the most chunks per byte the chunker
    makes, each carrying its section path."""
    rng = random.Random(4)
    parts, total, n = [], 0, 0
    while total < size:
        if n % 50 == 0:
            parts.append(f"# Chapter {n} " + _words(rng, 25))
        parts.append(f"## Section {n} " + _words(rng, 25) + "\n\n" + _words(rng, 20) + ".")
        total += len(parts[-1]) + 2
        n += 1
    return "\n\n".join(parts).encode()


KINDS: dict[str, tuple[str, Callable[[int], bytes]]] = {
    "csv": ("table.csv", lambda size: table_csv(True, size).encode()),
    "md-table": ("table.md", markdown_table),
    "prose": ("prose.txt", prose),
    "sections": ("sections.md", small_sections),
}
MAX_BYTES = 25 * 1024 * 1024


def chunks_per_byte(name: str, data: bytes) -> float:
    from winnow.factory import get_container

    reader = get_container().ingest_service().reader
    _, chunks = reader.read(f"bench/{name}", data)
    return len(chunks) / len(data)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    near_cap = EMBEDDED_MAX_CHUNKS * 95 // 100
    parser.add_argument(
        "--chunks", type=positive_int, default=near_cap, help=f"chunks to aim at ({near_cap})"
    )
    parser.add_argument("--kinds", default=",".join(KINDS), help=f"comma-separated of {', '.join(KINDS)}")
    parser.add_argument("--model-runs", choices=("on", "off"), default="on", help="see the module's note")
    parser.add_argument("--baseline", type=Path, default=None, help="another checkout to compare with")
    args = parser.parse_args(argv)
    print(machine())
    roots = {"this": REPO_ROOT} | ({"baseline": args.baseline.resolve()} if args.baseline else {})
    rows = []
    with tempfile.TemporaryDirectory(prefix="winnow-cap-memory-") as work:
        os.environ["WINNOW_HOME"] = str(Path(work) / "calibrate")
        for kind in args.kinds.split(","):
            name, make = KINDS[kind]
            rate = chunks_per_byte(name, make(200_000))
            data = make(min(MAX_BYTES - 4096, int(args.chunks / rate)))
            folder = Path(work) / kind
            folder.mkdir()
            (folder / name).write_bytes(data)
            for code, root in roots.items():
                code_run = _INGEST
                if args.model_runs == "off":
                    code_run = AS_THE_COMMAND + _NO_MODEL_RUNS + _INGEST.removeprefix(AS_THE_COMMAND)
                home = Path(work) / f"home-{code}-{kind}"
                rows.append(ingest_row(code_run, kind, code, root, folder, home))
                print(rows[-1], flush=True)
    os.environ.pop("WINNOW_HOME", None)
    print(table(["input", "code", "MB", "chunks", "result", "ingest s", "peak RSS MB"], rows))


if __name__ == "__main__":
    main()
