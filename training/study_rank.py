"""Study (issue 46 items 3 and 6): gather every query's default-mode candidates once, with their text
and payload, so order-model designs can be cross-validated offline in seconds.

``python -m training.study_rank gather --out F [--eval-dir DIR] [--passage-candidates N]``
"""

from __future__ import annotations

import argparse
import pickle
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import Progress, quiet_known_warnings
from training.data import OFFTOPIC_FILE, OFFTOPIC_HELDOUT_FILE, load_eval_set, read_lines
from training.embedcache import DEFAULT_CACHE, caching
from training.evidence import candidates as gather
from training.known_item import DEFAULT_PER_STYLE, known_item_queries
from training.relevance_fit import TOP_K


def _lite(h: Any) -> dict[str, Any]:
    return {
        "key": h.key,
        "title": h.title,
        "section": h.section,
        "text": h.text,
        "chunk_index": h.chunk_index,
        "kind": h.kind,
    }


def _ask(svc: Any, tenant: str, texts: dict[str, str], top_k: int, candidates: int | None) -> dict[str, Any]:
    from winnow.api.schemas.search import SearchRequest

    out = {}
    for qid, text in texts.items():
        request = SearchRequest(query=text, top_k=top_k, candidates=candidates)
        out[qid] = [(_lite(h), e) for h, e in gather(svc, tenant, request)]
    return out


def gather_all(
    eval_dir: Path | None, passage_candidates: int | None, note: Progress, skip_scifact: bool = False
) -> dict[str, Any]:
    from benchmarks.stack import EmbeddedStack, write_documents
    from functions.search.app import service
    from training.passages import _corpus, answers, load_questions

    offtopic = {f"offtopic-{i}": t for i, t in enumerate(read_lines(OFFTOPIC_FILE))}
    heldout = {f"heldout-{i}": t for i, t in enumerate(read_lines(OFFTOPIC_HELDOUT_FILE))}
    data: dict[str, Any] = {"offtopic": offtopic, "offtopic_heldout": heldout}
    with tempfile.TemporaryDirectory(prefix="winnow-study-") as tmp:
        files, kinds, by_upload = _corpus(note)
        questions = [q for q in load_questions() if q.document in kinds]
        with EmbeddedStack(Path(tmp) / "p", wrap_embedder=caching(DEFAULT_CACHE)) as stack:
            note(f"passage corpus: {len(files)} documents")
            stack.ingest(files, per_event=10)
            svc = service()
            texts = {q.id: q.text for q in questions}
            cands = _ask(svc, stack.tenant, texts, 5, passage_candidates)
            data["passages"] = {
                "texts": texts,
                "documents": {q.id: q.document for q in questions},
                "kinds": {q.id: kinds[q.document] for q in questions},
                "by_upload": by_upload,
                "candidates": {
                    qid: [(f"{h['key']}#{i}", h, e) for i, (h, e) in enumerate(cs)] for qid, cs in cands.items()
                },
                "qrels": {
                    q.id: {f"{h['key']}#{i}": 1 for i, (h, _) in enumerate(cands[q.id]) if answers(h["text"], q)}
                    for q in questions
                },
                "offtopic": _ask(svc, stack.tenant, offtopic, 5, passage_candidates),
                "offtopic_heldout": _ask(svc, stack.tenant, heldout, 5, passage_candidates),
            }
        note("passage corpus gathered")
        if skip_scifact:
            return data
        eval_set = load_eval_set(None, None, None, eval_dir=eval_dir)
        folder = Path(tmp) / "docs"
        paths = write_documents(folder, eval_set.documents)
        with EmbeddedStack(Path(tmp) / "s", wrap_embedder=caching(DEFAULT_CACHE)) as stack:
            key_to_id = {}
            files = []
            for doc_id, path in zip(eval_set.documents, paths, strict=True):
                files.append((path.name, path.read_bytes()))
                key_to_id[stack.key_for(path.name)] = doc_id
            note(f"SciFact: ingesting {len(files)}")
            stack.ingest(files, per_event=50)
            svc = service()
            queries = eval_set.judged_queries
            known, known_qrels = known_item_queries(eval_set.documents, DEFAULT_PER_STYLE)

            def ided(c: dict[str, Any]) -> dict[str, Any]:
                return {q: [(key_to_id.get(h["key"], h["key"]), h, e) for h, e in cs] for q, cs in c.items()}

            data["scifact"] = {
                "texts": queries,
                "qrels": {q: eval_set.qrels[q] for q in queries},
                "candidates": ided(_ask(svc, stack.tenant, queries, TOP_K, None)),
                "known_texts": known,
                "known_qrels": known_qrels,
                "known": ided(_ask(svc, stack.tenant, known, TOP_K, None)),
                "offtopic": ided(_ask(svc, stack.tenant, offtopic, TOP_K, None)),
                "offtopic_heldout": ided(_ask(svc, stack.tenant, heldout, TOP_K, None)),
            }
        note("SciFact gathered")
    return data


LOCKBOX_SEED = 46
LOCKBOX_SHARE = 0.2


def lockbox_documents(documents: Sequence[str]) -> set[str]:
    """A fixed fifth of the passage documents, never read while choosing (issue 46 item 6)."""
    import random

    ordered = sorted(set(documents))
    return set(random.Random(LOCKBOX_SEED).sample(ordered, round(LOCKBOX_SHARE * len(ordered))))


def with_features(data: dict[str, Any], extra: set[str]) -> None:
    """Fill each candidate's lexical evidence (the product's ``winnow.search.lexical``) in place."""
    import dataclasses

    from winnow.search.lexical import keyword_readings
    from winnow.text.sparse import Bm25Encoder

    encoder = Bm25Encoder()

    def fill(texts: dict[str, str], cands: dict[str, list[Any]]) -> None:
        for qid, cs in cands.items():
            if not cs:
                continue
            query = encoder.encode_query(texts[qid])
            hits = [c[-2] for c in cs]
            readings = keyword_readings(encoder, query, [h["text"] for h in hits], [h["key"] for h in hits])
            heading = [
                encoder.share(query, encoder.covered(query, f"{h['title']}\n{h['section']}")) for h in hits
            ]
            cands[qid] = [
                (*c[:-1], dataclasses.replace(c[-1], keyword_segment=r.best_segment, document_rank=r.document_rank, heading=hd))
                for c, r, hd in zip(cs, readings, heading, strict=True)
            ]

    p, sf = data["passages"], data["scifact"]
    fill(p["texts"], p["candidates"])
    fill(data["offtopic"], p["offtopic"])
    fill(data["offtopic_heldout"], p["offtopic_heldout"])
    fill(sf["texts"], sf["candidates"])
    fill(sf["known_texts"], sf["known"])
    fill(data["offtopic"], sf["offtopic"])
    fill(data["offtopic_heldout"], sf["offtopic_heldout"])


def _pairs(cands: dict[str, list[Any]]) -> dict[str, list[tuple[str, Any]]]:
    return {q: [(c[0], c[-1]) for c in cs] for q, cs in cands.items()}


def cross_validate(data: dict[str, Any], order: Sequence[str], lockbox: bool = False) -> dict[str, Any]:
    """The fold procedure of ``training.quality --passages``, offline, for the default mode only: each
    fold's models fitted on the other folds (judged claims, known items, study passage questions),
    its threshold by the shipped rule; held-out passage outcomes, SciFact nDCG@10, off-topic refusals.
    ``lockbox``: fit once on every study question, measure the lockbox questions."""
    from training import relevance_fit as rf
    from training.cv import kfold, mean, train_ids
    from training.quality import passage_outcome

    rf.ORDER_FEATURES = tuple(order)
    p, sf = data["passages"], data["scifact"]
    boxed = lockbox_documents(p["documents"].values())
    study = sorted(q for q, d in p["documents"].items() if d not in boxed)
    box = sorted(q for q, d in p["documents"].items() if d in boxed)
    pc, sc = _pairs(p["candidates"]), {"hybrid": _pairs(sf["candidates"])}
    kc, p_off, s_off = _pairs(sf["known"]), _pairs(p["offtopic"]), _pairs(sf["offtopic"])
    p_offh, s_offh = _pairs(p["offtopic_heldout"]), _pairs(sf["offtopic_heldout"])
    qids = sorted(sf["texts"])
    split = kfold(qids, 5)
    known_split = kfold(sorted(sf["known_texts"]), 5)
    passage_split = kfold(study, 5)
    off_split = kfold(sorted(data["offtopic"]), 5)
    outcomes: dict[str, Any] = {}
    ndcg: list[float] = []
    off_refused: list[bool] = []
    offh_refused: list[float] = []
    rounds = [(qids, sorted(sf["known_texts"]), study, sorted(data["offtopic"]), box, [], [])] if lockbox else [
        (train_ids(split, i), train_ids(known_split, i), train_ids(passage_split, i), train_ids(off_split, i),
         passage_split[i], split[i], off_split[i])
        for i in range(5)
    ]
    for train, known_train, p_train, off_train, p_held, s_held, off_held in rounds:
        models = rf.fit_models(
            sc, sf["qrels"], train, "x",
            known=rf.OrderQueries(kc, sf["known_qrels"], known_train),
            passages=rf.OrderQueries(pc, p["qrels"], p_train),
        )
        m = models.for_mode("hybrid")
        tops = rf.best_scores(m, sc["hybrid"], train) + rf.best_scores(m, pc, p_train)
        off_tops = [rf.best_scores(m, s_off, off_train), rf.best_scores(m, p_off, off_train)]
        t = rf.choose_threshold(tops, off_tops)
        for q in p_held:
            outcomes[q] = passage_outcome(m, pc[q], p["qrels"][q], t)
        ndcg += [rf.offline_ndcg(m, sc["hybrid"][q], sf["qrels"][q]) for q in s_held]
        off_refused += [s < t for s in rf.best_scores(m, s_off, off_held) + rf.best_scores(m, p_off, off_held)]
        held_tops = rf.best_scores(m, s_offh, s_offh) + rf.best_scores(m, p_offh, p_offh)
        offh_refused.append(mean([float(s < t) for s in held_tops]))
    held = list(outcomes)
    man = [q for q in held if p["kinds"][q][0] == "man"]
    share = lambda qs, k: round(100 * mean([float(outcomes[q][k]) for q in qs]), 1) if qs else None  # noqa: E731
    return {
        "n": len(held),
        "top1": share(held, 0),
        "top3": share(held, 1),
        "refused": share(held, 3),
        "man_top3": share(man, 1),
        "reach": round(100 * mean([float(bool(p["qrels"][q])) for q in held]), 1),
        "scifact_ndcg": round(mean(ndcg), 4) if ndcg else None,
        "off_refused": round(100 * mean([float(r) for r in off_refused]), 1) if off_refused else None,
        "offh_refused": round(100 * mean(offh_refused), 1),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=["gather"])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--eval-dir", type=Path)
    parser.add_argument("--passage-candidates", type=int)
    parser.add_argument("--skip-scifact", action="store_true")
    args = parser.parse_args(argv)
    quiet_known_warnings()
    data = gather_all(args.eval_dir, args.passage_candidates, Progress(quiet=False), args.skip_scifact)
    args.out.write_bytes(pickle.dumps(data))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
