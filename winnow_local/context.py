"""A stand-in for the Lambda context object, so the real handlers (which Powertools decorates with
``inject_lambda_context``) run unchanged outside Lambda."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field


@dataclass
class LocalLambdaContext:
    function_name: str = "winnow-local"
    function_version: str = "$LATEST"
    memory_limit_in_mb: int = 1024
    invoked_function_arn: str = "arn:aws:lambda:local:000000000000:function:winnow-local"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    log_group_name: str = "/aws/lambda/winnow-local"
    log_stream_name: str = "local"

    def get_remaining_time_in_millis(self) -> int:
        return 900_000
