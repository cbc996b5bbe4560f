"""Our own exceptions. Adapters translate SDK and HTTP errors into these, so domain code and handlers
never depend on a provider's error types.

Two families matter to callers:
- ``PermanentError``: retrying cannot help (corrupt file, bad config). Ingest records it and acknowledges.
- ``TransientError``: a provider is down or throttling. Ingest fails the record so SQS retries it;
  search answers 503 with ``Retry-After``.
"""

from __future__ import annotations


class WinnowError(Exception):
    """Base class of every error Winnow raises on purpose."""


class PermanentError(WinnowError):
    """A problem that will not go away by retrying."""


class TransientError(WinnowError):
    """A problem that may go away by retrying later."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


# --- input documents -------------------------------------------------------------------------------
class DocumentError(PermanentError):
    """The document cannot be indexed: the message is the one-line reason stored in the ledger."""


class UnsupportedDocument(DocumentError):
    """Unknown extension, or content that does not match its extension."""


class CorruptDocument(DocumentError):
    """The parser could not read the file."""


class EncryptedDocument(DocumentError):
    """The file is password protected."""


class EmptyDocument(DocumentError):
    """The file has no extractable text."""


class OversizedDocument(DocumentError):
    """The file is over the configured size limit, or is a zip bomb."""


class ParseBudgetExceeded(OversizedDocument):
    """Parsing the file took longer than the time budget or more memory than the memory budget."""


class InvalidKey(DocumentError):
    """The object key cannot be mapped to a tenant and document."""


class InvalidMetadata(DocumentError):
    """User metadata or the sidecar file is malformed."""


# --- providers -------------------------------------------------------------------------------------
class ProviderUnavailable(TransientError):
    """An embedding, re-ranking or vector-store provider is unavailable after retries."""


class ProviderRateLimited(ProviderUnavailable):
    """The provider throttled us (HTTP 429) and retries ran out."""


class ProviderResponseError(ProviderUnavailable):
    """The provider answered with something we cannot use (malformed JSON, wrong vector count)."""


class EnqueueFailed(ProviderUnavailable):
    """Some events could not be put on the ingest queue; ``keys`` names their objects."""

    def __init__(self, message: str, keys: list[str], *, retry_after: float | None = None) -> None:
        super().__init__(message, retry_after=retry_after)
        self.keys = keys


class AnswerModelUnavailable(ProviderUnavailable):
    """The answer model (Bedrock, Ollama) is unavailable after retries: the search itself worked, so the
    caller is told which part failed."""


class ProviderRejected(PermanentError):
    """The provider refused the request itself (HTTP 4xx other than 429): retrying will not help."""


class ObjectGone(WinnowError):
    """The object named by an event no longer exists (deleted between event and read)."""


class DocumentBusy(TransientError):
    """Another worker is indexing the same document right now."""


# --- configuration and requests --------------------------------------------------------------------
class ConfigurationError(PermanentError):
    """Settings are missing or inconsistent (for example a query embedder whose profile differs from
    the collection's)."""


class ProfileMismatch(ConfigurationError):
    """Vectors of one embedding profile were about to meet a collection of another."""


class NotFound(WinnowError):
    """A requested resource does not exist for this tenant."""


class Unauthorized(WinnowError):
    """No tenant could be established from the request's authorizer context."""


class BadRequest(WinnowError):
    """The request is well-formed JSON but asks for something we cannot do."""


class FeatureDisabled(WinnowError):
    """A feature is switched off in this deployment; the message says how to switch it on."""


class QueryRejected(BadRequest):
    """The vector store refused a search itself (say, a filter value of a type its index cannot compare).
    The message holds the provider's detail: for logs, never for the client."""


class MalformedBody(BadRequest):
    """The request body cannot be read as a JSON document: not UTF-8, not JSON, nested too deep, or text
    that is not valid Unicode. The message says what is wrong and what to send."""


class BodyTooLarge(BadRequest):
    """The request body is over the API's size limit."""


class UnsupportedMediaType(BadRequest):
    """The request body is not declared as JSON (``Content-Type``)."""


class Forbidden(WinnowError):
    """The caller is known but may not do this: a claim that is not a valid tenant, user or groups, or a
    change to a document they may not make (the message says what is missing)."""
