"""AWS for tests: moto's server on loopback (``ThreadedMotoServer``), so adapters talk real HTTP through
botocore exactly as in Lambda. One server per session; each test gets fresh, uniquely named resources
and ``AWS_ENDPOINT_URL`` pointing at the server (boto3 honours it, so adapters need no test hooks)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from winnow.adapters._aws import TTL_ATTRIBUTE
from winnow.adapters._aws import key_value_table as key_value_definition


def _atomic_moto_server() -> Any:
    """A ``ThreadedMotoServer`` whose DynamoDB and SQS requests run one at a time.

    moto checks a ``ConditionExpression`` and applies the write without a lock, so two concurrent
    conditional writes can both pass (measured: racing ledger writers lost the newest event in 4 of 6
    runs). Real DynamoDB applies each item write atomically; serialising these JSON-protocol requests
    gives tests that guarantee back, so race tests judge our conditions rather than moto's gaps. S3
    requests stay concurrent."""
    from moto.moto_server.threaded_moto_server import ThreadedMotoServer
    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from werkzeug.serving import make_server

    class AtomicMotoServer(ThreadedMotoServer):
        def _server_entry(self) -> None:
            app = DomainDispatcherApplication(create_backend_app)
            lock = threading.Lock()

            def serialised(environ: dict[str, Any], start_response: Any) -> Any:
                target = str(environ.get("HTTP_X_AMZ_TARGET", ""))
                if target.startswith(("DynamoDB", "AmazonSQS")):
                    with lock:
                        return list(app(environ, start_response))
                return app(environ, start_response)

            self._server = make_server(
                self._ip_address, self._port, serialised, True, request_handler=MotoRequestHandler
            )
            self._server_ready_event.set()
            self._server.serve_forever()

    return AtomicMotoServer(ip_address="127.0.0.1", port=0, verbose=False)


@pytest.fixture(scope="session")
def moto_server() -> Iterator[str]:
    """The endpoint URL of a moto server on 127.0.0.1 at a free port."""
    server = _atomic_moto_server()
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture
def aws_endpoint(moto_server: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Route every boto3 client created during the test to moto, with dummy credentials."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_server)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    return moto_server


@pytest.fixture
def aws_client(aws_endpoint: str) -> Callable[[str], Any]:
    """``aws_client("s3")``: a plain boto3 client on moto, for arranging and inspecting state."""
    import boto3

    def make(service: str) -> Any:
        return boto3.client(service, endpoint_url=aws_endpoint, region_name="us-east-1")

    return make


def unique_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def s3_bucket(aws_client: Callable[[str], Any]) -> str:
    name = unique_name("winnow-test")
    aws_client("s3").create_bucket(Bucket=name)
    return name


def key_value_table(aws_client: Callable[[str], Any], prefix: str) -> str:
    """A fresh DynamoDB table of our ``pk``/``sk`` shape (the ledger's and the conversations'), with TTL
    on ``ttl`` as template.yaml enables it."""
    name = unique_name(prefix)
    client = aws_client("dynamodb")
    client.create_table(**key_value_definition(name))
    client.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 0.1, "MaxAttempts": 50})
    client.update_time_to_live(
        TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": TTL_ATTRIBUTE}
    )
    return name


@pytest.fixture
def ledger_table(aws_client: Callable[[str], Any]) -> str:
    """A DynamoDB table with the ledger's schema (``table_definition``) and TTL on ``ttl``."""
    return key_value_table(aws_client, "winnow-ledger")


@pytest.fixture
def sqs_queue(aws_client: Callable[[str], Any]) -> str:
    """The URL of a fresh standard queue."""
    name = unique_name("winnow-queue")
    return str(aws_client("sqs").create_queue(QueueName=name)["QueueUrl"])


class FaultyAws:
    """A loopback HTTP server that answers every request with one canned AWS error, so adapters' error
    translation is exercised through botocore's real parsing (moto cannot throttle or fail on demand)."""

    def __init__(self) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.status = 500
        self.body = b""
        self.headers: dict[str, str] = {}
        self.requests = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                owner.requests += 1
                self.send_response(owner.status)
                for name, value in owner.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(owner.body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(owner.body)

            do_GET = do_POST = do_PUT = do_HEAD = do_DELETE = _answer

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def respond(self, status: int, body: bytes | str = b"", headers: dict[str, str] | None = None) -> None:
        self.status = status
        self.body = body.encode("utf-8") if isinstance(body, str) else body
        self.headers = dict(headers or {})

    def client(self, service: str) -> Any:
        """A boto3 client on this server with botocore retries off (one request per call)."""
        import boto3
        from botocore.config import Config

        return boto3.client(
            service,
            endpoint_url=self.url,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            config=Config(retries={"mode": "standard", "max_attempts": 1}, s3={"addressing_style": "path"}),
        )

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def faulty_aws() -> Iterator[FaultyAws]:
    server = FaultyAws()
    try:
        yield server
    finally:
        server.close()
