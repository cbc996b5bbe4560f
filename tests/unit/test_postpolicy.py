"""The POST-policy rules ``winnow serve`` and the S3 test gate share: what a policy checks is what the
form stores (issue 31), whatever the case of the field names."""

from __future__ import annotations

import base64
import json

from winnow.postpolicy import decode_policy, encode_policy, policy_problem, signed_object

FIELDS = {"key": "eve/legit2.txt", "Content-Type": "text/plain", "x-amz-meta-team": "a"}


def policy(conditions: list[object]) -> dict[str, object]:
    return decode_policy(encode_policy(conditions, 60))


def signed_for(fields: dict[str, str]) -> dict[str, object]:
    return policy([*({n: v} for n, v in fields.items()), ["content-length-range", 1, 100]])


def test_the_form_as_signed_keeps_its_policy_and_stores_what_was_checked() -> None:
    assert policy_problem(signed_for(FIELDS), FIELDS, 10) is None
    stored = signed_object(FIELDS)
    assert (stored.key, stored.content_type, stored.metadata) == (
        "eve/legit2.txt",
        "text/plain",
        {"team": "a"},
    )


def test_a_field_named_twice_in_another_case_keeps_no_policy() -> None:
    for name, value in (
        ("KEY", "victim/secret.txt"),
        ("content-type", "application/pdf"),
        ("X-Amz-Meta-Team", "b"),
    ):
        # Given the signed fields plus the same name in another case, in either order
        for fields in ({name: value, **FIELDS}, {**FIELDS, name: value}):
            problem = policy_problem(signed_for(FIELDS), fields, 10)
            assert problem is not None and "twice" in problem, (name, problem)


def test_a_policy_that_does_not_pin_the_key_is_refused() -> None:
    loose = policy([["starts-with", "$key", "eve/"], {"Content-Type": "text/plain"}])
    problem = policy_problem(loose, {"key": "eve/x.txt", "Content-Type": "text/plain"}, 1)
    assert problem is not None and "exact key" in problem
    document = json.loads(base64.b64decode(encode_policy([["eq", "$key", "eve/x.txt"]], 60)))
    assert policy_problem(document, {"key": "eve/x.txt"}, 1) is None
