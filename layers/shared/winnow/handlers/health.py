"""``GET /health``: liveness, with no provider call."""

from aws_lambda_powertools.event_handler.api_gateway import Router

import winnow
from winnow.api.schemas.common import Health


def routes() -> Router:
    router = Router()

    @router.get("/health", summary="Liveness: no provider calls")
    def health() -> Health:
        return Health(status="ok", version=winnow.__version__)

    return router
