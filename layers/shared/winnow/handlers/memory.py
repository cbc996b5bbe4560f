"""``GET|DELETE /memory`` and ``DELETE /conversations/{id}``: a user's memory and conversations."""

from typing import Annotated

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Path
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse

from winnow.api.resolver import AUTH_ERRORS, error_response
from winnow.api.schemas.memory import ConversationDeleted, Forgotten, MemoryItem, MemoryList
from winnow.factory import get_container
from winnow.rules import CONVERSATION_ID_RULE

_USER_ONLY = {400: error_response("The caller has no user id: memory and conversations are per user")}


def routes() -> Router:
    router = Router()

    @router.get(
        "/memory",
        summary="The caller's long-term memory: the exchanges /answer recalls (newest first)",
        responses={200: OpenAPIResponse(description="The memories"), **_USER_ONLY, **AUTH_ERRORS},
    )
    def list_memory() -> MemoryList:
        memories = get_container().conversation_service().memories(router.context["caller"])
        return MemoryList(
            memories=[
                MemoryItem(
                    id=m.id, conversation_id=m.conversation_id, question=m.question, answer=m.answer, at=m.at
                )
                for m in memories
            ]
        )

    @router.delete(
        "/memory",
        summary="Forget the caller for good: every memory and every conversation turn",
        responses={200: OpenAPIResponse(description="How many items went"), **_USER_ONLY, **AUTH_ERRORS},
    )
    def forget_memory() -> Forgotten:
        return Forgotten(deleted=get_container().conversation_service().forget(router.context["caller"]))

    @router.delete(
        "/conversations/<conversation_id>",
        summary="Delete one conversation for good: its turns and the memories made from it",
        responses={
            200: OpenAPIResponse(description="Deleted"),
            **_USER_ONLY,
            **AUTH_ERRORS,
            404: error_response("Not one of this user's conversations"),
        },
    )
    def delete_conversation(
        conversation_id: Annotated[
            str, Path(pattern=r"^[A-Za-z0-9_-]{8,64}$", description=f"The id: {CONVERSATION_ID_RULE}")
        ],
    ) -> ConversationDeleted:
        get_container().conversation_service().delete(router.context["caller"], conversation_id)
        return ConversationDeleted(conversation_id=conversation_id, status="deleted")

    return router
