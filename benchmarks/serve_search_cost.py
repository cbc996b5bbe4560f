"""What one search may cost on ``winnow serve``, and whether one tenant's load starves another (issue 31).

Part 1, cost of one request: a cheap search against the most expensive bodies, each through the search
service with the schema's checks skipped (what the work would be) and as an HTTP request to the server
(what the API answers now: 200, or a 422 naming the limit). Part 2, fairness: tenant ``b`` sends cheap
searches one after another while 20 clients of tenant ``a`` send the most expensive valid body; ``b``'s
latency alone, then under that load with every task in one queue (a single-queue lane) and with the
lane's per-tenant turns. Loopback only; every loop is bounded.

Run: ``.venv/bin/python -m benchmarks.serve_search_cost`` (about 3 minutes; ``--docs`` sets the size)."""

from __future__ import annotations

import argparse
import functools
import json
import random
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from benchmarks.common import machine, positive_int, quiet_known_warnings, table

_VOCABULARY = """kettle descale water filter boiler pressure valve steam milk coffee grinder espresso
cleaning warranty repair heating element thermostat limescale citric vinegar rinse seal gasket pump"""
WORDS = _VOCABULARY.split()
FIELDS = 20  # the schema's most filters


def _documents(count: int, seed: int = 7) -> list[tuple[str, bytes, dict[str, str]]]:
    rng = random.Random(seed)
    docs = []
    for i in range(count):
        paragraphs = [" ".join(rng.choice(WORDS) for _ in range(60)) for _ in range(4)]
        text = f"# Manual {i}\n\n" + "\n\n".join(paragraphs)
        metadata = {f"f{j}": f"v{rng.randrange(50)}" for j in range(FIELDS)}
        docs.append((f"a/manual{i}.md", text.encode(), metadata))
    return docs


def bodies() -> dict[str, dict[str, Any]]:
    """The cheap body, the old limit's worst bodies, and the worst body valid now."""
    from winnow.search.schemas import MAX_FILTER_FRACTIONS, MAX_FILTER_VALUES

    rng = random.Random(3)
    long_query = " ".join(rng.choice(WORDS) for _ in range(400))[:2000]
    heavy = {"query": long_query, "top_k": 50, "candidates": 200}
    strings = {f"f{j}": [f"v{k}" for k in range(MAX_FILTER_VALUES)] for j in range(FIELDS - 1)}
    fractions = {f"f{FIELDS - 1}": [k + 0.5 for k in range(MAX_FILTER_FRACTIONS)]}
    return {
        "cheap": {"query": "descale the kettle"},
        "old limit: 19 fields x 100 strings": {
            **heavy,
            "filters": {f"f{j}": [f"v{k}" for k in range(100)] for j in range(19)},
        },
        "old limit: 19 fields x 100 fractional numbers": {
            **heavy,
            "filters": {f"f{j}": [k + 0.5 for k in range(100)] for j in range(19)},
        },
        "worst valid now": {**heavy, "filters": {**strings, **fractions}},
    }


def _median_ms(run: Callable[[], Any], repeats: int) -> float:
    run()  # warm
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def _service_call(body: dict[str, Any]) -> Callable[[], Any]:
    """The search service on this body with the schema's checks skipped: the work the body asks for."""
    from winnow.factory import get_container
    from winnow.search.schemas import SearchRequest, default_candidates

    top_k = int(body.get("top_k", 5))
    fields: dict[str, Any] = {
        "mode": "hybrid",
        "rerank": None,
        "relevance_threshold": None,
        "score_threshold": None,
    }
    request = SearchRequest.model_construct(
        **fields,
        query=body["query"],
        top_k=top_k,
        candidates=int(body.get("candidates", default_candidates(top_k))),
        filters=body.get("filters", {}),
    )
    service = get_container().search_service()
    return lambda: service.search("a", request)


@contextmanager
def server(home: Path) -> Iterator[Any]:
    import os

    from winnow.factory import reset_container
    from winnow_local.web.server import make_server, warm_up

    before = os.environ.get("WINNOW_HOME")
    os.environ["WINNOW_HOME"] = str(home)
    reset_container()
    httpd = make_server("127.0.0.1", 0, quiet=True)
    try:
        warm_up(httpd)
        thread = threading.Thread(target=httpd.serve_forever, daemon=True)
        thread.start()
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()
        if before is None:
            os.environ.pop("WINNOW_HOME", None)
        else:
            os.environ["WINNOW_HOME"] = before
        reset_container()


def _search(url: str, tenant: str, body: dict[str, Any], client: httpx.Client) -> tuple[int, float]:
    started = time.perf_counter()
    response = client.post(f"{url}/search", json=body, headers={"x-winnow-tenant": tenant}, timeout=600)
    return response.status_code, (time.perf_counter() - started) * 1000


def _b_latencies(url: str, count: int, a_answers: Callable[[], int] = lambda: 0) -> list[tuple[float, int]]:
    """``b``'s cheap searches one after another: each one's latency and how many of ``a``'s searches
    were answered meanwhile (an ordering figure, steadier than milliseconds on a busy machine)."""
    with httpx.Client() as client:
        out = []
        for _ in range(count):
            before = a_answers()
            latency = _search(url, "b", {"query": "descale the kettle"}, client)[1]
            out.append((latency, a_answers() - before))
        return out


def _under_load(url: str, body: dict[str, Any], clients: int, most: int, b_count: int) -> dict[str, Any]:
    """``b``'s searches while ``clients`` of ``a`` each send ``body`` back to back until ``b`` is done
    (at most ``most`` requests each)."""
    answered: list[int] = []
    start = threading.Barrier(clients + 1)
    stop = threading.Event()

    def tenant_a() -> None:
        with httpx.Client() as client:
            start.wait()
            for _ in range(most):
                if stop.is_set():
                    break
                status, _ = _search(url, "a", body, client)
                answered.append(status)

    threads = [threading.Thread(target=tenant_a) for _ in range(clients)]
    for thread in threads:
        thread.start()
    start.wait()
    time.sleep(1.0)  # let a's clients fill the lane first
    latencies = _b_latencies(url, b_count, lambda: len(answered))
    stop.set()
    for thread in threads:
        thread.join()
    return {"b": latencies, "a_answers": len(answered), "a_ok": answered.count(200)}


@contextmanager
def one_queue(httpd: Any) -> Iterator[None]:
    """The lane as it was before issue 31: every task in one FIFO queue, whoever sent it."""
    submit = httpd.lane.submit
    httpd.lane.submit = lambda tenant, fn, *args, **kwargs: submit("all", fn, *args, **kwargs)
    try:
        yield
    finally:
        httpd.lane.submit = submit


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=positive_int, default=60, help="documents of tenant a (default 60)")
    parser.add_argument("--repeats", type=positive_int, default=5)
    parser.add_argument("--clients", type=positive_int, default=20, help="tenant a's clients (default 20)")
    parser.add_argument("--each", type=positive_int, default=40, help="most requests per client of a")
    parser.add_argument("--b-count", type=positive_int, default=10, help="tenant b's searches")
    args = parser.parse_args(argv)
    quiet_known_warnings()

    with tempfile.TemporaryDirectory(prefix="winnow-search-cost-") as folder, server(Path(folder)) as httpd:
        from winnow_local.runtime import Upload

        started = time.perf_counter()
        uploads = [Upload(key, data, meta) for key, data, meta in _documents(args.docs)]
        results = httpd.lane.submit("a", httpd.runtime.put_and_ingest, uploads).result()
        chunks = sum(int(r.get("chunks") or 0) for r in results)
        print(f"tenant a: {args.docs} documents, {chunks} chunks ({time.perf_counter() - started:.0f} s)")
        print(json.dumps(machine()))

        rows = []
        cheap_ms = None
        with httpx.Client() as client:
            for name, body in bodies().items():
                work = httpd.lane.submit("a", _median_ms, _service_call(body), args.repeats).result()
                cheap_ms = cheap_ms or work
                status = _search(httpd.url, "a", body, client)[0]
                answer = _median_ms(functools.partial(_search, httpd.url, "a", body, client), args.repeats)
                rows.append([name, f"{work:.1f}", f"{work / cheap_ms:.0f}x", str(status), f"{answer:.1f}"])
        print("\nCost of one search (median of", args.repeats, "; work = the service with no schema check)")
        print(table(["body", "work ms", "vs cheap", "API status", "API ms"], rows))

        worst = bodies()["worst valid now"]
        alone = _b_latencies(httpd.url, args.b_count)
        with one_queue(httpd):
            fifo = _under_load(httpd.url, worst, args.clients, args.each, args.b_count)
        fair = _under_load(httpd.url, worst, args.clients, args.each, args.b_count)
        rows = []
        for name, run in (
            ("b alone", {"b": alone}),
            ("one queue (before)", fifo),
            ("per-tenant turns", fair),
        ):
            latencies = [ms for ms, _ in run["b"]]
            overtaken = [n for _, n in run["b"]]
            answers = f"{run['a_ok']}/{run['a_answers']}" if "a_answers" in run else "-"
            rows.append(
                [
                    name,
                    f"{statistics.median(latencies):.0f}",
                    f"{max(latencies):.0f}",
                    f"{statistics.median(overtaken):.0f} / {max(overtaken)}",
                    answers,
                ]
            )
        print(
            f"\nTenant b: {args.b_count} cheap searches, one after another, while {args.clients} clients of "
            "a send 'worst valid now' searches back to back (until b is done)"
        )
        headers = ["lane", "b median ms", "b max ms", "a answered during one b (median / max)", "a 200/all"]
        print(table(headers, rows))


if __name__ == "__main__":
    main()
