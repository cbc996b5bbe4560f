"""Search Lambda: HTTP API (payload v2) → Powertools resolver → the routes of ``winnow.handlers``.

The handler only resolves: the tenant (from the authorizer only), the correlation id and the body checks
run first in ``guarded`` (``winnow.api.resolver``), so a request without a tenant is answered 401 before
any validation, embedding or Qdrant call; every failure is answered through one table of exception
families, with a correlation id and never a stack trace."""

import json
from typing import Any

from winnow.coldstart import building_long_lived_objects, freeze_long_lived

# What these imports build (Powertools, pydantic models, settings) lives as long as the container:
# imported without cyclic-GC passes, then frozen (see winnow.coldstart).
with building_long_lived_objects():
    from aws_lambda_powertools.utilities.typing import LambdaContext

    import winnow
    from winnow.api.resolver import guarded, resolver
    from winnow.factory import Container, build_at_init, get_container
    from winnow.handlers import documents, health, memory, search
    from winnow.handlers.search import service
    from winnow.observability import logger, metrics, tracer
    from winnow.settings import SearchSettings

__all__ = ["app", "handler", "openapi_json", "service"]


def _settings() -> SearchSettings:
    return get_container().settings.search


app = resolver(_settings)
for group in (search, documents, memory, health):
    app.include_router(group.routes())


@app.get("/openapi.json", include_in_schema=False)
def openapi() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(openapi_json())
    return document


def openapi_json() -> str:
    return app.get_openapi_json_schema(title="Winnow search API", version=winnow.__version__)


@metrics.log_metrics
@tracer.capture_lambda_handler
@logger.inject_lambda_context(correlation_id_path="requestContext.requestId")
@guarded(app, _settings)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)


def _prepare(container: Container) -> None:
    """What every request needs, built at init in Lambda (``build_at_init``): the search service (qdrant-
    client, the Qdrant and Voyage clients, their keys), and the ledger and bucket clients."""
    container.search_service()
    _ = container.ledger, container.objects


build_at_init(_prepare)

# The modules, routes and models imported above live as long as the container (see winnow.coldstart).
freeze_long_lived()

if __name__ == "__main__":  # print the OpenAPI document: python -m functions.search.app
    print(json.dumps(json.loads(openapi_json()), indent=2, sort_keys=True))
