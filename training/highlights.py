"""Does the highlight hold the answer? (issue 46, item 4: "on a top-3 hit the highlight holds the answer
at least 70 % of the time")

``python -m training.highlights [--json] [--sample N] [--seed S] [--keep K ...]``

The passage benchmark's corpus and questions (``training.passages``), each asked as a client's default
request. Over the questions whose answering passage is in the top 3, the share whose highlight on that
passage *holds* the answering excerpt, for several readers of the same passage:

- ``shipped``: the highlight the search returned (whatever ``winnow.search.reader`` does today);
- ``embedding``: every segment embedded, the best cosines highlighted (the reader before lexical
  pre-selection);
- ``lexical``: the segment with the most query keywords, weighed by their IDF over the segments of
  the search's results (``winnow.search.reader.lexical_scores``), no embedding;
- ``ties``: the keyword reader, except that when segments tie at its best score (none holds a query
  keyword, or several hold equally rare ones), up to ``TIES`` of them are embedded and the best cosine
  decides;
- ``hybrid@K``: the K segments that score best lexically embedded, the best cosines among them.

*Holds*: the highlight covers at least half of the excerpt's characters (``half``), or all of them
(``whole``); the excerpt is found in the passage as ``training.passages.answers`` finds it. Also the
segments each reader embeds per search (over the results the search returns). With ``--sample N``,
a fixed-seed sample of the questions (what it costs under load: a few minutes for all 332).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from benchmarks.common import (
    Progress,
    machine,
    positive_int,
    quiet_known_warnings,
    stdout_reserved_for_result,
)
from training.passages import _QUOTES, QUESTIONS, TOP, _corpus_and_questions, _default_request, ingested

HALF = 0.5
TIES = 3


def _normal_map(text: str) -> tuple[str, list[int]]:
    """``training.passages.normalise`` of ``text``, with each normalised character's offset in ``text``."""
    chars: list[str] = []
    where: list[int] = []
    space = True
    for i, ch in enumerate(text.translate(_QUOTES)):
        if ch == "\u00ad":
            continue
        if ch.isspace():
            if not space:
                chars.append(" ")
                where.append(i)
            space = True
            continue
        chars.append(ch.lower())
        where.append(i)
        space = False
    return "".join(chars), where


def excerpt_span(text: str, excerpt: str) -> tuple[int, int] | None:
    """Where the excerpt lies in ``text`` (offsets into ``text``), compared as ``answers`` compares."""
    normal, where = _normal_map(text)
    wanted = " ".join(excerpt.translate(_QUOTES).replace("\u00ad", "").lower().split())
    at = normal.find(wanted)
    if at < 0 or not wanted:
        return None
    return where[at], where[at + len(wanted) - 1] + 1


def covered(span: tuple[int, int], spans: Sequence[tuple[int, int]]) -> float:
    """The share of ``span``'s characters that ``spans`` (not overlapping each other) cover."""
    start, end = span
    inside = sum(max(0, min(end, e) - max(start, s)) for s, e in spans)
    return inside / max(end - start, 1)


def readers(
    embedder: Any, encoder: Any, query: str, texts: Sequence[str], answering: int, keeps: Sequence[int]
) -> tuple[dict[str, list[tuple[int, int]]], dict[str, int]]:
    """Each reader's highlight of ``texts[answering]`` (as spans) and the segments it embeds for all of
    ``texts`` (a search's results)."""
    from winnow.search.reader import Reading, cosine, lexical_scores
    from winnow.text.segments import segments

    cut = [segments(t) for t in texts]
    flat = [t[s.start : s.end] for t, pieces in zip(texts, cut, strict=True) for s in pieces]
    lex_all = lexical_scores(encoder, encoder.encode_query(query), flat)
    lex: list[list[float]] = []
    at = 0
    for pieces in cut:
        lex.append(lex_all[at : at + len(pieces)])
        at += len(pieces)
    pieces, text = cut[answering], texts[answering]
    spans: dict[str, list[tuple[int, int]]] = {}
    cost: dict[str, int] = {}
    if len(pieces) <= 1:
        whole = [(s.start, s.end) for s in pieces]
        for name in ["embedding", "lexical", "ties", *(f"hybrid@{k}" for k in keeps)]:
            spans[name] = whole
    else:
        q = embedder.embed([query], "query")[0]
        vectors = embedder.embed([text[s.start : s.end] for s in pieces], "document")
        cos = [cosine(q, v) for v in vectors]

        def best_of(chosen: Sequence[int]) -> list[tuple[int, int]]:
            ranked = sorted(((pieces[i], cos[i]) for i in chosen), key=lambda p: (-p[1], p[0].start))
            return [(s.start, s.end) for s in Reading(tuple(ranked)).highlight()]

        order = sorted(range(len(pieces)), key=lambda i: (-lex[answering][i], i))
        spans["embedding"] = best_of(range(len(pieces)))
        spans["lexical"] = [(pieces[order[0]].start, pieces[order[0]].end)]
        tied = _tied(lex[answering], TIES)
        spans["ties"] = best_of(tied) if tied else spans["lexical"]
        for k in keeps:
            spans[f"hybrid@{k}"] = best_of(order[:k])
    sizes = [len(p) for p in cut if len(p) > 1]
    cost["embedding"] = sum(sizes)
    cost["lexical"] = 0
    cost["ties"] = sum(len(_tied(scores, TIES)) for scores, p in zip(lex, cut, strict=True) if len(p) > 1)
    for k in keeps:
        cost[f"hybrid@{k}"] = sum(min(k, n) for n in sizes)
    return spans, cost


def _tied(scores: Sequence[float], cap: int) -> list[int]:
    """The segments tied at the best keyword score, at most ``cap`` (the first), when more than one
    is: the keywords cannot tell them apart; none when one segment leads."""
    if not scores:
        return []
    best = max(scores)
    tied = [i for i, v in enumerate(scores) if v == best]
    return tied[:cap] if len(tied) > 1 else []


def run(
    env: Mapping[str, str], sample: int | None, seed: int, keeps: Sequence[int], progress: Progress
) -> dict[str, Any]:
    from functions.search.app import service

    files, _, _, questions = _corpus_and_questions(progress, None, QUESTIONS)
    if sample is not None and sample < len(questions):
        questions = sorted(random.Random(seed).sample(questions, sample), key=lambda q: q.id)
    names = ["shipped", "embedding", "lexical", "ties", *(f"hybrid@{k}" for k in keeps)]
    half = dict.fromkeys(names, 0)
    whole = dict.fromkeys(names, 0)
    cost = dict.fromkeys(names[1:], 0)
    hits = 0
    missing: list[str] = []
    with ingested(files, env, progress) as stack:
        svc = service()
        progress(f"asking {len(questions)} questions")
        for question in questions:
            results = _default_request(stack, question.text)
            texts = [r["text"] for r in results]
            spotted = [(i, excerpt_span(t, question.excerpt)) for i, t in enumerate(texts[:TOP])]
            found = [(i, span) for i, span in spotted if span is not None]
            if not found:
                continue
            hits += 1
            answering, span = found[0]
            spans, embedded = readers(svc.embedder, svc.sparse, question.text, texts, answering, keeps)
            spans["shipped"] = [(h["start"], h["end"]) for h in results[answering].get("highlight") or []]
            for name in names:
                share = covered(span, spans[name])
                half[name] += share >= HALF
                whole[name] += share >= 1.0
            for name, n in embedded.items():
                cost[name] += n
            if covered(span, spans["shipped"]) < HALF:
                missing.append(question.id)
    n = max(hits, 1)
    return {
        "machine": machine(),
        "env": dict(env),
        "questions": len(questions),
        "sample": {"size": sample, "seed": seed} if sample is not None else None,
        "top3_hits": hits,
        "holds_half": {k: round(v / n, 4) for k, v in half.items()},
        "holds_whole": {k: round(v / n, 4) for k, v in whole.items()},
        "segments_embedded_per_search": {k: round(v / n, 2) for k, v in cost.items()},
        "shipped_misses": missing,
    }


def report(result: Mapping[str, Any]) -> str:
    from benchmarks.common import table

    sample = result["sample"]
    lines = [
        f"{result['questions']} questions"
        + (f" (fixed-seed sample, seed {sample['seed']})" if sample else "")
        + f"; answering passage in the top 3 for {result['top3_hits']}"
    ]
    rows = [
        [
            name,
            f"{result['holds_half'][name]:.1%}",
            f"{result['holds_whole'][name]:.1%}",
            str(result["segments_embedded_per_search"].get(name, "as shipped")),
        ]
        for name in result["holds_half"]
    ]
    lines.append(table(["reader", "holds >= half", "holds whole", "segments embedded / search"], rows))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--sample", type=positive_int, help="a fixed-seed sample of N questions")
    parser.add_argument("--seed", type=int, default=46, help="the sample's seed")
    parser.add_argument(
        "--keep", type=positive_int, action="append", help="hybrid: segments kept per passage"
    )
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    quiet_known_warnings()
    progress = Progress(args.quiet)
    with stdout_reserved_for_result():
        result = run({}, args.sample, args.seed, args.keep or [1, 2, 3, 4], progress)
    print(json.dumps(result, indent=2) if args.json else report(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
