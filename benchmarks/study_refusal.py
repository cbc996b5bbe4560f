"""Which features of the hybrid relevance model let the threshold refuse off-topic questions
(docs/benchmarks.md, issue 19). ``python -m benchmarks.study_refusal`` after ``python -m benchmarks.study``
(it reuses that study's index and candidates). For each feature set: 5-fold CV nDCG@10 and the share of
held-out answerable queries refused at the threshold the rule picks on the training folds; then, with
the model and threshold fitted on every SciFact query, the share of the off-topic questions refused.
Caveat: picking a feature set by the last column tunes on the off-topic set that is also reported."""

from __future__ import annotations

import json

from benchmarks.cv import kfold, mean, train_ids
from benchmarks.data import load_eval_set
from benchmarks.embedcache import DEFAULT_CACHE
from benchmarks.quality import OFFTOPIC_FILE, choose_l2, choose_threshold, fit_mode, offline_ndcg, read_lines
from benchmarks.stack import EmbeddedStack
from benchmarks.study import DEFAULT_HOME, at_depth, collect

FEATURE_SETS = {
    "cosine, gap, log BM25, BM25 share": ("cosine", "cosine_gap", "bm25_log", "bm25_rel"),
    "cosine, log BM25": ("cosine", "bm25_log"),
    "cosine, gap, log BM25": ("cosine", "cosine_gap", "bm25_log"),
    "cosine, log BM25, BM25 share": ("cosine", "bm25_log", "bm25_rel"),
}


def main() -> int:
    from functions.search.app import service
    from winnow.search.relevance import Evidence
    from winnow.search.schemas import SearchRequest

    ev = load_eval_set()
    queries = ev.judged_queries
    qrels = {k: ev.qrels[k] for k in queries}

    def convert(rows: list[dict]) -> list:  # type: ignore[type-arg]
        return [(r["doc"], Evidence(r["cos"], r["bm25"], r["dr"], r["sr"])) for r in rows]

    cands = {k: convert(at_depth(v, 30)) for k, v in collect(ev, DEFAULT_HOME, 100).items()}
    off_path = DEFAULT_HOME / "offtopic-candidates.json"
    if not off_path.is_file():
        with EmbeddedStack(DEFAULT_HOME / "stack", embed_cache=DEFAULT_CACHE) as stack:
            svc = service()
            found = {}
            for text in read_lines(OFFTOPIC_FILE):
                request = SearchRequest(query=text, top_k=10, mode="hybrid")
                found[text] = [
                    {"doc": h.key, "cos": e.cosine, "bm25": e.bm25, "dr": e.dense_rank, "sr": e.sparse_rank}
                    for h, e in svc.candidates(stack.tenant, request)
                ]
        off_path.write_text(json.dumps(found))
    offtopic = [convert(v) for v in json.loads(off_path.read_text()).values()]
    folds = kfold(list(queries))

    def top(model: object, c: list) -> float:  # type: ignore[type-arg]
        return max(model.probabilities([e for _, e in c]), default=0.0)  # type: ignore[attr-defined]

    for name, features in FEATURE_SETS.items():
        ndcg, refused = [], []
        for i, fold in enumerate(folds):
            train = train_ids(folds, i)
            model = fit_mode(cands, qrels, train, features, choose_l2(cands, qrels, train, features))
            t = choose_threshold([top(model, cands[q]) for q in train])
            ndcg += [offline_ndcg(model, cands[q], qrels[q]) for q in fold]
            refused += [top(model, cands[q]) < t for q in fold]
        everything = list(queries)
        model = fit_mode(cands, qrels, everything, features, choose_l2(cands, qrels, everything, features))
        t = choose_threshold([top(model, cands[q]) for q in everything])
        off = mean([top(model, c) < t for c in offtopic])
        print(
            f"{name:36} CV nDCG@10 {mean(ndcg):.4f}  answerable refused (CV) {mean(refused):.1%}  "
            f"threshold {t:.2f}  off-topic refused {off:.1%}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
