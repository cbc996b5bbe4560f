"""``winnow eval``: a team's own labelled questions through the requests its web app sends, against the
embedded default or an API (``--api-url``): the figures, each miss, and a threshold for that deployment."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from winnow_local.api_client import add_api_arguments
from winnow_local.cli.common import (
    TENANT_HELP,
    Progress,
    add_identity_arguments,
    check_tenant,
    identity,
    unit_float,
)
from winnow_local.cli.remote import RemoteRuntime, runtime_for
from winnow_local.errors import CliError
from winnow_local.evaluation import corpus, report, scoring, threshold
from winnow_local.evaluation.questions import QuestionsError, QuestionSet, load
from winnow_local.evaluation.runner import Asker, ask_all
from winnow_local.runtime import DEFAULT_TENANT

DEFAULT_LOCAL_CONCURRENCY = 1  # the embedded default's model takes this machine's cores already
DEFAULT_API_CONCURRENCY = 4
MAX_CONCURRENCY = 32
K = 10  # the metrics' cut-off, and the passages asked for


def add_eval_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "eval",
        help="measure search quality on your own labelled questions and choose a relevance threshold",
        description="Ask labelled questions as a web app does and report nDCG@10, hit@1, hit@3, MRR@10, "
        "the answering passage in the top 3, refusals, latency and each miss; recommend the threshold that "
        "refuses the target share of off-topic questions. QUESTIONS is a BEIR folder (queries.jsonl, "
        "qrels.tsv, optionally corpus.jsonl, ingested first) or a JSONL file of "
        '{"question", "document", "answer"?} and {"question", "offtopic": true} lines. '
        "See docs/eval.md.",
    )
    parser.add_argument("questions", metavar="QUESTIONS", help="a BEIR folder or a .jsonl file")
    parser.add_argument("--tenant", default=DEFAULT_TENANT, help=TENANT_HELP)
    add_identity_arguments(parser)
    add_api_arguments(parser, what="ask")
    parser.add_argument("--offtopic", metavar="FILE", help="more off-topic questions, one a line")
    parser.add_argument(
        "--target",
        type=unit_float,
        default=threshold.DEFAULT_TARGET,
        help="the share of off-topic questions the recommended threshold refuses (default 0.95)",
    )
    parser.add_argument(
        "--concurrency",
        type=_concurrency,
        default=None,
        help=f"requests at once (default {DEFAULT_API_CONCURRENCY} with --api-url, "
        f"{DEFAULT_LOCAL_CONCURRENCY} here)",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object instead of the table")
    parser.add_argument("--report", metavar="FILE.html", help="also write an HTML report to this file")
    parser.set_defaults(func=cmd_eval)


def _concurrency(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 1 <= value <= MAX_CONCURRENCY:
        raise argparse.ArgumentTypeError(f"must be between 1 and {MAX_CONCURRENCY}")
    return value


def _say(message: str) -> None:
    print(f"winnow eval: {message}", file=sys.stderr, flush=True)


def cmd_eval(args: argparse.Namespace) -> int:
    tenant = check_tenant(args.tenant)
    try:
        found = load(Path(args.questions), Path(args.offtopic) if args.offtopic else None)
    except QuestionsError as exc:
        raise CliError(str(exc)) from exc
    runtime = runtime_for(args, *identity(args))
    remote = isinstance(runtime, RemoteRuntime)
    ids = _ingest_corpus(found, runtime, tenant, remote)
    asker = Asker(runtime, tenant, *identity(args), top_k=K)
    deployed, floor = asker.deployment_threshold(found.questions[0])
    if deployed is None:
        raise CliError("the API's answer does not say its relevance threshold (an older Winnow?)")
    concurrency = args.concurrency or (DEFAULT_API_CONCURRENCY if remote else DEFAULT_LOCAL_CONCURRENCY)
    outcomes, interrupted = ask_all(asker, found.questions, concurrency, Progress(len(found.questions)))
    result, answerable, offtopic = summarise(
        found, outcomes, deployed, tenant, ids, target=args.target, interrupted=interrupted, floor=floor
    )
    result["target"] = args.api_url or "the embedded default"
    if args.report:
        _write(Path(args.report), report.html_report(result, answerable, offtopic))
    if args.json:
        print(json.dumps(result, ensure_ascii=False))
    else:
        print(report.text_report(result))
    return 130 if interrupted else 0


def _ingest_corpus(found: QuestionSet, runtime: Any, tenant: str, remote: bool) -> dict[str, str]:
    if found.corpus is None:
        return {}
    try:
        if remote:
            return corpus.ingest_remote(found.corpus, runtime, tenant, _say)
        return corpus.ingest_local(found.corpus, tenant, _say)
    except QuestionsError as exc:
        raise CliError(str(exc)) from exc


def summarise(
    found: QuestionSet,
    outcomes: list[scoring.Outcome],
    deployed: float,
    tenant: str,
    ids: dict[str, str],
    *,
    target: float,
    interrupted: bool = False,
    floor: float | None = None,
) -> tuple[dict[str, Any], list[float], list[float]]:
    """The result object ``--json`` prints, and the best scores of the answerable and off-topic questions;
    each threshold's figures with the deployment's ``floor`` for the results after the best."""
    done = [o for o in outcomes if o.error is None]
    answerable = [o.top_score for o in done if o.question.answerable]
    offtopic = [o.top_score for o in done if o.question.offtopic]
    choice = threshold.choose(answerable, offtopic, target)
    latencies = [o.latency_ms for o in outcomes]
    result: dict[str, Any] = {
        "tenant": tenant,
        "questions": {
            "asked": len(found.questions),
            "done": len(outcomes),
            "answerable": sum(q.answerable for q in found.questions),
            "offtopic": sum(q.offtopic for q in found.questions),
            "errors": sum(o.error is not None for o in outcomes),
        },
        "interrupted": interrupted,
        "threshold": deployed,
        "threshold_source": "the deployment's current threshold",
        "floor": floor,
        "metrics": scoring.figures(outcomes, deployed, tenant, ids, K, floor),
        "recommended_threshold": choice.threshold if choice else None,
        "threshold_choice": choice.to_dict() if choice else None,
        "metrics_at_recommended": (
            scoring.figures(outcomes, choice.threshold, tenant, ids, K, floor) if choice else None
        ),
        "latency_ms": {"p50": scoring.percentile(latencies, 50), "p95": scoring.percentile(latencies, 95)},
        "curve": threshold.curve(answerable, offtopic),
        "misses": scoring.misses(outcomes, deployed, tenant, ids, floor),
    }
    return result, answerable, offtopic


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot write {path}: {exc.strerror}") from exc
    _say(f"report written to {path}")
