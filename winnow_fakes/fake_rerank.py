"""A loopback stand-in for self-hosted re-ranking servers, as strict as their own sources:

- ``api="tei"``: text-embeddings-inference's ``POST /rerank`` (huggingface/text-embeddings-inference,
  router/src/http/types.rs ``RerankRequest``, router/src/http/server.rs ``rerank``). Body ``{"query":
  str, "texts": [str], "truncate"?: bool|null, "truncation_direction"?: "Left"|"Right", "raw_scores"?:
  bool, "return_text"?: bool}``; unknown fields are ignored (serde without ``deny_unknown_fields``); a
  missing or mistyped field is axum's plain-text 422 "Failed to deserialize the JSON body ..."; a body
  not declared JSON is 415. Empty ``texts`` is 400 ``{"error": "`texts` cannot be empty", "error_type":
  "empty"}``; more than ``--max-client-batch-size`` (default 32) is 422 ``{"error": "batch size N >
  maximum allowed batch size 32", "error_type": "validation"}``; a pair over the model's length with
  ``truncate`` false is 422 "`inputs` must have less than 512 tokens". With ``--api-key`` a wrong or
  missing ``Authorization: Bearer`` is a bare 401. Answer: ``[{"index", "score", "text"?}]`` best first,
  the sigmoid of the model's logit unless ``raw_scores``.
- ``api="cohere"``: the Cohere-style ``POST /v1/rerank`` and ``/rerank`` of Infinity (michaelfeil/infinity,
  fastapi_schemas/pymodels.py ``RerankInput``: pydantic, unknown fields ignored, ``documents`` 1..
  ``INFINITY_MAX_CLIENT_BATCH_SIZE`` (default 2048), ``top_n`` > 0, errors FastAPI's 422 ``{"detail":
  [...]}``, an unknown model 400 ``{"error": {"message", "type", "param", "code"}}``), which vLLM and
  llama.cpp's server share. Answer: ``{"object": "rerank", "results": [{"relevance_score", "index"}],
  "model", "usage", "id", "created"}`` best first, cut at ``top_n``. ``logits=True`` answers raw logits
  as llama.cpp's server does.

Scores come from ``voyage_text.rerank_score`` (the share of the query's terms a document holds) turned
into a logit, so the stand-in orders by meaning the way the tests can predict. Faults queue with
``inject``. Standard library only.
"""

from __future__ import annotations

import json
import math
import threading
from dataclasses import dataclass, field
from typing import Any, Literal

from winnow_fakes.loopback import LoopbackHandler, LoopbackServer
from winnow_fakes.voyage_text import count_tokens, rerank_score

__all__ = ["FakeRerankServer", "RerankFault", "logit_of"]

TEI_MAX_CLIENT_BATCH_SIZE = 32
INFINITY_MAX_CLIENT_BATCH_SIZE = 2048
MAX_INPUT_TOKENS = 512
_TEI_FIELDS: dict[str, type] = {"query": str, "texts": list}
_TEI_OPTIONAL: dict[str, type | tuple[type, ...]] = {
    "truncate": (bool, type(None)),
    "raw_scores": bool,
    "return_text": bool,
}


def logit_of(query: str, document: str) -> float:
    """The stand-in model's raw logit: -6 for no shared term up to +6 for all of the query's terms."""
    return 12.0 * rerank_score(query, document) - 6.0


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


@dataclass(frozen=True)
class RerankFault:
    """One answer instead of the real one: a status (with ``Retry-After`` when given) or bad JSON."""

    status: int = 503
    retry_after: str | None = None
    malformed: bool = False


@dataclass
class RecordedRerank:
    path: str
    authorization: str | None
    body: Any


@dataclass
class _Queue:
    faults: list[RerankFault] = field(default_factory=list)


class FakeRerankServer(LoopbackServer):
    name = "fake-rerank"

    def __init__(
        self,
        api: Literal["tei", "cohere"] = "tei",
        *,
        api_key: str | None = None,
        max_client_batch_size: int | None = None,
        logits: bool = False,
        model_id: str = "BAAI/bge-reranker-base",
    ) -> None:
        super().__init__()
        self.api = api
        self.api_key = api_key
        default_max = TEI_MAX_CLIENT_BATCH_SIZE if api == "tei" else INFINITY_MAX_CLIENT_BATCH_SIZE
        self.max_client_batch_size = max_client_batch_size or default_max
        self.logits = logits
        self.model_id = model_id
        self.requests: list[RecordedRerank] = []
        self._faults = _Queue()
        self._mutex = threading.Lock()

    @property
    def url(self) -> str:
        return f"{self.origin}/rerank" if self.api == "tei" else f"{self.origin}/v1/rerank"

    def inject(self, *faults: RerankFault) -> None:
        with self._mutex:
            self._faults.faults.extend(faults)

    def _next_fault(self) -> RerankFault | None:
        with self._mutex:
            return self._faults.faults.pop(0) if self._faults.faults else None

    def answer(self, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, Any, dict[str, str]]:
        """(status, JSON value or bytes, headers) for one request."""
        paths = ("/rerank",) if self.api == "tei" else ("/rerank", "/v1/rerank")
        if path not in paths:
            return 404, b"", {}
        if self.api_key is not None and headers.get("authorization") != f"Bearer {self.api_key}":
            if self.api == "tei":
                return 401, b"", {}
            return 401, {"detail": "Unauthorized"}, {"WWW-Authenticate": "Bearer"}
        try:
            body = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            body = None
        with self._mutex:
            self.requests.append(RecordedRerank(path, headers.get("authorization"), body))
        fault = self._next_fault()
        if fault is not None:
            if fault.malformed:
                return 200, b"[{not json", {"Content-Type": "application/json"}
            extra = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
            return fault.status, {"error": "Model is overloaded", "error_type": "overloaded"}, extra
        if "application/json" not in headers.get("content-type", ""):
            return 415, b"Expected request with `Content-Type: application/json`", {}
        return self._tei(body) if self.api == "tei" else self._cohere(body)

    def _tei(self, body: Any) -> tuple[int, Any, dict[str, str]]:
        problem = _tei_problem(body)
        if problem:
            return 422, f"Failed to deserialize the JSON body into the target type: {problem}".encode(), {}
        texts: list[str] = body["texts"]
        if not texts:
            return 400, {"error": "`texts` cannot be empty", "error_type": "empty"}, {}
        if len(texts) > self.max_client_batch_size:
            message = f"batch size {len(texts)} > maximum allowed batch size {self.max_client_batch_size}"
            return 422, {"error": message, "error_type": "validation"}, {}
        for text in texts:
            if not text:
                return 400, {"error": "`inputs` cannot be empty", "error_type": "empty"}, {}
            tokens = count_tokens(body["query"]) + count_tokens(text)
            if body.get("truncate") is False and tokens > MAX_INPUT_TOKENS:
                message = f"`inputs` must have less than {MAX_INPUT_TOKENS} tokens. Given: {tokens}"
                return 422, {"error": message, "error_type": "validation"}, {}
        ranks = []
        for index, text in enumerate(texts):
            logit = logit_of(body["query"], text)
            rank: dict[str, Any] = {"index": index}
            if body.get("return_text"):
                rank["text"] = text
            rank["score"] = logit if body.get("raw_scores") else _sigmoid(logit)
            ranks.append(rank)
        ranks.sort(key=lambda r: -r["score"])
        return 200, ranks, {}

    def _cohere(self, body: Any) -> tuple[int, Any, dict[str, str]]:
        errors = _cohere_errors(body, self.max_client_batch_size)
        if errors:
            return 422, {"detail": errors}, {}
        model = body.get("model", "default/not-specified")
        if model not in ("default/not-specified", self.model_id):
            message = f"ModelNotDeployedError: model=`{model}` does not support `rerank`."
            return 400, {"error": {"message": message, "type": None, "param": None, "code": 400}}, {}
        query = body["query"].strip()
        results = []
        for index, document in enumerate(body["documents"]):
            logit = logit_of(query, document.strip())
            score = logit if (self.logits or body.get("raw_scores")) else _sigmoid(logit)
            results.append({"relevance_score": score, "index": index})
        results.sort(key=lambda r: -r["relevance_score"])
        if body.get("top_n") is not None:
            results = results[: body["top_n"]]
        tokens = sum(count_tokens(query) + count_tokens(d) for d in body["documents"])
        return (
            200,
            {
                "object": "rerank",
                "results": results,
                "model": self.model_id,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
                "id": "infinity-fake",
                "created": 0,
            },
            {},
        )


def _tei_problem(body: Any) -> str | None:
    if not isinstance(body, dict):
        return "invalid type: expected struct RerankRequest"
    for name, kind in _TEI_FIELDS.items():
        if name not in body:
            return f"missing field `{name}`"
        if not isinstance(body[name], kind):
            return f"{name}: invalid type"
    if not all(isinstance(t, str) for t in body["texts"]):
        return "texts: invalid type: expected a string"
    for name, kinds in _TEI_OPTIONAL.items():
        if name in body and not isinstance(body[name], kinds):
            return f"{name}: invalid type"
    if body.get("truncation_direction", "Right") not in ("Left", "Right"):
        return "truncation_direction: unknown variant"
    return None


def _cohere_errors(body: Any, max_documents: int) -> list[dict[str, Any]]:
    """FastAPI/pydantic's 422 items for ``RerankInput``."""
    if not isinstance(body, dict):
        return [{"type": "model_attributes_type", "loc": ["body"], "msg": "Input should be an object"}]
    errors: list[dict[str, Any]] = []

    def fail(loc: str, kind: str, msg: str) -> None:
        errors.append({"type": kind, "loc": ["body", loc], "msg": msg})

    if not isinstance(body.get("query"), str):
        fail("query", "missing" if "query" not in body else "string_type", "Field required")
    documents = body.get("documents")
    if not isinstance(documents, list) or not all(isinstance(d, str) for d in documents):
        fail("documents", "list_type", "Input should be a valid list of strings")
    elif not 1 <= len(documents) <= max_documents:
        fail(
            "documents",
            "too_short" if not documents else "too_long",
            f"List should have 1 to {max_documents} items",
        )
    top_n = body.get("top_n")
    if top_n is not None and (type(top_n) is not int or top_n <= 0):
        fail("top_n", "greater_than", "Input should be greater than 0")
    for name in ("return_documents", "raw_scores"):
        if name in body and not isinstance(body[name], bool):
            fail(name, "bool_type", "Input should be a valid boolean")
    if "model" in body and not isinstance(body["model"], str):
        fail("model", "string_type", "Input should be a valid string")
    return errors


class _Handler(LoopbackHandler):
    def do_POST(self) -> None:
        raw = self.read_body()
        headers = {k.lower(): v for k, v in self.headers.items()}
        status, payload, extra = self.fake.answer(self.path, headers, raw)
        if isinstance(payload, bytes):
            kind = extra.pop("Content-Type", "text/plain; charset=utf-8")
            self.send_raw(status, payload, {"Content-Type": kind, **extra})
        else:
            self.send_json(status, payload, extra)


FakeRerankServer.handler = _Handler
