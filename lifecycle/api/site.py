"""The client API (docs/api.md): django-ninja, so that the OpenAPI 3.1 schema at
/api/v1/openapi.json is generated from the same pydantic schemas that check every request, and its
docs page at /api/v1/docs. Every refusal is an RFC 9457 problem (platform_events/api/problems.py),
never Django's HTML error pages or ninja's {"detail": ...}, and never a traceback."""

import functools
import logging

from django.core.exceptions import RequestDataTooBig
from django.http import Http404
from django.urls import re_path
from django.views.decorators.csrf import csrf_exempt
from ninja import NinjaAPI, Router
from ninja.errors import AuthenticationError, HttpError, ValidationError

from lifecycle.api.nodes import router as nodes_router
from lifecycle.api.schemas import ProblemOut, ProblemTypeOut
from lifecycle.api.validation import validation_problem
from lifecycle.api.views import router as accounts_router
from lifecycle.ops.database_unavailable import RETRY_AFTER_SECONDS
from platform_events.api.problems import BY_STATUS, CATALOGUE, MEDIA_TYPE, Problem
from platform_events.db.unreachable import database_unreachable

logger = logging.getLogger("lifecycle.api")

DESCRIPTION = """Provision and manage Lifecycle accounts from other services.

Authenticate with `Authorization: Bearer <key>` (an API client's key, made by staff; each client has
scopes). Every POST that changes state needs an `Idempotency-Key`; errors are RFC 9457 problem
details whose `type` names the kind of refusal (GET it for its title)."""


class LifecycleApi(NinjaAPI):
    def get_openapi_schema(self, *, path_prefix=None, path_params=None):
        """ninja's schema, with each refusal's body declared as application/problem+json (ninja
        knows one media type per operation); made once per prefix (about 100 ms), not on every request."""
        if path_prefix is None:
            path_prefix = self.get_root_path(path_params or {})
        return self._schema(path_prefix)

    @functools.cache  # noqa: B019 - one API object for the process's life: its schema never changes
    def _schema(self, path_prefix: str):
        schema = super().get_openapi_schema(path_prefix=path_prefix)
        for operations in schema["paths"].values():
            for operation in operations.values():
                for status, response in operation.get("responses", {}).items():
                    if int(status) >= 400 and "application/json" in response.get("content", {}):
                        response["content"] = {MEDIA_TYPE: response["content"].pop("application/json")}
        return schema


api = LifecycleApi(
    title="Lifecycle client API",
    version="1",
    description=DESCRIPTION,
    urls_namespace="api",
)
api.add_router("/", accounts_router)
api.add_router("/", nodes_router)

problem_types = Router(tags=["problems"])


@problem_types.get("/problems/{slug}", response={200: ProblemTypeOut, 404: ProblemOut}, summary="A problem type")
def problem_type(request, slug: str):
    """What a problem ``type`` means: its status and title."""
    problem = CATALOGUE.get(slug)
    if problem is None:
        raise Problem("not-found", "there is no such problem type")
    return {"type": problem.uri, "status": problem.status, "title": problem.title}


api.add_router("/", problem_types)


@api.exception_handler(Problem)
def _problem(request, problem: Problem):
    return problem.response()


@api.exception_handler(AuthenticationError)
def _unauthenticated(request, error):
    problem = Problem(
        "unauthenticated",
        "send an API client's key: Authorization: Bearer <key>",
        headers={"WWW-Authenticate": 'Bearer realm="lifecycle"'},
    )
    return problem.response()


@api.exception_handler(ValidationError)
def _invalid(request, error: ValidationError):
    # Where and what in sentences, never the input itself (pydantic's "input" may be a password).
    return validation_problem(error).response()


@api.exception_handler(HttpError)
def _http_error(request, error: HttpError):
    slug = BY_STATUS.get(error.status_code, "malformed-request")
    return Problem(slug, str(error)).response()


@api.exception_handler(Http404)
def _not_found(request, error):
    return Problem("not-found", "there is no such resource").response()


@api.exception_handler(RequestDataTooBig)
def _too_large(request, error):
    return Problem("request-too-large", "the request body is too large").response()


@api.exception_handler(Exception)
def _server_error(request, error: Exception):
    if database_unreachable(error):  # a restart, an outage: as the pages' 503 (lifecycle/ops/database_unavailable.py)
        logger.warning("api: %s %s: the database is unreachable", request.method, request.resolver_match.route)
        return Problem(
            "unavailable",
            "the database cannot be reached; nothing was changed, retry shortly",
            headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
        ).response()
    logger.exception("api: %s %s failed", request.method, request.path)
    return Problem("server-error", "the server failed; nothing was changed, and the request may be retried").response()


def _methods_as_problems(view):
    """ninja answers a method an operation does not take with a text/html 405: as a problem here."""

    @functools.wraps(view)
    def answered(request, *args, **kwargs):
        response = view(request, *args, **kwargs)
        if response.status_code == 405 and not response.get("Content-Type", "").startswith(MEDIA_TYPE):
            detail = f"{request.method} is not allowed here; allowed: {response.get('Allow', '')}"
            return Problem("method-not-allowed", detail, headers={"Allow": response.get("Allow", "")}).response()
        return response

    return answered


@csrf_exempt  # as every API operation (a bearer key, no cookie): a POST here is a 404, not the pages' CSRF page
def _nothing_here(request, *args, **kwargs):
    return Problem("not-found", "there is no such resource").response()


def urls() -> list:
    """The API's URL patterns (for include() under api/v1/): ninja's, with a problem for a method an
    operation does not take, and for any other path under /api/v1/ (not Django's HTML 404 page)."""
    patterns = api.urls[0]
    for pattern in patterns:
        # ninja's index at /api/v1/ (kept by name: the schema's paths are reversed from it) answers nothing.
        view = _nothing_here if pattern.name == "api-root" else pattern.callback
        pattern.callback = _methods_as_problems(view)
    return [*patterns, re_path(r"^.*$", _nothing_here)]
