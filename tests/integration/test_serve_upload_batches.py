"""``winnow serve``: uploads that arrive while the server's lane is busy are ingested together, their
texts in shared embedding requests (the real server on loopback, the fake Voyage server counting)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from tests.support.serve import serving, upload
from winnow_fakes.fake_voyage import FakeVoyageServer

TEXTS = [
    "Lentil soup is served with rye bread on Mondays in the staff canteen.",
    "The cellar thermometer reads eleven degrees all winter long.",
    "Quarterly revenue grew by twelve percent in the northern region.",
    "Laptops must use full-disk encryption and lock after five minutes.",
]


def test_uploads_in_flight_share_embedding_requests(tmp_path: Path, fake_voyage: FakeVoyageServer) -> None:
    env = {
        "WINNOW_EMBEDDER": "voyage",
        "WINNOW_RERANKER": "none",
        "VOYAGE_API_KEY": fake_voyage.api_key,
        "VOYAGE_BASE_URL": fake_voyage.base_url,
    }
    with serving(tmp_path / "home", env) as httpd:
        # Given the server's ingest lane busy with something else, and four uploads arriving meanwhile
        gate = threading.Event()
        httpd.ingest_lane.submit("acme", gate.wait, 30)
        answers: dict[str, dict[str, Any]] = {}

        def send(n: int) -> None:
            answers[f"note-{n}.txt"] = upload(httpd, "acme", f"note-{n}.txt", TEXTS[n].encode())

        senders = [threading.Thread(target=send, args=(n,)) for n in range(len(TEXTS))]
        for sender in senders:
            sender.start()
        deadline = time.monotonic() + 30
        while httpd.uploads.waiting < len(TEXTS) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert httpd.uploads.waiting == len(TEXTS)
        # When the lane frees up
        gate.set()
        for sender in senders:
            sender.join(timeout=60)
        # Then each upload got its own answer, indexed, and one request embedded all four
        assert sorted(answers) == [f"note-{n}.txt" for n in range(len(TEXTS))]
        assert {a["status"] for a in answers.values()} == {"indexed"}
        assert all(a["key"].endswith(k) for k, a in answers.items())
        assert len(fake_voyage.requests_to("embeddings")) == 1
