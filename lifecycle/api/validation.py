"""A request the schemas refuse, as one problem: each error a sentence a person can read (never a
regular expression, never the value sent) and the field as a client names it (``["email"]``, not
ninja's ``["body", "body", "email"]``).

A provisioned account's e-mail and login are judged by the database's address rules in the view,
with the public pages' sentences (422 ``invalid-email``, ``invalid-login``); what the schema itself
refuses in them (text PostgreSQL cannot hold) is answered with those types too.
"""

from ninja.errors import ValidationError

from lifecycle.api.schemas import PATTERN_SENTENCES
from platform_events.api.problems import Problem

# Body fields whose refusal has a problem type of its own, and the name the sentence gives them.
FIELD_PROBLEMS = {"email": ("invalid-email", "E-mail"), "login": ("invalid-login", "Login")}


def validation_problem(error: ValidationError) -> Problem:
    errors = [_error(item) for item in error.errors]
    if not errors:
        return Problem("validation-failed", "The request is not valid.", errors=[])
    first = errors[0]
    own = FIELD_PROBLEMS.get(first["field"]) if first["in"] == "body" and first["type"] != "missing" else None
    if own is not None and len(errors) == 1:
        slug, label = own
        first["msg"] = f"{label} {first['msg'].removeprefix(first['field'] + ' ')}"
        return Problem(slug, first["msg"], field=first["field"], errors=errors)
    detail = " ".join(item["msg"] for item in errors[:5])
    return Problem("validation-failed", detail, errors=errors)


def _error(item: dict) -> dict:
    """One of pydantic's errors as the API answers it: where (``in`` the body, the path or the query;
    ``loc`` and ``field`` within it) and what, in a sentence naming the field."""
    source, *rest = [str(part) for part in item.get("loc", [])] or ["body"]
    loc = rest[1:] if source == "body" else rest  # ninja's body parameter is named "body" too
    field = ".".join(loc)
    return {
        "in": source,
        "loc": loc,
        "field": field,
        "msg": f"{field or 'The body'} {_what(item)}.",
        "type": str(item.get("type", "")),
    }


def _what(item: dict) -> str:
    """What is wrong, after the field's name: "must be at most 254 characters"."""
    kind, context = item.get("type", ""), item.get("ctx") or {}
    match kind:
        case "missing":
            return "is required"
        case "extra_forbidden":
            return "is not a field this operation takes"
        case "string_type":
            return "must be a string"
        case "int_type" | "int_parsing" | "int_from_float":
            return "must be a whole number"
        case "string_too_short" | "too_short":
            minimum = context.get("min_length", 1)
            return "must not be empty" if minimum == 1 else f"must be at least {minimum} characters"
        case "string_too_long" | "too_long":
            return f"must be at most {context.get('max_length')} characters"
        case "greater_than_equal":
            return f"must be at least {context.get('ge')}"
        case "less_than_equal":
            return f"must be at most {context.get('le')}"
        case "string_pattern_mismatch":
            return PATTERN_SENTENCES.get(str(context.get("pattern")), "is not in the form the OpenAPI schema gives")
        case "value_error":
            return str(context.get("error") or item.get("msg", "")).removeprefix("Value error, ")
    # Any other of pydantic's messages ("Input should be 'a' or 'b'", "Input should be a valid
    # dictionary"): none quotes a pattern.
    message = str(item.get("msg", "is not valid")).rstrip(".")
    return message[:1].lower() + message[1:]
