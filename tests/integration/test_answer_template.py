"""The stack's side of ``POST /answer``: the route, the switch, the model parameter, and a policy that lets
the search function invoke that one model in its own Region and nothing else."""

from __future__ import annotations

import fnmatch
import json
import os
import re
from unittest import mock

import pytest

from tests.support.template import (
    PSEUDO,
    evaluate,
    function_env,
    load_template,
    substitute,
)
from winnow.settings import AnswerSettings


def answer_statements(overrides: dict[str, str] | None = None) -> list[dict[str, object]]:
    t = load_template()
    policies = evaluate(t, t["Resources"]["SearchFunction"]["Properties"]["Policies"], overrides)
    statements = [s for p in policies if isinstance(p, dict) and "Statement" in p for s in p["Statement"]]
    # The search function's other statements (the document routes' S3 actions) are test_template.py's.
    return [s for s in statements if "bedrock:" in json.dumps(s["Action"])]


def test_answer_route_is_a_jwt_protected_post() -> None:
    events = load_template()["Resources"]["SearchFunction"]["Properties"]["Events"]
    (route,) = [e["Properties"] for e in events.values() if e["Properties"]["Path"] == "/answer"]
    assert route["Method"] == "POST" and "Auth" not in route  # the default JWT authorizer applies


def test_model_parameter_defaults_to_a_model_invoked_in_region_and_rejects_profiles() -> None:
    param = load_template()["Parameters"]["BedrockModelId"]
    assert param["Default"] == "amazon.nova-lite-v1:0"
    pattern = re.compile(param["AllowedPattern"])
    for ok in ("amazon.nova-lite-v1:0", "anthropic.claude-3-haiku-20240307-v1:0", "amazon.nova-pro-v1:0"):
        assert pattern.fullmatch(ok), ok
    for bad in ("us.amazon.nova-lite-v1:0", "global.anthropic.claude-haiku-4-5", "", "nova lite", "*"):
        assert not pattern.fullmatch(bad), bad


def test_search_may_invoke_the_configured_model_only_and_nothing_when_answers_are_off() -> None:
    # Given the default parameters, then one statement allows bedrock:InvokeModel on that model
    (statement,) = answer_statements()
    assert statement["Effect"] == "Allow" and statement["Action"] == "bedrock:InvokeModel"
    resource = statement["Resource"]
    model = load_template()["Parameters"]["BedrockModelId"]["Default"]
    text = substitute({"Fn::Sub": resource["Fn::Sub"].replace("${BedrockModelId}", model)})  # type: ignore[index]
    region = PSEUDO["AWS::Region"]

    def allowed(arn: str) -> bool:
        return fnmatch.fnmatchcase(arn, text)

    assert allowed(f"arn:aws:bedrock:{region}::foundation-model/{model}")
    for other in (
        f"arn:aws:bedrock:{region}::foundation-model/amazon.nova-pro-v1:0",
        f"arn:aws:bedrock:{region}::foundation-model/{model}-x",
        f"arn:aws:bedrock:us-east-1::foundation-model/{model}" if region != "us-east-1" else "x",
        f"arn:aws:bedrock:{region}:123456789012:inference-profile/us.{model}",
    ):
        assert not allowed(other), other
    # And with answers switched off there is no Bedrock permission at all
    assert answer_statements({"AnswerGenerator": "none"}) == []


@pytest.mark.parametrize(("generator", "chosen"), [("bedrock", "bedrock"), ("none", "none")])
def test_search_environment_selects_the_generator_the_parameter_names(generator: str, chosen: str) -> None:
    t = load_template()
    env = function_env(t, "SearchFunction")
    values = {
        "WINNOW_ANSWER_GENERATOR": generator,
        "WINNOW_ANSWER_BEDROCK_MODEL_ID": t["Parameters"]["BedrockModelId"]["Default"],
    }
    for name, value in env.items():
        if name.startswith("WINNOW_ANSWER_") and isinstance(value, str):
            values[name] = value
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("WINNOW_", "OLLAMA_"))}
    with mock.patch.dict(os.environ, {**keep, **values}, clear=True):
        settings = AnswerSettings()
    assert settings.chosen == chosen
    # One model attempt fits in the search function's shortest timeout with the search path's worst case
    # excluded: the handler starts an attempt only when its whole timeout is left (see test_answer_handler).
    shortest = t["Parameters"]["SearchTimeoutSeconds"]["MinValue"]
    assert settings.timeout_seconds + 1.5 < shortest
    for name in ("IngestFunction", "ReconcileFunction"):
        assert not any(k.startswith("WINNOW_ANSWER_") for k in function_env(t, name)), name


@pytest.mark.usefixtures("clean_settings_env")
def test_answer_event_parses_matches_its_route_and_its_body_is_a_valid_answer_request() -> None:
    """The sample event is a JWT-authorized ``POST /answer`` whose body follows the contract; through the
    real handler with answers switched off it gets the 501 that says how to switch them on, before any
    embedder or store is built."""
    from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2

    from functions.search import app as search_app
    from tests.support.template import load_event
    from winnow.api.schemas.answer import AnswerRequest
    from winnow.factory import Container, Settings, set_container
    from winnow_local.context import LocalLambdaContext

    raw = load_event("api-answer.json")
    event = APIGatewayProxyEventV2(raw)
    assert event.route_key == "POST /answer" and event.request_context.http.method == "POST"
    assert event.request_context.authorizer.jwt_claim["tenant"] == "acme"
    request = AnswerRequest.model_validate_json(raw["body"])
    assert request.query and request.max_answer_tokens == 300

    container = Container(Settings(answer=AnswerSettings(generator="none")))
    set_container(container)
    try:
        response = search_app.handler(raw, LocalLambdaContext())
    finally:
        set_container(None)
    assert response["statusCode"] == 501
    assert "AnswerGenerator=bedrock" in response["body"]
    assert "embedder" not in container.__dict__ and "store" not in container.__dict__
