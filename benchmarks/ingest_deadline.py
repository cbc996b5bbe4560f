"""A batch of slow documents through the real ingest handler, with and without the function's deadline.

``python -m benchmarks.ingest_deadline [--json]``

The batch, scaled down so the run takes seconds: two good documents and four slow ones (120 KB DOCX files
of 200,000 paragraphs, about 20 s of parsing each, so each is stopped at a 2.5 s parse budget),
for a function of 10 s with a 1 s reserve. The SQS batch goes through ``functions.ingest.app.handler``
(folder bucket, SQLite ledger, Qdrant Edge, the real Voyage adapter against the loopback fake), twice:

- **before**: a context whose remaining time never runs down, as the handler behaved before it read it:
  the batch runs to its end; past 10 s Lambda would have killed it and SQS redelivered every message;
- **after**: a context that runs down from 10 s with the wall clock: what was finished, what was handed
  back, and when the handler answered.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import table
from winnow.ingest.events import s3_event
from winnow.settings import IngestSettings
from winnow_local.context import LocalLambdaContext

TIMEOUT_S = 10.0
RESERVE_S = 1.0
PARSE_BUDGET_S = 2.5
SLOW_PARAGRAPHS = 200_000  # a 120 KB DOCX that takes about 20 s to parse here
SLOW_DOCUMENTS = 4


class WallContext(LocalLambdaContext):
    """A Lambda context whose remaining time runs down from ``timeout`` seconds with the wall clock."""

    def __init__(self, timeout: float) -> None:
        super().__init__()
        self.ends_at = time.monotonic() + timeout

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.ends_at - time.monotonic()) * 1000))


def _slow_document() -> bytes:
    from tests.support.documents import make_docx_paragraph_bomb

    return make_docx_paragraph_bomb(SLOW_PARAGRAPHS)


def _run(home: Path, context_for: Any) -> dict[str, Any]:
    from tests.support.stack import EmbeddedStack
    from winnow_fakes.fake_voyage import FakeVoyageServer

    settings = IngestSettings(
        parse_timeout_seconds=PARSE_BUDGET_S, time_reserve_seconds=RESERVE_S, batch_concurrency=1
    )
    with FakeVoyageServer() as fake:
        stack = EmbeddedStack(home, fake, ingest=settings)
        try:
            good = b"Travel expenses are reimbursed within fourteen days when submitted with receipts."
            keys = [
                "acme/good-1.txt",
                *(f"acme/slow-{n}.docx" for n in range(SLOW_DOCUMENTS)),
                "acme/good-2.txt",
            ]
            for key in keys:
                stack.put_object(key, _slow_document() if "slow" in key else good)
            batch = stack.sqs_batch(*(s3_event([stack.created_record(key)]) for key in keys))
            stack.invoke_ingest(stack.sqs_batch(s3_event([stack.created_record(keys[0])])))  # warm-up
            started = time.monotonic()
            response = stack.invoke_ingest_with(batch, context_for())
            elapsed = time.monotonic() - started
            statuses = {}
            for key in keys:
                record = stack.container.ledger.get("acme", key)
                status = f"{record.status.value} {record.error or ''}" if record else "untouched"
                statuses[key] = status.strip()
        finally:
            stack.close()
    handed = len(response["batchItemFailures"])
    return {
        "messages": len(keys),
        "seconds": round(elapsed, 2),
        "timed_out": elapsed > TIMEOUT_S,
        "handed_back": len(keys) if elapsed > TIMEOUT_S else handed,
        "settled": 0 if elapsed > TIMEOUT_S else len(keys) - handed,
        "statuses": statuses,
    }


def run() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        before = _run(Path(tmp) / "before", lambda: LocalLambdaContext())
        after = _run(Path(tmp) / "after", lambda: WallContext(TIMEOUT_S))
    return {
        "function_timeout_s": TIMEOUT_S,
        "reserve_s": RESERVE_S,
        "parse_budget_s": PARSE_BUDGET_S,
        "before": before,
        "after": after,
    }


def report(result: dict[str, Any]) -> str:
    rows = [
        [
            name,
            str(r["messages"]),
            f"{r['seconds']:.2f}",
            "yes" if r["timed_out"] else "no",
            str(r["settled"]),
            str(r["handed_back"]),
        ]
        for name, r in (("before (time not read)", result["before"]), ("after", result["after"]))
    ]
    head = (
        f"batch of {SLOW_DOCUMENTS} slow documents (each stopped at its {PARSE_BUDGET_S} s parse budget)"
        f" and 2 good ones; function timeout {TIMEOUT_S} s, reserve {RESERVE_S} s"
    )
    return "\n".join(
        [head, table(["run", "messages", "handler s", "timed out", "settled", "back to SQS"], rows)]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = run()
    print(json.dumps(result, indent=2) if args.json else report(result))


if __name__ == "__main__":
    main()
