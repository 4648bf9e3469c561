"""/scim/v2/ (docs/scim.md): the discovery endpoints and Users, for identity providers holding an API
client's key with the scope scim. Answers and errors are application/scim+json (RFC 7644); every
request counts on the client's rate limit, as the client API's do."""

import json
import re
from functools import wraps

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from pydantic import ValidationError
from scim2_models import Context, Error, PatchOp, ResourceType, ResponseParameters, SCIMException, ScimPolicy, User

from lifecycle.api.auth import per_client_limit
from lifecycle.scim.errors import ScimError, scim_response
from lifecycle.scim.filters import is_account_id, users_filter
from lifecycle.scim.provisioning import scim_user_change, scim_user_create, scim_user_delete
from lifecycle.scim.users import scim_accounts, user_json, user_of
from platform_events.api.clients import api_client_called
from platform_events.api.models import ApiScope
from platform_events.audit.context import audit_context
from platform_events.limits.counters import LimitExceeded

LIST_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:ListResponse"
# The most Users one page of a list holds (announced in ServiceProviderConfig's filter.maxResults).
MAX_RESULTS = 200
# startIndex and count are read up to this; a larger one is this.
LARGEST_NUMBER = 2**31 - 1


def scim_view(*methods: str):
    """A SCIM endpoint: the client's key with the scope scim (401 or 403 otherwise, as SCIM errors),
    its rate limit, the methods it answers; a ScimError raised inside is its answer."""

    def wrap(view):
        @csrf_exempt
        @wraps(view)
        def endpoint(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            try:
                if request.method not in methods:
                    raise ScimError(405, f"{request.path} answers {', '.join(methods)}.")
                request.scim_client = _client(request)
                # The trail's rows of whatever the request changes name its address, agent and id.
                with audit_context(request=request):
                    return view(request, *args, **kwargs)
            except ScimError as error:
                return error.response()

        return endpoint

    return wrap


def _client(request: HttpRequest):
    scheme, _, key = request.headers.get("Authorization", "").partition(" ")
    try:
        # The client API's limit per client, counted with the key's look-up (one round trip).
        client = api_client_called(key.strip(), limit=per_client_limit()) if scheme.lower() == "bearer" else None
    except LimitExceeded as refusal:
        raise ScimError(
            429,
            f"This client may make {settings.API_REQUESTS_PER_MINUTE} requests a minute.",
            headers={"Retry-After": str(refusal.retry_after)},
        ) from None
    if client is None:
        detail = (
            "This key is no live API client's key: it is wrong, or the client was revoked."
            if scheme.lower() == "bearer" and key.strip()
            else "An API client's key is needed: Authorization: Bearer <key>."
        )
        raise ScimError(401, detail, headers={"WWW-Authenticate": 'Bearer realm="scim"'})
    if ApiScope.SCIM not in client.scopes:
        raise ScimError(403, f"This needs the scope {ApiScope.SCIM}; this client has {', '.join(client.scopes)}.")
    return client


def _base(request: HttpRequest) -> str:
    """The service's base URL, from PUBLIC_BASE_URL (never the request's Host header)."""
    return f"{settings.PUBLIC_BASE_URL}{reverse('scim:root')}".rstrip("/")


def _parameters(request: HttpRequest) -> ResponseParameters | None:
    attributes, excluded = request.GET.get("attributes"), request.GET.get("excludedAttributes")
    if not attributes and not excluded:
        return None
    try:
        return ResponseParameters(
            attributes=[a.strip() for a in attributes.split(",")] if attributes else None,
            excluded_attributes=[a.strip() for a in excluded.split(",")] if excluded else None,
        )
    except ValueError as error:
        raise ScimError(
            400, f"attributes or excludedAttributes cannot be read: {_sentence(str(error))}", "invalidValue"
        ) from None


def _number(request: HttpRequest, name: str, default: int) -> int:
    raw = request.GET.get(name)
    if raw is None or raw == "":
        return default
    try:
        number = int(raw) if raw.isascii() else int("x")
    except ValueError:
        raise ScimError(400, f"{name} is a whole number, not {raw[:40]!r}.", "invalidValue") from None
    # Past any page there could be (a bigint OFFSET would overflow): the same empty page.
    return max(min(number, LARGEST_NUMBER), -LARGEST_NUMBER)


# Discovery


@scim_view("GET")
def service_provider_config(request: HttpRequest) -> HttpResponse:
    base = _base(request)
    return scim_response(
        {
            "schemas": ["urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"],
            "documentationUri": f"{settings.PUBLIC_BASE_URL}/api/v1/docs",
            "patch": {"supported": True},
            "bulk": {"supported": False, "maxOperations": 0, "maxPayloadSize": 0},
            "filter": {"supported": True, "maxResults": MAX_RESULTS},
            "changePassword": {"supported": True},
            "sort": {"supported": False},
            "etag": {"supported": True},
            "authenticationSchemes": [
                {
                    "type": "oauthbearertoken",
                    "name": "API client key",
                    "description": "The key of a Lifecycle API client holding the scope scim, as a Bearer token.",
                    "primary": True,
                }
            ],
            "meta": {"resourceType": "ServiceProviderConfig", "location": f"{base}/ServiceProviderConfig"},
        }
    )


def _user_resource_type(base: str) -> dict:
    resource_type = ResourceType(
        id="User", name="User", endpoint="/Users", description="An account", schema_=User.__schema__
    )
    body = resource_type.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE)
    body["meta"] = {"resourceType": "ResourceType", "location": f"{base}/ResourceTypes/User"}
    return body


@scim_view("GET")
def resource_types(request: HttpRequest, name: str | None = None) -> HttpResponse:
    return _the_one_or_all(_user_resource_type(_base(request)), name, only="User", kind="resource type")


# The User schema's attributes the mapping keeps (docs/scim.md); id, externalId and meta are common to
# every resource and are not listed in a schema. The others are accepted and dropped, so not announced.
KEPT_ATTRIBUTES = {"userName", "emails", "active", "password"}


def _user_schema(base: str) -> dict:
    body = User.to_schema().model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE)
    body["attributes"] = [attribute for attribute in body["attributes"] if attribute["name"] in KEPT_ATTRIBUTES]
    body["meta"] = {"resourceType": "Schema", "location": f"{base}/Schemas/{User.__schema__}"}
    return body


@scim_view("GET")
def schemas(request: HttpRequest, name: str | None = None) -> HttpResponse:
    return _the_one_or_all(_user_schema(_base(request)), name, only=User.__schema__, kind="schema")


def _the_one_or_all(body: dict, name: str | None, *, only: str, kind: str) -> HttpResponse:
    """A discovery endpoint's answer: its one ``body`` when asked by ``name`` (a SCIM 404 for any other
    name), else a list of it."""
    if name is None:
        return scim_response(_list([body], total=1, start=1))
    if name != only:
        raise ScimError(404, f"There is no {kind} {name[:80]!r}; this service has {only}.")
    return scim_response(body)


@scim_view("GET", "POST", "PUT", "PATCH", "DELETE")
def not_served(request: HttpRequest, rest: str) -> HttpResponse:
    """Groups, Bulk, searches by POST and anything else this service does not serve (ServiceProviderConfig
    says bulk is not supported; ResourceTypes names Users only)."""
    raise ScimError(404, f"This service has no /{rest[:60]}: it serves Users (and the discovery endpoints).")


def _list(resources: list[dict], *, total: int, start: int) -> dict:
    return {
        "schemas": [LIST_SCHEMA],
        "totalResults": total,
        "startIndex": start,
        "itemsPerPage": len(resources),
        "Resources": resources,
    }


# Users

# The largest request body read (a User is a few hundred bytes; Okta's and Entra ID's stay far below).
MAX_BODY_BYTES = 64 * 1024
BODY_TYPES = ("application/scim+json", "application/json")
# What identity providers send beside the RFC (docs/scim.md, "What identity providers send"):
# attributes and extensions the mapping does not hold are accepted and dropped; a remove may name its
# target by value, and a path filter that matches no e-mail creates it (Entra ID).
TOLERANT = ScimPolicy(
    unknown=ScimPolicy.Unknown.ignore,
    remove_value_as_filter=ScimPolicy.RemoveValue.apply,
    unmatched_path_filter=ScimPolicy.UnmatchedPathFilter.create,
)


@scim_view("GET", "POST")
def users(request: HttpRequest) -> HttpResponse:
    """GET: the client's Users a filter selects, by id, a page of them: ``startIndex`` (1-based; below
    1 is 1) and ``count`` (0 gives the total only; at most MAX_RESULTS). POST: a new User, 201."""
    if request.method == "POST":
        user = _read(request, User, Context.RESOURCE_CREATION_REQUEST)
        account = scim_user_create(client=request.scim_client, user=user)
        return _user_answer(request, account.pk, status=201)
    accounts = scim_accounts(request.scim_client)
    if expression := request.GET.get("filter"):
        accounts = accounts.filter(users_filter(expression))
    start = max(_number(request, "startIndex", 1), 1)
    count = min(max(_number(request, "count", MAX_RESULTS), 0), MAX_RESULTS)
    parameters = _parameters(request)
    total = accounts.count()
    page = list(accounts.order_by("pk")[start - 1 : start - 1 + count]) if count else []
    base = _base(request)
    resources = [user_json(user_of(account, location=f"{base}/Users/{account.pk}"), parameters) for account in page]
    return scim_response(_list(resources, total=total, start=start))


@scim_view("GET", "PUT", "PATCH", "DELETE")
def user(request: HttpRequest, user_id: str) -> HttpResponse:
    """GET: the User. PUT: replaced by the body. PATCH: the body's operations applied to the User as
    shown; either honours If-Match. DELETE: the account deprovisioned, as the client, with
    DELETED_REASON (erased after ERASURE_DELAY_DAYS, restorable until then by staff, or by the client
    creating the userName again); 204, and the User is gone for SCIM."""
    account_id = _account_id(user_id)
    if request.method == "PUT":
        wanted = _read(request, User, Context.RESOURCE_REPLACEMENT_REQUEST)
        scim_user_change(
            client=request.scim_client,
            account_id=account_id,
            change=lambda shown: wanted,
            if_match=request.headers.get("If-Match"),
        )
        return _user_answer(request, account_id)
    if request.method == "PATCH":
        payload = _with_paths_split(_payload(request))
        patch = _validated(payload, PatchOp[User], Context.RESOURCE_PATCH_REQUEST)
        scim_user_change(
            client=request.scim_client,
            account_id=account_id,
            change=lambda shown: _patched(shown, patch),
            if_match=request.headers.get("If-Match"),
            remove_password=_removes_password(patch),
        )
        return _user_answer(request, account_id)
    account = _account(request, account_id)
    if request.method == "DELETE":
        scim_user_delete(client=request.scim_client, account=account)
        gone = HttpResponse(status=204)
        del gone["Content-Type"]  # no body, so no type (Django's default would say text/html)
        return gone
    return _user_answer(request, account_id)


def _user_answer(request: HttpRequest, account_id: int, *, status: int = 200) -> HttpResponse:
    """The User as it is now, with its ETag (and its Location, for a new one)."""
    account = _account(request, account_id)
    found = user_of(account, location=f"{_base(request)}/Users/{account.pk}")
    response = scim_response(user_json(found, _parameters(request)), status=status)
    response["ETag"] = found.meta.version
    if status == 201:
        response["Location"] = found.meta.location
    return response


def _patched(shown: User, patch: PatchOp) -> User:
    """``shown`` with the operations applied (scim2-models), or the SCIM error they make."""
    try:
        patch.patch(shown, scim_policy=TOLERANT)
    except SCIMException as error:
        raise ScimError(error.status, _sentence(error.detail), error.scim_type or None) from None
    except ValidationError as error:
        raise _validation_error(error) from None
    return shown


def _read(request: HttpRequest, model, context: Context):
    """The body as ``model``, read under TOLERANT; ScimError for a body too large (413), of another
    type (415), not JSON (invalidSyntax) or not such a message (its scimType)."""
    return _validated(_payload(request), model, context)


def _payload(request: HttpRequest) -> dict:
    """The body as a JSON object; ScimError for one too large (413), of another type (415), or not a JSON
    object (invalidSyntax)."""
    too_large = ScimError(413, f"A request body is at most {MAX_BODY_BYTES // 1024} KiB.")
    if int(request.headers.get("Content-Length") or 0) > MAX_BODY_BYTES:
        raise too_large
    if request.content_type not in BODY_TYPES:
        raise ScimError(415, f"Send the body as {BODY_TYPES[0]}.")
    try:
        raw = request.body
    except RequestDataTooBig:
        raise too_large from None
    if len(raw) > MAX_BODY_BYTES:
        raise too_large
    try:
        payload = json.loads(raw)
    except ValueError:
        raise ScimError(400, "The body is not JSON.", "invalidSyntax") from None
    if not isinstance(payload, dict):
        raise ScimError(400, "The body must be a JSON object.", "invalidSyntax")
    return payload


def _validated(payload: dict, model, context: Context):
    # A body that names other schemas is another resource, whatever else it lacks.
    schemas = payload.get("schemas")
    if model is User and isinstance(schemas, list) and User.__schema__ not in schemas:
        raise ScimError(400, f"schemas must hold {User.__schema__}: this body is not a User.", "invalidSyntax")
    try:
        return model.model_validate(payload, scim_ctx=context, scim_policy=TOLERANT)
    except ValidationError as error:
        raise _validation_error(error) from None


def _with_paths_split(payload: dict) -> dict:
    """A PATCH whose path-less add or replace names attribute paths as keys of its value (Entra ID sends
    ``{"op": "Replace", "value": {"emails[type eq \"work\"].value": "..."}}``): each such key made an
    operation with that path, so that none is dropped."""
    operations = payload.get("Operations")
    if not isinstance(operations, list):
        return payload
    split = []
    for operation in operations:
        value = operation.get("value") if isinstance(operation, dict) else None
        if (
            isinstance(value, dict)
            and not operation.get("path")
            and str(operation.get("op", "")).lower() in ("add", "replace")
        ):
            paths = {key: item for key, item in value.items() if _is_attribute_path(key)}
            rest = {key: item for key, item in value.items() if key not in paths}
            if paths:
                if rest:
                    split.append({**operation, "value": rest})
                split.extend({"op": operation["op"], "path": key, "value": item} for key, item in paths.items())
                continue
        split.append(operation)
    return {**payload, "Operations": split}


def _is_attribute_path(key) -> bool:
    return isinstance(key, str) and not key.lower().startswith("urn:") and ("[" in key or "." in key)


def _removes_password(patch: PatchOp) -> bool:
    """Whether ``patch`` removes the password (which the User as shown never holds, so applying the
    operation alone would change nothing)."""
    return any(
        operation.op == operation.Op.remove and str(operation.path or "").lower() == "password"
        for operation in patch.operations or []
    )


def _validation_error(error: ValidationError) -> ScimError:
    first = Error.from_validation_errors(error)[0]
    return ScimError(first.status or 400, _sentence(first.detail or "The body cannot be read"), first.scim_type)


PYDANTIC_TYPE = re.compile(r"\s*\[type=.*$")


def _sentence(detail: str) -> str:
    """One sentence of a detail scim2-models or pydantic wrote: a pydantic report ("1 validation error
    for Email / value / value is not a valid ... [type=value_error]") as "value: value is not a valid
    ...", anything else its first line."""
    lines = detail.splitlines()
    if len(lines) >= 3 and "validation error" in lines[0]:
        text = f"{lines[1].strip()}: {PYDANTIC_TYPE.sub('', lines[2].strip())}"
    else:
        text = lines[0] if lines else "The request cannot be read"
    text = text.rstrip(".")
    return f"{text[:1].upper()}{text[1:]}."


def _account_id(user_id: str) -> int:
    if not is_account_id(user_id):
        raise ScimError(404, f"There is no User {user_id[:40]!r}.")
    return int(user_id)


def _account(request: HttpRequest, account_id: int):
    account = scim_accounts(request.scim_client).filter(pk=account_id).first()
    if account is None:
        raise ScimError(404, f"There is no User {str(account_id)!r}.")
    return account
