"""Contract check: the official ``voyageai`` SDK and our REST adapter, run against the same fake Voyage
server, send requests the server accepts and read the same numbers out of its answers. If our adapter
drifted from Voyage's wire format (field names, base64 encoding, ordering, error shape), one side would
disagree with the other here."""

from __future__ import annotations

import warnings

import httpx
import pytest

from winnow.adapters.voyage import VoyageEmbedder, VoyageReranker
from winnow.errors import ProviderRateLimited, ProviderRejected, ProviderResponseError, ProviderUnavailable
from winnow.settings import VoyageSettings
from winnow_fakes.fake_voyage import FakeVoyageServer, Fault

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # the SDK's optional dependencies warn on import
    import voyageai
    import voyageai.error

TEXTS = [
    "Mitochondria produce most of the cell's energy.",
    "The mitochondrial membrane potential drives ATP synthesis.",
    "Vaccines train the immune system to recognise pathogens.",
    "Rivers carry sediment to the sea.",
]
QUERY = "how do mitochondria make energy"


@pytest.fixture
def sdk(fake_voyage: FakeVoyageServer) -> voyageai.Client:
    return voyageai.Client(api_key=fake_voyage.api_key, base_url=fake_voyage.base_url, max_retries=0)


@pytest.fixture
def settings(voyage_settings: VoyageSettings) -> VoyageSettings:
    return voyage_settings.model_copy(update={"max_attempts": 1})


@pytest.mark.parametrize("dimension", [256, 1024])
@pytest.mark.parametrize("input_type", ["document", "query"])
def test_sdk_and_adapter_read_the_same_embeddings(
    fake_voyage: FakeVoyageServer,
    sdk: voyageai.Client,
    settings: VoyageSettings,
    dimension: int,
    input_type: str,
) -> None:
    # Given the same texts sent by the SDK and by our adapter
    sdk_result = sdk.embed(TEXTS, model="voyage-3.5", input_type=input_type, output_dimension=dimension)
    ours = VoyageEmbedder(settings.model_copy(update={"output_dimension": dimension}), fake_voyage.api_key)
    vectors = ours.embed(TEXTS, input_type)  # type: ignore[arg-type]
    # Then both read identical vectors of the requested size
    assert sdk_result.embeddings == vectors
    assert {len(v) for v in vectors} == {dimension}
    # And both requests were accepted with the same field names for the same meaning
    sdk_body, our_body = (r.body for r in fake_voyage.requests_to("embeddings"))
    assert set(our_body) <= set(sdk_body)
    for field in ("input", "model", "input_type", "output_dimension", "truncation", "encoding_format"):
        assert our_body[field] == sdk_body[field], field
    assert [r.status for r in fake_voyage.requests] == [200, 200]


def test_float_list_answers_read_the_same_as_base64(
    fake_voyage: FakeVoyageServer, sdk: voyageai.Client
) -> None:
    # Given the documented float-list answer (no encoding_format) and the SDK's default base64 answer
    plain = httpx.post(
        f"{fake_voyage.base_url}/embeddings",
        json={"input": TEXTS, "model": "voyage-3.5", "input_type": "document"},
        headers={"Authorization": f"Bearer {fake_voyage.api_key}"},
    ).json()
    packed = sdk.embed(TEXTS, model="voyage-3.5", input_type="document")
    # Then the numbers are the same, so the adapter may read either encoding
    assert [item["embedding"] for item in plain["data"]] == packed.embeddings
    assert packed.total_tokens == plain["usage"]["total_tokens"] > 0


@pytest.mark.parametrize("top_k", [None, 2])
def test_sdk_and_adapter_read_the_same_rerank_scores(
    fake_voyage: FakeVoyageServer, sdk: voyageai.Client, settings: VoyageSettings, top_k: int | None
) -> None:
    # Given the same query and documents re-ranked through the SDK and through our adapter
    sdk_result = sdk.rerank(QUERY, TEXTS, model="rerank-2.5", top_k=top_k)
    scores = VoyageReranker(settings, fake_voyage.api_key).rerank(QUERY, TEXTS, top_k=top_k)
    # Then both see the same indexes and relevance scores in the same order
    assert [(r.index, r.relevance_score) for r in sdk_result.results] == [(s.index, s.score) for s in scores]
    assert [r.document for r in sdk_result.results] == [TEXTS[s.index] for s in scores]
    assert scores[0].index in (0, 1)
    sdk_body, our_body = (r.body for r in fake_voyage.requests_to("rerank"))
    for field in ("query", "documents", "model", "top_k", "truncation"):
        assert our_body[field] == sdk_body[field], field


FAULTS = {
    "429": (Fault.rate_limited(retry_after=1), voyageai.error.RateLimitError, ProviderRateLimited),
    "503": (Fault.unavailable(), voyageai.error.ServiceUnavailableError, ProviderUnavailable),
    "500": (Fault.server_error(500), voyageai.error.ServerError, ProviderUnavailable),
    "401": (Fault.http_status(401), voyageai.error.AuthenticationError, ProviderRejected),
    "400": (Fault.http_status(400), voyageai.error.InvalidRequestError, ProviderRejected),
    "malformed JSON": (Fault.malformed_json(), voyageai.error.APIError, ProviderResponseError),
}


@pytest.mark.parametrize(("fault", "sdk_error", "our_error"), FAULTS.values(), ids=FAULTS.keys())
def test_sdk_and_adapter_classify_the_same_faults_alike(
    fake_voyage: FakeVoyageServer,
    sdk: voyageai.Client,
    settings: VoyageSettings,
    fault: Fault,
    sdk_error: type[Exception],
    our_error: type[Exception],
) -> None:
    # Given a fault answered once to the SDK and once to our adapter
    fake_voyage.inject(fault, fault)
    # Then the SDK raises its own matching error class and we raise ours
    with pytest.raises(sdk_error):
        sdk.embed(["a text"], model="voyage-3.5", input_type="document")
    with pytest.raises(our_error):
        VoyageEmbedder(settings, fake_voyage.api_key).embed(["a text"], "document")
    assert fake_voyage.total_requests == 2


def test_the_fake_checks_the_bearer_key_for_the_sdk_too(fake_voyage: FakeVoyageServer) -> None:
    # Given an SDK client with the wrong key; Then the fake answers 401 like Voyage does
    wrong = voyageai.Client(api_key="not-the-key", base_url=fake_voyage.base_url, max_retries=0)
    with pytest.raises(voyageai.error.AuthenticationError):
        wrong.embed(["a text"], model="voyage-3.5")
    assert fake_voyage.requests[0].status == 401


def test_atlas_keys_are_routed_where_the_sdk_routes_them() -> None:
    # The SDK picks the endpoint from the key (voyageai/util.py); so does our adapter
    from voyageai.util import get_default_base_url

    from winnow.adapters.voyage_models import base_url_for

    for key in ("al-atlas-issued-key", "pa-voyage-issued-key", "anything-else"):
        assert base_url_for(key) == get_default_base_url(key)


def test_a_request_over_the_models_tokens_is_a_bad_request_for_both(
    fake_voyage: FakeVoyageServer, sdk: voyageai.Client, settings: VoyageSettings
) -> None:
    # Given texts over voyage-3-large's 120K tokens per request, sent in one request by the SDK
    texts = ["z" * 30_000] * 5
    with pytest.raises(voyageai.error.InvalidRequestError, match="max allowed tokens per submitted batch"):
        sdk.embed(texts, model="voyage-3-large", input_type="document")
    # Then our adapter, told it may send 320K, is refused the same way and splits until it fits
    ours = VoyageEmbedder(
        settings.model_copy(update={"embed_model": "voyage-3-large", "max_batch_tokens": 320_000}),
        fake_voyage.api_key,
    )
    assert len(ours.embed(texts, "document")) == 5
    assert [r.status for r in fake_voyage.requests_to("embeddings")][:2] == [400, 400]


def test_settings_aimed_at_the_loopback_fake_outlast_a_loaded_machine(
    fake_voyage: FakeVoyageServer, settings: VoyageSettings
) -> None:
    """A 2 s read timeout failed the test above once with three workers and other work on two cores
    (ReadTimeout from a fake that answers at once): both ways tests aim settings at the fake leave room."""
    from tests.support.stack import voyage_settings as stack_settings
    from tests.support.voyage import LOOPBACK_TIMEOUT_SECONDS

    assert LOOPBACK_TIMEOUT_SECONDS >= 30
    assert settings.timeout_seconds == stack_settings(fake_voyage).timeout_seconds == LOOPBACK_TIMEOUT_SECONDS
