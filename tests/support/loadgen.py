"""A bounded, concurrent load on the Winnow HTTP API, meant to run in its own process.

    python tests/support/loadgen.py --url http://127.0.0.1:3000 --tenant demo --clients 20 --seconds 30

Each client is a thread with one keep-alive connection that loops over a fixed mix of requests
(searches, the document listing, one document's status, health) until the time is up or its request
budget is spent. Every request is checked: HTTP 200, a JSON body, and for a search given with
``--expect "query=key"`` the top result must be that key. The summary (JSON on stdout) has the request
count, errors, wrong answers, throughput and latency percentiles; the exit code is 1 when anything
failed. Standard library only, so it runs with any Python beside a server under test.
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlsplit


@dataclass
class Request:
    route: str
    method: str
    path: str
    body: bytes | None = None
    expect_key: str | None = None


@dataclass
class ClientStats:
    latencies: dict[str, list[float]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    wrong: int = 0
    statuses: dict[int, int] = field(default_factory=dict)


def build_mix(expectations: list[tuple[str, str]], documents: list[str]) -> list[Request]:
    """Searches dominate, as in real use; the rest keeps the ledger routes and health in the mix."""
    mix: list[Request] = []
    for query, key in expectations:
        body = json.dumps({"query": query, "top_k": 3, "relevance_threshold": 0}).encode()
        mix.append(Request("search", "POST", "/search", body, key or None))
    searches = list(mix)
    mix += searches  # twice as many searches as anything else
    mix.append(Request("documents", "GET", "/documents?limit=20"))
    for key in documents[:2]:
        mix.append(Request("status", "GET", "/documents/" + quote(key, safe="")))
    mix.append(Request("health", "GET", "/health"))
    return mix


def check(request: Request, status: int, raw: bytes) -> tuple[str | None, bool]:
    """(error, wrong): an error is a non-200 or an unreadable body; wrong is a search whose top result
    is not the expected document."""
    if status != 200:
        return f"{request.route}: HTTP {status}: {raw[:200]!r}", False
    try:
        payload = json.loads(raw)
    except ValueError:
        return f"{request.route}: body is not JSON", False
    if request.expect_key is not None:
        results = payload.get("results") or []
        top = results[0]["key"] if results else None
        return None, top != request.expect_key
    return None, False


def run_client(
    index: int,
    host: str,
    port: int,
    headers: dict[str, str],
    mix: list[Request],
    stop_at: float,
    max_requests: int,
    stats: ClientStats,
) -> None:
    connection = http.client.HTTPConnection(host, port, timeout=60)
    try:
        for n in range(max_requests):
            if time.monotonic() >= stop_at:
                return
            request = mix[(index + n) % len(mix)]
            started = time.perf_counter()
            try:
                connection.request(request.method, request.path, body=request.body, headers=headers)
                response = connection.getresponse()
                raw = response.read()
                status = response.status
            except (OSError, http.client.HTTPException) as exc:
                stats.errors.append(
                    f"{request.route} (request {n} of client {index}): {type(exc).__name__}: {exc}"
                )
                connection.close()
                connection = http.client.HTTPConnection(host, port, timeout=60)
                continue
            elapsed_ms = (time.perf_counter() - started) * 1000
            stats.statuses[status] = stats.statuses.get(status, 0) + 1
            stats.latencies.setdefault(request.route, []).append(elapsed_ms)
            error, wrong = check(request, status, raw)
            if error:
                stats.errors.append(error)
            stats.wrong += int(wrong)
    finally:
        connection.close()


def percentile(values: list[float], share: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))
    return ordered[rank]


def summarise(stats: list[ClientStats], clients: int, seconds: float) -> dict[str, Any]:
    every: list[float] = [v for s in stats for values in s.latencies.values() for v in values]
    by_route: dict[str, list[float]] = {}
    statuses: dict[str, int] = {}
    for s in stats:
        for route, values in s.latencies.items():
            by_route.setdefault(route, []).extend(values)
        for code, count in s.statuses.items():
            statuses[str(code)] = statuses.get(str(code), 0) + count
    errors = [e for s in stats for e in s.errors]
    return {
        "clients": clients,
        "seconds": round(seconds, 2),
        "requests": len(every),
        "errors": len(errors),
        "error_samples": errors[:5],
        "wrong_answers": sum(s.wrong for s in stats),
        "statuses": statuses,
        "throughput_rps": round(len(every) / seconds, 1) if seconds else 0.0,
        "p50_ms": round(percentile(every, 0.50), 1),
        "p95_ms": round(percentile(every, 0.95), 1),
        "p99_ms": round(percentile(every, 0.99), 1),
        "max_ms": round(max(every, default=0.0), 1),
        "mean_ms": round(statistics.fmean(every), 1) if every else 0.0,
        "by_route": {
            route: {
                "requests": len(values),
                "p50_ms": round(percentile(values, 0.50), 1),
                "p95_ms": round(percentile(values, 0.95), 1),
            }
            for route, values in sorted(by_route.items())
        },
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="base URL of `winnow serve`, e.g. http://127.0.0.1:3000")
    parser.add_argument("--tenant", default="default", help="sent as the x-winnow-tenant header")
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--max-requests", type=int, default=100_000, help="per client, a hard bound")
    parser.add_argument(
        "--expect",
        action="append",
        default=[],
        metavar="QUERY=KEY",
        help="a search and the key its top result must have (repeatable; 'QUERY=' checks nothing)",
    )
    parser.add_argument("--document", action="append", default=[], help="a key to ask the status of")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not 1 <= args.clients <= 200 or not 0 < args.seconds <= 600:
        print("clients must be 1-200 and seconds 0-600", file=sys.stderr)
        return 2
    expectations: list[tuple[str, str]] = []
    for given in args.expect:
        query, _, key = given.partition("=")
        expectations.append((query, key))
    if not expectations:
        expectations = [("what does this service do", "")]
    mix = build_mix(expectations, args.document)
    url = urlsplit(args.url)
    host, port = url.hostname or "127.0.0.1", url.port or 80
    headers = {"content-type": "application/json", "x-winnow-tenant": args.tenant}
    stats = [ClientStats() for _ in range(args.clients)]
    started = time.monotonic()
    stop_at = started + args.seconds
    threads = [
        threading.Thread(
            target=run_client,
            args=(i, host, port, headers, mix, stop_at, args.max_requests, stats[i]),
            daemon=True,
        )
        for i in range(args.clients)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=args.seconds + 120)
    elapsed = time.monotonic() - started
    summary = summarise(stats, args.clients, elapsed)
    summary["unfinished_clients"] = sum(1 for t in threads if t.is_alive())
    print(json.dumps(summary, indent=2))
    failed = summary["errors"] or summary["wrong_answers"] or summary["unfinished_clients"]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
