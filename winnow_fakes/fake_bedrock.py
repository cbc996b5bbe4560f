"""A loopback stand-in for the Amazon Bedrock runtime's Converse API, for boto3's ``bedrock-runtime``
client pointed at it with ``endpoint_url``.

The wire (REST-JSON, docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html):
``POST /model/{modelId}/converse`` (the id URL-encoded, SigV4-signed for the ``bedrock`` service) with
``messages``, ``system``, ``inferenceConfig``; the answer is ``{"output": {"message": {"role":
"assistant", "content": [{"text"}]}}, "stopReason", "usage": {"inputTokens", "outputTokens",
"totalTokens"}, "metrics": {"latencyMs"}}``. Errors carry ``x-amzn-ErrorType`` and ``{"message"}``,
which botocore turns into ``ClientError`` codes. A user turn may carry ``image`` blocks (``format``,
``source.bytes``), as a vision model's does; they are checked and logged. The "model" is
``winnow_fakes.fake_model``'s reader."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from winnow_fakes.fake_model import FakeModelServer, Handler, ModelFault, _State

DEFAULT_MODEL_ID = "amazon.nova-lite-v1:0"
ERROR_TYPES = {
    400: "ValidationException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    408: "ModelTimeoutException",
    424: "ModelErrorException",
    429: "ThrottlingException",
    500: "InternalServerException",
    503: "ServiceUnavailableException",
}


class FakeBedrockServer(FakeModelServer):
    """``boto3.client("bedrock-runtime", endpoint_url=fake.url)``; ``fake.models`` are the model ids it
    knows (others get ``ResourceNotFoundException``)."""

    name = "fake-bedrock"

    def __init__(self, models: tuple[str, ...] = (DEFAULT_MODEL_ID,), host: str = "127.0.0.1") -> None:
        super().__init__(host)
        self.models = set(models)

    def converse_requests(self) -> list[Any]:
        return [r for r in self.requests if r.path.endswith("/converse")]

    def model_ids(self) -> list[str]:
        return [unquote(r.path.split("/")[2]) for r in self.converse_requests()]

    def send_fault(self, handler: Handler, fault: ModelFault) -> None:
        error_type = fault.error_type or ERROR_TYPES.get(fault.status, "InternalServerException")
        headers = {"x-amzn-ErrorType": f"{error_type}:http://internal.amazon.com/coral/com.amazon.bedrock/"}
        if fault.retry_after is not None:
            headers["Retry-After"] = fault.retry_after
        handler.send_json(fault.status, {"message": f"fake {error_type}"}, headers)

    def handle(self, handler: Handler, path: str, body: Any, state: _State) -> None:
        parts = path.split("?", 1)[0].split("/")
        if len(parts) != 4 or parts[1] != "model" or parts[3] != "converse":
            self.send_fault(handler, ModelFault("status", status=404, error_type="UnknownOperationException"))
            return
        auth = handler.headers.get("Authorization", "")
        if not auth.startswith("AWS4-HMAC-SHA256") or "/bedrock/aws4_request" not in auth:
            self.send_fault(handler, ModelFault("status", status=403, error_type="AccessDeniedException"))
            return
        model_id = unquote(parts[2])
        if model_id not in self.models:
            self.send_fault(handler, ModelFault("status", status=404, error_type="ResourceNotFoundException"))
            return
        try:
            system = "\n".join(block["text"] for block in body.get("system") or [])
            (message,) = body["messages"]
            user = "\n".join(block["text"] for block in message["content"] if "image" not in block)
            images = [block["image"] for block in message["content"] if "image" in block]
            for image in images:  # Converse's image block: a format and base64 bytes
                if image["format"] not in ("png", "jpeg", "gif", "webp") or not image["source"]["bytes"]:
                    raise ValueError("bad image block")
            max_tokens = int((body.get("inferenceConfig") or {}).get("maxTokens") or 5000)
        except (AttributeError, KeyError, TypeError, ValueError):
            self.send_fault(handler, ModelFault("status", status=400))
            return
        reply = self._reply(state, system, user)
        words = reply.text.split()
        stop = "end_turn"
        text = reply.text
        if len(words) > max_tokens:
            text, stop = " ".join(words[:max_tokens]), "max_tokens"
        output_tokens = min(reply.output_tokens, max_tokens)
        handler.send_json(
            200,
            {
                "output": {"message": {"role": "assistant", "content": [{"text": text}]}},
                "stopReason": stop,
                "usage": {
                    "inputTokens": reply.input_tokens,
                    "outputTokens": output_tokens,
                    "totalTokens": reply.input_tokens + output_tokens,
                },
                "metrics": {"latencyMs": 1},
            },
            {"x-amzn-RequestId": "fake-request"},
        )
