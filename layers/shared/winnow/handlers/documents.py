"""``GET /documents``, ``GET|DELETE /documents/{key}`` and ``POST /uploads``."""

from typing import Annotated
from urllib.parse import unquote

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse, OpenAPIResponseContentModel

from winnow import documents
from winnow.api.resolver import AUTH_ERRORS, error_response
from winnow.api.schemas.documents import (
    DeleteResponse,
    DocumentsPage,
    DocumentStatusModel,
    UploadRequest,
    UploadResponse,
)
from winnow.factory import get_container


def rights() -> documents.Rights:
    """Who may see and change which documents: asked of the store searches read (access lists live on
    its points), the ledger and the bucket."""
    container = get_container()
    searches = container.search_service()
    deny = searches.settings.default_access == "deny"  # the rule searches apply, from the same settings
    return documents.Rights(
        searches.store, container.ledger, container.objects, deny, container.settings.ingest.max_sidecar_bytes
    )


def routes() -> Router:
    router = Router()

    @router.get(
        "/documents",
        summary="The caller's documents and their ingest status",
        responses={200: OpenAPIResponse(description="A page of documents"), **AUTH_ERRORS},
    )
    def list_documents(
        limit: Annotated[int, Query(ge=1, le=100)] = 50,
        cursor: Annotated[str | None, Query(max_length=2048)] = None,
    ) -> DocumentsPage:
        records, next_cursor = documents.page(rights(), router.context["caller"], limit, cursor)
        return DocumentsPage(
            documents=[DocumentStatusModel.of(r, r.key) for r in records], next_cursor=next_cursor
        )

    @router.get(
        "/documents/<key>",
        summary="One document's ingest status (the key may contain slashes)",
        responses={
            200: OpenAPIResponse(
                description="The document's status; 'pending' while it is in the bucket and not yet indexed"
            ),
            **AUTH_ERRORS,
            404: error_response("Unknown to this tenant"),
        },
    )
    def document_status(key: Annotated[str, Path(min_length=1, max_length=1024)]) -> DocumentStatusModel:
        full_key = documents.full_key(router.context["tenant"], unquote(key))
        record = documents.status(rights(), router.context["caller"], full_key)
        return DocumentStatusModel.of(record, full_key)

    @router.delete(
        "/documents/<key>",
        summary="Delete one document: the object now, its passages when ingest handles the removal",
        responses={
            202: OpenAPIResponse(
                description="The object is deleted; poll GET /documents/{key} for 'deleted'"
            ),
            **AUTH_ERRORS,
            403: error_response("The caller may read the document but not change it: the message says why"),
            404: error_response("Unknown to this tenant, or not readable by the caller"),
        },
    )
    def delete_document(
        key: Annotated[str, Path(min_length=1, max_length=1024)],
    ) -> Response[DeleteResponse]:
        full_key = documents.full_key(router.context["tenant"], unquote(key))
        documents.delete(rights(), router.context["caller"], full_key)
        body = DeleteResponse(key=full_key, status="deleting")
        return Response(202, content_types.APPLICATION_JSON, body)

    @router.post(
        "/uploads",
        summary="A signed form that uploads one file into the caller's tenant, straight to the bucket",
        responses={
            201: OpenAPIResponse(
                description="POST the fields, then the file, as multipart/form-data to url before it expires",
                content={"application/json": OpenAPIResponseContentModel(model=UploadResponse)},
            ),
            400: error_response("The path leaves the tenant, names a sidecar or is too long"),
            **AUTH_ERRORS,
            403: error_response(
                "The caller may not replace this document or grant a group: the message says"
            ),
            422: error_response("Invalid request, with field-level messages"),
        },
    )
    def create_upload(request: UploadRequest) -> Response[UploadResponse]:
        settings = get_container().settings
        signed = documents.sign_upload(
            rights(),
            router.context["caller"],
            request.path,
            content_type=request.content_type,
            metadata=request.metadata,
            access=request.access.as_list() if request.access is not None else None,
            max_bytes=settings.ingest.max_object_bytes,
            expires_in=settings.search.upload_expires_seconds,
        )
        body = UploadResponse(
            key=signed.key, url=signed.form.url, fields=signed.form.fields, expires_in=signed.expires_in
        )
        return Response(201, content_types.APPLICATION_JSON, body)

    return router
