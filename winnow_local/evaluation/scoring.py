"""What each question got, and the figures ``winnow eval`` reports at a threshold: the ranking metrics of
what a web app is served (nothing when the best passage is under the threshold, else the passages that
clear the deployment's floor), the refusals, and the misses."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from winnow.rules import path_in_tenant
from winnow_local.evaluation import metrics
from winnow_local.evaluation.questions import Question


@dataclass(frozen=True)
class Passage:
    key: str
    score: float
    text: str


@dataclass
class Outcome:
    """One question's answer from the API, asked with ``relevance_threshold`` 0 so that the scores under
    the deployment's threshold are seen too. ``error`` when the API never answered it."""

    question: Question
    passages: list[Passage] = field(default_factory=list)
    latency_ms: float = 0.0
    error: str | None = None

    @property
    def top_score(self) -> float:
        return max((p.score for p in self.passages), default=0.0)

    def served(self, threshold: float, floor: float | None = None) -> list[Passage]:
        """What a default request gets: nothing unless the best passage clears ``threshold`` (the gate),
        then the passages that clear ``floor`` (never above the threshold; None: the threshold)."""
        if self.top_score < threshold:
            return []
        least = threshold if floor is None else min(floor, threshold)
        return [p for p in self.passages if p.score >= least]


def names_of(key: str, tenant: str, corpus_ids: Mapping[str, str]) -> set[str]:
    """Every name a judgement may use for the document at ``key``: its BEIR corpus id when eval ingested
    it, the key, its path inside the tenant, the file name and the file name without extension."""
    if key in corpus_ids:
        return {corpus_ids[key]}
    path = path_in_tenant(tenant, key)
    name = PurePosixPath(path).name
    return {key, path, name, PurePosixPath(name).stem}


def ranking(
    passages: Sequence[Passage], question: Question, tenant: str, ids: Mapping[str, str]
) -> list[str]:
    """The documents of the passages, best first, each named as the question's judgements name it."""
    out = []
    for passage in passages:
        names = names_of(passage.key, tenant, ids)
        judged = sorted(names & question.judgements.keys())
        out.append(judged[0] if judged else path_in_tenant(tenant, passage.key))
    return out


def answers(passage: Passage, question: Question, tenant: str, ids: Mapping[str, str]) -> bool:
    """The passage is from a relevant document and, where the question gives ``answer``, matches it."""
    relevant = any(question.judgements.get(n, 0) > 0 for n in names_of(passage.key, tenant, ids))
    return relevant and (question.answer is None or bool(question.answer.search(passage.text)))


def share(hits: int, total: int) -> float | None:
    return round(hits / total, 4) if total else None


def figures(
    outcomes: Sequence[Outcome],
    threshold: float,
    tenant: str,
    ids: Mapping[str, str],
    k: int = 10,
    floor: float | None = None,
) -> dict[str, float | None]:
    """The reported metrics, as shares in [0, 1] (None where no question measures one)."""
    done = [o for o in outcomes if o.error is None]
    answerable = [o for o in done if o.question.answerable]
    offtopic = [o for o in done if o.question.offtopic]
    run = {o.question.id: ranking(o.served(threshold, floor), o.question, tenant, ids) for o in answerable}
    qrels = {o.question.id: o.question.judgements for o in answerable}
    scored = metrics.per_query(run, qrels, k)
    with_answer = [o for o in answerable if o.question.answer is not None]
    answer_hits = sum(
        any(answers(p, o.question, tenant, ids) for p in o.served(threshold, floor)[:3]) for o in with_answer
    )

    def mean_of(name: str) -> float | None:
        return round(metrics.mean([s[name] for s in scored.values()]), 4) if scored else None

    return {
        "ndcg@10": mean_of(f"ndcg@{k}"),
        "hit@1": mean_of("hit@1"),
        "hit@3": mean_of("hit@3"),
        "mrr@10": mean_of(f"mrr@{k}"),
        "answer@3": share(answer_hits, len(with_answer)),
        "refused": share(sum(not o.served(threshold, floor) for o in answerable), len(answerable)),
        "offtopic_refused": share(sum(not o.served(threshold, floor) for o in offtopic), len(offtopic)),
    }


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (``q`` in (0, 100])."""
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)], 1)


def misses(
    outcomes: Sequence[Outcome],
    threshold: float,
    tenant: str,
    ids: Mapping[str, str],
    floor: float | None = None,
) -> list[dict[str, object]]:
    """Each question that went wrong at ``threshold``, and what came instead."""
    out: list[dict[str, object]] = []
    for outcome in outcomes:
        question = outcome.question
        served = outcome.served(threshold, floor)
        got = [{"document": path_in_tenant(tenant, p.key), "score": round(p.score, 4)} for p in served[:3]]
        if outcome.error is not None:
            why = f"error: {outcome.error}"
        elif question.offtopic:
            why = "off-topic, not refused" if served else ""
        elif not served:
            why = f"refused (best score {outcome.top_score:.3f})"
        elif not any(question.judgements.get(n, 0) > 0 for n in _served_names(served[:1], tenant, ids)):
            why = "another document first"
            if question.answer is not None and any(answers(p, question, tenant, ids) for p in served[:3]):
                why = "another document first (the answer is in the top 3)"
        elif question.answer is not None and not any(answers(p, question, tenant, ids) for p in served[:3]):
            why = "right document, but no top-3 passage matches the answer"
        else:
            why = ""
        if why:
            wanted = sorted(d for d, g in question.judgements.items() if g > 0)
            out.append(
                {"id": question.id, "question": question.text, "why": why, "wanted": wanted, "got": got}
            )
    return out


def _served_names(passages: Sequence[Passage], tenant: str, ids: Mapping[str, str]) -> set[str]:
    return set().union(*(names_of(p.key, tenant, ids) for p in passages)) if passages else set()
