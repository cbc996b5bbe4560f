"""A first deployment, as the stack runs it: the real handlers (``functions/*/app.py``) built from the
environment the template sets, on moto over HTTP (S3, SQS, DynamoDB, Secrets Manager), the strict stand-in
of Qdrant Cloud (strict mode as Cloud creates collections, an API key), the loopback Voyage and Bedrock.

Upload with S3 user metadata and a sidecar's access list, ingest through an SQS batch, search with
metadata filters (the README's range among them) and ``context: neighbours|section``, ``/answer`` with
memory, ``GET /documents`` as a user outside the admin group, Qdrant's 429 answered 503 with Retry-After,
and delete. Nothing here talks to a lenient double: every refusal strict mode would make on Cloud is made.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from functions.ingest import app as ingest_app
from functions.search import app as search_app
from tests.support.answer import fake_bedrock, fake_bedrock_server  # noqa: F401 - fixtures
from tests.support.aws import key_value_table, unique_name
from tests.support.stack import EmbeddedStack
from winnow.factory import reset_container
from winnow.ingest.events import s3_event
from winnow_fakes.fake_bedrock import DEFAULT_MODEL_ID, FakeBedrockServer
from winnow_fakes.fake_qdrant import FakeQdrantServer
from winnow_fakes.fake_voyage import FakeVoyageServer
from winnow_local.apigw import http_api_event
from winnow_local.context import LocalLambdaContext

QDRANT_KEY = "qdrant-key-1"
ANN = {"sub": "ann", "cognito:groups": ["staff"]}  # not in winnow-admins
HANDBOOK = "\n\n".join(
    [
        "# Employee handbook",
        "## Holidays",
        "Every employee receives twenty-eight days of paid holiday per year.",
        "Unused holiday days may be carried over into the next year, up to five days.",
        "## Expenses",
        "Travel expenses are reimbursed within thirty days of a claim with receipts.",
        "Meals during travel are reimbursed up to a daily limit set by finance.",
    ]
)
LEGAL = "# Legal hold\n\nDocuments under legal hold must never be deleted or altered by anyone.\n"


class Deployment:
    """The stack's functions on the providers' stand-ins; ``api`` calls the search function as API
    Gateway does, ``deliver`` the ingest function as SQS does."""

    def __init__(
        self,
        bucket: str,
        s3: Any,
        voyage: FakeVoyageServer,
        qdrant: FakeQdrantServer,
        secrets: Any,
        voyage_secret: str,
        qdrant_secret: str,
    ) -> None:
        self.bucket, self.s3, self.voyage, self.qdrant = bucket, s3, voyage, qdrant
        self.secrets, self.voyage_secret, self.qdrant_secret = secrets, voyage_secret, qdrant_secret
        self.sequence = 0

    def put(self, key: str, body: bytes, metadata: dict[str, str] | None = None) -> dict[str, Any]:
        self.s3.put_object(Bucket=self.bucket, Key=key, Body=body, Metadata=metadata or {})
        head = self.s3.head_object(Bucket=self.bucket, Key=key)
        return self.deliver(("ObjectCreated:Put", key, head["ContentLength"], head["ETag"].strip('"')))

    def remove(self, key: str) -> dict[str, Any]:
        return self.deliver(("ObjectRemoved:Delete", key, None, None))

    def deliver(self, record: tuple[str, str, int | None, str | None]) -> dict[str, Any]:
        self.sequence += 1
        notification = s3_event([(*record, f"{self.sequence:016X}")], self.bucket)
        out: dict[str, Any] = ingest_app.handler(EmbeddedStack.sqs_batch(notification), LocalLambdaContext())
        return out

    def api(
        self, method: str, path: str, body: Any = None, claims: Any = ANN
    ) -> tuple[int, dict[str, str], Any]:
        event = http_api_event(method, path, body=body, tenant="acme", claims=claims)
        response = search_app.handler(event, LocalLambdaContext())
        raw = response.get("body") or ""
        return (
            int(response["statusCode"]),
            dict(response.get("headers") or {}),
            json.loads(raw) if raw else None,
        )

    def search(self, query: str, **fields: Any) -> Any:
        status, _, body = self.api("POST", "/search", {"query": query, "relevance_threshold": 0.0, **fields})
        assert status == 200, body
        return body


@pytest.fixture
def deployment(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    aws_client: Callable[[str], Any],
    fake_voyage: FakeVoyageServer,
    fake_bedrock: FakeBedrockServer,  # noqa: F811 - the fixture imported above
) -> Iterator[Deployment]:
    secrets = aws_client("secretsmanager")
    qdrant_secret = secrets.create_secret(Name=unique_name("qdrant"), SecretString=QDRANT_KEY)["ARN"]
    voyage_secret = secrets.create_secret(Name=unique_name("voyage"), SecretString=fake_voyage.api_key)["ARN"]
    bucket = unique_name("winnow-docs")
    s3 = aws_client("s3")
    s3.create_bucket(Bucket=bucket)
    env = {  # what template.yaml sets on the functions
        "WINNOW_HOME": str(tmp_path / "home"),
        "WINNOW_BUCKET": bucket,
        "WINNOW_LEDGER_TABLE": key_value_table(aws_client, "ledger"),
        "WINNOW_CONVERSATION_TABLE": key_value_table(aws_client, "conversations"),
        "QDRANT_COLLECTION_PREFIX": "winnow",
        "QDRANT_API_KEY_SECRET_ARN": qdrant_secret,
        "QDRANT_MAX_ATTEMPTS": "2",
        "QDRANT_RETRY_BUDGET_SECONDS": "3",
        "WINNOW_METADATA_FIELDS": '{"department": "keyword", "year": "integer"}',
        "VOYAGE_API_KEY_SECRET_ARN": voyage_secret,
        "VOYAGE_OUTPUT_DIMENSION": "256",
        "VOYAGE_BACKOFF_BASE_SECONDS": "0",
        "VOYAGE_BACKOFF_MAX_SECONDS": "0",
        "WINNOW_ANSWER_GENERATOR": "bedrock",
        "WINNOW_ANSWER_BEDROCK_MODEL_ID": DEFAULT_MODEL_ID,
        "WINNOW_ANSWER_BEDROCK_REGION": "us-east-1",
        "WINNOW_ANSWER_BEDROCK_ENDPOINT_URL": fake_bedrock.url,
        "WINNOW_CONVERSATION_MEMORY_FLOOR": "-1",
    }
    with FakeQdrantServer(api_key=QDRANT_KEY) as qdrant:
        env["QDRANT_URL"] = qdrant.origin
        env["VOYAGE_BASE_URL"] = fake_voyage.base_url
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        reset_container()
        try:
            yield Deployment(bucket, s3, fake_voyage, qdrant, secrets, voyage_secret, qdrant_secret)
        finally:
            reset_container()


@pytest.mark.filterwarnings("ignore:Api key is used with an insecure connection")
def test_a_first_deployment_serves_every_route_on_strict_qdrant(deployment: Deployment) -> None:
    d = deployment
    # Upload: S3 user metadata (strings, as S3 keeps them) and a restricted document with a sidecar
    out = d.put("acme/handbook.md", HANDBOOK.encode(), {"department": "people", "year": "2024"})
    assert out.get("batchItemFailures", []) == [], out
    sidecar = {"metadataAttributes": {"department": "legal", "year": 2019}, "access": {"groups": ["legal"]}}
    d.s3.put_object(Bucket=d.bucket, Key="acme/legal.md.metadata.json", Body=json.dumps(sidecar).encode())
    assert d.put("acme/legal.md", LEGAL.encode()).get("batchItemFailures", []) == []
    # The collection is strict, as Qdrant Cloud makes it, and every filtered field has a fitting index
    (name,) = [n for n in d.qdrant.collections if n.startswith("winnow_")]
    assert d.qdrant.strict_mode(name)["unindexed_filtering_retrieve"] is False
    indexes = d.qdrant.indexes(name)
    assert indexes["chunk_index"] == "integer" and indexes["meta.year"] == "integer"

    # Search with metadata filters, the README's range among them
    body = d.search("paid holiday days", filters={"department": ["people", "finance"], "year": {"gte": 2024}})
    assert body["results"] and {r["key"] for r in body["results"]} == {"acme/handbook.md"}
    assert d.search("paid holiday days", filters={"year": {"lte": 2020}})["results"] == []
    # A filter on a field nobody declared: 400 naming it and how to declare it, never a 502
    status, _, refused = d.api("POST", "/search", {"query": "holiday", "filters": {"region": "emea"}})
    assert status == 400, refused
    message = refused["error"]["message"]
    assert "'region'" in message and "WINNOW_METADATA_FIELDS" in message
    # Context around each result: neighbours and section (chunk_index filters)
    for context in ("neighbours", "section"):
        hits = d.search("carried over", context=context, top_k=1)["results"]
        assert hits and hits[0].get("context"), (context, hits)

    # GET /documents as a user outside the admin group: the open document, not the legal one
    status, _, listed = d.api("GET", "/documents")
    assert status == 200, listed
    assert [doc["key"] for doc in listed["documents"]] == ["acme/handbook.md"]

    # /answer with memory: a turn is remembered and listed
    question = {"query": "How many days of paid holiday?", "relevance_threshold": 0.0}
    status, _, answered = d.api("POST", "/answer", question)
    assert status == 200, answered
    assert answered["answer"] and answered["results"], answered
    status, _, memories = d.api("GET", "/memory")
    assert status == 200 and [m["question"] for m in memories["memories"]] == [
        "How many days of paid holiday?"
    ]

    # Qdrant rate limits a search: retried within its budget, then a 503 with Retry-After, never a 500
    d.qdrant.throttle(times=10, retry_after=30)
    status, headers, throttled = d.api("POST", "/search", {"query": "holiday"})
    assert status == 503, throttled
    assert headers.get("Retry-After") == "30"
    d.qdrant.throttle(times=0)

    # Key rotation: a new Voyage key is put into the secret and the old one revoked at once; the warm
    # container's next search gets a 401 with its cached key, re-reads the secret and succeeds
    sent_before = len(d.voyage.requests)
    old_key = d.voyage.rotate_key("pa-rotated-key", revoke_old=True)
    d.secrets.put_secret_value(SecretId=d.voyage_secret, SecretString="pa-rotated-key")
    assert d.search("paid holiday days")["results"]
    keys = [(r.api_key, r.status) for r in d.voyage.requests[sent_before:]]
    assert keys[0] == (old_key, 401) and keys[1:] and all(k == ("pa-rotated-key", 200) for k in keys[1:]), (
        keys
    )
    # The Qdrant key too: rotated at Qdrant and in the secret, the next call's 401 re-reads it
    d.qdrant.rotate_key("qk-rotated-key", revoke_old=True)
    d.secrets.put_secret_value(SecretId=d.qdrant_secret, SecretString="qk-rotated-key")
    d.qdrant.keys.clear()
    assert d.search("paid holiday days")["results"]
    assert d.qdrant.keys[0] == (QDRANT_KEY, 401), d.qdrant.keys
    assert d.qdrant.keys[1:] and all(k == ("qk-rotated-key", 0) for k in d.qdrant.keys[1:]), d.qdrant.keys

    # Delete: the object goes now, its passages when ingest handles the removal
    status, _, deleted = d.api(
        "DELETE", "/documents/handbook.md", claims={"sub": "root", "cognito:groups": ["winnow-admins"]}
    )
    assert status == 202, deleted
    assert d.remove("acme/handbook.md").get("batchItemFailures", []) == []
    assert d.search("paid holiday days")["results"] == []
    assert d.qdrant.refusals == []  # strict mode never had to refuse one of our requests
