"""A request the schemas refuse is answered in sentences (lifecycle/api/validation.py): the public
pages' sentence and its own type for a bad e-mail or login, a ``loc`` a client can use, and never a
regular expression."""

import json
import re

import pytest

from lifecycle.api.site import api as ninja_api
from tokens.forms import SignUpForm

pytestmark = pytest.mark.django_db

SCHEMA = ninja_api.get_openapi_schema(path_prefix="/api/v1/")
PREFIX = "/api/v1"


def problem(response) -> dict:
    assert response["Content-Type"] == "application/problem+json", response.content
    return response.json()


def page_sentence(**fields) -> str:
    """What the sign-up page says of this e-mail or login."""
    form = SignUpForm({"email": "ada@example.com", "login": "ada", **fields})
    form.is_valid()
    [field] = fields
    [sentence] = form.errors[field]
    return sentence


@pytest.mark.parametrize(
    ("field", "value", "kind"),
    [
        ("email", "=?utf-8?q?a=0D=0Ab?=@example.com", "invalid-email"),
        ("email", "dee@exämple.com", "invalid-email"),
        ("login", "has@sign", "invalid-login"),
        ("login", "-dee", "invalid-login"),
    ],
)
def test_a_bad_email_or_login_is_the_public_pages_sentence_its_field_and_its_type(api, field, value, kind):
    body = {"email": "ada@example.com", "login": "ada", field: value}
    answer = problem(api.post("/accounts", body))
    assert answer["type"] == f"/api/v1/problems/{kind}" and answer["status"] == 422
    assert answer["detail"] == page_sentence(**{field: value})
    assert answer["field"] == field
    assert [(error["in"], error["loc"], error["msg"]) for error in answer["errors"]] == [
        ("body", [field], answer["detail"])
    ]


@pytest.mark.parametrize(
    ("field", "value", "kind", "sentence"),
    [
        ("email", "not-an-address", "invalid-email", "E-mail is not a valid address (name@example.com)."),
        ("login", "d\x00", "invalid-login", "Login must not hold a NUL character."),
        ("login", 5, "invalid-login", "Login must be a string."),
        ("email", "", "invalid-email", "E-mail must not be empty."),
    ],
)
def test_what_the_schema_refuses_in_an_email_or_login_has_their_types_too(api, field, value, kind, sentence):
    answer = problem(api.post("/accounts", {"email": "ada@example.com", "login": "ada", field: value}))
    assert (answer["type"], answer["detail"], answer["field"]) == (f"/api/v1/problems/{kind}", sentence, field)
    assert answer["errors"][0]["loc"] == [field]


@pytest.mark.parametrize(
    ("body", "sentence", "loc"),
    [
        ({"email": "ada@example.com"}, "login is required.", ["login"]),
        (
            {"email": "ada@example.com", "login": "ada", "admin": True},
            "admin is not a field this operation takes.",
            ["admin"],
        ),
    ],
)
def test_any_other_refusal_is_validation_failed_with_a_sentence_per_field(api, body, sentence, loc):
    answer = problem(api.post("/accounts", body))
    assert answer["type"] == "/api/v1/problems/validation-failed"
    assert answer["detail"] == sentence
    assert [(error["in"], error["loc"]) for error in answer["errors"]] == [("body", loc)]


def test_a_path_and_a_body_refused_together_each_say_where(api):
    answer = problem(api.put("/services/Bad Name/accounts/0/node", {"client_state": "XYZ"}))
    assert [(error["in"], error["loc"]) for error in answer["errors"]] == [
        ("path", ["service"]),
        ("path", ["account_id"]),
        ("body", ["client_state"]),
    ]
    assert answer["errors"][1]["msg"] == "account_id must be at least 1."


# Every constraint the OpenAPI schema states on a parameter or a body field, and a value that breaks it.


def _constraints(schema: dict) -> list[tuple[str, object]]:
    members = schema.get("anyOf", [schema])
    return [
        (key, member[key])
        for member in members
        for key in ("pattern", "minLength", "maxLength", "minimum", "maximum")
        if key in member
    ]


def _breaking(constraint: str, limit, schema: dict):
    if constraint == "minimum":
        return limit - 1
    if constraint == "maximum":
        return limit + 1
    if constraint == "maxLength":
        return "a" * (limit + 1)
    if constraint == "minLength":
        return ""
    return next(value for value in (" ", "!!", "A B", "\u00e9") if not re.search(limit, value))


def constrained_fields():
    bodies = {name: component for name, component in SCHEMA["components"]["schemas"].items()}
    for path, operations in SCHEMA["paths"].items():
        for method, operation in operations.items():
            fields = [(p["in"], p["name"], p["schema"]) for p in operation.get("parameters", [])]
            body = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
            if body:
                component = bodies[body["$ref"].rsplit("/", 1)[1]]
                fields += [("body", name, field) for name, field in component["properties"].items()]
            for where, name, field in fields:
                for constraint, limit in _constraints(field):
                    if where == "path" and constraint == "minLength":
                        continue  # an empty path segment is another URL (404)
                    yield pytest.param(
                        method,
                        path,
                        where,
                        name,
                        _breaking(constraint, limit, field),
                        id=f"{method} {path} {name} {constraint}",
                    )


VALID = {
    "body": {
        "/api/v1/accounts": {"email": "ada@example.com", "login": "ada"},
        "/api/v1/sessions": {"identifier": "ada", "password": "a long passphrase"},
        "suspend": {"reason": "chargeback"},
    },
    "path": {"account_id": "1", "service": "sync-1.5"},
}


def _patterns(node) -> set[str]:
    if isinstance(node, dict):
        found = {node["pattern"]} if isinstance(node.get("pattern"), str) else set()
        return found.union(*(_patterns(value) for value in node.values()))
    if isinstance(node, list):
        return set().union(*(_patterns(value) for value in node))
    return set()


EVERY_PATTERN = _patterns(SCHEMA)


def send(api, method: str, path: str, where: str, name: str, value):
    path_values = {**VALID["path"], **({name: str(value)} if where == "path" else {})}
    url = path.format(**path_values).removeprefix(PREFIX)
    body = next((v for k, v in VALID["body"].items() if path.endswith(k)), {})
    if where == "body":
        body = {**body, name: value}
    if method == "get":
        return api.get(url, **({name: value} if where == "query" else {}))
    if method == "put":
        return api.put(url, body)
    return api.post(url, body, key=value if where == "header" else "new")


@pytest.mark.parametrize(("method", "path", "where", "name", "value"), list(constrained_fields()))
def test_no_validation_answer_quotes_a_pattern(api, method, path, where, name, value):
    """Every constrained field of every operation, broken: a refusal in sentences naming where, and
    no regular expression in it."""
    response = send(api, method, path, where, name, value)
    assert 400 <= response.status_code < 500, response.content
    text = response.content.decode()
    for pattern in EVERY_PATTERN:
        assert pattern not in text and json.dumps(pattern)[1:-1] not in text, (pattern, text)
    assert "should match pattern" not in text and "String should" not in text
    assert "is not in the form the OpenAPI schema gives" not in text  # each pattern has its sentence
    answer = problem(response)
    for error in answer.get("errors", []):
        assert error["loc"] and error["loc"][0] not in ("body", "path", "query"), error
        assert error["msg"].endswith(".") and error["msg"].count(". ") == 0, error
