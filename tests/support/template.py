"""Reading the SAM stack as CloudFormation would: the template and the sample events, a function's
environment, ``!Sub`` of pseudo parameters and enough of the intrinsic functions for the template's
conditions; ``clean_settings_env`` clears the variables the settings read."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

ROOT = Path(__file__).resolve().parents[2]
EVENTS = ROOT / "events"


def load_template() -> dict[str, Any]:
    """Imports cfn-lint here: this module is a plugin of every test run, and only these tests need it."""
    from cfnlint.decode.cfn_yaml import loads

    return dict(loads((ROOT / "template.yaml").read_text()))


def load_event(name: str) -> dict[str, Any]:
    data = json.loads((EVENTS / name).read_text())
    assert isinstance(data, dict)
    return data


def function_env(template: dict[str, Any], name: str) -> dict[str, Any]:
    """A function's environment as Lambda sees it: Globals merged with its own variables."""
    env = dict(template["Globals"]["Function"].get("Environment", {}).get("Variables", {}))
    env.update(template["Resources"][name]["Properties"].get("Environment", {}).get("Variables", {}))
    return env


PSEUDO = {
    "AWS::Partition": "aws",
    "AWS::Region": "eu-central-1",
    "AWS::AccountId": "123456789012",
    "AWS::StackName": "winnow-dev",
}


def substitute(value: Any) -> str:
    """An ``!Sub`` of pseudo parameters only, as CloudFormation resolves it."""
    assert set(value) == {"Fn::Sub"} and isinstance(value["Fn::Sub"], str), value
    text: str = value["Fn::Sub"]
    for name, resolved in PSEUDO.items():
        text = text.replace("${" + name + "}", resolved)
    assert "${" not in text, text
    return text


NO_VALUE = object()


def evaluate(template: dict[str, Any], value: Any, overrides: dict[str, str] | None = None) -> Any:
    """What CloudFormation makes of ``value`` for the given parameter values (defaults otherwise): enough
    of Ref, Fn::If, Fn::Equals, Fn::Not, Fn::And, Fn::Or, Fn::Split and Fn::Select for the template's
    conditions."""
    overrides = overrides or {}
    params = template["Parameters"]

    def condition(name: str) -> bool:
        return bool(resolve(template["Conditions"][name]))

    def resolve(v: Any) -> Any:
        if isinstance(v, list):
            return [resolve(x) for x in v]
        if not isinstance(v, dict) or len(v) != 1:
            return v
        ((fn, arg),) = v.items()
        if fn == "Ref" and arg == "AWS::NoValue":
            return NO_VALUE
        if fn == "Ref" and arg in params:
            return str(overrides.get(arg, params[arg].get("Default")))
        if fn == "Fn::If":
            name, when_true, when_false = arg
            return resolve(when_true if condition(name) else when_false)
        if fn == "Fn::Equals":
            left, right = (str(resolve(x)) for x in arg)
            return left == right
        if fn == "Fn::Not":
            return not resolve(arg[0])
        if fn == "Fn::And":
            return all(resolve(x) for x in arg)
        if fn == "Fn::Or":
            return any(resolve(x) for x in arg)
        if fn == "Condition":
            return condition(arg)
        if fn == "Fn::Split":
            separator, text = arg
            return str(resolve(text)).split(separator)
        if fn == "Fn::Select":
            index, items = arg
            return resolve(items)[int(index)]

        return v

    return resolve(value)


@pytest.fixture
def clean_settings_env() -> Iterator[None]:
    prefixes = ("WINNOW_", "QDRANT_", "VOYAGE_", "POWERTOOLS_")
    keep = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    with mock.patch.dict(os.environ, keep, clear=True):
        yield
