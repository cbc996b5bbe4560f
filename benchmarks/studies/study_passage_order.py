"""Refitting the relevance model with the passage questions in its folds (issue 24 item 6).

``python -m benchmarks.studies.study_passage_order collect OUT.pickle [--eval-dir DIR]`` runs both
corpora through the real ingest handler (embedded default, local model) and stores every question's
hybrid candidates with their evidence: SciFact claims, known-item queries and off-topic questions on
SciFact, and the passage questions and off-topic questions on the passage corpus
(``benchmarks.passages``). ``python -m benchmarks.studies.study_passage_order fit OUT.pickle`` then
compares candidate designs of the order and answer models by 5-fold cross-validation over *every* query
set at once: each fold's models are fitted on the training folds of all sets, and measured on the
held-out folds (passage top 1 / top 3 and refusals at that fold's threshold, SciFact nDCG@10 and
answerable refusals, known-item nDCG@10, off-topic refusals). Offline: the candidates are ordered by
the model as the handler orders them (``SearchService._keep``), with no second search.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import Progress, quiet_known_warnings, stdout_reserved_for_result


def _candidates(stack: Any, queries: dict[str, str], mode: str = "hybrid") -> dict[str, list[Any]]:
    from functions.search.app import service
    from winnow.search.schemas import SearchRequest

    svc = service()
    return {
        qid: svc.candidates(stack.tenant, SearchRequest(query=text, mode=mode))  # type: ignore[arg-type]
        for qid, text in queries.items()
    }


def collect(out: Path, eval_dir: Path | None, progress: Progress) -> None:
    from benchmarks.data import OFFTOPIC_FILE, OFFTOPIC_HELDOUT_FILE, load_eval_set, read_lines
    from benchmarks.embedcache import DEFAULT_CACHE
    from benchmarks.known_item import DEFAULT_PER_STYLE, known_item_queries
    from benchmarks.passages import QUESTIONS, _corpus_and_questions, answers, document_of
    from benchmarks.stack import EmbeddedStack, write_documents

    data: dict[str, Any] = {}
    files, kinds, by_upload, questions = _corpus_and_questions(progress, None, QUESTIONS)
    offtopic = read_lines(OFFTOPIC_FILE)
    with (
        tempfile.TemporaryDirectory(prefix="winnow-study-") as workdir,
        EmbeddedStack(Path(workdir) / "home", env={}, embed_cache=DEFAULT_CACHE) as stack,
    ):
        progress(f"passages: ingesting {len(files)} documents")
        stack.ingest(files, per_event=10)
        cands = _candidates(stack, {q.id: q.text for q in questions})
        data["passages"] = {
            q.id: [(document_of(h.key, by_upload), answers(h.text, q), e, h.text) for h, e in cands[q.id]]
            for q in questions
        }
        data["passage_docs"] = {q.id: q.document for q in questions}
        data["passage_kinds"] = {q.id: kinds[q.document] for q in questions}
        data["passage_offtopic"] = list(_candidates(stack, dict(enumerate(offtopic))).values())  # type: ignore[arg-type]
    eval_set = load_eval_set(eval_dir=eval_dir) if eval_dir else load_eval_set()
    queries = eval_set.judged_queries
    known, known_qrels = known_item_queries(eval_set.documents, DEFAULT_PER_STYLE)
    with tempfile.TemporaryDirectory(prefix="winnow-study-") as workdir:
        paths = write_documents(Path(workdir) / "documents", eval_set.documents)
        with EmbeddedStack(Path(workdir) / "home", env={}, embed_cache=DEFAULT_CACHE) as stack:
            key_to_id = {
                stack.key_for(p.name): doc_id for doc_id, p in zip(eval_set.documents, paths, strict=True)
            }
            progress(f"scifact: ingesting {len(paths)} documents")
            stack.ingest([(p.name, p.read_bytes()) for p in paths], per_event=50)

            def labelled(qs: dict[str, str], qrels: dict[str, dict[str, int]]) -> dict[str, list[Any]]:
                found = _candidates(stack, qs)
                return {
                    qid: [
                        (
                            key_to_id.get(h.key, h.key),
                            qrels.get(qid, {}).get(key_to_id.get(h.key, h.key), 0) > 0,
                            e,
                            "",
                        )
                        for h, e in hits
                    ]
                    for qid, hits in found.items()
                }

            data["claims"] = labelled(queries, {q: eval_set.qrels[q] for q in queries})
            data["known"] = labelled(known, known_qrels)
            data["claims_qrels"] = {q: eval_set.qrels[q] for q in queries}
            data["known_qrels"] = known_qrels
            off = read_lines(OFFTOPIC_FILE)
            data["offtopic"] = [c for c in labelled(dict(enumerate(off)), {}).values()]  # type: ignore[arg-type]
            held = read_lines(OFFTOPIC_HELDOUT_FILE)
            data["offtopic_heldout"] = [c for c in labelled(dict(enumerate(held)), {}).values()]  # type: ignore[arg-type]
    out.write_bytes(pickle.dumps(data))
    progress(f"wrote {out}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect")
    c.add_argument("out", type=Path)
    c.add_argument("--eval-dir", type=Path)
    f = sub.add_parser("fit")
    f.add_argument("data", type=Path)
    args = parser.parse_args(argv)
    quiet_known_warnings()
    progress = Progress(False)
    if args.command == "collect":
        with stdout_reserved_for_result():
            collect(args.out, args.eval_dir, progress)
        return 0
    from benchmarks.studies.passage_order_fit import compare

    print(json.dumps(compare(pickle.loads(args.data.read_bytes())), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
