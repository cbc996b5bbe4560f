"""A loopback stand-in for Ollama's chat API (``POST /api/chat`` with ``stream: false``), as described in
github.com/ollama/ollama docs/api.md: the answer is ``{"model", "created_at", "message": {"role":
"assistant", "content"}, "done": true, "done_reason", "prompt_eval_count", "eval_count", ...}``; errors
are ``{"error": "..."}`` (404 for a model that is not pulled). The "model" is
``winnow_fakes.fake_model``'s reader."""

from __future__ import annotations

from typing import Any

from winnow_fakes.fake_model import FakeModelServer, Handler, ModelFault, _State

DEFAULT_MODEL = "llama3.2"


class FakeOllamaServer(FakeModelServer):
    """``OLLAMA_HOST=fake.url``; ``fake.models`` are the models "pulled" (others get 404)."""

    name = "fake-ollama"

    def __init__(self, models: tuple[str, ...] = (DEFAULT_MODEL,), host: str = "127.0.0.1") -> None:
        super().__init__(host)
        self.models = set(models)

    def chat_requests(self) -> list[Any]:
        return [r for r in self.requests if r.path == "/api/chat"]

    def send_fault(self, handler: Handler, fault: ModelFault) -> None:
        headers = {} if fault.retry_after is None else {"Retry-After": fault.retry_after}
        handler.send_json(fault.status, {"error": f"fake error {fault.status}"}, headers)

    def handle(self, handler: Handler, path: str, body: Any, state: _State) -> None:
        if path != "/api/chat":
            handler.send_json(404, {"error": "404 page not found"})
            return
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            handler.send_json(400, {"error": "invalid request"})
            return
        model = body.get("model")
        if model not in self.models:
            handler.send_json(404, {"error": f'model "{model}" not found, try pulling it first'})
            return
        system = "\n".join(m["content"] for m in body["messages"] if m.get("role") == "system")
        user = "\n".join(m["content"] for m in body["messages"] if m.get("role") == "user")
        reply = self._reply(state, system, user)
        handler.send_json(
            200,
            {
                "model": model,
                "created_at": "2026-01-01T00:00:00Z",
                "message": {"role": "assistant", "content": reply.text},
                "done": True,
                "done_reason": "stop",
                "total_duration": 1000,
                "prompt_eval_count": reply.input_tokens,
                "eval_count": reply.output_tokens,
            },
        )
