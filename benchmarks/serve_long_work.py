"""How long a tenant's search waits on ``winnow serve`` behind work that takes long (issue 44, item 10).

Tenant ``b`` sends cheap searches one after another (and ``/health`` between them) while, in turn:
nothing; one 1.1 MB upload of 1,200 paragraphs by tenant ``a``; six tenants uploading 180 KB each at
once; a follow-up ``/answer`` whose model (the fake Ollama, on loopback) takes 8 s. Each run prints
``b``'s median and worst search, the worst ``/health`` and how long the long work took; the ratio is
against ``b`` alone in the same run. ``--one-lane`` runs the same with every task on the API lane (as
before issue 44), for the "before" figures.

Run: ``.venv/bin/python -m benchmarks.serve_long_work`` (about 3 minutes with the local ONNX model)."""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

import httpx

from benchmarks.common import machine, positive_int, quiet_known_warnings, table
from tests.support.serve import serving
from tests.support.tables import WORDS as TABLE_WORDS
from winnow_local.web.server import warm_up

_MORE = "cleaning warranty repair heating element thermostat limescale citric vinegar rinse seal gasket pump"
WORDS = (*TABLE_WORDS, *_MORE.split())


def _paragraphs(count: int, words: int, seed: int) -> bytes:
    rng = random.Random(seed)
    body = "\n\n".join(" ".join(rng.choice(WORDS) for _ in range(words)) for _ in range(count))
    return f"# Manual {seed}\n\n{body}\n".encode()


def _post(url: str, path: str, tenant: str, **kwargs: Any) -> httpx.Response:
    headers = {"x-winnow-tenant": tenant, **kwargs.pop("headers", {})}
    return httpx.post(f"{url}{path}", headers=headers, timeout=3600, **kwargs)


def _b_while(url: str, busy: Callable[[], bool]) -> tuple[list[float], list[float]]:
    """``b``'s search and ``/health`` latencies (ms), one after another, while ``busy()``."""
    searches: list[float] = []
    health: list[float] = []
    with httpx.Client(timeout=3600) as client:
        while busy() or not searches:
            started = time.perf_counter()
            response = client.post(
                f"{url}/search", json={"query": "descale the kettle"}, headers={"x-winnow-tenant": "b"}
            )
            assert response.status_code == 200, response.text
            searches.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            assert client.get(f"{url}/health").status_code == 200
            health.append((time.perf_counter() - started) * 1000)
    return searches, health


def _measure(url: str, work: Callable[[], Any]) -> tuple[list[float], list[float], float]:
    """``b``'s latencies while ``work`` runs in a thread; and how long it took (s)."""
    done = threading.Event()
    took: list[float] = []

    def run() -> None:
        started = time.perf_counter()
        try:
            work()
        finally:
            took.append(time.perf_counter() - started)
            done.set()

    threading.Thread(target=run, daemon=True).start()
    searches, health = _b_while(url, lambda: not done.is_set())
    done.wait()
    return searches, health, took[0]


def one_lane(httpd: Any) -> contextlib.ExitStack:
    """Every task on the API lane, as before issue 44 (uploads, removals, model requests)."""
    lanes = contextlib.ExitStack()
    lanes.enter_context(mock.patch.multiple(httpd, ingest_lane=httpd.lane, model_lane=httpd.lane))
    lanes.enter_context(mock.patch.object(httpd.uploads, "_lane", httpd.lane))
    return lanes


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--one-lane", action="store_true", help="every task on one lane (before)")
    parser.add_argument("--paragraphs", type=positive_int, default=1200, help="of the big upload")
    parser.add_argument("--model-seconds", type=float, default=8.0, help="the slow model's wait")
    args = parser.parse_args(argv)
    quiet_known_warnings()
    from winnow_fakes.fake_model import ModelFault
    from winnow_fakes.fake_ollama import FakeOllamaServer

    with (
        FakeOllamaServer() as ollama,
        tempfile.TemporaryDirectory(prefix="winnow-long-work-") as folder,
        serving(Path(folder), env={"OLLAMA_HOST": ollama.url}) as httpd,
    ):
        warm_up(httpd)
        url = httpd.url
        print(json.dumps(machine()))
        assert _post(url, "/upload?key=kettle.md", "b", content=_paragraphs(3, 40, 1)).status_code == 200
        asker = {"x-winnow-user": "ann"}
        _post(url, "/upload?key=kettle.md", "c", content=_paragraphs(3, 40, 2))
        first = _post(url, "/answer", "c", json={"query": "descale the kettle"}, headers=asker).json()
        big = _paragraphs(args.paragraphs, 150, 3)
        small = [_paragraphs(max(1, args.paragraphs // 6), 150, 10 + n) for n in range(6)]

        def one_upload() -> None:
            assert _post(url, "/upload?key=big.md", "a", content=big).status_code == 200

        def six_tenants() -> None:
            threads = [
                threading.Thread(
                    target=_post, args=(url, f"/upload?key=s{n}.md", f"s{n}"), kwargs={"content": s}
                )
                for n, s in enumerate(small)
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()

        def slow_model() -> None:
            ollama.inject(ModelFault.delay(args.model_seconds))
            body = {"query": "and how often?", "conversation_id": first["conversation_id"]}
            assert _post(url, "/answer", "c", json=body, headers=asker).status_code == 200

        runs = {
            "b alone": None,
            f"one upload, {len(big) / 1e6:.2f} MB, {args.paragraphs} paragraphs": one_upload,
            f"six tenants uploading {len(small[0]) // 1000} KB each": six_tenants,
            f"a follow-up /answer, model {args.model_seconds:g} s": slow_model,
        }
        rows = []
        alone_ms = None
        lanes = one_lane(httpd) if args.one_lane else contextlib.nullcontext()
        with lanes:
            for name, work in runs.items():
                if work is None:
                    searches, health = _b_while(url, lambda: False)
                    searches += _b_while(url, lambda: False)[0]
                    took = 0.0
                else:
                    searches, health, took = _measure(url, work)
                median = statistics.median(searches)
                alone_ms = alone_ms or median
                rows.append(
                    [
                        name,
                        str(len(searches)),
                        f"{median:.0f}",
                        f"{max(searches):.0f}",
                        f"{median / alone_ms:.1f}x",
                        f"{max(health):.0f}",
                        f"{took:.1f}",
                    ]
                )
        print(
            f"\nTenant b's searches while long work runs ({'one lane, before' if args.one_lane else 'lanes'})"
        )
        print(
            table(
                ["work", "b searches", "median ms", "max ms", "median vs alone", "/health max ms", "work s"],
                rows,
            )
        )


if __name__ == "__main__":
    main()
