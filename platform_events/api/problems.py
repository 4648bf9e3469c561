"""The client API's refusals as RFC 9457 problem details (``application/problem+json``).

Each kind of refusal has a stable ``type``, a relative URI under /api/v1/problems/ that the API
serves (the catalogue below, with its status and title). A client branches on ``type``, never on
the ``detail`` sentence, which may change. Two refusals may share a status (422 for a body the
schema refuses and for an Idempotency-Key reused with another body) but never a type.
"""

import json
from dataclasses import dataclass

from django.http import HttpResponse

MEDIA_TYPE = "application/problem+json"
TYPE_BASE = "/api/v1/problems/"


@dataclass(frozen=True)
class ProblemType:
    slug: str
    status: int
    title: str

    @property
    def uri(self) -> str:
        return f"{TYPE_BASE}{self.slug}"


CATALOGUE = {
    problem.slug: problem
    for problem in [
        ProblemType("malformed-request", 400, "The request body is not JSON"),
        ProblemType("idempotency-key-missing", 400, "This request needs an Idempotency-Key header"),
        ProblemType("idempotency-key-malformed", 400, "The Idempotency-Key is not 32-128 of A-Z a-z 0-9 _ -"),
        ProblemType("unauthenticated", 401, "A valid API key is needed (Authorization: Bearer <key>)"),
        ProblemType("insufficient-scope", 403, "This API client's key does not have the scope this needs"),
        # 403, not 401: the API client's key was accepted; the end user's password was not (a 401
        # tells a client its own key failed, and needs a WWW-Authenticate for that key).
        ProblemType("invalid-credentials", 403, "Wrong login, e-mail or password"),
        ProblemType("not-found", 404, "There is no such resource"),
        ProblemType("account-gone", 404, "The account was deleted meanwhile"),
        ProblemType("no-assignment", 404, "The account has no node assignment for this service yet"),
        ProblemType("method-not-allowed", 405, "This method is not allowed here"),
        ProblemType("request-in-progress", 409, "A request with this Idempotency-Key is still running"),
        ProblemType("login-taken", 409, "This login is already taken"),
        ProblemType("email-claimed", 409, "This e-mail address belongs to an activated account"),
        ProblemType("already-suspended", 409, "The account is already suspended"),
        ProblemType("not-suspended", 409, "The account is not suspended"),
        ProblemType("account-deprovisioned", 409, "The account is deprovisioned; only reprovisioning changes it"),
        ProblemType("wrong-account-state", 409, "The account is not in the state this needs"),
        ProblemType(
            "address-changed-lately",
            409,
            "The address changed lately; it changes again once the undo link mailed to the old one is used or expires",
        ),
        ProblemType("refused", 409, "The lifecycle rules refuse this change"),
        # Node assignment's refusals of a client's report (tokenserver's codes, in the member "code").
        # 409, not tokenserver's 401: the API client's key was accepted; the credentials reported are stale.
        ProblemType("invalid-generation", 409, "The generation is below the one the account has reached"),
        ProblemType("invalid-keys-changed-at", 409, "The keys_changed_at does not follow the account's history"),
        ProblemType("invalid-client-state", 409, "The client_state does not follow the account's history"),
        ProblemType("assignment-retired", 410, "The account's node assignments were retired"),
        ProblemType("account-erased", 410, "The account was erased; it takes no change"),
        ProblemType("request-too-large", 413, "The request body is too large"),
        ProblemType("validation-failed", 422, "The request is not valid"),
        ProblemType("generation-in-future", 422, "The generation is further ahead of the clock than allowed"),
        ProblemType("keys-changed-at-in-future", 422, "The keys_changed_at is further ahead of the clock than allowed"),
        ProblemType("invalid-email", 422, "The e-mail address is not one this product can send to"),
        ProblemType("invalid-login", 422, "The login is not valid"),
        ProblemType("address-unchanged", 422, "The address is the account's already"),
        ProblemType("password-rejected", 422, "The password is too weak or too like the login or e-mail"),
        ProblemType("idempotency-key-reused", 422, "This Idempotency-Key was used with another request"),
        ProblemType("rate-limited", 429, "Too many requests; retry after the time given"),
        ProblemType(
            "too-many-key-changes", 429, "The account's keys changed too often this hour; retry after the time given"
        ),
        ProblemType("server-error", 500, "The server failed; nothing was changed, the request may be retried"),
        ProblemType("no-capacity", 503, "No node of this service can take the account now; retry later"),
        ProblemType(
            "unavailable", 503, "The database cannot be reached; nothing was changed, retry after the time given"
        ),
    ]
}

# What an HTTP error without a kind of its own (ninja's, Django's) is answered as, by status.
BY_STATUS = {
    400: "malformed-request",
    401: "unauthenticated",
    403: "insufficient-scope",
    404: "not-found",
    405: "method-not-allowed",
    409: "refused",
    413: "request-too-large",
    422: "validation-failed",
    429: "rate-limited",
}


class Problem(Exception):
    """A refusal to answer as a problem response: ``slug`` names its type in CATALOGUE, ``detail``
    says what happened to this request, ``extra`` adds members (RFC 9457, section 3.2)."""

    def __init__(self, slug: str, detail: str, *, headers: dict[str, str] | None = None, **extra):
        if slug not in CATALOGUE:
            raise ValueError(f"api: no problem type {slug!r}")
        super().__init__(detail)
        self.type = CATALOGUE[slug]
        self.detail = detail
        self.headers = headers or {}
        self.extra = extra

    @property
    def status(self) -> int:
        return self.type.status

    def body(self) -> dict:
        return {"type": self.type.uri, "title": self.type.title, "status": self.status, "detail": self.detail} | (
            self.extra
        )

    def response(self) -> HttpResponse:
        return problem_response(self.status, self.body(), headers=self.headers)


def problem_response(status: int, body: dict, *, headers: dict[str, str] | None = None) -> HttpResponse:
    response = HttpResponse(json.dumps(body), status=status, content_type=MEDIA_TYPE)
    for name, value in (headers or {}).items():
        response[name] = value
    return response
