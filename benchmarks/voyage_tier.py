"""Re-ranked searches against Voyage's usage-tier limits: what rate is sustained, and what a caller sees
beyond it (issue 43). The real search handler (Qdrant Edge, the httpx Voyage adapters with the search
function's settings from template.yaml) runs against the fake Voyage with its simulator at tier 1
(``winnow_fakes.voyage_limits``: rerank-2.5 2M tokens and 2,000 requests a minute, 429 with or without
Retry-After). Searches arrive at a steady offered rate on a virtual clock, so minutes of traffic take
seconds and nothing sleeps; the fake's latency is left out (it does not change what fits in a minute).

Prints: searches per second offered and sustained (answered 200), every status the API answered with
its count and Retry-After values, and every status Voyage answered. The token count is the fake's bound
(one per UTF-8 byte) scaled by ``--token-share`` (0.25: English prose, about 4 bytes a token).

Run: ``.venv/bin/python -m benchmarks.voyage_tier`` (about half a minute; ``--rate``, ``--seconds``,
``--tier``, ``--candidates``)."""

from __future__ import annotations

import argparse
import json
import random
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.common import machine, positive_int, quiet_known_warnings, stdout_reserved_for_result, table

# The search function's Voyage settings in template.yaml: two attempts, short timeouts, no minute's wait.
SEARCH_ENV = {
    "VOYAGE_MAX_ATTEMPTS": "2",
    "VOYAGE_TIMEOUT_SECONDS": "4",
    "VOYAGE_BACKOFF_MAX_SECONDS": "1",
    "VOYAGE_RATE_LIMIT_WINDOW_SECONDS": "0",
    "WINNOW_QUERY_CACHE_SIZE": "0",  # every search reaches Voyage, as distinct queries would
}
_VOCABULARY = """turbine blade inspection crack coating bearing lubrication vibration sensor torque
gearbox rotor tower yaw pitch generator inverter cable fatigue maintenance interval"""
_WORDS = _VOCABULARY.split()


def _documents(count: int, rng: random.Random) -> list[tuple[str, bytes]]:
    """Markdown manuals of four ~1,200-character sections: chunks the size ingest makes by default."""
    docs = []
    for i in range(count):
        sections = [f"## Part {s}\n\n" + " ".join(rng.choice(_WORDS) for _ in range(170)) for s in range(4)]
        docs.append((f"manual{i}.md", (f"# Manual {i}\n\n" + "\n\n".join(sections)).encode()))
    return docs


def run(rate: float, seconds: int, tier: int, candidates: int, token_share: float) -> dict[str, Any]:
    from benchmarks.stack import EmbeddedStack
    from functions.search.app import handler
    from winnow.adapters.voyage import VoyageEmbedder, VoyageReranker
    from winnow_fakes.fake_voyage import FakeVoyageServer, VoyageSimulation
    from winnow_local.context import LocalLambdaContext

    rng = random.Random(43)
    now = [0.0]  # the virtual clock's reading
    backoff: list[float] = []  # the adapters' pauses, on the virtual clock too
    with tempfile.TemporaryDirectory() as home, FakeVoyageServer() as fake:
        env = {
            "WINNOW_EMBEDDER": "voyage",
            "WINNOW_RERANKER": "voyage",
            "VOYAGE_API_KEY": fake.api_key,
            "VOYAGE_BASE_URL": fake.base_url,
            **SEARCH_ENV,
        }
        with EmbeddedStack(Path(home), env=env) as stack:
            stack.ingest(_documents(max(10, candidates // 3), rng))
            c = stack.container
            v = c.settings.voyage
            c.__dict__["embedder"] = VoyageEmbedder(v, fake.api_key, c.voyage_http, sleep=backoff.append)
            c.__dict__["reranker"] = VoyageReranker(v, fake.api_key, c.voyage_http, sleep=backoff.append)
            fake.reset()
            fake.set_simulation(
                VoyageSimulation(
                    tier=tier,
                    clock=lambda: now[0],
                    sleep=lambda _s: None,
                    rate_token_share=token_share,
                    retry_after_share=0.5,
                    seed=43,
                )
            )
            statuses: Counter[int] = Counter()
            steady: Counter[int] = Counter()  # after the first minute, which starts with an empty window
            retry_after: Counter[str] = Counter()
            total = int(rate * seconds)
            for n in range(total):
                now[0] = n / rate
                query = " ".join(rng.choice(_WORDS) for _ in range(4)) + f" {n}"
                event = stack.search_event(query, top_k=10, candidates=candidates, rerank=True)
                response = handler(event, LocalLambdaContext())
                status = int(response["statusCode"])
                statuses[status] += 1
                if now[0] >= 60:
                    steady[status] += 1
                headers = {k.lower(): v for k, v in (response.get("headers") or {}).items()}
                if status != 200:
                    retry_after[headers.get("retry-after", "none")] += 1
            voyage = Counter((r.endpoint, r.status) for r in fake.requests)
            usage = fake.usage
    # The first minute fills an empty window; the sustained rate is what the later minutes answered.
    later = max(seconds - 60, 1)
    return {
        "offered_per_second": rate,
        "virtual_seconds": seconds,
        "tier": tier,
        "candidates": candidates,
        "token_share": token_share,
        "searches": total,
        "sustained_per_second": round(steady[200] / later, 2),
        "first_minute_per_second": round((statuses[200] - steady[200]) / min(seconds, 60), 2),
        "rerank_tokens_per_search": round(usage["rerank"].tokens * token_share / max(statuses[200], 1)),
        "api_statuses": dict(sorted(statuses.items())),
        "retry_after_of_non_200": dict(sorted(retry_after.items())),
        "voyage_statuses": {f"{e} {s}": n for (e, s), n in sorted(voyage.items())},
        "voyage_throttled": {e: u.throttled for e, u in usage.items()},
        "rerank_tokens_billed": usage["rerank"].tokens,
        "adapter_backoff_seconds": round(sum(backoff), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=6.0, help="searches offered per second")
    parser.add_argument("--seconds", type=positive_int, default=150, help="virtual seconds of traffic")
    parser.add_argument("--tier", type=int, default=1, choices=(1, 2, 3))
    parser.add_argument("--candidates", type=positive_int, default=30)
    parser.add_argument("--token-share", type=float, default=0.25, help="tokens per byte counted")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    quiet_known_warnings()
    with stdout_reserved_for_result():
        result = run(args.rate, args.seconds, args.tier, args.candidates, args.token_share)
    result["machine"] = machine()
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(
        f"tier {result['tier']}, {result['candidates']} candidates, offered {result['offered_per_second']}/s "
        f"for {result['virtual_seconds']} virtual s: sustained {result['sustained_per_second']} searches/s "
        f"after the first minute ({result['first_minute_per_second']}/s in it); "
        f"{result['rerank_tokens_per_search']} rerank tokens a search"
    )
    rows = [[f"API {s}", str(n)] for s, n in result["api_statuses"].items()]
    rows += [[f"API non-200 Retry-After {k}", str(n)] for k, n in result["retry_after_of_non_200"].items()]
    rows += [[f"Voyage {k}", str(n)] for k, n in result["voyage_statuses"].items()]
    print(table(["status", "count"], rows))
    print(f"adapter back-off in all: {result['adapter_backoff_seconds']} s (virtual)")


if __name__ == "__main__":
    main()
