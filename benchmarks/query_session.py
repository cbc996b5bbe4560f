"""The local model's query session: the prepared query model against the pinned model folded at load.

``python -m benchmarks.query_session [--rounds 7] [--questions 40]``

Memory: each session is built in a fresh child process that has already imported numpy, onnxruntime
and tokenizers; it embeds one question and reports how much its peak RSS (``VmHWM``) grew. Latency: one
process builds both sessions and embeds the same SciFact questions one at a time, alternating the
sessions round by round; reported are the medians over rounds of each round's median milliseconds per
question. The vectors of both sessions are compared too (largest difference of a component).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import machine, positive_int, table
from benchmarks.ingest_scale import BUNDLED_SCIFACT, DEFAULT_SCIFACT

ROOT = Path(__file__).resolve().parents[1]

_GROWTH = """
import json, sys
from pathlib import Path
import numpy, onnxruntime, tokenizers
from winnow_local.adapters.onnx_embedder import LocalOnnxEmbedder
def peak():
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:")) / 1024
before = peak()
LocalOnnxEmbedder(query_model_dir=Path(sys.argv[1])).embed(["does vitamin D improve bone density"], "query")
print(json.dumps({"grew_mb": peak() - before}))
"""


def growth(folder: Path) -> float:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'layers' / 'shared'}{os.pathsep}{ROOT}"}
    done = subprocess.run(
        [sys.executable, "-c", _GROWTH, str(folder)], capture_output=True, text=True, env=env
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    return float(json.loads(done.stdout.strip().splitlines()[-1])["grew_mb"])


def run(args: argparse.Namespace) -> dict[str, Any]:
    from winnow_local.adapters.onnx_embedder import LocalOnnxEmbedder, prepared_dir, prepared_query_model

    prepared = prepared_dir()
    if prepared_query_model(prepared) is None:
        raise SystemExit(
            "no prepared query model: run `python -m winnow_local.adapters.onnx_embedder --prepare`"
        )
    unprepared = Path(tempfile.mkdtemp(prefix="winnow-no-query-model-"))
    path = args.eval_dir / "queries.jsonl"
    if not path.is_file():
        path = BUNDLED_SCIFACT / "queries.jsonl"
    texts = [json.loads(line)["text"] for line in path.read_text().splitlines() if line.strip()]
    texts = texts[: args.questions]
    sessions = {"prepared": LocalOnnxEmbedder(query_model_dir=prepared)}
    sessions["folded at load"] = LocalOnnxEmbedder(query_model_dir=unprepared)
    vectors = {name: embedder.embed(texts, "query") for name, embedder in sessions.items()}
    difference = max(
        abs(a - b)
        for u, v in zip(vectors["prepared"], vectors["folded at load"], strict=True)
        for a, b in zip(u, v, strict=True)
    )
    rounds: dict[str, list[float]] = {name: [] for name in sessions}
    for number in range(args.rounds):
        names = list(sessions) if number % 2 == 0 else list(reversed(sessions))
        for name in names:
            times = []
            for text in texts:
                started = time.perf_counter()
                sessions[name].embed([text], "query")
                times.append((time.perf_counter() - started) * 1000)
            rounds[name].append(statistics.median(times))
    return {
        "machine": machine(),
        "questions": len(texts),
        "largest_component_difference": difference,
        "sessions": {
            name: {
                "grew_mb": round(growth(prepared if name == "prepared" else unprepared), 1),
                "query_ms": round(statistics.median(rounds[name]), 2),
                "rounds_ms": [round(r, 2) for r in rounds[name]],
            }
            for name in sessions
        },
    }


def render(result: dict[str, Any]) -> str:
    rows = [
        [
            name,
            f"{side['grew_mb']:.0f}",
            f"{side['query_ms']:.2f}",
            ", ".join(f"{r:.1f}" for r in side["rounds_ms"]),
        ]
        for name, side in result["sessions"].items()
    ]
    table_text = table(["query session", "RSS growth MB", "median ms/question", "rounds"], rows)
    return f"{table_text}\nlargest vector component difference: {result['largest_component_difference']:.2e}"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.query_session", description=__doc__)
    parser.add_argument("--rounds", type=positive_int, default=7, help="alternating rounds")
    parser.add_argument("--questions", type=positive_int, default=40, help="questions per round")
    parser.add_argument("--eval-dir", type=Path, default=DEFAULT_SCIFACT, help="SciFact folder (questions)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    result = run(args)
    print(json.dumps(result, indent=2) if args.json else render(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
